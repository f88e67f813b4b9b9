"""Store and session methods made from the operation table, and the transport they run on.

`Memory.recall = SyncOperation(operations.Recall)` is the whole definition of
`Memory.recall`: its signature, defaults and docstring are the operation's, and
type checkers see them too (the operation model's constructor is the method's
parameter list). A session method is the same, with `session` filled in by the
handle.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from .operations import Operation, SessionSpec

if TYPE_CHECKING:
    from ._local import LocalTransport
    from ._protocols import Embedder

P = ParamSpec("P")
R = TypeVar("R")


class Transport(Protocol):
    """What carries a store's operations: the local engine, or HTTP to `polymem serve`."""

    @property
    def url(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def embedder(self) -> Embedder | None: ...
    @property
    def closed(self) -> bool: ...

    def execute(self, op: Operation[R]) -> R: ...
    async def aexecute(self, op: Operation[R]) -> R: ...
    def now(self) -> datetime: ...
    def local(self) -> LocalTransport: ...
    def sync_twin(self) -> Transport: ...
    def close(self) -> None: ...
    async def aclose(self) -> None: ...


def _method(descriptor: Any, call: Callable[..., Any]) -> Callable[..., Any]:
    call.__name__ = call.__qualname__ = descriptor.op.name
    call.__doc__ = descriptor.op.__doc__
    vars(call)["__signature__"] = descriptor.signature  # what help() and inspect show
    return call


def _without_session(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "session"])


class SyncOperation(Generic[P, R]):
    """A store method that runs one operation of the table."""

    def __init__(self, op: Callable[P, Operation[R]]) -> None:
        self.op = cast("type[Operation[R]]", op)
        self.signature = self.op.signature()
        self.__doc__ = self.op.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> SyncOperation[P, R]: ...
    @overload
    def __get__(self, obj: Any, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        bind, execute = self.op.bind, obj.execute
        return _method(self, lambda *args, **kwargs: execute(bind(*args, **kwargs)))


class AsyncOperation(Generic[P, R]):
    """An async store method that runs one operation of the table."""

    def __init__(self, op: Callable[P, Operation[R]]) -> None:
        self.op = cast("type[Operation[R]]", op)
        self.signature = self.op.signature()
        self.__doc__ = self.op.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> AsyncOperation[P, R]: ...
    @overload
    def __get__(self, obj: Any, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        bind, execute = self.op.bind, obj.execute

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await execute(bind(*args, **kwargs))

        return _method(self, call)


class SyncSessionOperation(Generic[P, R]):
    """A session method: the operation, with the handle's `session`."""

    def __init__(self, op: Callable[Concatenate[SessionSpec, P], Operation[R]]) -> None:
        self.op = cast("type[Operation[R]]", op)
        self.signature = _without_session(self.op.signature())
        self.__doc__ = self.op.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> SyncSessionOperation[P, R]: ...
    @overload
    def __get__(self, obj: Any, owner: type) -> Callable[P, R]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        bind, execute, spec = self.op.bind, obj.execute, obj.spec
        return _method(self, lambda *args, **kwargs: execute(bind(spec, *args, **kwargs)))


class AsyncSessionOperation(Generic[P, R]):
    """An async session method: the operation, with the handle's `session`."""

    def __init__(self, op: Callable[Concatenate[SessionSpec, P], Operation[R]]) -> None:
        self.op = cast("type[Operation[R]]", op)
        self.signature = _without_session(self.op.signature())
        self.__doc__ = self.op.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> AsyncSessionOperation[P, R]: ...
    @overload
    def __get__(self, obj: Any, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        bind, execute, spec = self.op.bind, obj.execute, obj.spec

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await execute(bind(spec, *args, **kwargs))

        return _method(self, call)
