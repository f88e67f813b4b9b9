"""Calling a polymem store from Semantic Kernel's async code, whichever store it is.

`polymem.AsyncMemory` (and its sessions) are awaited natively; a sync
`polymem.Memory` runs in a worker thread so a slow call (an embedding, a
busy SQLite file) never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def call(method: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Await `method(*args, **kwargs)` if it is async, else run it in a thread."""
    if inspect.iscoroutinefunction(method):
        return await method(*args, **kwargs)
    result = await asyncio.to_thread(method, *args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


async def value(obj: Any, sync_attribute: str, async_getter: str) -> Any:
    """Read a property that async twins expose as a coroutine method (e.g. `summary`)."""
    getter = getattr(obj, async_getter, None)
    if getter is not None and inspect.iscoroutinefunction(getter):
        return await getter()
    return await asyncio.to_thread(getattr, obj, sync_attribute)


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
