"""`polymem.LoopThread` and `polymem.AsyncChatModel`: async-only plug-ins used from sync code."""

from __future__ import annotations

import asyncio

import pytest

import polymem


def test_every_call_of_one_loop_thread_runs_on_the_same_loop() -> None:
    runner = polymem.LoopThread()

    async def current() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert runner.run(current) is runner.run(current)


def test_a_loop_bound_client_keeps_working_across_calls() -> None:
    """A client that remembers the loop it first ran on, as an httpx AsyncClient does."""

    class BoundClient:
        loop: asyncio.AbstractEventLoop | None = None

        async def ask(self) -> str:
            running = asyncio.get_running_loop()
            if self.loop is not None and self.loop is not running:
                raise RuntimeError("bound to another event loop")
            self.loop = running
            return "ok"

    client, runner = BoundClient(), polymem.LoopThread()
    assert [runner.run(client.ask) for _ in range(3)] == ["ok", "ok", "ok"]


def test_it_runs_from_a_thread_that_runs_an_event_loop() -> None:
    runner = polymem.LoopThread()

    async def answer() -> int:
        return 42

    async def caller() -> int:
        return runner.run(answer)  # a sync plug-in protocol called from async code

    assert asyncio.run(caller()) == 42


def test_the_coroutine_s_exception_is_raised_in_the_caller() -> None:
    async def fail() -> None:
        raise ValueError("model unavailable")

    with pytest.raises(ValueError, match="model unavailable"):
        polymem.LoopThread().run(fail)


def test_a_call_from_its_own_loop_is_refused_rather_than_deadlocking() -> None:
    runner = polymem.LoopThread()

    async def nested() -> None:
        async def inner() -> None:
            return None

        runner.run(inner)

    with pytest.raises(RuntimeError, match="its own loop"):
        runner.run(nested)


def test_an_async_only_chat_model_reranks_from_sync_code() -> None:
    class Scorer(polymem.AsyncChatModel):
        async def acomplete(self, system: str, prompt: str) -> str:
            await asyncio.sleep(0)
            return "[8, 2]"

    assert polymem.ChatReranker(Scorer()).rerank("colour?", ["Ann likes blue", "Ann has a dog"]) == [0.8, 0.2]
