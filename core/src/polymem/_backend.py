"""The storage contract every backend implements (SQLite today; PostgreSQL next).

The engine (`_engine.py`) holds every decision about scoring, recall and
consolidation; a backend only stores, filters and returns candidates. All
methods are synchronous and thread-safe; `AsyncMemory` drives them from a
worker thread, and a natively async backend implements the same names as
coroutines.
"""

from __future__ import annotations

import builtins
import logging
import math
import queue
import threading
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from ._errors import StoreClosedError
from ._models import ImportReport, MemoryRecord, Message, SessionInfo
from ._text import DEFAULT_LANGUAGE
from ._time import from_iso

if TYPE_CHECKING:
    from ._storage import Batch, Insert, ListRecords, SessionTouch, Update

log = logging.getLogger("polymem")

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# Where a keyset page of one user's active records ended: (created_at, row id) as the backend stores them.
PageCursor = tuple[Any, int]


@dataclass(slots=True)  # not frozen: a frozen dataclass takes 1.6 us to make, this one 0.5 (~200 per recall)
class Candidate:
    """A memory found by a search, with its raw similarity and text rank.

    A backend may return the full `record`, or leave it None and fill in only
    the fields scoring needs; the engine then fetches full records for the
    final top-k alone (decoding 200 records per recall costs more than the search).
    Such a candidate may also carry its `content` or its `indexed_terms`, which the
    calibration of text matches reads (None: the engine fetches the records of those
    it needs and analyses their contents), and `full`, which makes its record from
    what the search read (None: fetched).
    Its times are microseconds since the epoch (`created_us`, `accessed_us`), as
    stores keep them: a recall scores ~200 candidates by their age (`age_seconds`)
    and orders ~30 by their `created_at`, made when first read.
    """

    record: MemoryRecord | None
    similarity: float | None
    text_rank: float | None
    memory_id: str = ""
    importance: float = 0.0
    category: str = ""
    created_us: int = 0
    accessed_us: int | None = None
    access_count: int = 0
    content: str | None = None
    full: Callable[[], MemoryRecord] | None = field(default=None, repr=False, compare=False)
    # the stored row says the request's classifier (`SearchRequest.screened_by`) screened this content
    screened: bool = False
    # its content's full-text terms as the store indexed them, joined by spaces (None: not read)
    indexed_terms: str | None = None
    _created: datetime | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def created_at(self) -> datetime:
        if self._created is None:
            self._created = _EPOCH + timedelta(0, 0, self.created_us)  # as `from_micros`
        return self._created

    @property
    def last_accessed_at(self) -> datetime | None:
        return None if self.accessed_us is None else _EPOCH + timedelta(0, 0, self.accessed_us)

    def age_seconds(self, now_us: int) -> float:
        """Seconds from the last access (or the creation) to `now_us`: the very float of
        `(now - (last_accessed_at or created_at)).total_seconds()` (both divide whole
        microseconds by 10**6, correctly rounded), without making either datetime."""
        return (now_us - (self.created_us if self.accessed_us is None else self.accessed_us)) / 1_000_000

    @property
    def scored(self) -> Any:
        """What scoring reads (importance, category, times, access count)."""
        return self.record if self.record is not None else self

    @property
    def id(self) -> str:
        return self.record.memory_id if self.record is not None else self.memory_id

    @property
    def text(self) -> str | None:
        """The memory's content, when the search read it (None: not read)."""
        return self.record.content if self.record is not None else self.content


@dataclass(frozen=True)
class SearchRequest:
    """Everything a backend needs to gather recall candidates inside its filters."""

    namespace: str
    user_id: str | None
    agent_id: str | None
    category: str | None
    filter: dict[str, Any] | None
    query_vector: np.ndarray | None
    model_id: str | None
    terms: tuple[str, ...]
    now: datetime
    limit: int
    # Given the candidates' cosines and text ranks (NaN where none), and what their live scores
    # are made of where the backend knows it without reading their rows (`LiveInputs`, or None),
    # which of them the recall can use; a backend may leave the others out without reading
    # their rows (None: all).
    worth_reading: Callable[[np.ndarray, np.ndarray, LiveInputs | None], np.ndarray] | None = None
    # The fingerprint of the store's classifier (None: none): a backend keeping each memory's
    # screening marks the candidates it screened (`Candidate.screened`), which the read guard then
    # need not classify again.
    screened_by: str | None = None


@dataclass(frozen=True)
class LiveInputs:
    """What the live scores of a search's candidates are made of, one entry per candidate:
    seconds since the last access (or the creation), NaN where the backend does not know them;
    categories (None where unknown); access counts; base importances."""

    ages: np.ndarray
    categories: Sequence[str | None]
    access_counts: np.ndarray
    importances: np.ndarray


# Beside a vector search, the full-text search leaves out a query term held by more than
# `MAX_TERM_DOCS` memories, or by more than `COMMON_TERM_SHARE` of them when that is more
# than `COMMON_TERM_DOCS`: ranking every row that holds a term costs milliseconds per thousand
# rows, and a term that common tells the rows little apart (BM25's weight of a term in a tenth
# of the rows is 2.2, in half of them 0); small stores keep every term, they are cheap to rank.
MAX_TERM_DOCS = 5000
COMMON_TERM_DOCS = 1000
COMMON_TERM_SHARE = 0.1


def selective_terms(terms: Sequence[str], docs: Mapping[str, int], rows: int, *, with_vector: bool) -> list[str]:
    """The query terms a full-text search should match, given how many of the `rows` memories
    hold each (`docs`).

    Terms held by no memory drop out, and so do terms held by more than `MAX_TERM_DOCS`, or, when
    a vector search runs too, by more than a share of the rows (see `MAX_TERM_DOCS`); with no
    vector search and only common terms, the rarest one stays."""
    present = [t for t in dict.fromkeys(terms) if docs.get(t)]
    common = MAX_TERM_DOCS
    if with_vector:
        common = min(MAX_TERM_DOCS, max(COMMON_TERM_DOCS, int(rows * COMMON_TERM_SHARE)))
    selective = [t for t in present if docs[t] <= common]
    if not selective and not with_vector and present:
        selective = [min(present, key=lambda t: docs[t])]
    return selective


def bm25_idf(rows: int, with_term: int) -> float:
    """The inverse document frequency BM25 (FTS5's bm25()) weighs a term by, when `with_term` of
    `rows` memories hold it; `explain` reports it as a matched term's weight."""
    odds = (rows - with_term + 0.5) / (with_term + 0.5)  # a cached count may lag: never log(<= 0)
    return math.log(odds) if odds > 1 else 1e-6


def bm25_ranks(documents: Sequence[Sequence[str]], query: Sequence[str], k1: float = 1.2,
               b: float = 0.75) -> dict[int, float]:
    """BM25 of each document (by index) holding a query term, relative to the best one, as the
    stores' full-text searches rank (FTS5's bm25() figures): for documents no index holds."""
    wanted = set(query)
    if not documents or not wanted:
        return {}
    counts = [Counter(t for t in doc if t in wanted) for doc in documents]
    docs = Counter(t for c in counts for t in c)
    idf = {t: bm25_idf(len(documents), n) for t, n in docs.items()}
    scores = bm25_scores(documents, idf, k1, b)
    best = max(scores.values(), default=0.0)
    return {i: (score / best if best > 0 else 1.0) for i, score in scores.items()}


def bm25_scores(documents: Sequence[Sequence[str]], idf: Mapping[str, float], k1: float = 1.2,
                b: float = 0.75) -> dict[int, float]:
    """BM25 of each document (by index) holding a term of `idf` (the terms searched, with their
    weights), lengths relative to these documents' average."""
    average = sum(len(d) for d in documents) / len(documents) if documents else 1.0
    scores = {}
    for i, doc in enumerate(documents):
        tf = Counter(t for t in doc if t in idf)
        if tf:
            norm = k1 * (1 - b + b * len(doc) / (average or 1.0))
            scores[i] = sum(idf[t] * n * (k1 + 1) / (n + norm) for t, n in tf.items())
    return scores


def version_at(versions: Iterable[dict[str, Any]], at: datetime) -> MemoryRecord | None:
    """The version of one memory current at `at` (the last one written by then), or None when the
    memory did not exist yet. `versions` are its stored versions as dicts, in any order."""
    best: dict[str, Any] | None = None
    for version in versions:
        written = from_iso(version["updated_at"], "updated_at")
        if written is not None and written <= at and (best is None or version["version"] > best["version"]):
            best = version
    return None if best is None else MemoryRecord.from_dict(best)


Changed = dict[str, tuple[str, Any, "str | None"]]
"""Memories written since a moment: id -> (present content, present stored vector, its model)."""


PastVectors = Mapping[tuple[str, int], tuple[Any, "str | None"]]
"""The vectors stored with past versions: (memory_id, version) -> (stored vector, its model)."""


def versions_then(wanted: Sequence[str], versions: Mapping[str, Sequence[dict[str, Any]]], changed: Changed,
                  at: datetime, model_id: str | None, decode: Callable[[Any], np.ndarray],
                  past_vectors: PastVectors | None = None) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
    """`as_of`'s memories that changed (or were deleted) since `at`: each in its version of `at`
    (those not yet saved then left out), with the vector of `model_id` stored with that version,
    else the present one where that version's content is still the present one (`decode` turns
    a stored vector into an array); None when neither is."""
    out: builtins.list[tuple[MemoryRecord, np.ndarray | None]] = []
    for memory_id in wanted:
        past = version_at(versions.get(memory_id, ()), at)
        if past is None:
            continue
        kept, kept_model = (past_vectors or {}).get((memory_id, past.version), (None, None))
        content, blob, model = changed.get(memory_id, (None, None, None))
        if kept is not None and model_id is not None and kept_model == model_id:
            out.append((past, decode(kept)))
        elif blob is not None and model == model_id and content == past.content:
            out.append((past, decode(blob)))
        else:
            out.append((past, None))
    return out


# Recall bonuses arriving within this long of each other are written in one transaction.
REINFORCE_WINDOW_S = 0.1

Item = TypeVar("Item")


class Bookkeeping(Generic[Item]):
    """Recall bonuses (access counts, last access, importance) written off the read path by one
    background thread; those of recalls in quick succession go into one `write(batch)`: a
    transaction per recall cost a busy agent ~4 ms of every recall (SQLite)."""

    def __init__(self, write: Callable[[builtins.list[Item]], None], name: str) -> None:
        self._write = write
        self._queue: queue.Queue[Item | None] = queue.Queue()
        self._pending = 0
        self._pending_cv = threading.Condition()
        self._flush_requested = threading.Event()
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    def put(self, item: Item) -> None:
        with self._pending_cv:
            self._pending += 1
        self._queue.put(item)

    def flush(self) -> None:
        """Write what is queued now and wait until it is written."""
        self._flush_requested.set()
        with self._pending_cv:
            self._pending_cv.wait_for(lambda: self._pending == 0, timeout=60)

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._worker.join(timeout=10)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._flush_requested.wait(REINFORCE_WINDOW_S)
            self._flush_requested.clear()
            batch = [item]
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.append(more)
            try:
                self._write(batch)
            except StoreClosedError:
                pass
            except Exception:  # bookkeeping must never kill the worker: these bonuses are lost, no more
                log.warning("polymem: %d recall bonuses could not be written", len(batch), exc_info=True)
            finally:
                with self._pending_cv:
                    self._pending -= len(batch)
                    self._pending_cv.notify_all()


@dataclass(frozen=True)
class NewRecord:
    """A record to insert, with its vector and the keys that make saves idempotent."""

    record: MemoryRecord
    vector: np.ndarray | None
    content_hash: str
    idempotency_key: str | None
    terms: tuple[str, ...]
    screened: str | None = None  # the fingerprint of the classifier that screened the content (None: none did)


class RecordStore(ABC):
    """Long-term memory: records, their versions, vectors and full text."""

    url: str
    language: str = DEFAULT_LANGUAGE  # the one its full text is analysed in (`_text.terms`), from its metadata

    @abstractmethod
    def apply(self, batch: Batch) -> builtins.list[Any]:
        """Apply a batch of storage operations all-or-nothing, in one transaction; their results."""

    @abstractmethod
    def insert(self, op: Insert) -> builtins.list[tuple[MemoryRecord, bool]]:
        """Insert records; an existing one with the same idempotency key, or the same
        content hash in the same scope, is refreshed and returned instead (False)."""

    @abstractmethod
    def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]: ...

    @abstractmethod
    def list(self, op: ListRecords) -> builtins.list[MemoryRecord]: ...

    @abstractmethod
    def update(self, op: Update) -> MemoryRecord:
        """Write a new version (compare-and-set on `version` when expected_version is given)."""

    @abstractmethod
    def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> bool:
        """Take a memory out of the store's present, keeping a tombstone (deleted at `now`) and its
        versions, so `as_of` still sees it before then; False if there was no such memory."""

    @abstractmethod
    def purge(self, namespace: str, memory_id: str) -> bool:
        """Remove a memory, live or deleted, with every version and its tombstone, for good."""

    @abstractmethod
    def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
              model_id: str | None, changed_only: bool = False) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
        """The memories of the namespace (of one user, or these ids) as they stood at `at`: each one
        created by then and not deleted by then, in its version current then, with its stored vector
        of `model_id` when that vector is of this version's content (else None). With
        `changed_only`, only those written or deleted since `at` (the others are as they are now)."""

    @abstractmethod
    def written_since(self, namespace: str, at: datetime, user_id: str | None) -> builtins.list[str]:
        """The ids of the live memories of the namespace (of one user) written after `at`."""

    @abstractmethod
    def history(self, namespace: str, memory_ids: Sequence[str],
                model_id: str | None) -> dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]:
        """Every version of these memories, oldest first (a deleted memory's too, until it is
        purged), each with its vector of `model_id` where one is kept (None: none asked)."""

    @abstractmethod
    def search(self, request: SearchRequest) -> builtins.list[Candidate]: ...

    @abstractmethod
    def document_frequencies(self, namespace: str, terms: Sequence[str],
                             user_id: str | None = None) -> tuple[int, dict[str, int]]:
        """(memories in the full-text index, how many hold each term), as the search weighs terms;
        with `user_id`, of that user's memories where the store keeps them apart (else the index's),
        leaving out the terms no memory holds."""

    @abstractmethod
    def count_foreign_vectors(self, namespace: str, model_id: str | None) -> int:
        """Active records whose vector is missing or from another model."""

    @abstractmethod
    def blocked_sources(self, namespace: str) -> dict[str, dict[str, Any]]:
        """The namespace's quarantined sources: source → {source, reason, blocked_at, blocked_by}."""

    @abstractmethod
    def block_source(self, namespace: str, source: str, reason: str | None, actor: str | None,
                     now: datetime, blocked: bool) -> bool:
        """Quarantine `source` (or lift its quarantine with `blocked=False`); True if that changed anything."""

    @abstractmethod
    def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None:
        """Record accesses off the read path (applied in the background)."""

    @abstractmethod
    def flush(self) -> None:
        """Wait until background bookkeeping is written."""

    @abstractmethod
    def active_users(self, namespace: str) -> builtins.list[str | None]:
        """The users (None: memories without one) that have active memories in `namespace`."""

    @abstractmethod
    def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                    limit: int) -> tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]:
        """Up to `limit` of the user's active records after `after`, oldest first (ties: first written
        first), each with its vector if it is of `model_id`; and the cursor of the last one (None if none)."""

    @abstractmethod
    def pending_reembed(self, namespace: str | None, model_id: str, limit: int,
                        missing_only: bool = False, after: str | None = None) -> builtins.list[tuple[str, str]]:
        """(memory_id, content) of records without a vector of `model_id`, by memory_id, the first
        `limit` after `after` (None: from the first); `missing_only`: active records without any
        vector (those of another model, and inactive ones, are left out)."""

    @abstractmethod
    def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None:
        """Store the vectors of `model_id` of these memories (memory_id, vector) of the namespace."""

    @abstractmethod
    def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]], model_id: str) -> None:
        """Store these vectors of `model_id` with these past versions (memory_id, version, vector),
        each only where its version has no vector yet (versions kept before they had one)."""

    @abstractmethod
    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> builtins.list[dict[str, Any]]: ...

    @abstractmethod
    def export_tombstones(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        """The deleted, unpurged memories of the namespace (of one user), oldest deletion first:
        {"memory_id", "user_id", "deleted_at" (ISO-8601), "versions" (dicts, oldest first)}."""

    @abstractmethod
    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime) -> ImportReport:
        """Import snapshot rows; `sessions` only when this store holds the sessions too (a
        `Backend`: one transaction for both), else the transport passes none. A row with a
        `deleted_at` is a deleted memory: its versions and tombstone are stored, no live row
        (skipped, as a duplicate, when the namespace knows its id already)."""

    @abstractmethod
    def stats(self, namespace: str) -> dict[str, Any]: ...

    def get_by_keys(self, namespace: str, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        """The records saved with these idempotency keys, whatever their status (missing ones left out)."""
        raise NotImplementedError(f"{type(self).__name__} cannot look memories up by key")

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]:
        """The stored vectors of `model_id` for these memories (missing ones left out)."""
        raise NotImplementedError(f"{type(self).__name__} cannot read vectors back")

    @abstractmethod
    def close(self) -> None: ...


class SessionStore(ABC):
    """Working memory: sessions, their transcripts, windows and summaries.

    A store may also offer `consolidation_lock(namespace, *, timeout=None)`, a context
    manager held across instances while one consolidates (PostgreSQL, Redis)."""

    url: str

    @abstractmethod
    def apply(self, batch: Batch) -> builtins.list[Any]:
        """Apply a batch of session operations all-or-nothing; their results."""

    @abstractmethod
    def session_touch(self, op: SessionTouch) -> None: ...

    @abstractmethod
    def session_info(self, namespace: str, session_id: str) -> SessionInfo | None: ...

    @abstractmethod
    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]: ...

    @abstractmethod
    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None: ...

    @abstractmethod
    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> builtins.list[tuple[Message, int]]: ...

    @abstractmethod
    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int: ...

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Delete messages from the transcript itself (not just the window)."""
        raise NotImplementedError(f"{type(self).__name__} cannot delete single messages")

    @abstractmethod
    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None: ...

    @abstractmethod
    def session_delete(self, namespace: str, session_id: str) -> bool: ...

    @abstractmethod
    def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]: ...

    @abstractmethod
    def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]: ...

    @abstractmethod
    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        """Import snapshot sessions (an existing session is left alone); returns how many were new."""

    @abstractmethod
    def close(self) -> None: ...


class Backend(RecordStore, SessionStore):
    """Records and sessions in one store (SQLite, memory://, PostgreSQL)."""


class AsyncRecordStore(ABC):
    """`RecordStore` with coroutine methods (psycopg's async pool); `stats`, `flush` and `close`
    stay callable from a worker thread, `aflush` is the coroutine twin of `flush`."""

    url: str
    language: str = DEFAULT_LANGUAGE  # as `RecordStore.language`

    @abstractmethod
    async def apply(self, batch: Batch) -> builtins.list[Any]: ...

    @abstractmethod
    async def insert(self, op: Insert) -> builtins.list[tuple[MemoryRecord, bool]]: ...

    @abstractmethod
    async def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]: ...

    @abstractmethod
    async def list(self, op: ListRecords) -> builtins.list[MemoryRecord]: ...

    @abstractmethod
    async def update(self, op: Update) -> MemoryRecord: ...

    @abstractmethod
    async def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> bool: ...

    @abstractmethod
    async def purge(self, namespace: str, memory_id: str) -> bool: ...

    @abstractmethod
    async def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
                    model_id: str | None, changed_only: bool = False,
                    ) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]: ...

    @abstractmethod
    async def written_since(self, namespace: str, at: datetime, user_id: str | None) -> builtins.list[str]: ...

    @abstractmethod
    async def history(self, namespace: str, memory_ids: Sequence[str],
                      model_id: str | None) -> dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]: ...

    @abstractmethod
    async def search(self, request: SearchRequest) -> builtins.list[Candidate]: ...

    @abstractmethod
    def document_frequencies(self, namespace: str, terms: Sequence[str],
                             user_id: str | None = None) -> tuple[int, dict[str, int]]: ...

    @abstractmethod
    async def count_foreign_vectors(self, namespace: str, model_id: str | None) -> int: ...

    @abstractmethod
    async def blocked_sources(self, namespace: str) -> dict[str, dict[str, Any]]: ...

    @abstractmethod
    async def block_source(self, namespace: str, source: str, reason: str | None, actor: str | None,
                           now: datetime, blocked: bool) -> bool: ...

    @abstractmethod
    async def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None: ...

    @abstractmethod
    def flush(self) -> None: ...

    @abstractmethod
    async def aflush(self) -> None: ...

    @abstractmethod
    async def active_users(self, namespace: str) -> builtins.list[str | None]: ...

    @abstractmethod
    async def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                          limit: int) -> tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]: ...

    @abstractmethod
    async def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]: ...

    async def get_by_keys(self, namespace: str, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        """The records saved with these idempotency keys, whatever their status (missing ones left out)."""
        raise NotImplementedError(f"{type(self).__name__} cannot look memories up by key")

    @abstractmethod
    async def pending_reembed(self, namespace: str | None, model_id: str, limit: int,
                              missing_only: bool = False, after: str | None = None) -> builtins.list[tuple[str, str]]: ...

    @abstractmethod
    async def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None: ...

    @abstractmethod
    async def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]],
                                   model_id: str) -> None: ...

    @abstractmethod
    async def export_page(self, namespace: str, user_id: str | None, after: int,
                          limit: int) -> builtins.list[dict[str, Any]]: ...

    @abstractmethod
    async def export_tombstones(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]: ...

    @abstractmethod
    async def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                          now: datetime) -> ImportReport: ...

    @abstractmethod
    def stats(self, namespace: str) -> dict[str, Any]: ...

    @abstractmethod
    def close(self) -> None: ...


class AsyncSessionStore(ABC):
    """`SessionStore` with coroutine methods (psycopg's async pool, redis.asyncio);
    `session_list`, `session_delete` and `close` stay callable from a worker thread."""

    url: str

    @abstractmethod
    async def apply(self, batch: Batch) -> builtins.list[Any]: ...

    @abstractmethod
    async def session_touch(self, op: SessionTouch) -> None: ...

    @abstractmethod
    async def session_info(self, namespace: str, session_id: str) -> SessionInfo | None: ...

    @abstractmethod
    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]: ...

    @abstractmethod
    async def session_append(self, namespace: str, session_id: str,
                             messages: Sequence[tuple[Message, int]]) -> None: ...

    @abstractmethod
    async def session_messages(self, namespace: str, session_id: str,
                               window_only: bool) -> builtins.list[tuple[Message, int]]: ...

    @abstractmethod
    async def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int: ...

    @abstractmethod
    async def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int: ...

    @abstractmethod
    async def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None: ...

    @abstractmethod
    def session_delete(self, namespace: str, session_id: str) -> bool: ...

    @abstractmethod
    async def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]: ...

    @abstractmethod
    async def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]: ...

    @abstractmethod
    async def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int: ...

    @abstractmethod
    def close(self) -> None: ...


class AsyncBackend(AsyncRecordStore, AsyncSessionStore):
    """Records and sessions in one natively async store (PostgreSQL on psycopg's async pool)."""


AnyRecordStore = RecordStore | AsyncRecordStore
AnySessionStore = SessionStore | AsyncSessionStore
