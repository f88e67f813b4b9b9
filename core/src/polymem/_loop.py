"""Running an async plug-in's coroutines from sync code, for adapters whose framework is async only."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")


class LoopThread:
    """One private event loop in a daemon thread, started on first use.

    `run(factory)` runs the coroutine `factory()` makes on that loop and waits for its
    result, also from a thread that runs an event loop of its own. Every call of one
    `LoopThread` runs on the same loop, so a model client bound to the loop it first
    ran on (an httpx `AsyncClient` inside it) keeps working across calls, which a new
    `asyncio.run` per call would break."""

    def __init__(self, name: str = "polymem-loop") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, factory: Callable[[], Awaitable[T]]) -> T:
        """The result of `await factory()`, run on this object's loop (its exception re-raised here)."""
        loop = self._started()
        if threading.current_thread() is self._thread:
            raise RuntimeError(f"{self.name}: run() called from its own loop would wait for itself")

        async def main() -> T:
            return await factory()

        import asyncio  # here: `import polymem` loads no event loop machinery

        return asyncio.run_coroutine_threadsafe(main(), loop).result()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                import asyncio

                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop
