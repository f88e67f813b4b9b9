"""Running Semantic Kernel's async services from polymem's sync plug-in protocols (embedder, extractor, summarizer)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One private event loop in a daemon thread, for running Semantic Kernel's
    async services from polymem's sync plug-in protocols.

    Every call of one wrapper runs on the same loop, so a service whose HTTP
    client is bound to a loop keeps working across calls.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, factory: Callable[[], Awaitable[T]]) -> T:
        """Run the coroutine `factory()` makes, wait for it and return its result."""
        loop = self._ensure()

        async def _main() -> T:
            return await factory()

        coroutine: Coroutine[Any, Any, T] = _main()
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="polymem-sk-loop", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop
