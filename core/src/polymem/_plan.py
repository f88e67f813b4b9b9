"""Plans and their two drivers: every operation is written once, as a generator.

A plan yields steps (a backend call, an embedding, an HTTP request…) and
receives each step's result; it returns the operation's result. `drive` runs a
plan synchronously, `adrive` awaits each step: the same behaviour by
construction (httpx's `Auth.auth_flow` pattern). An exception raised by a step
is thrown back into the plan, which may handle it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

S = TypeVar("S")
T = TypeVar("T")

Plan = Generator[S, Any, T]
"""A plan yielding steps of type S and returning T."""


def drive(plan: Plan[S, T], step: Callable[[S], Any]) -> T:
    """Run `plan`, answering each step with `step(it)`."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            item = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            result: T = stop.value
            return result
        error = None
        try:
            send = step(item)
        except BaseException as exc:  # handed back to the plan, which may handle it
            error, send = exc, None


async def adrive(plan: Plan[S, T], step: Callable[[S], Awaitable[Any]]) -> T:
    """Run `plan`, awaiting `step(it)` for each step."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            item = plan.throw(error) if error is not None else plan.send(send)
        except StopIteration as stop:
            result: T = stop.value
            return result
        error = None
        try:
            send = await step(item)
        except BaseException as exc:
            error, send = exc, None
