"""One polymem store, reachable from sync and async LangChain methods alike.

A sync store serves async methods through LangChain's executor; an async
store (`polymem.AsyncMemory`) is awaited natively, and its sync twin (the
same backend and engine, driven synchronously) serves the sync methods that
LangChain calls even from async code (e.g. `ConversationSummaryBufferMemory.aprune`).
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.runnables.config import run_in_executor

import polymem

Store = polymem.Memory | polymem.AsyncMemory


class Bridge:
    """The store a LangChain object was given, with a sync and an async way to call it."""

    __slots__ = ("store", "sync", "native_async")

    def __init__(self, store: Store) -> None:
        if isinstance(store, polymem.Memory):
            self.sync, self.native_async = store, None
        elif isinstance(store, polymem.AsyncMemory):
            self.sync, self.native_async = polymem.Memory(store.backend, store.engine), store
        else:
            raise TypeError(
                f"expected a polymem store (polymem.open(...) or polymem.open_async(...)), got {type(store).__name__}"
            )
        self.store = store

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Await store method `name`: natively on an async store, in an executor on a sync one."""
        if self.native_async is not None:
            return await getattr(self.native_async, name)(*args, **kwargs)
        return await run_in_executor(None, functools.partial(getattr(self.sync, name), *args, **kwargs))


class SessionBridge:
    """A working-memory session, sync and async, opened on one store."""

    __slots__ = ("sync", "native_async")

    def __init__(self, bridge: Bridge, session_id: str, **spec: Any) -> None:
        self.sync = bridge.sync.session(session_id, **spec)
        self.native_async = bridge.native_async.session(session_id, **spec) if bridge.native_async else None

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Await session method `name` (natively when the store is async)."""
        if self.native_async is not None:
            return await getattr(self.native_async, name)(*args, **kwargs)
        return await run_in_executor(None, functools.partial(getattr(self.sync, name), *args, **kwargs))
