"""Storage operations as typed values, and batches of them that a store applies as one transaction.

Every read and write the engine's plans make of a store is one of these values (the plans'
other steps are embeddings and plug-in calls); the local transport hands each to the store whose
contract owns it (`RecordStore` or `SessionStore`). A value's fields are in the order of the store
method's parameters, so a store method or a positional plan (PostgreSQL's `Plans`, Redis's
`RedisPlans`) takes it unpacked with `args()`, unless the method takes the value itself.

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

from ._backend import NewRecord, SearchRequest
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
    screened: str | None = None  # with a new content: the fingerprint of the classifier that screened it


@dataclass(frozen=True)
class GetRecords(StorageOp):
    """The current versions of these memories (missing ones left out)."""

    method: ClassVar[str] = "get"
    takes_value: ClassVar[bool] = False
    namespace: str
    memory_ids: Sequence[str]


@dataclass(frozen=True)
class GetByKeys(StorageOp):
    """The records saved with these idempotency keys, whatever their status."""

    method: ClassVar[str] = "get_by_keys"
    takes_value: ClassVar[bool] = False
    namespace: str
    keys: Sequence[str]


@dataclass(frozen=True)
class DeleteRecord(StorageOp):
    """Take a memory out of the present, keeping its tombstone and versions (False: no such memory)."""

    method: ClassVar[str] = "delete"
    takes_value: ClassVar[bool] = False
    namespace: str
    memory_id: str
    now: datetime | None = None


@dataclass(frozen=True)
class PurgeRecord(StorageOp):
    """Remove a memory, every version and its tombstone, for good."""

    method: ClassVar[str] = "purge"
    takes_value: ClassVar[bool] = False
    namespace: str
    memory_id: str


@dataclass(frozen=True)
class RecordsAsOf(StorageOp):
    """The memories (of one user, or these ids) as they stood at `at`, with their vectors then."""

    method: ClassVar[str] = "as_of"
    takes_value: ClassVar[bool] = False
    namespace: str
    at: datetime
    user_id: str | None
    memory_ids: Sequence[str] | None
    model_id: str | None
    changed_only: bool = False


@dataclass(frozen=True)
class WrittenSince(StorageOp):
    """The ids of the live memories (of one user) written after `at`."""

    method: ClassVar[str] = "written_since"
    takes_value: ClassVar[bool] = False
    namespace: str
    at: datetime
    user_id: str | None


@dataclass(frozen=True)
class RecordHistory(StorageOp):
    """Every version of these memories, oldest first, each with its vector of `model_id` where
    one is kept (None: no vectors); a memory neither live nor deleted is left out."""

    method: ClassVar[str] = "history"
    takes_value: ClassVar[bool] = False
    namespace: str
    memory_ids: Sequence[str]
    model_id: str | None = None


@dataclass(frozen=True)
class Search(StorageOp):
    """The candidates of a recall: by vector, by full text, or both."""

    method: ClassVar[str] = "search"
    takes_value: ClassVar[bool] = False
    request: SearchRequest


@dataclass(frozen=True)
class DocumentFrequencies(StorageOp):
    """(memories in the full-text index, how many hold each term); with `user_id`, of that user's memories."""

    method: ClassVar[str] = "document_frequencies"
    takes_value: ClassVar[bool] = False
    namespace: str
    terms: Sequence[str]
    user_id: str | None = None


@dataclass(frozen=True)
class CountForeignVectors(StorageOp):
    """How many active memories lack a vector of `model_id`."""

    method: ClassVar[str] = "count_foreign_vectors"
    takes_value: ClassVar[bool] = False
    namespace: str
    model_id: str | None


@dataclass(frozen=True)
class BlockedSources(StorageOp):
    """The namespace's quarantined sources."""

    method: ClassVar[str] = "blocked_sources"
    takes_value: ClassVar[bool] = False
    namespace: str


@dataclass(frozen=True)
class BlockSource(StorageOp):
    """Quarantine a source, or lift its quarantine (`blocked=False`); True if that changed anything."""

    method: ClassVar[str] = "block_source"
    takes_value: ClassVar[bool] = False
    namespace: str
    source: str
    reason: str | None
    actor: str | None
    now: datetime
    blocked: bool


@dataclass(frozen=True)
class Reinforce(StorageOp):
    """Record accesses, off the read path."""

    method: ClassVar[str] = "reinforce"
    takes_value: ClassVar[bool] = False
    namespace: str
    bonuses: Sequence[tuple[str, float]]
    now: datetime


@dataclass(frozen=True)
class Flush(StorageOp):
    """Wait until background bookkeeping is written."""

    method: ClassVar[str] = "flush"
    takes_value: ClassVar[bool] = False


@dataclass(frozen=True)
class ActiveUsers(StorageOp):
    """The users (None: memories without one) with active memories in the namespace."""

    method: ClassVar[str] = "active_users"
    takes_value: ClassVar[bool] = False
    namespace: str


@dataclass(frozen=True)
class ActivePage(StorageOp):
    """Up to `limit` of one user's active memories after `after`, oldest first, with their vectors
    of `model_id` (or None); and the cursor of the last one."""

    method: ClassVar[str] = "active_page"
    takes_value: ClassVar[bool] = False
    namespace: str
    user_id: str | None
    model_id: str | None
    after: Any
    limit: int


@dataclass(frozen=True)
class PendingReembed(StorageOp):
    """(memory_id, content) of memories without a vector of `model_id`, in memory_id order after
    `after` (the last of the batch before: a re-embedding walks the memories once); `missing_only`:
    the active ones without any vector (those recall would search by text alone)."""

    method: ClassVar[str] = "pending_reembed"
    takes_value: ClassVar[bool] = False
    namespace: str | None
    model_id: str
    limit: int
    missing_only: bool = False
    after: str | None = None


@dataclass(frozen=True)
class SetVectors(StorageOp):
    """Store vectors of `model_id` for these memories."""

    method: ClassVar[str] = "set_vectors"
    takes_value: ClassVar[bool] = False
    namespace: str
    items: Sequence[tuple[str, np.ndarray]]
    model_id: str


@dataclass(frozen=True)
class KeepVersionVectors(StorageOp):
    """Give past versions that have no vector one of `model_id`: (memory_id, version, vector)."""

    method: ClassVar[str] = "keep_version_vectors"
    takes_value: ClassVar[bool] = False
    namespace: str
    items: Sequence[tuple[str, int, np.ndarray]]
    model_id: str


@dataclass(frozen=True)
class ReadVectors(StorageOp):
    """The stored vectors of `model_id` for these memories (missing ones left out)."""

    method: ClassVar[str] = "vectors"
    takes_value: ClassVar[bool] = False
    namespace: str
    memory_ids: Sequence[str]
    model_id: str


@dataclass(frozen=True)
class ExportPage(StorageOp):
    """A page of snapshot rows after row number `after`."""

    method: ClassVar[str] = "export_page"
    takes_value: ClassVar[bool] = False
    namespace: str
    user_id: str | None
    after: int
    limit: int


@dataclass(frozen=True)
class ExportTombstones(StorageOp):
    """The namespace's deleted memories (of one user) that are not purged: each one's id, user,
    deletion time and versions, for a snapshot."""

    method: ClassVar[str] = "export_tombstones"
    takes_value: ClassVar[bool] = False
    namespace: str
    user_id: str | None


@dataclass(frozen=True)
class ImportRows(StorageOp):
    """Import snapshot rows (and sessions, when the record store holds them too)."""

    method: ClassVar[str] = "import_rows"
    takes_value: ClassVar[bool] = False
    namespace: str
    rows: Sequence[dict[str, Any]]
    session_rows: Sequence[dict[str, Any]]
    now: datetime


@dataclass(frozen=True)
class Stats(StorageOp):
    """Counts of the namespace's memories and sessions."""

    method: ClassVar[str] = "stats"
    takes_value: ClassVar[bool] = False
    namespace: str


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
class SessionLookup(StorageOp):
    """A session's settings and counts, or None."""

    method: ClassVar[str] = "session_info"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str


@dataclass(frozen=True)
class SessionList(StorageOp):
    """The namespace's sessions (of one user)."""

    method: ClassVar[str] = "session_list"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    user_id: str | None


@dataclass(frozen=True)
class SessionMessages(StorageOp):
    """A session's messages with their token counts: the window's, or the whole transcript."""

    method: ClassVar[str] = "session_messages"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str
    window_only: bool


@dataclass(frozen=True)
class SessionForget(StorageOp):
    """Remove messages from the window and the transcript."""

    method: ClassVar[str] = "session_forget"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    session_id: str
    message_ids: Sequence[str]


@dataclass(frozen=True)
class SessionsExpired(StorageOp):
    """The ids of the sessions expired at `now`."""

    method: ClassVar[str] = "sessions_expired"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    now: datetime


@dataclass(frozen=True)
class ExportSessions(StorageOp):
    """The sessions of a snapshot (of one user)."""

    method: ClassVar[str] = "export_sessions"
    sessions: ClassVar[bool] = True
    takes_value: ClassVar[bool] = False
    namespace: str
    user_id: str | None


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
