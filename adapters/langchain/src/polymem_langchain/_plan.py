"""Adapter logic written once, as plans that yield store calls; two small drivers run them.

A plan is a generator yielding `Call(method, args, kwargs)` and receiving the
result; `run` drives it against the sync store, `arun` awaits each call (natively
on an async store). So every sync/async pair of LangChain methods shares one body.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, NamedTuple, TypeVar

from ._bridge import Bridge

T = TypeVar("T")


class Call(NamedTuple):
    """One store method call a plan asks for."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}


Plan = Generator[Call, Any, T]


def call(method: str, *args: Any, **kwargs: Any) -> Call:
    """Build a `Call` (`result = yield call("recall", query, user_id=...)`)."""
    return Call(method, args, kwargs)


def run(bridge: Bridge, plan: Plan[T]) -> T:
    """Drive a plan synchronously."""
    result: Any = None
    while True:
        try:
            op = plan.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        result = getattr(bridge.sync, op.method)(*op.args, **op.kwargs)


async def arun(bridge: Bridge, plan: Plan[T]) -> T:
    """Drive a plan, awaiting each call."""
    result: Any = None
    while True:
        try:
            op = plan.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        result = await bridge.call(op.method, *op.args, **op.kwargs)
