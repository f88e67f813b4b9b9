"""One polymem store, reachable from sync and async LangChain methods alike.

A sync store (`polymem.Memory`, the HTTP client `HttpMemory`) serves async
methods through LangChain's executor. An async store (`polymem.AsyncMemory`,
`AsyncHttpMemory`) is awaited natively, and a sync twin on the same data serves
the sync methods LangChain calls even from async code (e.g.
`ConversationSummaryBufferMemory.aprune`): the same backend and engine driven
synchronously, or a sync client on the same service URL and token.
"""

from __future__ import annotations

import functools
import inspect
from datetime import datetime, timezone
from typing import Any

from langchain_core.runnables.config import run_in_executor

import polymem

Store = Any
"""A polymem store: `polymem.open(...)` / `polymem.open_async(...)` or their HTTP clients."""

_STORE_METHODS = ("save", "recall", "list", "session")


def _is_store(value: Any) -> bool:
    return all(callable(getattr(value, name, None)) for name in _STORE_METHODS)


def _sync_twin(store: Any) -> Any:
    """A synchronous store on the same data as async `store`, or None when there is none."""
    try:
        return store.to_sync()
    except polymem.PolymemError:  # e.g. an HTTP client on a custom async transport
        return None


class Bridge:
    """The store a LangChain object was given, with a sync and an async way to call it."""

    __slots__ = ("store", "native_async", "_sync")

    def __init__(self, store: Store) -> None:
        if not _is_store(store):
            raise TypeError(
                f"expected a polymem store (polymem.open(...) or polymem.open_async(...)), got {type(store).__name__}"
            )
        self.store = store
        if inspect.iscoroutinefunction(store.recall):
            self.native_async, self._sync = store, _sync_twin(store)
        else:
            self.native_async, self._sync = None, store

    @property
    def sync(self) -> Any:
        """The synchronous store (the twin of an async one)."""
        if self._sync is None:
            raise TypeError(
                f"{type(self.store).__name__} has no synchronous twin here; use the async methods "
                "(ainvoke, aget_messages, ...) or give a synchronous store"
            )
        return self._sync

    def now(self) -> datetime:
        """The store's clock where it has one (embedded stores), else the system's UTC time."""
        clock = getattr(self._sync if self._sync is not None else self.store, "now", None)
        return clock() if callable(clock) else datetime.now(timezone.utc)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Await store method `name`: natively on an async store, in an executor on a sync one."""
        if self.native_async is not None:
            return await getattr(self.native_async, name)(*args, **kwargs)
        return await run_in_executor(None, functools.partial(getattr(self.sync, name), *args, **kwargs))


class SessionBridge:
    """A working-memory session, sync and async, opened on one store."""

    __slots__ = ("native_async", "_sync", "_bridge")

    def __init__(self, bridge: Bridge, session_id: str, **spec: Any) -> None:
        self._bridge = bridge
        self.native_async = bridge.native_async.session(session_id, **spec) if bridge.native_async else None
        twin = bridge._sync
        self._sync = twin.session(session_id, **spec) if twin is not None else None

    @property
    def sync(self) -> Any:
        """The synchronous session."""
        if self._sync is None:
            self._bridge.sync  # noqa: B018 - raises the explanation
        return self._sync

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Await session method `name` (natively when the store is async)."""
        if self.native_async is not None:
            return await getattr(self.native_async, name)(*args, **kwargs)
        return await run_in_executor(None, functools.partial(getattr(self.sync, name), *args, **kwargs))
