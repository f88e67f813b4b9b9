"""Fixtures: real polymem stores on SQLite files, the real MiniLM embedder, scripted LlamaIndex mock LLMs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM

import polymem


@pytest.fixture(scope="session")
def embedder() -> Any:
    """polymem's default local embedder (all-MiniLM-L6-v2, offline), loaded once per test run."""
    emb = polymem.default_embedder()
    assert emb is not None, "polymem's local embedder is not available"
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def lexical(db_url: str) -> Iterator[polymem.Memory]:
    """A lexical-only store on an SQLite file: fast, for tests where meaning does not matter."""
    with polymem.open(db_url, embedder=None) as mem:
        yield mem


@pytest.fixture
async def alexical(db_url: str) -> AsyncIterator[polymem.AsyncMemory]:
    """The async twin of `lexical`."""
    async with polymem.open_async(db_url, embedder=None) as mem:
        yield mem


@pytest.fixture
def semantic(db_url: str, embedder: Any) -> Iterator[polymem.Memory]:
    """A store on an SQLite file with the real MiniLM embedder."""
    with polymem.open(db_url, embedder=embedder) as mem:
        yield mem


class ScriptedLLM:
    """Builds LlamaIndex's `MockFunctionCallingLLM` with a scripted policy, and records every prompt.

    Policy: when the last message is a user message and tools are offered, call
    `tool_name` with `tool_kwargs`; otherwise answer `answer(messages)`.
    """

    def __init__(self) -> None:
        self.prompts: list[list[ChatMessage]] = []

    def make(
        self,
        *,
        tool_name: str | None = None,
        tool_kwargs: dict[str, Any] | None = None,
        answer: Callable[[Sequence[ChatMessage]], str] = lambda messages: "Done.",
    ) -> MockFunctionCallingLLM:
        def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            self.prompts.append(list(messages))
            if tool_name and kwargs.get("tools") and messages[-1].role == MessageRole.USER:
                call = ToolCallBlock(
                    tool_call_id=f"call-{len(self.prompts)}", tool_name=tool_name, tool_kwargs=tool_kwargs or {}
                )
                return ChatMessage(role="assistant", blocks=[TextBlock(text="Let me check."), call])
            return ChatMessage(role="assistant", content=answer(messages))

        return MockFunctionCallingLLM(response_generator=respond)

    @property
    def last_prompt_text(self) -> str:
        return "\n".join(str(m.content) for m in self.prompts[-1])


@pytest.fixture
def scripted() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def conversation() -> list[ChatMessage]:
    """A conversation with a system prompt, a tool call and its result, of uneven lengths."""
    return [
        ChatMessage(role="system", content="You are a travel assistant."),
        ChatMessage(role="user", content="Hi, I need a hotel in Lyon for 3 nights from 12 May."),
        ChatMessage(role="assistant", content="Sure. Any budget?"),
        ChatMessage(role="user", content="Under 120 EUR per night, and quiet please. " * 3),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="search_hotels", tool_kwargs={"city": "Lyon"})],
        ),
        ChatMessage(role="tool", content="Hotel Bellecour: 110 EUR, quiet street.", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="Hotel Bellecour fits: 110 EUR per night on a quiet street."),
        ChatMessage(role="user", content="Book it."),
        ChatMessage(role="assistant", content="Booked: 3 nights from 12 May."),
    ]
