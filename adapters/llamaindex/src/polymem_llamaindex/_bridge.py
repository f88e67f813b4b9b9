"""One plan, two drivers: every store method is written once, as a generator.

A plan yields zero-argument calls into polymem and receives their results, so
the same code serves LlamaIndex's sync and async methods over a sync
`polymem.Memory` or an async `polymem.AsyncMemory` (httpx's auth-flow pattern):

- sync method, sync store: run the calls in place;
- async method, async store: await the calls natively;
- async method, sync store: run the whole plan in one worker thread;
- sync method, async store: run the async driver to completion.

It also keeps the live stores of this process by `mem.url`, so a component
rebuilt from a serialised descriptor (a workflow `Context`, `from_dict`) reuses
the store it was made from instead of opening a second one.
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from llama_index.core.async_utils import asyncio_run

import polymem

T = TypeVar("T")
Plan = Generator[Callable[[], Any], Any, T]
Store = polymem.Memory | polymem.AsyncMemory

_live: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()


def resolve_store(memory: Store | str | None, url: str | None = None, namespace: str | None = None) -> Store:
    """The store a component works on: the given one, a live one with that descriptor, or a newly opened one.

    The last store handed to a component wins its descriptor, so a component
    rebuilt in this process finds the store it was serialised from.
    """
    if memory is not None and not isinstance(memory, str):
        if not all(callable(getattr(memory, name, None)) for name in ("save", "recall", "session")):
            raise TypeError(
                f"expected a polymem.Memory, polymem.AsyncMemory or a store URL, got {type(memory).__name__}"
            )
        _live[(memory.url, memory.namespace)] = memory
        return memory
    target = memory if isinstance(memory, str) else url
    if not target:
        raise TypeError("give a polymem store (polymem.open(...)) or its URL")
    key = (target, namespace or "default")
    found = _live.get(key)
    if found is None:
        found = polymem.open(target, namespace=key[1])
        _live[key] = found
    return found


def is_async(store: Store) -> bool:
    """Whether the store's methods are awaitable."""
    return inspect.iscoroutinefunction(getattr(store, "recall", None))  # embedded or HTTP client alike


def run(store: Store, plan: Plan[T]) -> T:
    """Drive a plan from synchronous code."""
    if is_async(store):
        return asyncio_run(_drive_async(plan))
    return _drive_sync(plan)


async def arun(store: Store, plan: Plan[T]) -> T:
    """Drive a plan from asynchronous code, never blocking the event loop."""
    if is_async(store):
        return await _drive_async(plan)
    return await asyncio.to_thread(_drive_sync, plan)


def _drive_sync(plan: Plan[T]) -> T:
    try:
        call = next(plan)
        while True:
            call = plan.send(call())
    except StopIteration as done:
        return done.value


async def _drive_async(plan: Plan[T]) -> T:
    try:
        call = next(plan)
        while True:
            result = call()
            if inspect.isawaitable(result):
                result = await result
            call = plan.send(result)
    except StopIteration as done:
        return done.value
