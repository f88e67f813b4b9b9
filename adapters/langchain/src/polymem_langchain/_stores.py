"""The store a LangChain object was given, in its sync and its async form (the core's `to_sync`/`to_async`)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

import polymem
from polymem.operations import Operation

T = TypeVar("T")
Store = polymem.Memory | polymem.AsyncMemory
"""A polymem store: `polymem.open(...)` or `polymem.open_async(...)`, embedded or over HTTP."""
Plan = Generator[Operation[Any], Any, T]
"""Adapter logic written once, yielding operations of the table (run by `store.run(plan)`)."""


class Forms:
    """`store.to_sync()` for the sync methods, `store.to_async()` for the async ones."""

    __slots__ = ("store", "asynchronous", "_sync")

    def __init__(self, store: Any) -> None:
        if not isinstance(store, (polymem.Memory, polymem.AsyncMemory)):
            raise TypeError(
                f"expected a polymem store (polymem.open(...) or polymem.open_async(...)), got {type(store).__name__}"
            )
        self.store = store
        self.asynchronous: polymem.AsyncMemory = store.to_async()
        try:
            self._sync: polymem.Memory | None = store.to_sync()
        except polymem.PolymemError:  # e.g. an HTTP store on a custom async transport
            self._sync = None

    @property
    def sync(self) -> polymem.Memory:
        """The synchronous form of the store."""
        if self._sync is None:
            raise TypeError(
                f"{type(self.store).__name__} has no synchronous twin here; use the async methods "
                "(ainvoke, aget_messages, ...) or give a synchronous store"
            )
        return self._sync


def call(name: str, *args: Any, **kwargs: Any) -> Operation[Any]:
    """The store operation `name` with these arguments, for a plan to yield (`yield call("recall", q, ...)`)."""
    return polymem.operations.by_name(name).bind(*args, **kwargs)
