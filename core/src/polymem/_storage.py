"""Storage operations as typed values, and batches of them that a store applies as one transaction.

The engine's plans yield these (beside `Op`s for the steps not converted yet); the local
transport hands each to the store whose contract owns it (`RecordStore` or `SessionStore`).
A value's fields are in the order of the store method's parameters today, so a store that
drives positional plans (PostgreSQL's `Plans`, Redis's `RedisPlans`) unpacks it with `args()`.

`Batch(ops)` is applied all-or-nothing by the store that owns its operations: SQLite in one
`BEGIN IMMEDIATE` transaction, PostgreSQL (sync and async) in one transaction (rerun whole on a
serialization failure), Redis in one MULTI/EXEC. A batch whose operations belong to two
stores (records in PostgreSQL, sessions in Redis) is split by the transport; see `LocalTransport`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, ClassVar

import numpy as np

from ._backend import NewRecord
from ._models import Message


@dataclass(frozen=True)
class StorageOp:
    """One storage operation; `method` names the store method that carries it out."""

    method: ClassVar[str]
    sessions: ClassVar[bool] = False  # owned by the session store (else by the record store)
    takes_value: ClassVar[bool] = True  # the store method takes the value itself (else `args()`)

    def args(self) -> tuple[Any, ...]:
        """The fields, in order (the positional arguments of the store's plan or method)."""
        return tuple(getattr(self, f.name) for f in fields(self))

    def run(self, store: Any) -> Any:
        """Apply to `store` (a coroutine for an async store)."""
        method = getattr(store, self.method)
        return method(self) if self.takes_value else method(*self.args())


# -- records ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Insert(StorageOp):
    """Insert records; one with the same idempotency key, or the same content hash in the same
    scope, is refreshed and returned instead (False)."""

    method: ClassVar[str] = "insert"
    items: Sequence[NewRecord]
    now: datetime


@dataclass(frozen=True)
class ListRecords(StorageOp):
    """An exact lookup inside the filters, newest first."""

    method: ClassVar[str] = "list"
    namespace: str
    user_id: str | None = None
    agent_id: str | None = None
    category: str | None = None
    filter: dict[str, Any] | None = None
    status: str | None = "active"
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True)
class Update(StorageOp):
    """Write a new version (compare-and-set on `version` when `expected_version` is given); a new
    content comes with its hash, terms, and vector of `model_id` (or none)."""

    method: ClassVar[str] = "update"
    namespace: str
    memory_id: str
    changes: dict[str, Any]
    expected_version: int | None
    now: datetime
    vector: np.ndarray | None = None
    model_id: str | None = None
    content_hash: str | None = None
    terms: Sequence[str] | None = None


# -- sessions ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SessionTouch(StorageOp):
    """Create the session if it is new; set its last update and expiry."""

    method: ClassVar[str] = "session_touch"
    sessions: ClassVar[bool] = True
    namespace: str
    session_id: str
    user_id: str | None
    agent_id: str | None
    now: datetime
    expire_at: datetime | None = None


@dataclass(frozen=True)
class SessionAppend(StorageOp):
    method: ClassVar[str] = "session_append"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str
    messages: Sequence[tuple[Message, int]]


@dataclass(frozen=True)
class SessionSetSummary(StorageOp):
    method: ClassVar[str] = "session_set_summary"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str
    summary: str | None


@dataclass(frozen=True)
class SessionEvict(StorageOp):
    """Take messages out of the window (the transcript keeps them)."""

    method: ClassVar[str] = "session_evict"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str
    message_ids: Sequence[str]


@dataclass(frozen=True)
class SessionDelete(StorageOp):
    method: ClassVar[str] = "session_delete"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str


@dataclass(frozen=True)
class Batch:
    """Storage operations applied all-or-nothing, in order; the result is the list of theirs."""

    ops: tuple[StorageOp, ...]

    def __init__(self, *ops: StorageOp) -> None:
        object.__setattr__(self, "ops", tuple(ops))

    @property
    def sessions(self) -> bool:
        """True when every operation belongs to the session store."""
        return all(op.sessions for op in self.ops)

    @property
    def records(self) -> bool:
        """True when every operation belongs to the record store."""
        return not any(op.sessions for op in self.ops)
