"""The local transport: operations of the table run as engine plans over a backend.

One sync and one async driver (`polymem._plan`) run every plan; a step is a
backend call, an embedding or a plug-in call. The async driver awaits a natively
async backend (psycopg, redis.asyncio) and runs anything else in a worker
thread, so the event loop never blocks on SQLite or on the embedding model.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from . import operations as ops
from ._backend import (
    AnyRecordStore,
    AnySessionStore,
    AsyncRecordStore,
    AsyncSessionStore,
    Backend,
    RecordStore,
    SessionStore,
)
from ._engine import Engine, Op, Plan, SessionSpec, Step, check_label
from ._errors import NotSupportedError, StoreClosedError
from ._models import ImportReport
from ._plan import adrive, drive
from ._protocols import Embedder
from ._snapshot import export_plan, import_plan
from ._storage import Batch, Flush, ImportRows, SessionList, Stats, StorageOp

R = TypeVar("R")


def engine_spec(spec: ops.SessionSpec) -> SessionSpec:
    """The engine's form of a session handle's settings."""
    ttl = None if spec.ttl is None else timedelta(seconds=spec.ttl)
    return SessionSpec(spec.session_id, spec.user_id, spec.agent_id, spec.max_tokens, ttl, spec.overflow,
                       spec.keep_last)


def _single(op: Step) -> Plan:
    return (yield op)


def _session_plan(engine: Engine, op: Any) -> Plan:
    spec = engine_spec(op.session)
    if isinstance(op, ops.SessionAdd):
        return engine.session_add(spec, op.messages)
    if isinstance(op, ops.SessionTranscript):
        return engine.session_messages(spec, False)
    if isinstance(op, ops.SessionDelete):
        return engine.session_delete(spec)
    args = op.arguments()
    del args["session"]
    method = {"messages": "session_messages", "get_summary": "session_summary", "info": "session_info"}
    plan: Callable[..., Plan] = getattr(engine, method.get(op.name, f"session_{op.name}"))
    return plan(spec, **args)


def _service_only(engine: Engine, op: Any) -> Plan:
    raise NotSupportedError(f"{op.name} needs a polymem service (`polymem serve`): it reads the service's "
                            "audit log, which an embedded store does not keep")


_PLANS: dict[type[ops.Operation[Any]], Callable[[Engine, Any], Plan]] = {
    ops.ListMemories: lambda engine, op: engine.list(**op.arguments()),
    ops.SetStatus: lambda engine, op: engine.update(op.memory_id, status=op.status),
    ops.ExportSnapshot: lambda engine, op: export_plan(engine, op.target, op.user_id, op.progress,
                                                       op.include_quarantined),
    ops.ImportSnapshot: lambda engine, op: import_plan(engine, op.source, op.progress),
    ops.Stats: lambda engine, op: _single(Stats(engine.namespace)),
    ops.Flush: lambda engine, op: _single(Flush()),
    ops.Sessions: lambda engine, op: _single(SessionList(engine.namespace,
                                                      check_label(op.user_id, "user_id", optional=True))),
}


def _engine_method(engine: Engine, op: Any) -> Plan:
    """The engine's plan of the same name, called as the Python method was."""
    args = op.arguments()
    positional = [args.pop(k) for k in op.positional()]
    return cast(Plan, getattr(engine, op.name)(*positional, **args))


def plan_for(engine: Engine, op: ops.Operation[Any]) -> Plan:
    """The engine plan that carries out one operation of the table."""
    kind = type(op)
    make = _PLANS.get(kind)
    if make is None:
        make = _session_plan if isinstance(op, ops.SessionOperation) else \
            _service_only if op.service_only else _engine_method
        _PLANS[kind] = make
    return make(engine, op)


class LocalTransport:
    """Runs the operation table in this process: the engine's plans over a record store and
    a session store (the same object for SQLite and PostgreSQL; Redis for the sessions when
    `working_memory=` names it). Each step goes to the store whose contract owns its name."""

    def __init__(self, records: AnyRecordStore, engine: Engine, sessions: AnySessionStore | None = None) -> None:
        self.records = records
        self.sessions: AnySessionStore = sessions if sessions is not None else cast(AnySessionStore, records)
        self._split = sessions is not None and cast(object, sessions) is not records
        self.engine = engine
        engine.language = records.language  # full text is analysed in the store's language
        self._closed = False
        self._twin: LocalTransport | None = None

    @property
    def backend(self) -> Backend:
        """The record store (with the sessions too, unless they live in Redis)."""
        return cast(Backend, self.records)

    @property
    def split(self) -> bool:
        """True when the sessions live in a store of their own."""
        return self._split

    @property
    def url(self) -> str:
        from ._memory import with_namespace

        return with_namespace(self.records.url, self.engine.namespace)

    @property
    def namespace(self) -> str:
        return self.engine.namespace

    @property
    def embedder(self) -> Embedder | None:
        return self.engine.embedder

    @property
    def closed(self) -> bool:
        return self._closed

    def now(self) -> datetime:
        return self.engine.clock()

    def local(self) -> LocalTransport:
        return self

    def sync_twin(self) -> LocalTransport:
        """A transport on the same data that sync code can drive (the same one unless a store is async)."""
        if not any(isinstance(s, (AsyncRecordStore, AsyncSessionStore)) for s in (self.records, self.sessions)):
            return self
        if self._twin is None or self._twin.closed:
            from ._memory import make_backend, make_session_store

            self._twin = LocalTransport(make_backend(self.records.url), self.engine,
                                        make_session_store(self.sessions.url) if self.split else None)
        return self._twin

    def _target(self, op: Op, asynchronous: bool = False) -> Callable[..., Any]:
        if self._closed:
            raise StoreClosedError("the store is closed")
        if op.target == "embed":
            assert self.engine.embedder is not None
            return self.engine.embedder.embed
        assert op.func is not None
        return op.func

    def _spanning(self, op: StorageOp, asynchronous: bool = False) -> Callable[..., Any] | None:
        """The step that does `op` when its work spans both stores (the sessions living apart)."""
        if not self.split:
            return None
        if isinstance(op, ImportRows):
            return self._asplit_import_rows if asynchronous else self._split_import_rows
        return self._split_stats if isinstance(op, Stats) else None

    # Not one transaction: the records are imported first, then the sessions.
    def _split_import_rows(self, namespace: str, rows: Sequence[dict[str, Any]],
                           sessions: Sequence[dict[str, Any]], now: datetime) -> ImportReport:
        records, store = cast(RecordStore, self.records), cast(SessionStore, self.sessions)
        report = records.import_rows(namespace, rows, [], now)
        report.sessions = store.import_sessions(namespace, sessions, now)
        return report

    async def _asplit_import_rows(self, namespace: str, rows: Sequence[dict[str, Any]],
                                  sessions: Sequence[dict[str, Any]], now: datetime) -> ImportReport:
        report: ImportReport = await _maybe_await(self.records.import_rows(namespace, rows, [], now))
        report.sessions = await _maybe_await(self.sessions.import_sessions(namespace, sessions, now))
        return report

    def _split_stats(self, namespace: str) -> dict[str, Any]:
        out = dict(self.records.stats(namespace))
        out["sessions"] = len(self.sessions.session_list(namespace, None))
        out["working_memory"] = "redis"
        return out

    def _store(self, op: StorageOp) -> AnyRecordStore | AnySessionStore:
        if self._closed:
            raise StoreClosedError("the store is closed")
        return self.sessions if op.sessions else self.records

    def _parts(self, batch: Batch) -> builtins.list[tuple[AnyRecordStore | AnySessionStore, Batch]]:
        """Who applies a batch: the one store that owns it, or, when its operations belong to two
        stores (records in PostgreSQL, sessions in Redis), each its part: the records first, then the
        sessions, each all-or-nothing but the two not one transaction (see `Engine.session_end`)."""
        if self._closed:
            raise StoreClosedError("the store is closed")
        if not self.split or batch.records:
            return [(self.records, batch)]
        if batch.sessions:
            return [(self.sessions, batch)]
        return [(self.records, Batch(*(op for op in batch.ops if not op.sessions))),
                (self.sessions, Batch(*(op for op in batch.ops if op.sessions)))]

    @staticmethod
    def _merge(batch: Batch, parts: builtins.list[tuple[Batch, Any]]) -> builtins.list[Any]:
        """The results of a split batch, in the batch's order."""
        if len(parts) == 1:
            only: builtins.list[Any] = parts[0][1]
            return only
        by_op = {id(op): result for part, results in parts for op, result in zip(part.ops, results)}
        return [by_op[id(op)] for op in batch.ops]

    def _step(self, op: Step) -> Any:
        if isinstance(op, Batch):
            return self._merge(op, [(part, store.apply(part)) for store, part in self._parts(op)])
        if isinstance(op, StorageOp):
            spanning = self._spanning(op)
            return spanning(*op.args()) if spanning is not None else op.run(self._store(op))
        return self._target(op)(*op.args, **op.kwargs)

    async def _astep(self, op: Step) -> Any:
        if isinstance(op, Batch):
            return self._merge(op, [(part, await _arun(store, store.apply, part)) for store, part in self._parts(op)])
        if isinstance(op, StorageOp):  # a coroutine method is awaited here, a plain one runs in a thread
            if (spanning := self._spanning(op, asynchronous=True)) is not None:
                result = spanning(*op.args())
                return await result if inspect.isawaitable(result) else result
            store = self._store(op)
            if inspect.iscoroutinefunction(getattr(store, op.method)):
                return await op.run(store)
            return await _in_thread(op.run, store)
        target = self._target(op, asynchronous=True)
        if op.target == "call":  # a plug-in's async twin (aextract, asummarize…) runs on this loop
            twin = getattr(getattr(target, "__self__", None), "a" + getattr(target, "__name__", ""), None)
            target = twin if inspect.iscoroutinefunction(twin) else target
        if inspect.iscoroutinefunction(target):
            return await target(*op.args, **op.kwargs)
        return await _in_thread(target, *op.args, **op.kwargs)

    def _lock(self, op: ops.Operation[Any]) -> Any:
        """Consolidation runs under a cross-instance lock: the session store's where it has one
        (Redis), else the record store's (PostgreSQL)."""
        lock = getattr(self.sessions, "consolidation_lock", None) or getattr(self.records, "consolidation_lock", None)
        return lock(self.namespace) if isinstance(op, ops.Consolidate) and lock is not None else nullcontext()

    def execute(self, op: ops.Operation[R]) -> R:
        if self._closed:
            raise StoreClosedError("the store is closed")
        with self._lock(op):
            return cast(R, drive(plan_for(self.engine, op), self._step))

    async def aexecute(self, op: ops.Operation[R]) -> R:
        if self._closed:
            raise StoreClosedError("the store is closed")
        held = self._lock(op)
        if hasattr(held, "__aenter__"):
            async with held:
                return cast(R, await adrive(plan_for(self.engine, op), self._astep))
        with held:
            return cast(R, await adrive(plan_for(self.engine, op), self._astep))

    def _stores(self) -> builtins.list[AnyRecordStore | AnySessionStore]:
        return [self.records, self.sessions] if self.split else [self.records]

    def close(self) -> None:
        if not self._closed:
            try:
                self.records.close()
            finally:
                if self.split:
                    self.sessions.close()
            self._closed = True

    async def aclose(self) -> None:
        if self._twin is not None:
            await _in_thread(self._twin.close)
        if not self._closed:
            for store in self._stores():
                close = store.close
                await (close() if inspect.iscoroutinefunction(close) else _in_thread(close))
            self._closed = True


async def _arun(store: object, func: Callable[..., Any], *args: Any) -> Any:
    """`func(*args)` awaited on this loop for a natively async store, else in a worker thread."""
    if isinstance(store, (AsyncRecordStore, AsyncSessionStore)):
        return await func(*args)
    return await _in_thread(func, *args)


async def _in_thread(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`func` in a worker thread of the running loop. asyncio is imported here, where a loop already
    runs: a synchronous process (a CLI call) never imports it."""
    import asyncio

    return await asyncio.to_thread(func, *args, **kwargs)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
