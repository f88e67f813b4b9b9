"""The embedded default: one SQLite file (or an in-process database for `memory://`).

WAL, a busy timeout and `BEGIN IMMEDIATE` for every write make one file safe
for several processes. Vectors live as float32 BLOBs in the row and are
searched in process from a per-scope cache that follows other processes'
writes through a change sequence; full text is FTS5 over terms computed in
the application (see `_text.py`), with a scope token in each row so a
per-user search only scores that user's rows.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import hashlib
import heapq
import json
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import lru_cache
from itertools import islice, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlencode

import numpy as np

from ._ann import Indexes, ScopeIndex, Span
from ._backend import (
    COMMON_TERM_DOCS,
    Backend,
    Bookkeeping,
    Candidate,
    Changed,
    LiveInputs,
    NewRecord,
    PageCursor,
    SearchRequest,
    bm25_idf,
    log,
    selective_terms,
    versions_then,
)
from ._errors import (
    DimensionMismatchError,
    InvalidURLError,
    NotFoundError,
    ReadOnlyStoreError,
    StoreClosedError,
    StoreUnreadableError,
    VersionConflictError,
)
from ._filters import compile_filter, dumps, from_micros, to_micros
from ._models import ImportReport, MemoryRecord, Message, SessionInfo
from ._scan import APPROX_ROWS, PackedCodes, alongside, bounds, products, quantize, row_products, shortlist
from ._storage import Batch, Insert, ListRecords, SessionTouch, Update
from ._text import analyzer_id, check_language, language_of, terms
from ._time import to_iso

MIGRATIONS: builtins.list[str] = [
    # 1: records, versions, full text, change log
    """
    CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        memory_id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, session_id TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        importance REAL NOT NULL,
        entities TEXT NOT NULL DEFAULT '[]',
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        last_accessed_at INTEGER,
        access_count INTEGER NOT NULL DEFAULT 0,
        expire_at INTEGER,
        embedding_model TEXT,
        vector BLOB,
        version INTEGER NOT NULL DEFAULT 1,
        status TEXT NOT NULL DEFAULT 'active',
        idempotency_key TEXT,
        seq INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX memories_idempotency ON memories(namespace, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE INDEX memories_scope ON memories(namespace, user_id, status);
    CREATE INDEX memories_hash ON memories(namespace, content_hash);
    CREATE INDEX memories_seq ON memories(seq);
    CREATE TABLE memory_versions (
        memory_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (memory_id, version)
    );
    CREATE TABLE tombstones (row_id INTEGER NOT NULL, seq INTEGER NOT NULL);
    CREATE INDEX tombstones_seq ON tombstones(seq);
    CREATE VIRTUAL TABLE memory_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0');
    INSERT INTO meta(key, value) VALUES ('seq', '0');
    """,
    # 2: working memory
    """
    CREATE TABLE sessions (
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT, agent_id TEXT,
        summary TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expire_at INTEGER,
        PRIMARY KEY (namespace, session_id)
    );
    CREATE TABLE session_messages (
        rowid INTEGER PRIMARY KEY,
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        message TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        in_window INTEGER NOT NULL DEFAULT 1
    );
    CREATE INDEX session_messages_session ON session_messages(namespace, session_id, in_window);
    """,
    # 3: document frequencies, to leave very common terms out of full-text queries
    """
    CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab('memory_fts', 'row');
    """,
    # 4: scope tokens in their own column, outside BM25 (in the body they counted as matched
    # terms and favoured short memories); the rows are refilled by the analyzer check
    """
    DROP TABLE memory_fts_vocab;
    DROP TABLE memory_fts;
    CREATE VIRTUAL TABLE memory_fts USING fts5(scope, body, tokenize = 'unicode61 remove_diacritics 0');
    CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab('memory_fts', 'row');
    DELETE FROM meta WHERE key = 'analyzer';
    """,
    # 5: deleted memories keep a tombstone (and their versions) for `as_of`, until purged
    """
    CREATE TABLE IF NOT EXISTS memory_tombstones (
        memory_id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        user_id TEXT,
        deleted_at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS memory_tombstones_scope ON memory_tombstones(namespace, user_id, deleted_at);
    """,
    # 6: quarantined sources, kept with the memories so every process on the file honours them
    """
    CREATE TABLE IF NOT EXISTS blocked_sources (
        namespace TEXT NOT NULL,
        source TEXT NOT NULL,
        reason TEXT,
        blocked_at INTEGER NOT NULL,
        blocked_by TEXT,
        PRIMARY KEY (namespace, source)
    );
    """,
    # 7: a memory is known by (namespace, memory_id): the same id in two namespaces is two
    # independent memories (a namespace can be cloned by importing its snapshot; an id of another
    # namespace answers as an unknown one). Rebuilt tables keep every row and rowid (the full text
    # and the vector caches are keyed by rowid); versions take their memory's namespace.
    """
    CREATE TABLE memories_rekeyed (
        rowid INTEGER PRIMARY KEY,
        memory_id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, session_id TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        importance REAL NOT NULL,
        entities TEXT NOT NULL DEFAULT '[]',
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        last_accessed_at INTEGER,
        access_count INTEGER NOT NULL DEFAULT 0,
        expire_at INTEGER,
        embedding_model TEXT,
        vector BLOB,
        version INTEGER NOT NULL DEFAULT 1,
        status TEXT NOT NULL DEFAULT 'active',
        idempotency_key TEXT,
        seq INTEGER NOT NULL
    );
    INSERT INTO memories_rekeyed SELECT rowid, memory_id, namespace, user_id, agent_id, session_id, content,
        content_hash, category, source, importance, entities, metadata, created_at, updated_at, last_accessed_at,
        access_count, expire_at, embedding_model, vector, version, status, idempotency_key, seq FROM memories;
    CREATE TABLE memory_versions_rekeyed (
        namespace TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (namespace, memory_id, version)
    );
    INSERT INTO memory_versions_rekeyed SELECT COALESCE(
            (SELECT m.namespace FROM memories m WHERE m.memory_id = v.memory_id),
            (SELECT t.namespace FROM memory_tombstones t WHERE t.memory_id = v.memory_id),
            json_extract(v.record, '$.namespace'), ''),
        v.memory_id, v.version, v.record FROM memory_versions v;
    CREATE TABLE memory_tombstones_rekeyed (
        namespace TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        user_id TEXT,
        deleted_at INTEGER NOT NULL,
        PRIMARY KEY (namespace, memory_id)
    );
    INSERT INTO memory_tombstones_rekeyed SELECT namespace, memory_id, user_id, deleted_at FROM memory_tombstones;
    DROP TABLE memories;
    DROP TABLE memory_versions;
    DROP TABLE memory_tombstones;
    ALTER TABLE memories_rekeyed RENAME TO memories;
    ALTER TABLE memory_versions_rekeyed RENAME TO memory_versions;
    ALTER TABLE memory_tombstones_rekeyed RENAME TO memory_tombstones;
    CREATE UNIQUE INDEX memories_id ON memories(namespace, memory_id);
    CREATE UNIQUE INDEX memories_idempotency ON memories(namespace, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE INDEX memories_scope ON memories(namespace, user_id, status);
    CREATE INDEX memories_hash ON memories(namespace, content_hash);
    CREATE INDEX memories_seq ON memories(seq);
    CREATE INDEX memory_tombstones_scope ON memory_tombstones(namespace, user_id, deleted_at);
    """,
    # 8: the memories written since a moment, found without reading the scope (`as_of`)
    """
    CREATE INDEX IF NOT EXISTS memories_written ON memories(namespace, updated_at);
    """,
    # 9: consolidation reads one user's active memories in keyset pages, oldest first (the scope
    # index extended by created_at, which it replaces: every query using it uses this one alike)
    """
    CREATE INDEX IF NOT EXISTS memories_scope_created ON memories(namespace, user_id, status, created_at);
    DROP INDEX IF EXISTS memories_scope;
    """,
    # 10 (as_of2): a past version keeps the vector its row held (and that vector's model), so a
    # recall `as_of` does not embed an updated or deleted memory's older content again. Versions
    # kept before this have none: their content is embedded when a past recall needs it.
    """
    ALTER TABLE memory_versions ADD COLUMN vector BLOB;
    ALTER TABLE memory_versions ADD COLUMN vector_model TEXT;
    """,
    # 11: a recall's bonuses (access count, last access, importance) stamp the rows they change
    # with a count of their own, which moves without `seq`: a process keeping what live scores
    # are made of in memory reads again the rows stamped since it last looked (`_VectorCache.touch`)
    """
    ALTER TABLE memories ADD COLUMN accessed_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX IF NOT EXISTS memories_accessed ON memories(accessed_seq) WHERE accessed_seq > 0;
    INSERT OR IGNORE INTO meta(key, value) VALUES ('accessed_seq', '0');
    """,
    # 12: how many full-text rows hold each term, kept with the rows (`_count_terms`): one lookup
    # a term, where FTS5's vocabulary table reads the term's posting list (20k memories: 300 us for
    # a query's four rare words; 1M: ~2 ms for a word in one memory of eight). Filled from the
    # rows' bodies once this migration has run (`_migrate`).
    """
    CREATE TABLE IF NOT EXISTS memory_terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
    DROP TABLE IF EXISTS memory_fts_vocab;
    """,
    # 13: the fingerprint of the classifier that screened a memory's content on its way in (NULL:
    # none did, or the row came before this): a read by the same rules takes that verdict
    # instead of classifying the text again (`SearchRequest.screened_by`)
    """
    ALTER TABLE memories ADD COLUMN screened TEXT;
    """,
    # 14: the active memories without a vector, or with another model's (`_FOREIGN_ROWS`), found
    # through indexes: a process's first vector search read every row of the table for them
    # (100k memories: ~50 ms; 1M: ~0.5 s, from the OS's file cache). ~40 bytes a memory.
    """
    CREATE INDEX IF NOT EXISTS memories_vectorless ON memories(namespace) WHERE status = 'active' AND vector IS NULL;
    CREATE INDEX IF NOT EXISTS memories_model ON memories(embedding_model) WHERE status = 'active';
    """,
    # 15: the memories whose metadata declares a validity of their own (`valid_from`, `valid_to`),
    # which a `valid_at` recall or list reads in their version of that time, found through partial
    # indexes: each of those questions read every row of the scope for them (100k memories: ~75 ms).
    # The conditions are the SQL `compile_filter` makes of `{"metadata.<key>": {"$exists": True}}`,
    # as SQLite uses a partial index only for a query holding its condition.
    """
    CREATE INDEX IF NOT EXISTS memories_valid_from ON memories(namespace, user_id, created_at)
        WHERE json_extract(metadata, '$."valid_from"') IS NOT NULL;
    CREATE INDEX IF NOT EXISTS memories_valid_to ON memories(namespace, user_id, created_at)
        WHERE json_extract(metadata, '$."valid_to"') IS NOT NULL;
    """,
]

TERM_COUNTS_MIGRATION = 12  # the migration that adds `memory_terms` (filled by `_count_stored_terms`)

# The WAL is copied back into the database file off the write path after this many commits or
# changed rows (SQLite's own automatic checkpoint runs inside the commit that crosses 1,000
# pages, and its fsync cost a single save ~150 microseconds on average at 100k rows).
CHECKPOINT_COMMITS = 64
CHECKPOINT_CHANGES = 5_000
# A WAL that a large import grew is cut back to this size when it starts over.
WAL_SIZE_LIMIT = 64 << 20
# Pages in the WAL (4 KB each, 32 MB in all) beyond which the checkpointer makes it start over.
RESTART_FRAMES = 8192
# The file is read through a memory map up to this size (the rest, and the WAL, by read()): a
# recall reads ~300 scattered rows of `memories` (its candidates, the full-text matches' scope
# checks), each a system call and a page copy through SQLite's 2 MB page cache otherwise
# (20k memories: 1.18 ms for 200 rows by rowid, 0.44 ms mapped). The mapping's pages are the OS's
# file cache, shared by every process that reads the file. SQLite maps at most 2 GB (its
# SQLITE_MAX_MMAP_SIZE) whatever is asked: 1M memories are a 2.4 GB file, where mapping 2 GB
# rather than 1 read a recall's 100 candidate rows in 0.32 ms rather than 0.40.
MMAP_BYTES = 1 << 31

# `durability=` in the URL → `PRAGMA synchronous`. With WAL, NORMAL loses no commit when the
# process crashes, but the last commits before a power loss or OS crash may be lost; FULL syncs
# the WAL on every commit, so a commit that returned survives those too.
DURABILITY = {"normal": "NORMAL", "full": "FULL"}
# Primary result codes (`sqlite3.Error.sqlite_errorcode & 0xFF`) meaning the file is not a usable database.
_UNREADABLE = {11: "is corrupt or truncated", 26: "is not a database", 14: "cannot be opened"}
_READONLY = 8
_BUSY = 5  # SQLITE_BUSY: another connection holds the lock


@contextmanager
def _translated(url: str) -> Iterator[None]:
    """SQLite's errors about the file itself, as polymem's typed errors."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in _UNREADABLE:
            raise StoreUnreadableError(f"{url} {_UNREADABLE[code]} ({exc})") from exc
        if code == _READONLY:
            raise ReadOnlyStoreError(f"{url} may only be read: writes are refused ({exc})") from exc
        raise


def _only_readable(path: Path) -> bool:
    """An existing file this process may read but not write (or whose folder it cannot write, where
    SQLite must create the WAL's side files)."""
    if not path.is_file():
        return False
    writable = os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
    return not writable and os.access(path, os.R_OK)


_RECORD_COLUMNS = (
    "memory_id, namespace, user_id, agent_id, session_id, content, category, source, importance, entities, "
    "metadata, created_at, updated_at, last_accessed_at, access_count, expire_at, embedding_model, version, status"
)


@lru_cache(maxsize=4096)
def scope_token(namespace: str, user_id: str | None) -> str:
    """The full-text token every row of one (namespace, user) carries."""
    digest = hashlib.sha1(f"{namespace}\x00{user_id or ''}".encode()).hexdigest()[:16]
    return f"zs{digest}"


@lru_cache(maxsize=256)
def namespace_token(namespace: str) -> str:
    return "zn" + hashlib.sha1(namespace.encode()).hexdigest()[:16]


def fts_row(namespace: str, user_id: str | None, terms: Sequence[str]) -> tuple[str, str]:
    """The (scope, body) columns of a memory's full-text row."""
    return f"{namespace_token(namespace)} {scope_token(namespace, user_id)}", " ".join(terms)


fts5_idf = bm25_idf
"""The inverse document frequency FTS5's bm25() multiplies a term's share by (the scope's is
computed alike, so a scope holding every row ranks exactly as bm25() does)."""


def _varint(blob: bytes) -> int:
    """The first SQLite varint of `blob`."""
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def _row_to_record(row: Sequence[Any]) -> MemoryRecord:
    created = from_micros(row[11])
    updated = from_micros(row[12])
    assert created is not None and updated is not None
    entities, metadata = row[9], row[10]
    return MemoryRecord(
        memory_id=row[0], namespace=row[1], user_id=row[2], agent_id=row[3], session_id=row[4],
        content=row[5], category=row[6], source=row[7], importance=float(row[8]),
        # most memories have neither: no JSON to parse
        entities=() if entities is None or entities == "[]" else tuple(json.loads(entities)),
        metadata={} if metadata is None or metadata == "{}" else json.loads(metadata),
        created_at=created, updated_at=updated, last_accessed_at=from_micros(row[13]),
        access_count=int(row[14]), expire_at=from_micros(row[15]), embedding_model=row[16],
        version=int(row[17]), status=row[18],
    )


def _record_values(record: MemoryRecord) -> tuple[Any, ...]:
    return (
        record.memory_id, record.namespace, record.user_id, record.agent_id, record.session_id, record.content,
        record.category, record.source, record.importance, dumps(list(record.entities)), dumps(record.metadata),
        to_micros(record.created_at), to_micros(record.updated_at),
        None if record.last_accessed_at is None else to_micros(record.last_accessed_at), record.access_count,
        None if record.expire_at is None else to_micros(record.expire_at), record.embedding_model,
        record.version, record.status,
    )


def matching(records: Sequence[MemoryRecord], filter: dict[str, Any]) -> set[str]:
    """The ids of the records a recall/list filter keeps, by the very SQL the SQLite store runs
    (a table of these records in an in-memory database): for records that are no table's rows,
    such as the past versions `as_of` reads."""
    sql, params = compile_filter(filter)
    if not sql:
        return {r.memory_id for r in records}
    with sqlite3.connect(":memory:") as conn:
        conn.execute(f"CREATE TABLE m ({_RECORD_COLUMNS})")
        conn.executemany(f"INSERT INTO m VALUES ({', '.join('?' * 19)})", [_record_values(r) for r in records])
        return {row[0] for row in conn.execute(f"SELECT m.memory_id FROM m WHERE {sql}", params)}


def _dedupe_key(item: NewRecord) -> tuple[Any, ...]:
    """Inserts with the same key are the same write: by idempotency key if given, else by
    content hash within (namespace, user, agent)."""
    rec = item.record
    if item.idempotency_key is not None:
        return (rec.namespace, "key", item.idempotency_key)
    return (rec.namespace, "hash", item.content_hash, rec.user_id, rec.agent_id)


def _blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


_NEVER = np.iinfo(np.int64).max
_NOT_ACCESSED = np.iinfo(np.int64).min
# The columns of `_ScopeBlock.live`, what a row's live score is made of, in float64 (its
# microsecond times are exact below 2**53, and `_NOT_ACCESSED` is a power of two).
_IMPORTANCE, _CREATED, _ACCESSED, _COUNT = range(4)
_TOUCHED = np.array([_IMPORTANCE, _ACCESSED, _COUNT])  # the columns a recall's bonus changes (`_VectorCache.touch`)
# A row of `_CACHE_COLUMNS`: (rowid, namespace, user_id, agent_id, category, status, expire_at,
# embedding_model, vector, importance, created_at, last_accessed_at, access_count); read by
# `_SCOPE_ROWS`, its status and model are None (those the read asked for)
_CachedRow = tuple[int, str, "str | None", "str | None", str, "str | None", "int | None", "str | None", bytes, float, int,
                   "int | None", int]


# A filter keeping under 1/GATHER_BELOW of a scope's rows copies them out for an exact product;
# keeping more, the whole scope's int8 copy is scanned and the filter picks from its result
# (100k rows: gathering 10% 3.1 ms; the whole int8 scan ~2.2 ms, float32 ~9.5 ms).
GATHER_BELOW = 16
# An int8 shortlist of under 1/SHORTLIST_GATHER_BELOW of a scope's rows is measured again by copying
# those rows out; a longer one (rows too close together for the codes to tell apart), by measuring
# every row in float32 and picking. Measured (float32, 384-d, caches flushed between, alternated):
# 5k rows, an eighth 0.16 against 0.41 ms, a quarter 0.32 / 0.36, a third 0.49 / 0.40; 20k, a
# quarter 1.36 / 1.54, a third 1.59 / 1.38; 40k, a quarter 4.8 / 5.5.
SHORTLIST_GATHER_BELOW = 4


_Kept = TypeVar("_Kept", bound=tuple[Any, ...])


def _up_to(version: int, kept: Sequence[_Kept]) -> tuple[builtins.list[_Kept], _Kept | None]:
    """Of a memory's kept versions (rows whose first field is the version number, in order), those
    before `version` and the one of `version` itself, if kept: a memory's present version is its
    kept record where there is one (so a snapshot round-trips exactly), else its row."""
    earlier = [row for row in kept if row[0] < version]
    return earlier, next((row for row in kept if row[0] == version), None)


class _RowDirectory:
    """Where the vector of each row a process holds is: its block's number and its slot there.

    Two arrays indexed by rowid, so that a search maps a few hundred rowids (an approximate
    index's proposals, full-text candidates) in one vectorised read: a dict of a million rowids
    costs a cache miss a lookup (157 proposals over 100 users' blocks took 0.7 ms at 1M rows).
    SQLite gives a new row the next rowid, so the arrays stay about as long as the table; they
    cover rowids up to `REACH` or 16 times the rows held, and a rowid beyond (a process holding a
    few rows of a much larger table) is kept in a dict."""

    REACH = 1 << 20

    def __init__(self) -> None:
        self.blocks: builtins.list[_ScopeBlock] = []  # by number
        self.block_of = np.full(0, -1, dtype=np.int32)
        self.slot_of = np.full(0, -1, dtype=np.int32)
        self.far: dict[int, tuple[int, int]] = {}
        self.count = 0
        # The blocks' `live` rows and categories again, by rowid (`live_rows`): a search over every
        # user reads ~200 rows lying a few a block in ~80 blocks, one numpy read here against a
        # Python step a row there (1M rows over 100 users: a recall 5-9 % sooner). Rows beyond
        # the arrays' reach are read from their blocks.
        self.live_of = np.zeros((0, 4), dtype=np.float64)
        self.category_of = np.zeros(0, dtype=np.int32)
        self._category_codes: dict[str | None, int] = {}
        self._categories: builtins.list[str | None] = []  # by code

    def new_block(self, scope: tuple[str, str | None], room: int = 0) -> _ScopeBlock:
        """A block for `scope`, its arrays made for `room` rows when it takes in its first."""
        block = _ScopeBlock(scope, self, len(self.blocks), room)
        self.blocks.append(block)
        return block

    def get(self, rowid: int) -> tuple[int, int] | None:
        """(block number, slot) of `rowid`, or None."""
        if 0 <= rowid < len(self.block_of):
            number = int(self.block_of[rowid])
            return None if number < 0 else (number, int(self.slot_of[rowid]))
        return self.far.get(rowid)

    def locate(self, rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Block numbers and slots of `rowids` (-1 for a row not held)."""
        rowids = np.asarray(rowids, dtype=np.int64)
        reach = len(self.block_of)
        if len(rowids) and reach and rowids.min() >= 0 and rowids.max() < reach:
            return self.block_of[rowids], self.slot_of[rowids]
        inside = (rowids >= 0) & (rowids < reach)
        at = np.where(inside, rowids, 0)
        numbers = np.full(len(rowids), -1, dtype=np.int32)
        slots = np.full(len(rowids), -1, dtype=np.int32)
        if reach:
            numbers[inside], slots[inside] = self.block_of[at[inside]], self.slot_of[at[inside]]
        if self.far:
            for i in np.flatnonzero(~inside).tolist():
                numbers[i], slots[i] = self.far.get(int(rowids[i]), (-1, -1))
        return numbers, slots

    @staticmethod
    def by_block(numbers: np.ndarray) -> builtins.list[tuple[int, np.ndarray]]:
        """Each block number among `numbers` (as `locate` gives them; -1, a row not held, left out)
        with the mask of where it is, the one block of a user's scope without sorting them."""
        if not len(numbers):
            return []
        first = numbers == numbers[0]
        if numbers[0] >= 0 and first.all():
            return [(int(numbers[0]), first)]
        return [(number, numbers == number) for number in np.unique(numbers[numbers >= 0]).tolist()]

    def put(self, rowids: np.ndarray | int, number: int, slots: np.ndarray | int) -> None:
        """Place each of `rowids` (distinct) at its slot of block `number`."""
        rowids = np.atleast_1d(np.asarray(rowids, dtype=np.int64))
        slots = np.atleast_1d(np.asarray(slots, dtype=np.int64))
        if not len(rowids):
            return
        before = self.count
        self.count += int(np.count_nonzero(self.locate(rowids)[0] < 0))
        reach = max(self.REACH, 16 * self.count)
        top = int(rowids.max())
        if self.far and self.count.bit_length() > before.bit_length():  # twice the rows: take in what is in reach
            top = max([top, *(r for r in self.far if r < reach)])
        if len(self.block_of) <= top < reach:
            self._extend(max(top + 1, min(reach, 2 * len(self.block_of))))
        inside = (rowids >= 0) & (rowids < len(self.block_of))
        self.block_of[rowids[inside]] = number
        self.slot_of[rowids[inside]] = slots[inside]
        for rowid, slot in zip(rowids[~inside].tolist(), slots[~inside].tolist()):
            self.far[rowid] = (number, slot)

    def pop(self, rowid: int) -> tuple[int, int] | None:
        found = self.get(rowid)
        if found is not None:
            self.count -= 1
            if 0 <= rowid < len(self.block_of):
                self.block_of[rowid] = self.slot_of[rowid] = -1
            else:
                del self.far[rowid]
        return found

    def _extend(self, length: int) -> None:
        """Cover rowids below `length`, taking in those of `far` it reaches."""
        added = length - len(self.block_of)
        self.block_of = np.concatenate([self.block_of, np.full(added, -1, dtype=np.int32)])
        self.slot_of = np.concatenate([self.slot_of, np.full(added, -1, dtype=np.int32)])
        self.live_of = np.concatenate([self.live_of, np.zeros((added, 4), dtype=np.float64)])
        self.category_of = np.concatenate([self.category_of, np.zeros(added, dtype=np.int32)])
        for rowid in [r for r in self.far if 0 <= r < length]:
            number, slot = self.block_of[rowid], self.slot_of[rowid] = self.far.pop(rowid)
            block = self.blocks[number]
            if slot < block.size:  # (a row placed before its block wrote its columns gets them then)
                self.mirror(np.array([rowid]), block.live[slot:slot + 1], [block.label(block.categories.item(slot))])

    def touch(self, rowids: np.ndarray, changed: np.ndarray) -> None:
        """Write the `_TOUCHED` columns `changed` of `rowids` (distinct; those not held left out) in
        their blocks and here, each block's rows at once: over every user a batch of bonuses lies a
        few rows a block in ~100 blocks (1M rows over 100 users, ~170 rows: 2.4 ms taken a block
        at a time with a mask each, 0.57 ms so)."""
        numbers, slots = self.locate(rowids)
        held = numbers >= 0
        order = np.flatnonzero(held)[np.argsort(numbers[held], kind="stable")]
        numbers, slots, changed_held = numbers[order], slots[order], changed[order]
        starts = np.flatnonzero(np.diff(numbers, prepend=-1))
        for start, end, number in zip(starts.tolist(), [*starts[1:].tolist(), len(order)], numbers[starts].tolist()):
            self.blocks[number].live[slots[start:end, None], _TOUCHED] = changed_held[start:end]
        inside = held & (rowids < len(self.live_of))
        self.live_of[rowids[inside, None], _TOUCHED] = changed[inside]

    def mirror(self, rowids: np.ndarray, live: np.ndarray, categories: Sequence[str | None] | None) -> None:
        """Keep the `live` rows (and `categories`, None: unchanged) a block wrote for `rowids`."""
        inside = (rowids >= 0) & (rowids < len(self.live_of))
        self.live_of[rowids[inside]] = live[inside]
        if categories is not None:
            for category in set(categories).difference(self._category_codes):
                self._category_code(category)
            codes = np.fromiter(map(self._category_codes.__getitem__, categories), dtype=np.int32,
                                count=len(categories))
            self.category_of[rowids[inside]] = codes[inside]

    def _category_code(self, category: str | None) -> int:
        code = self._category_codes.setdefault(category, len(self._category_codes))
        if code == len(self._categories):
            self._categories.append(category)
        return code

    def live_rows(self, rowids: np.ndarray, numbers: np.ndarray,
                  slots: np.ndarray) -> tuple[np.ndarray, builtins.list[str | None]]:
        """The `live` rows and categories of `rowids` (located as `numbers`, `slots`); a row not
        held has no category and NaN times."""
        n = len(rowids)
        inside = (rowids >= 0) & (rowids < len(self.live_of))
        at = np.where(inside, rowids, 0)
        live = self.live_of[at] if len(self.live_of) else np.zeros((n, 4), dtype=np.float64)
        names = self._categories
        categories: builtins.list[str | None] = [names[code] for code in self.category_of[at].tolist()] \
            if len(self.live_of) else [None] * n
        held = numbers >= 0
        for i in np.flatnonzero(held & ~inside).tolist():  # beyond the arrays: from the block
            block = self.blocks[int(numbers[i])]
            live[i], categories[i] = block.live[slots[i]], block.label(block.categories.item(slots[i]))
        for i in np.flatnonzero(~held).tolist():
            live[i] = (0.0, np.nan, np.nan, 0.0)
            categories[i] = None
        return live, categories


class _ScopeBlock:
    """The vectors of one (namespace, user), kept in preallocated arrays that grow by doubling.

    A save or delete changes one row in place (a delete moves the last row into the hole), so
    a recall after a write never rebuilds the matrix: at 100k rows a rebuild cost ~0.7 s.
    Agents and categories are small-integer codes so their filters are one vectorised compare.
    `codes`, `scales`, `lost` and `norms` are the int8 copy a scan reads first (`_scan.quantize`),
    brought up to date for the rows marked `stale` before each scan, all at once; `packed` holds
    the codes again as the scan's kernels read them (`_scan.PackedCodes`: a quarter of `matrix`).
    `live` holds what the rows' live scores are made of, a row of it each (importance, created,
    last accessed, access count: `live_inputs`): a recall reads the rows of the candidates that can
    score among its best, not of every candidate, and over many users' blocks gathers one row of
    `live` a candidate (102 candidates in ~80 blocks: 0.06 ms, where reading four arrays took 0.13).
    """

    __slots__ = ("size", "directory", "number", "rowids", "matrix", "codes", "packed", "scales", "lost", "norms",
                 "stale", "any_stale", "agents", "categories", "expire", "soonest", "live", "_codes", "_labels", "ann", "scope",
                 "room")

    def __init__(self, scope: tuple[str, str | None], directory: _RowDirectory, number: int, room: int = 0) -> None:
        self.scope = scope  # (namespace, user_id)
        self.size = 0
        self.room = room  # rows its arrays are made for when it takes in its first
        self.directory, self.number = directory, number  # where its rows' slots are kept
        self.rowids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.codes = np.zeros((0, 0), dtype=np.int8)
        self.packed = PackedCodes()  # `codes` as the scan reads them
        self.scales = np.zeros(0, dtype=np.float32)
        self.lost = np.zeros(0, dtype=np.float32)
        self.norms = np.zeros(0, dtype=np.float32)
        self.stale = np.zeros(0, dtype=bool)
        self.any_stale = False
        self.agents = np.zeros(0, dtype=np.int32)
        self.categories = np.zeros(0, dtype=np.int32)
        self.expire = np.zeros(0, dtype=np.int64)
        self.soonest = _NEVER  # no row expires before this (a lower bound: a drop leaves it)
        self.live = np.zeros((0, 4), dtype=np.float64)  # times in microseconds; _NOT_ACCESSED: never
        self._codes: dict[str | None, int] = {}
        self._labels: builtins.list[str | None] = []  # by code
        self.ann: ScopeIndex | None = None  # the approximate index of a large scope (`_ann`)

    def code(self, label: str | None) -> int:
        """The integer standing for an agent id or a category in this block (-1: never seen)."""
        return self._codes.get(label, -1)

    def _code_for(self, label: str | None) -> int:
        code = self._codes.setdefault(label, len(self._codes))
        if code == len(self._labels):
            self._labels.append(label)
        return code

    def label(self, code: int) -> str | None:
        """The agent id or category `code` stands for."""
        return self._labels[code]

    def labels(self, codes: np.ndarray) -> builtins.list[str | None]:
        """The agent ids or categories these codes stand for."""
        labels = self._labels
        return [labels[code] for code in codes.tolist()]

    def _grow(self, dimension: int, needed: int) -> None:
        capacity = max(64, 2 * len(self.rowids), needed, self.room)
        for name, dtype in (("matrix", np.float32), ("codes", np.int8)):
            grown_matrix = np.zeros((capacity, dimension), dtype=dtype)
            if self.size:
                grown_matrix[: self.size] = getattr(self, name)[: self.size]
            setattr(self, name, grown_matrix)
        for name in ("rowids", "scales", "lost", "norms", "stale", "agents", "categories", "expire", "live"):
            old = getattr(self, name)
            grown = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    def put(self, rows: Sequence[_CachedRow]) -> None:
        """Add or replace rows (`_CachedRow`, all of this block's scope), all at once: a process's
        first search loads every vector of the store through here (at 10k rows, one row at a time
        cost 0.15 s of a CLI recall's second)."""
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        numbers, found = self.directory.locate(ids)
        slots = found.astype(np.int64)
        new = np.flatnonzero(numbers != self.number)
        slots[new] = np.arange(self.size, self.size + len(new))
        size = self.size + len(new)
        self.directory.put(ids[new], self.number, slots[new])
        vectors = np.frombuffer(b"".join([row[8] for row in rows]), dtype=np.float32).reshape(len(rows), -1)
        if size > len(self.rowids):
            self._grow(vectors.shape[1], size)
        if self.ann is not None:  # a row written again comes here after `drop` (`_VectorCache.apply`)
            self.ann.changed(ids.tolist())
        self.size = size
        self.rowids[slots] = ids
        self.matrix[slots] = vectors
        self.stale[slots] = self.any_stale = True
        categories = [row[4] for row in rows]
        self.agents[slots] = self._codes_of([row[3] for row in rows])
        self.categories[slots] = self._codes_of(categories)
        expire = np.fromiter((_NEVER if row[6] is None else row[6] for row in rows), dtype=np.int64, count=len(rows))
        self.expire[slots] = expire
        self.soonest = min(self.soonest, int(expire.min(initial=_NEVER)))
        live = self.live
        live[slots, _IMPORTANCE] = np.fromiter((row[9] for row in rows), dtype=np.float64, count=len(rows))
        live[slots, _CREATED] = np.fromiter((row[10] for row in rows), dtype=np.float64, count=len(rows))
        live[slots, _ACCESSED] = np.fromiter((_NOT_ACCESSED if row[11] is None else row[11] for row in rows),
                                             dtype=np.float64, count=len(rows))
        live[slots, _COUNT] = np.fromiter((row[12] for row in rows), dtype=np.float64, count=len(rows))
        self.directory.mirror(ids, live[slots], categories)

    def _codes_of(self, labels: Sequence[str | None]) -> builtins.list[int]:
        """`_code_for` of each of `labels` (a few distinct ones, each coded once)."""
        for label in set(labels).difference(self._codes):
            self._code_for(label)
        return builtins.list(map(self._codes.__getitem__, labels))

    def live_inputs(self, slots: np.ndarray, now_us: int) -> LiveInputs:
        """What the live scores of the rows in `slots` are made of (`LiveInputs`)."""
        return _live_inputs(self.live[slots], self.labels(self.categories[slots]), now_us)

    def slot(self, rowid: int) -> int | None:
        """The slot of `rowid` in this block (None: not held here)."""
        found = self.directory.get(rowid)
        return found[1] if found is not None and found[0] == self.number else None

    def drop(self, rowid: int) -> None:
        slot = self.slot(rowid)
        if slot is None:
            return
        self.directory.pop(rowid)
        if self.ann is not None:
            self.ann.dropped()
        last = self.size - 1
        if slot != last:
            self.directory.put(self.rowids[last], self.number, slot)
            self.packed.changed(slot)
            for array in (self.rowids, self.matrix, self.codes, self.scales, self.lost, self.norms, self.stale,
                          self.agents, self.categories, self.expire, self.live):
                array[slot] = array[last]
        self.size = last

    # -- as the rows of its approximate index (`_ann.Rows`) -------------------------------------
    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1])

    def parts(self) -> builtins.list[_ScopeBlock]:
        return [self]

    def live_ids(self) -> np.ndarray:
        return self.rowids[: self.size]

    def vectors_of(self, rowids: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        numbers, slots = self.directory.locate(np.fromiter(rowids, dtype=np.int64))
        slots = slots[numbers == self.number].astype(np.int64)
        return self.rowids[slots].copy(), self.matrix[slots]

    def scope_sql(self) -> tuple[str, tuple[Any, ...]]:
        return "namespace = ? AND user_id IS ?", self.scope

    def _quantize_stale(self) -> None:
        if not self.any_stale:
            return
        stale = np.flatnonzero(self.stale[: self.size])
        for start in range(0, len(stale), 8192):  # a chunk at a time: quantizing makes temporary copies
            slots = stale[start:start + 8192]
            rows = self.matrix[slots]
            self.codes[slots], self.scales[slots], self.lost[slots] = quantize(rows)
            self.norms[slots] = np.linalg.norm(rows, axis=1)
        self.stale[stale] = False
        self.any_stale = False
        self.packed.changed(stale)

    def best(self, query: np.ndarray, mask: np.ndarray | None, kept: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots and exact products of the best `limit` rows (or fewer) among those `mask` keeps
        (None: every row), in no particular order."""
        if self.ann is not None and (found := self.ann.best(self, query, mask, kept, limit)) is not None:
            return found
        n = self.size
        matrix = self.matrix[:n]
        if mask is not None and kept * GATHER_BELOW < n:  # few rows: gathering them costs less than scanning all
            slots = np.flatnonzero(mask)
            sims = products(matrix[slots], query)
        elif n < APPROX_ROWS:
            slots = np.arange(n) if mask is None else np.flatnonzero(mask)
            sims = products(matrix, query)
            if mask is not None:
                sims = sims[mask]
        else:
            self._quantize_stale()
            lower, upper = bounds(self.codes[:n], self.scales[:n], self.lost[:n], self.norms[:n], query, self.packed)
            if mask is not None:
                lower[~mask] = upper[~mask] = -np.inf
            slots = shortlist(lower, upper, limit)
            few = len(slots) * SHORTLIST_GATHER_BELOW < n
            sims = products(matrix[slots], query) if few else products(matrix, query)[slots]
        if len(sims) > limit:
            top = np.argpartition(-sims, limit)[:limit]
            slots, sims = slots[top], sims[top]
        return slots, sims


# The live-score columns of the rows recall bonuses stamped since a count (`_VectorCache.touch`), through
# the index named, its condition spelled out as a partial index needs: once most rows were stamped,
# SQLite's planner otherwise reads the table whole (20k rows: ~1 ms a recall).
_STAMPED_SINCE = ("SELECT rowid, importance, last_accessed_at, access_count FROM memories INDEXED BY memories_accessed "
                  "WHERE accessed_seq > ? AND accessed_seq > 0")
# Rows of a scope read for the first time taken in at a time: the rows of all of it at once (their
# vector blobs and Python objects) held beside the arrays made of them doubled a large store's peak.
MAX_HELD_USERS_NAMED = 1_000  # users a namespace's first read names to leave out (`unheld_users`)
LOAD_ROWS = 16_384
# Recalls' bonuses written at once (`_write_bonuses`): each recall's (namespace, [(memory_id, bonus)], when in µs).
_BonusBatch = Sequence[tuple[str, builtins.list[tuple[str, float]], int]]
# How long the bonus writer sleeps, with the store free, while another connection writes (`_write_bonuses_held`).
BUSY_PAUSE_S = 0.01
# Batches of recall bonuses up to this many rows are written on the store's connection (`_write_bonuses`):
# 64 rows took 0.9 ms at 100k, 256 rows 3.0 ms.
BONUS_ROWS_HELD = 128
_COUNTERS = "SELECT (SELECT value FROM meta WHERE key = 'seq'), (SELECT value FROM meta WHERE key = 'accessed_seq')"
# The active rows without a vector of a model (`vector IS NULL OR embedding_model IS NOT ?`), as
# (rowid, namespace), through migration 14's indexes: each part a range of one of them, where
# the condition as one would read the whole table (the model given twice; not None).
_FOREIGN_ROWS = (
    "SELECT rowid, namespace FROM memories INDEXED BY memories_vectorless WHERE status = 'active' AND vector IS NULL "
    "UNION SELECT rowid, namespace FROM memories INDEXED BY memories_model WHERE status = 'active' AND "
    "embedding_model IS NULL "
    "UNION SELECT rowid, namespace FROM memories INDEXED BY memories_model WHERE status = 'active' AND embedding_model < ? "
    "UNION SELECT rowid, namespace FROM memories INDEXED BY memories_model WHERE status = 'active' AND embedding_model > ?")
# The active memories without a vector (`pending_reembed`'s `missing_only`) through migration 14's
# indexes: recalls ask for them while a namespace holds memories of another model, and reading the
# namespace for them took ~50 ms a recall at 100k memories, ~0.55 s at 1M.
_MISSING_VECTORS = (
    "SELECT memory_id, content FROM memories INDEXED BY memories_vectorless WHERE {scope}memory_id > ? "
    "AND status = 'active' AND vector IS NULL "
    "UNION SELECT memory_id, content FROM memories INDEXED BY memories_model WHERE {scope}memory_id > ? "
    "AND status = 'active' AND embedding_model IS NULL ORDER BY memory_id LIMIT ?")
_CACHE_COLUMNS = ("rowid, namespace, user_id, agent_id, category, status, expire_at, embedding_model, vector, "
                  "importance, created_at, last_accessed_at, access_count")
# The rows of a scope (`where`: its namespace, and user) a search reads for the first time, through
# the scope's index (the planner would take migration 14's index of every namespace's rows by
# model), as `_CACHE_COLUMNS` with the status and model the condition asks for read as NULL: a
# Python string a row less (1M rows over 100 users, every user: 3.95 -> 3.5 s).
_SCOPE_ROWS = ("SELECT rowid, namespace, user_id, agent_id, category, NULL, expire_at, NULL, vector, importance, "
               "created_at, last_accessed_at, access_count FROM memories INDEXED BY memories_scope_created "
               "WHERE {where} AND status = 'active' AND embedding_model IS ? AND vector IS NOT NULL")
# How many active rows each user of such a scope has, from the index alone (those of another model
# or without a vector too: at most what the read gives; 1M rows over 100 users: 0.08 s).
_SCOPE_COUNTS = ("SELECT user_id, COUNT(*) FROM memories INDEXED BY memories_scope_created WHERE {where} "
                 "AND status = 'active' GROUP BY user_id")
# What a recall candidate carries (a `Candidate`'s fields), after its rowid: what it is scored by,
# the content the calibration of text matches reads, and whose rules screened that content.
_SCORED_COLUMNS = ("m.memory_id, m.importance, m.category, m.created_at, m.last_accessed_at, m.access_count, "
                   "m.content, m.screened")
_SCREENED_AT = 8  # where `m.screened` is in a row of (rowid, `_SCORED_COLUMNS`)
# ... and the rest of the row, for a candidate read whole (`Candidate.full`, `_candidate_record`)
_CANDIDATE_COLUMNS = (f"{_SCORED_COLUMNS}, m.namespace, m.user_id, m.agent_id, m.session_id, m.source, m.entities, "
                      "m.metadata, m.updated_at, m.expire_at, m.embedding_model, m.version, m.status")
# ... and then its full-text terms (`Candidate.indexed_terms`, None unless it matched the text): the
# body column of its row in FTS5's content table, read by row id (through the virtual table, a cursor a row).
_INDEXED_AT = 1 + len(_CANDIDATE_COLUMNS.split(","))


def _live_inputs(live: np.ndarray, categories: builtins.list[str | None], now_us: int) -> LiveInputs:
    """`LiveInputs` of rows of `_ScopeBlock.live`: ages in seconds as `Candidate.age_seconds` gives them."""
    accessed = live[:, _ACCESSED]
    seen = np.where(accessed == _NOT_ACCESSED, live[:, _CREATED], accessed)
    return LiveInputs((now_us - seen) / 1_000_000, categories, live[:, _COUNT], live[:, _IMPORTANCE])


def _candidate_record(row: Sequence[Any]) -> MemoryRecord:
    """The record of a row of (rowid, `_CANDIDATE_COLUMNS`)."""
    return _row_to_record((row[1], row[9], row[10], row[11], row[12], row[7], row[3], row[13], row[2], row[14],
                           row[15], row[4], row[16], row[5], row[6], row[17], row[18], row[19], row[20]))


class _VectorCache:
    """In-process copy of the vectors of one model, kept current through `seq`.

    A scope's vectors (a user's, or a whole namespace's) are read when a search first needs them:
    a process that recalls for one user reads that user's rows, not the store's (the store's were
    most of a one-off CLI recall's work). Which active rows lack this model's vector (`foreign`)
    is known for the whole store from the start, and how many of them each namespace holds
    (`foreign_counts`: a recall asks it of its namespace, which another namespace's 200k rows
    without vectors made a 3 ms count of every recall).
    """

    def __init__(self, model_id: str | None, seq: int, foreign: dict[int, str], accessed_seq: int) -> None:
        self.model_id = model_id
        self.seq = seq
        self.accessed_seq = accessed_seq  # the live-score columns are current up to this stamp (`touch`)
        self.blocks: dict[tuple[str, str | None], _ScopeBlock] = {}
        self.directory = _RowDirectory()
        self.foreign = foreign
        self.foreign_counts: Counter[str] = Counter(foreign.values())
        self.users: set[tuple[str, str | None]] = set()
        self.namespaces: set[str] = set()
        self.spans: dict[str, Span] = {}  # namespaces with an index over every user's rows (`_ann.Span`)
        self._room: dict[tuple[str, str | None], int] = {}  # a scope being loaded: each user's rows, at most

    def holds(self, namespace: str, user_id: str | None, all_users: bool) -> bool:
        """Whether this scope's vectors have been read (and are kept current)."""
        return namespace in self.namespaces or (not all_users and (namespace, user_id) in self.users)

    def labelled(self, rowids: np.ndarray, agent_id: str | None, category: str | None) -> np.ndarray:
        """Which of these held rows are of `agent_id` and of `category` (None: any), row by row:
        a search's few hundred proposals fall in many users' blocks, a few in each."""
        numbers, slots = self.directory.locate(rowids)
        blocks = self.directory.blocks
        keep = np.zeros(len(numbers), dtype=bool)
        for i, (number, slot) in enumerate(zip(numbers.tolist(), slots.tolist())):
            if number >= 0:
                block = blocks[number]
                keep[i] = (agent_id is None or block.agents[slot] == block.code(agent_id)) and \
                    (category is None or block.categories[slot] == block.code(category))
        return keep

    def unheld_users(self, namespace: str) -> tuple[str, builtins.list[Any]]:
        """The SQL condition (and its parameters) of the rows of `namespace` whose users' rows are
        not held yet: a namespace read after some of its users reads the others' rows alone (100k
        memories of one user: the first recall over every user 0.29 s -> 0.011 s)."""
        named = [user for space, user in self.users if space == namespace and user is not None]
        if not named or len(named) > MAX_HELD_USERS_NAMED:  # (too many to name: `load` skips their rows)
            return "namespace = ?", [namespace]
        return f"namespace = ? AND (user_id IS NULL OR user_id NOT IN ({', '.join('?' for _ in named)}))", \
            [namespace, *named]

    def load(self, chunks: Iterable[Sequence[_CachedRow]], namespace: str, user_id: str | None,
             all_users: bool, counts: Mapping[str | None, int]) -> None:
        """Take in a scope read for the first time, a chunk of rows at a time (`LOAD_ROWS`): its
        active rows with a vector of this model, those no block holds yet. A row a block holds (a
        user's, read before the whole namespace) is as the cache's count left it: if it was written
        since, its `seq` is above the count and the next catch-up takes it in again. (Each through
        `apply` took 8.3 s for a namespace of 100k memories read after its one user's.)

        `counts`: at most how many rows each user of the scope has; a block new to the cache is
        made that large at once, rather than grown by doubling as its chunks come (at 1M rows over
        100 users the copies took 0.3-1.0 s of a first recall's 6-8 s)."""
        if all_users:
            self.namespaces.add(namespace)
        else:
            self.users.add((namespace, user_id))
        self._room = {(namespace, user): count for user, count in counts.items()}
        try:
            for rows in chunks:
                ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
                unheld = (self.directory.locate(ids)[0] < 0).tolist()
                if not all(unheld):
                    rows = [row for row, new in zip(rows, unheld) if new]
                for row in rows if self.foreign else ():  # given a vector of this model since the cache's count
                    self._forget(row[0])
                self._take_in(rows)
        finally:
            self._room = {}

    def apply(self, rows: Sequence[_CachedRow], deleted: Sequence[int]) -> None:
        for rowid in deleted:
            self._forget(rowid)
        kept: builtins.list[_CachedRow] = []
        for row in rows:
            rowid, namespace, user_id, _, _, status, _, model, blob = row[:9]
            self._forget(rowid)
            if status != "active":
                continue
            if blob is None or model != self.model_id:
                self.foreign[rowid] = namespace  # (`_forget` above took out what it was before)
                self.foreign_counts[namespace] += 1
                continue
            if self.holds(namespace, user_id, False):  # (else read whole when a search first needs it)
                kept.append(row)
        self._take_in(kept)

    def _take_in(self, rows: Sequence[_CachedRow]) -> None:
        """Put rows (none of them held, all active with a vector of this model) in their scopes' blocks."""
        by_scope: dict[tuple[str, str | None], builtins.list[_CachedRow]] = {}
        for row in rows:
            by_scope.setdefault((row[1], row[2]), []).append(row)
        for key, scope_rows in by_scope.items():
            block = self.blocks.get(key)
            if block is None:
                block = self.blocks[key] = self.directory.new_block(key, self._room.get(key, 0))
            block.put(scope_rows)
            span = self.spans.get(key[0])
            if span is not None and span.ann is not None:
                span.ann.changed([row[0] for row in scope_rows])

    def touch(self, rows: Sequence[tuple[int, float, int | None, int]]) -> None:
        """Take in the rows `(rowid, importance, last_accessed_at, access_count)` that recalls'
        bonuses changed since `accessed_seq` (those of rows not held are not needed)."""
        if not rows:
            return
        n = len(rows)
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=n)
        changed = np.empty((n, len(_TOUCHED)), dtype=np.float64)  # in the order of `_TOUCHED`
        changed[:, 0] = np.fromiter((row[1] for row in rows), dtype=np.float64, count=n)
        changed[:, 1] = np.fromiter((_NOT_ACCESSED if row[2] is None else row[2] for row in rows), dtype=np.int64,
                                    count=n)
        changed[:, 2] = np.fromiter((row[3] for row in rows), dtype=np.int64, count=n)
        self.directory.touch(ids, changed)

    def live_inputs(self, rowids: Sequence[int], now_us: int) -> LiveInputs:
        """What the live scores of these rows are made of, where this cache holds them (`LiveInputs`)."""
        n = len(rowids)
        numbers, slots = self.directory.locate(np.asarray(rowids, dtype=np.int64))
        if n and numbers[0] >= 0 and (numbers == numbers[0]).all():  # one user's scope: one block holds them all
            return self.directory.blocks[int(numbers[0])].live_inputs(slots, now_us)
        # Over every user the rows lie a few a block in many blocks: read by rowid (`live_rows`).
        live, categories = self.directory.live_rows(np.asarray(rowids, dtype=np.int64), numbers, slots)
        return _live_inputs(live, categories, now_us)

    def release(self) -> None:
        """Let go of every row and index held (the store closed), at once: blocks, their directory
        and their indexes refer to one another, and would wait for Python's cyclic collection (a
        store opened and closed four times in one process held ~900 MB at 100k rows)."""
        for span in self.spans.values():
            span.ann = None
        for block in self.blocks.values():
            block.ann = None
        self.directory.blocks.clear()
        self.blocks.clear()
        self.spans.clear()

    def _forget(self, rowid: int) -> None:
        if (namespace := self.foreign.pop(rowid, None)) is not None:
            self.foreign_counts[namespace] -= 1
        found = self.directory.get(rowid)
        if found is not None:
            block = self.directory.blocks[found[0]]
            block.drop(rowid)
            span = self.spans.get(block.scope[0])
            if span is not None and span.ann is not None:
                span.ann.dropped()

    def scope_blocks(self, namespace: str, user_id: str | None, all_users: bool) -> builtins.list[_ScopeBlock]:
        if not all_users:
            block = self.blocks.get((namespace, user_id))
            return [block] if block else []
        return [b for (ns, _), b in self.blocks.items() if ns == namespace]

    def indexed(self, namespace: str, user_id: str | None, all_users: bool) -> bool:
        """Whether a vector search of the scope (with no filter) is answered by the scope's own built
        approximate index: one faiss search and one gather from one block (~0.25 ms at 100k). Not a
        search over every user, whose proposals are gathered from each user's block one by one
        (`_ann.Span.best`; `nearest` ~1.2 ms with its records at 1M over 100 users)."""
        if all_users:
            return False
        block = self.blocks.get((namespace, user_id))
        return block is not None and block.ann is not None and block.ann.ready


# Scopes of fewer memories rank their full-text matches in turn rather than on another core
# (`_ranked_alongside`): their vector scan is too short to hide the ranking behind, and handing
# it to another thread costs more than it saves. Measured with bench_core's synthetic scope, the
# two alternated every 100 recalls in one process (p50, in turn against alongside): 100 memories
# 0.72 / 0.80 ms, 3k 2.16 / 2.74, 5k 2.62-2.68 / 3.04-3.07, 8k 3.43 / 3.39, 10k 2.56-3.80 / 2.48-3.64,
# 20k 3.04-3.69 / 2.85-3.45. So do scopes their own approximate index answers for
# (`_VectorCache.indexed`), by the query's matches at 100k: 160 2.88 / 2.85, 320 2.80 / 2.85,
# 640 3.75 / 3.93, 1,280 5.72 / 5.95, 2,560 8.39 / 9.99. How many matches a query has decides
# nothing: a few gain as much as they lose (20k scanned, 32 matches: 1.83 / 1.88; 1M over 100
# users, 1 match: 1.91-1.99 / 1.85-1.90).
ALONGSIDE_ROWS = 8_192
# A recall with a filter only SQL evaluates (`_filtered_vector_candidates`) checks it on this many
# times the candidates it wants before reading the whole scope for it.
FILTER_WIDENING = 4
# FTS5's best matches by BM25 over the memories' bodies (the scope column weighs nothing)
_BEST_MATCHES = ("SELECT rowid, bm25(memory_fts, 0.0, 1.0) AS rank FROM memory_fts WHERE memory_fts MATCH ? "
                 "ORDER BY rank LIMIT ?")


def _whole_table_match(terms: Sequence[str]) -> str:
    """The match of a scope that is the whole table: any term, in the body. Not its scope token,
    which matches every row: ANDing it reads its whole posting list (100k rows: 3.2 ms even for a
    term in one row), while the filters keep the scope all the same."""
    return "body : (" + " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) + ")"


class _FullTextQuery(NamedTuple):
    """What a search asks of the full-text index: its selective `terms` over the rows of `scope`
    (`scope_rows` of them; `whole_table` when they are the table's `table_rows`), and the match
    `_best_matches_held` ranks when that path applies."""

    terms: tuple[str, ...]
    docs: dict[str, int]
    table_rows: int
    scope: str
    scope_rows: int
    whole_table: bool
    held_match: str | None
    indexed: bool = False  # the held match's vector search is answered by the scope's own index


class SQLiteBackend(Backend):
    """SQLite storage: a file path, or None for a private in-process database. `language` is
    the one its full text is analysed in (None: the one it was indexed in, English for a new store);
    another than the stored one re-indexes the store."""

    def __init__(self, path: str | Path | None, *, memory_name: str = "", busy_timeout_ms: int = 30_000,
                 read_only: bool = False, durability: str = "normal", language: str | None = None) -> None:
        self._wanted_language = None if language is None else check_language(language)
        if durability not in DURABILITY:
            raise InvalidURLError(f"durability must be one of {sorted(DURABILITY)}, got {durability!r}")
        self.path = None if path is None else Path(path)
        if self.path is not None:
            read_only = read_only or _only_readable(self.path)
            if not read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            options = [("mode", "ro")] if read_only else []
            options += [("durability", durability)] if durability != "normal" else []
            self.url = f"sqlite:///{self.path.resolve()}" + (f"?{urlencode(options)}" if options else "")
            target = f"{self.path.resolve().as_uri()}?mode=ro" if read_only else str(self.path)
            uri = read_only
        elif memory_name:  # named: shared by every store of this process that opens the same name
            self.url = f"memory://{memory_name}"
            target, uri = f"file:polymem-{memory_name}?mode=memory&cache=shared", True
        else:
            self.url, target, uri = "memory://", ":memory:", False
        self.read_only = read_only
        self._lock = threading.RLock()
        self._closed = False
        self._in_write = False  # inside `_write` (on the thread holding `_lock`)
        self._checkpoint_due = threading.Event()
        self._checkpointer: threading.Thread | None = None
        self._checkpoint_stop = False
        self._commits_since_checkpoint = 0
        self._side: sqlite3.Connection | None = None  # `_ranked_alongside`'s
        self._bonus: sqlite3.Connection | None = None  # `_write_bonuses_aside`'s
        self._synchronous = DURABILITY[durability]
        with _translated(self.url):
            try:
                self._connect(target, uri, busy_timeout_ms, durability)
            except sqlite3.OperationalError:
                if not read_only:
                    raise
                # A WAL file is read through its `-shm` index, which a reader creates if it is missing;
                # in a folder this process cannot write, read the file as it is (immutable): see docs/.
                self._connect(f"{target}&immutable=1", uri, busy_timeout_ms, durability)
        self._caches: dict[str | None, _VectorCache] = {}
        self.indexes = Indexes(None if self.path is None else self.path.with_name(self.path.name + ".ann"),
                               self._lock, read_only)
        self._dimensions: dict[str, int] = {}
        # each term's count as read at `_df_seq` (a recall's calibration asks again for its
        # search's terms: no second statement while nothing was written)
        self._df: dict[str, int] = {}
        self._df_seq = -1
        self._fts_rows = (-1, 0)  # (seq, rows in the full-text index) when last read
        self._scope_counts: dict[str, tuple[int, int, bool]] = {}
        # (scope, term) -> rows of the scope holding the term, as the last searches counted them at
        # `_held_seq` (recall's calibration asks again right after its search: no statement then)
        self._held: dict[tuple[str, str], int] = {}
        self._held_seq = -1
        self._bookkeeping = Bookkeeping(self._write_bonuses, "polymem-bookkeeping")

    def _connect(self, target: str, uri: bool, busy_timeout_ms: int, durability: str) -> None:
        self._target = (target, uri, busy_timeout_ms)
        self._conn = sqlite3.connect(target, timeout=busy_timeout_ms / 1000, isolation_level=None,
                                     check_same_thread=False, uri=uri)
        try:
            self._configure(busy_timeout_ms, durability)
            self._changes_at_checkpoint = self._conn.total_changes
            if self.read_only:
                self._check_current()
            else:
                self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def _configure(self, busy_timeout_ms: int, durability: str) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # reads the schema: not a database fails here
        if self.path is not None and not self.read_only:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer thread does it
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
        conn.execute(f"PRAGMA synchronous = {DURABILITY[durability]}")
        conn.execute("PRAGMA foreign_keys = ON")
        if self.path is not None:
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    # -- plumbing -----------------------------------------------------------------------------
    def _check_current(self) -> None:
        """A read-only file cannot be migrated: it must already be at this version's schema."""
        conn = self._conn
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        done = set()
        if "schema_migrations" in tables:
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        analyzed = conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone() if "meta" in tables else None
        if done != set(range(1, len(MIGRATIONS) + 1)) or analyzed is None or analyzed[0] != self._analyzer(analyzed[0]):
            raise ReadOnlyStoreError(f"{self.url} is read-only and needs an upgrade to this polymem version"
                                     f"{' (or to its language)' if self._wanted_language else ''}: "
                                     "open it once with write access")
        self.language = language_of(analyzed[0])

    def _analyzer(self, stored: str | None) -> str:
        """The analyzer the store must be indexed with: in the language asked for, else the stored one's."""
        return analyzer_id(self._wanted_language or language_of(stored))

    def _migrate(self) -> None:
        with self._write() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, script in enumerate(MIGRATIONS, start=1):
                if version in done:
                    continue
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if version == TERM_COUNTS_MIGRATION:
                    self._count_stored_terms(conn)
                conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES (?, datetime('now'))", (version,))
        with self._write() as conn:
            analyzed = conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
            wanted = self._analyzer(None if analyzed is None else analyzed[0])
            if analyzed is None or analyzed[0] != wanted:
                self._reindex_text(conn, language_of(wanted))
            self.language = language_of(wanted)

    @staticmethod
    def _reindex_text(conn: sqlite3.Connection, language: str) -> None:
        """Recompute every memory's full-text row with this version's analyzer, in `language`."""
        conn.execute("DELETE FROM memory_fts")
        conn.execute("DELETE FROM memory_terms")
        last = 0
        while batch := conn.execute("SELECT rowid, namespace, user_id, content FROM memories WHERE rowid > ? "
                                    "ORDER BY rowid LIMIT 2000", (last,)).fetchall():
            last = batch[-1][0]
            SQLiteBackend._index_text(conn, [(rowid, *fts_row(namespace, user_id, terms(content, language=language)))
                                             for rowid, namespace, user_id, content in batch])
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('analyzer', ?)", (analyzer_id(language),))

    def schema_version(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreClosedError("the store is closed")
            with _translated(self.url):
                yield self._conn

    @contextmanager
    def _write(self, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; a write inside another (a batch's operations) is part of it.
        `wait=False`: raise `sqlite3.OperationalError` (SQLITE_BUSY) at once if another
        connection is writing, instead of waiting for it with the store held."""
        with self._lock:
            if getattr(self, "_closed", False):
                raise StoreClosedError("the store is closed")
            if self.read_only:
                raise ReadOnlyStoreError(f"{self.url} is open read-only: writes are refused")
            conn = self._conn
            if self._in_write:
                yield conn
                return
            with _translated(self.url):
                if wait:
                    conn.execute("BEGIN IMMEDIATE")
                else:
                    conn.execute("PRAGMA busy_timeout = 0")
                    try:
                        conn.execute("BEGIN IMMEDIATE")
                    finally:
                        conn.execute(f"PRAGMA busy_timeout = {self._target[2]}")
                self._in_write = True
                try:
                    yield conn
                except BaseException:
                    self._in_write = False
                    conn.execute("ROLLBACK")
                    raise
                self._in_write = False
                conn.execute("COMMIT")
            if self.path is not None:
                self._count_commit(conn)

    def apply(self, batch: Batch) -> builtins.list[Any]:
        """The batch's operations in one `BEGIN IMMEDIATE` transaction: all of them, or none."""
        with self._write():
            return [op.run(self) for op in batch.ops]

    def _count_commit(self, conn: sqlite3.Connection) -> None:
        self._commits_since_checkpoint += 1
        if (self._commits_since_checkpoint < CHECKPOINT_COMMITS
                and conn.total_changes - self._changes_at_checkpoint < CHECKPOINT_CHANGES):
            return
        self._commits_since_checkpoint = 0
        self._changes_at_checkpoint = conn.total_changes
        if self._checkpointer is None:
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="polymem-checkpoint",
                                                  daemon=True)
            self._checkpointer.start()
        self._checkpoint_due.set()

    def _checkpoint_loop(self) -> None:
        """Copies committed WAL pages into the database on a connection of its own: a PASSIVE
        checkpoint waits for no lock, so writers and readers go on meanwhile."""
        assert self.path is not None
        conn = sqlite3.connect(str(self.path), timeout=0, isolation_level=None, check_same_thread=False)
        try:
            while True:
                self._checkpoint_due.wait()
                self._checkpoint_due.clear()
                if self._checkpoint_stop:
                    return
                try:
                    _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if frames > RESTART_FRAMES:
                        # The WAL starts over only once every frame is copied, and a writer that
                        # never pauses always adds some during a pass: finish them while this
                        # process neither reads nor writes (~15 ms at 100k rows, once per ~600 saves).
                        with self._lock:
                            if not self._closed:
                                conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchall()
                except sqlite3.Error:
                    pass  # busy or locked: the next signal tries again
        finally:
            conn.close()

    @staticmethod
    def _next_seq(conn: sqlite3.Connection) -> int:
        row = conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'seq' RETURNING value").fetchone()
        return int(row[0])

    def _fetch_records(self, conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> builtins.list[MemoryRecord]:
        rows = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM memories m WHERE {where}", params).fetchall()
        return [_row_to_record(row) for row in rows]

    @staticmethod
    def _keep_version(conn: sqlite3.Connection, record: MemoryRecord) -> None:
        """Store `record` as a past version, with the row's vector, before its row changes.

        A save writes no second copy of what it inserts: until its row changes, a memory's current
        version is the row itself. (A snapshot's import, and stores written before this, also
        keep the current version's own record; `_versions` then gives that one, unchanged.)"""
        conn.execute("INSERT INTO memory_versions(namespace, memory_id, version, record, vector, vector_model) "
                     "SELECT ?, ?, ?, ?, vector, embedding_model FROM memories WHERE namespace = ? AND memory_id = ? "
                     "ON CONFLICT (namespace, memory_id, version) DO UPDATE SET vector = excluded.vector, "
                     "vector_model = excluded.vector_model",
                     (record.namespace, record.memory_id, record.version, dumps(record.to_dict()),
                      record.namespace, record.memory_id))

    @staticmethod
    def _versions(conn: sqlite3.Connection, current: MemoryRecord) -> builtins.list[dict[str, Any]]:
        """Every version of a memory as a dict, oldest first; the current one is its stored
        record when there is one (so a snapshot round-trips exactly), else the row."""
        rows = conn.execute("SELECT version, record FROM memory_versions WHERE namespace = ? AND memory_id = ? "
                            "ORDER BY version", (current.namespace, current.memory_id)).fetchall()
        earlier, kept_current = _up_to(current.version, rows)
        return [json.loads(r) for _, r in earlier] + [current.to_dict() if kept_current is None
                                                      else json.loads(kept_current[1])]

    def _check_dimension(self, conn: sqlite3.Connection, model_id: str | None,
                         vectors: Iterable[np.ndarray | None]) -> None:
        """Every vector of one model has the stored ones' length: another length (a process whose
        embedder claims the same model id) is refused, as it would break every search in its scope."""
        lengths = {len(v) for v in vectors if v is not None}
        if model_id is None or not lengths:
            return
        known = self._dimensions.get(model_id)
        if known is None:
            row = conn.execute("SELECT length(vector) FROM memories WHERE embedding_model = ? AND vector IS NOT NULL "
                               "LIMIT 1", (model_id,)).fetchone()
            known = self._dimensions[model_id] = row[0] // 4 if row else min(lengths)
        if lengths != {known}:
            raise DimensionMismatchError(f"vectors of model {model_id!r} have dimension {known} in this store; "
                                         f"got {', '.join(map(str, sorted(lengths - {known})))}")

    # -- records ------------------------------------------------------------------------------
    def insert(self, op: Insert) -> builtins.list[tuple[MemoryRecord, bool]]:
        items, now = op.items, op.now
        now_us = to_micros(now)
        with self._write() as conn:
            for model_id in {item.record.embedding_model for item in items}:
                self._check_dimension(conn, model_id, (i.vector for i in items if i.record.embedding_model == model_id))
            seq = self._next_seq(conn)
            existing = self._existing(conn, items)
            next_rowid = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM memories").fetchone()[0]) + 1
            results: builtins.list[tuple[MemoryRecord, bool]] = []
            rows, fts, touched = [], [], []
            claimed: dict[tuple[Any, ...], MemoryRecord] = {}
            for item in items:
                rec = item.record
                key = _dedupe_key(item)
                found = existing.get(key) or claimed.get(key)
                if found is not None:
                    touched.append((now_us, found.namespace, found.memory_id))
                    results.append((found.replace(last_accessed_at=now), False))
                    continue
                claimed[key] = rec
                # as saved one by one: unkeyed content repeating this keyed memory's is this memory
                claimed.setdefault((rec.namespace, "hash", item.content_hash, rec.user_id, rec.agent_id), rec)
                rows.append((next_rowid, *_record_values(rec), item.content_hash, _blob(item.vector),
                             item.idempotency_key, seq, item.screened))
                fts.append((next_rowid, *fts_row(rec.namespace, rec.user_id, item.terms)))
                results.append((rec, True))
                next_rowid += 1
            conn.executemany(
                f"INSERT INTO memories (rowid, {_RECORD_COLUMNS}, content_hash, vector, idempotency_key, seq, screened) "
                f"VALUES ({', '.join('?' * 25)})", rows)
            self._index_text(conn, fts)
            conn.executemany("UPDATE memories SET last_accessed_at = ? WHERE namespace = ? AND memory_id = ?", touched)
        return results

    def _existing(self, conn: sqlite3.Connection, items: Sequence[NewRecord]) -> dict[tuple[Any, ...], MemoryRecord]:
        """Stored records that would make these inserts duplicates, by dedupe key."""
        out: dict[tuple[Any, ...], MemoryRecord] = {}
        by_namespace: dict[str, tuple[set[str], set[str]]] = {}
        for item in items:
            keys, hashes = by_namespace.setdefault(item.record.namespace, (set(), set()))
            if item.idempotency_key is not None:
                keys.add(item.idempotency_key)
            else:
                hashes.add(item.content_hash)
        for namespace, (keys, hashes) in by_namespace.items():
            for column, values, index in (("idempotency_key", sorted(keys), "memories_idempotency"),
                                          ("content_hash", sorted(hashes), "memories_hash")):
                for start in range(0, len(values), 500):
                    chunk = values[start:start + 500]
                    marks = ", ".join("?" for _ in chunk)
                    status = "" if column == "idempotency_key" else " AND m.status = 'active'"
                    rows = conn.execute(
                        f"SELECT {_RECORD_COLUMNS}, m.content_hash, m.idempotency_key FROM memories m "
                        f"INDEXED BY {index} WHERE m.namespace = ? AND m.{column} IN ({marks}){status}",
                        (namespace, *chunk)).fetchall()
                    for row in rows:
                        record = _row_to_record(row[:19])
                        key = ((namespace, "key", row[20]) if column == "idempotency_key"
                               else (namespace, "hash", row[19], record.user_id, record.agent_id))
                        out.setdefault(key, record)
        return out

    def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        if not memory_ids:
            return []
        marks = ", ".join("?" for _ in memory_ids)
        with self._read() as conn:
            found = {r.memory_id: r for r in self._fetch_records(
                conn, f"m.namespace = ? AND m.memory_id IN ({marks})", (namespace, *memory_ids))}
        return [found[i] for i in memory_ids if i in found]

    def get_by_keys(self, namespace: str, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        if not keys:
            return []
        marks = ", ".join("?" for _ in keys)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_RECORD_COLUMNS}, m.idempotency_key FROM memories m INDEXED BY memories_idempotency "
                f"WHERE m.namespace = ? AND m.idempotency_key IN ({marks})", (namespace, *keys)).fetchall()
        found = {row[19]: _row_to_record(row[:19]) for row in rows}
        return [found[k] for k in keys if k in found]

    def list(self, op: ListRecords) -> builtins.list[MemoryRecord]:
        where, params = self._scope_sql(op.namespace, op.user_id, op.agent_id, op.category, op.filter)
        if op.status is not None:
            where += " AND m.status = ?"
            params.append(op.status)
        with self._read() as conn:
            return self._fetch_records(conn, f"{where} ORDER BY m.created_at DESC, m.rowid DESC LIMIT ? OFFSET ?",
                                       (*params, op.limit, op.offset))

    @staticmethod
    def _scope_sql(namespace: str, user_id: str | None, agent_id: str | None, category: str | None,
                   filter: dict[str, Any] | None) -> tuple[str, builtins.list[Any]]:
        clauses = ["m.namespace = ?"]
        params: builtins.list[Any] = [namespace]
        if user_id is not None:
            clauses.append("m.user_id = ?")
            params.append(user_id)
        if agent_id is not None:
            clauses.append("m.agent_id = ?")
            params.append(agent_id)
        if category is not None:
            clauses.append("m.category = ?")
            params.append(category)
        sql, args = compile_filter(filter)
        if sql:
            clauses.append(sql)
            params.extend(args)
        return " AND ".join(clauses), params

    def update(self, op: Update) -> MemoryRecord:
        namespace, memory_id, changes, expected_version, now = (op.namespace, op.memory_id, op.changes,
                                                                op.expected_version, op.now)
        vector, model_id, content_hash, terms = op.vector, op.model_id, op.content_hash, op.terms
        with self._write() as conn:
            found = self._fetch_records(conn, "m.namespace = ? AND m.memory_id = ?", (namespace, memory_id))
            if not found:
                raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
            current = found[0]
            if expected_version is not None and current.version != expected_version:
                raise VersionConflictError(
                    f"memory {memory_id} is at version {current.version}, not {expected_version}")
            self._check_dimension(conn, model_id, [vector])
            self._keep_version(conn, current)
            new = current.replace(**changes, version=current.version + 1, updated_at=now)
            if content_hash is not None:
                new = new.replace(embedding_model=model_id)
            seq = self._next_seq(conn)
            values = _record_values(new)
            cursor = conn.execute(
                "UPDATE memories SET content = ?, category = ?, source = ?, importance = ?, entities = ?, metadata = ?, "
                "updated_at = ?, expire_at = ?, embedding_model = ?, version = ?, status = ?, seq = ?, "
                "last_accessed_at = ?, access_count = ?, "
                "content_hash = COALESCE(?, content_hash), vector = CASE WHEN ? THEN ? ELSE vector END, "
                "screened = CASE WHEN ? THEN ? ELSE screened END "
                "WHERE namespace = ? AND memory_id = ? AND version = ? RETURNING rowid",
                (values[5], values[6], values[7], values[8], values[9], values[10], values[12], values[15],
                 values[16], values[17], values[18], seq, values[13], values[14], content_hash, content_hash is not None, _blob(vector),
                 content_hash is not None, op.screened, namespace, memory_id, current.version),
            )
            row = cursor.fetchone()
            if row is None:  # pragma: no cover - BEGIN IMMEDIATE serialises writers
                raise VersionConflictError(f"memory {memory_id} changed concurrently")
            if terms is not None:
                self._unindex_text(conn, row[0])
                self._index_text(conn, [(row[0], *fts_row(namespace, new.user_id, terms))])
        return new

    def _remove_row(self, conn: sqlite3.Connection, namespace: str, memory_id: str,
                    keep_version: bool = False) -> MemoryRecord | None:
        """Delete a memory's live row and full-text row (the vector caches follow); the record it held,
        kept first as a past version with `keep_version`."""
        found = self._fetch_records(conn, "m.namespace = ? AND m.memory_id = ?", (namespace, memory_id))
        if found and keep_version:
            self._keep_version(conn, found[0])
        row = conn.execute("DELETE FROM memories WHERE namespace = ? AND memory_id = ? RETURNING rowid",
                           (namespace, memory_id)).fetchone()
        if row is None:
            return None
        self._unindex_text(conn, row[0])
        conn.execute("INSERT INTO tombstones(row_id, seq) VALUES (?, ?)", (row[0], self._next_seq(conn)))
        return found[0]

    def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> bool:
        with self._write() as conn:
            record = self._remove_row(conn, namespace, memory_id, keep_version=True)
            if record is None:
                return False
            conn.execute("INSERT OR REPLACE INTO memory_tombstones(memory_id, namespace, user_id, deleted_at) "
                         "VALUES (?, ?, ?, ?)", (memory_id, namespace, record.user_id,
                                                 to_micros(now or datetime.now(timezone.utc))))
        return True

    def purge(self, namespace: str, memory_id: str) -> bool:
        with self._write() as conn:
            removed = self._remove_row(conn, namespace, memory_id) is not None
            tombstone = conn.execute("DELETE FROM memory_tombstones WHERE memory_id = ? AND namespace = ? "
                                     "RETURNING memory_id", (memory_id, namespace)).fetchone()
            if removed or tombstone is not None:
                conn.execute("DELETE FROM memory_versions WHERE namespace = ? AND memory_id = ?", (namespace, memory_id))
        return removed or tombstone is not None

    def history(self, namespace: str, memory_ids: Sequence[str],
                model_id: str | None) -> dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]:
        out: dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]] = {}

        def vector_of(blob: bytes | None, model: str | None) -> np.ndarray | None:
            return None if blob is None or model_id is None or model != model_id else np.frombuffer(blob, np.float32)

        with self._read() as conn:
            for start in range(0, len(memory_ids), 500):
                chunk = builtins.list(memory_ids[start:start + 500])
                marks = ", ".join("?" for _ in chunk)
                kept: dict[str, builtins.list[tuple[int, str, bytes | None, str | None]]] = {}
                for memory_id, version, record, vector, vector_model in conn.execute(
                        f"SELECT memory_id, version, record, vector, vector_model FROM memory_versions "
                        f"WHERE namespace = ? AND memory_id IN ({marks}) ORDER BY memory_id, version", (namespace, *chunk)):
                    kept.setdefault(memory_id, []).append((version, record, vector, vector_model))
                live = set()
                for row in conn.execute(f"SELECT {_RECORD_COLUMNS}, vector FROM memories m "
                                        f"WHERE namespace = ? AND memory_id IN ({marks})", (namespace, *chunk)):
                    # as `_versions`: the present one is its kept record where there is one, else the row
                    present, vector = _row_to_record(row[:19]), vector_of(row[19], row[16])
                    live.add(present.memory_id)
                    earlier, kept_present = _up_to(present.version, kept.get(present.memory_id, []))
                    out[present.memory_id] = [
                        *((MemoryRecord.from_dict(json.loads(r)), vector_of(b, m)) for _, r, b, m in earlier),
                        (present if kept_present is None else MemoryRecord.from_dict(json.loads(kept_present[1])),
                         vector)]
                if deleted := [m for m in chunk if m not in live and m in kept]:
                    for (memory_id,) in conn.execute(
                            f"SELECT memory_id FROM memory_tombstones WHERE namespace = ? "
                            f"AND memory_id IN ({', '.join('?' for _ in deleted)})", (namespace, *deleted)):
                        out[memory_id] = [(MemoryRecord.from_dict(json.loads(r)), vector_of(b, m))
                                          for _, r, b, m in kept[memory_id]]
        return out

    def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
              model_id: str | None, changed_only: bool = False) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
        at_us = to_micros(at)
        scope, params = "namespace = ?", [namespace]
        if user_id is not None:
            scope += " AND user_id = ?"
            params.append(user_id)
        if memory_ids is not None:
            scope += f" AND memory_id IN ({', '.join('?' for _ in memory_ids)})"
            params.extend(memory_ids)
        out: builtins.list[tuple[MemoryRecord, np.ndarray | None]] = []
        changed: Changed = {}
        # only those written since: by the index of write times, not the scope's every row
        since = (" INDEXED BY memories_written", " AND updated_at > ?", [at_us]) if changed_only else ("", "", [])
        with self._read() as conn:
            for row in conn.execute(f"SELECT {_RECORD_COLUMNS}, vector FROM memories m{since[0]} WHERE {scope} "
                                    f"AND created_at <= ?{since[1]} ORDER BY created_at, rowid",
                                    (*params, at_us, *since[2])):
                if row[12] > at_us:  # updated_at: a later version; the one of `at` is among the kept ones
                    changed[row[0]] = (row[5], row[19], row[16])
                    continue
                vector = row[19] if row[19] is not None and row[16] == model_id else None
                out.append((_row_to_record(row[:19]), None if vector is None else np.frombuffer(vector, np.float32)))
            deleted = [r[0] for r in conn.execute(f"SELECT memory_id FROM memory_tombstones WHERE {scope} "
                                                  "AND deleted_at > ?", (*params, at_us))]
            wanted = [*changed, *deleted]
            versions: dict[str, builtins.list[dict[str, Any]]] = {}
            past_vectors: dict[tuple[str, int], tuple[bytes, str | None]] = {}
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                for memory_id, version, record, vector, vector_model in conn.execute(
                        f"SELECT memory_id, version, record, vector, vector_model FROM memory_versions "
                        f"WHERE namespace = ? AND memory_id IN ({', '.join('?' for _ in chunk)})", (namespace, *chunk)):
                    versions.setdefault(memory_id, []).append(json.loads(record))
                    if vector is not None:
                        past_vectors[(memory_id, version)] = (vector, vector_model)
        return out + versions_then(wanted, versions, changed, at, model_id, lambda blob: np.frombuffer(blob, np.float32),
                                   past_vectors)

    def written_since(self, namespace: str, at: datetime, user_id: str | None) -> builtins.list[str]:
        user, params = ("", []) if user_id is None else (" AND user_id = ?", [user_id])
        with self._read() as conn:
            return [r[0] for r in conn.execute(
                f"SELECT memory_id FROM memories INDEXED BY memories_written WHERE namespace = ? AND updated_at > ?{user}",
                (namespace, to_micros(at), *params))]

    # -- search -------------------------------------------------------------------------------
    @staticmethod
    def _seq(conn: sqlite3.Connection) -> int:
        """The change counter: every write of a memory (or its full-text row) moves it."""
        return int(conn.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])

    @staticmethod
    def _counters(conn: sqlite3.Connection) -> tuple[int, int]:
        """The change counter (`_seq`) and the recall bonuses' stamp (`_VectorCache.touch`), read
        by one statement: one snapshot, and a statement fewer a recall."""
        seq, accessed_seq = conn.execute(_COUNTERS).fetchone()
        return int(seq), int(accessed_seq)

    def _cache(self, conn: sqlite3.Connection, model_id: str | None,
               scope: tuple[str, str | None, bool] | None = None,
               counters: tuple[int, int] | None = None) -> _VectorCache:
        """The vectors of `model_id`, current, with those of `scope` (namespace, user_id, all_users) read.

        The counters (`_counters`) are read before anything else (or given by a caller that read
        them first): a row written meanwhile is read again by the next call, and taking a row in
        twice is harmless."""
        seq, accessed_seq = self._counters(conn) if counters is None else counters
        cache = self._caches.get(model_id)
        grown = cache is None or seq != cache.seq  # (else the blocks are as `attach` saw them last)
        if cache is None:
            foreign = dict(conn.execute(_FOREIGN_ROWS, (model_id, model_id)).fetchall() if model_id is not None else
                           conn.execute("SELECT rowid, namespace FROM memories WHERE status = 'active' AND "
                                        "(vector IS NULL OR embedding_model IS NOT NULL)").fetchall())
            cache = self._caches[model_id] = _VectorCache(model_id, seq, foreign, accessed_seq)
        elif accessed_seq != cache.accessed_seq:  # read first: a row `seq` brings in below is as current
            cache.touch(conn.execute(_STAMPED_SINCE, (cache.accessed_seq,)).fetchall())
            cache.accessed_seq = accessed_seq
        if seq != cache.seq:
            rows = conn.execute(f"SELECT {_CACHE_COLUMNS} FROM memories WHERE seq > ?", (cache.seq,)).fetchall()
            deleted = [r[0] for r in conn.execute("SELECT row_id FROM tombstones WHERE seq > ?", (cache.seq,))]
            cache.apply(rows, deleted)
            cache.seq = seq
        if scope is not None and not cache.holds(*scope):
            namespace, user_id, all_users = scope
            where, params = cache.unheld_users(namespace) if all_users else \
                ("namespace = ? AND user_id IS ?", [namespace, user_id])
            counts = dict(conn.execute(_SCOPE_COUNTS.format(where=where), params))
            cursor = conn.execute(_SCOPE_ROWS.format(where=where), (*params, model_id))
            cache.load(iter(lambda: cursor.fetchmany(LOAD_ROWS), []), namespace, user_id, all_users, counts)
            grown = True
        if grown:
            self.indexes.attach(conn, cache)
        return cache

    def search(self, request: SearchRequest) -> builtins.list[Candidate]:
        now_us = to_micros(request.now)
        needs_sql_scope = bool(request.filter)
        with self._read() as conn:
            counters = self._counters(conn)  # read once: the caches below are all checked against them
            seq = counters[0]
            similarities: dict[int, float] = {}
            cache: _VectorCache | None = None
            if request.query_vector is not None:
                cache = self._cache(conn, request.model_id,
                                    (request.namespace, request.user_id, request.user_id is None), counters)
            text = self._full_text_query(conn, request, seq, cache) if request.terms else None
            with self._ranked_alongside(text, request.limit) as window:
                if cache is not None and request.query_vector is not None:
                    similarities = self._filtered_vector_candidates(conn, cache, request, now_us) \
                        if needs_sql_scope else self._vector_candidates(cache, request, now_us, None)
                ranks, found = self._text_candidates(conn, request, now_us, seq, text, cache, window) \
                    if text is not None else ({}, {})
            wanted = list(dict.fromkeys([*similarities, *ranks]))
            if not wanted:
                return []
            if cache is not None and request.query_vector is not None:
                similarities.update(self._cosines(cache, [rid for rid in ranks if rid not in similarities],
                                                  request.query_vector))
            if request.worth_reading is not None:
                nan = repeat(float("nan"))  # (`map` of `dict.get`: no Python step per candidate)
                keep = request.worth_reading(
                    np.fromiter(map(similarities.get, wanted, nan), np.float64, len(wanted)),
                    np.fromiter(map(ranks.get, wanted, nan), np.float64, len(wanted)),
                    None if cache is None else cache.live_inputs(wanted, now_us))
                wanted = [rid for rid, kept in zip(wanted, keep.tolist()) if kept]
            unread = [rid for rid in wanted if rid not in found]
            if unread:
                # whole rows: the records of those that rank first are made from them (`Candidate.full`);
                # the full-text terms only of the text matches, which calibration reads (a join for
                # every row read as many rows again: 1M memories, 30 rows 0.67 -> 0.29 ms, cold)
                indexed = dict(conn.execute(
                    f"SELECT id, c1 FROM memory_fts_content WHERE id IN ({', '.join('?' for _ in matched)})",
                    matched)) if (matched := [rid for rid in unread if rid in ranks]) else {}
                found.update((row[0], (*row, indexed.get(row[0]))) for row in conn.execute(
                    f"SELECT m.rowid, {_CANDIDATE_COLUMNS} FROM memories m "
                    f"WHERE m.rowid IN ({', '.join('?' for _ in unread)})", unread))
        screened_by = request.screened_by
        return [  # positional: ~30 candidates a recall
            Candidate(None, similarities.get(rid), ranks.get(rid), row[1], float(row[2]), row[3], row[4], row[5],
                      int(row[6]), row[7], functools.partial(_candidate_record, row) if len(row) > 9 else None,
                      screened_by is not None and row[_SCREENED_AT] == screened_by,
                      row[_INDEXED_AT] if len(row) > _INDEXED_AT else None)
            for rid in wanted if (row := found.get(rid)) is not None
        ]

    @staticmethod
    def _cosines(cache: _VectorCache, rowids: Sequence[int], query: np.ndarray) -> dict[int, float]:
        """The products with `query` of the rows among `rowids` that have a vector (full-text
        candidates the vector search did not find), one `row_products` per scope: a memory's
        similarity must not depend on how it was found."""
        if not rowids:
            return {}
        ids = np.asarray(rowids, dtype=np.int64)
        numbers, slots = cache.directory.locate(ids)
        out: dict[int, float] = {}
        for number, of_block in cache.directory.by_block(numbers):
            rows = cache.directory.blocks[number].matrix[slots[of_block]]
            out.update(zip(ids[of_block].tolist(), row_products(rows, query).tolist()))
        return out

    def _filtered_vector_candidates(self, conn: sqlite3.Connection, cache: _VectorCache, request: SearchRequest,
                                    now_us: int) -> dict[int, float]:
        """`_vector_candidates` inside the request's filter, which only SQL evaluates: checked first
        on the best `FILTER_WIDENING` x `limit` candidates of the scope (their rows alone read); when
        fewer than `limit` of them pass, on every row of the scope (100k memories: ~60 ms), and the
        search runs again among those that pass. The first is the second's answer whenever it is
        taken: a row that passes outside the wider candidates is no closer than any inside."""
        where, params = self._scope_sql(request.namespace, request.user_id, request.agent_id, request.category,
                                        request.filter)
        wider = FILTER_WIDENING * request.limit
        best = self._vector_candidates(cache, dataclasses.replace(request, limit=wider), now_us, None)
        if best:
            passing = {row[0] for row in conn.execute(  # (by rowid: the planner would read the scope's index)
                f"SELECT m.rowid FROM memories m NOT INDEXED WHERE m.rowid IN ({', '.join('?' for _ in best)}) "
                f"AND {where} AND m.status = 'active'", (*best, *params))}
            if len(passing) >= request.limit or len(best) < wider:  # (fewer: the scope holds no more)
                return dict(islice(((rowid, sim) for rowid, sim in best.items() if rowid in passing), request.limit))
        allowed = np.array([r[0] for r in conn.execute(
            f"SELECT m.rowid FROM memories m WHERE {where} AND m.status = 'active'", params)], dtype=np.int64)
        return self._vector_candidates(cache, request, now_us, allowed)

    @staticmethod
    def _vector_candidates(cache: _VectorCache, request: SearchRequest, now_us: int,
                           allowed: np.ndarray | None) -> dict[int, float]:
        query = request.query_vector
        assert query is not None
        span = cache.spans.get(request.namespace) if request.user_id is None else None
        if span is not None and allowed is None:
            # An agent or a category is checked on the span's best `FILTER_WIDENING` x `limit` rows
            # (1M over every user, a category all of them have: 85.8 ms exact -> 2 ms); when fewer
            # than `limit` of them are of it, each block is searched for its own.
            labelled = request.agent_id is not None or request.category is not None
            found = span.best(query, now_us, FILTER_WIDENING * request.limit if labelled else request.limit)
            if found is not None:
                ids, sims = found
                if labelled:
                    keep = cache.labelled(ids, request.agent_id, request.category)
                    ids, sims = ids[keep][:request.limit], sims[keep][:request.limit]
                if len(ids) == request.limit or not labelled:
                    return dict(zip(ids.tolist(), sims.tolist()))
        found_ids: builtins.list[np.ndarray] = []
        found_sims: builtins.list[np.ndarray] = []
        for block in cache.scope_blocks(request.namespace, request.user_id, request.user_id is None):
            n = block.size
            if not n:
                continue
            rowids = block.rowids[:n]
            # None: every row kept (none of the block's rows expired, no filter), without a pass over the block
            mask = None if block.soonest > now_us else block.expire[:n] > now_us
            for keeps in ((block.agents[:n] == block.code(request.agent_id)) if request.agent_id is not None else None,
                          (block.categories[:n] == block.code(request.category)) if request.category is not None
                          else None,
                          np.isin(rowids, allowed) if allowed is not None else None):
                if keeps is not None:
                    mask = keeps if mask is None else mask & keeps
            kept = n if mask is None else int(np.count_nonzero(mask))
            if not kept:
                continue
            slots, sims = block.best(query, None if kept == n else mask, kept, request.limit)
            rowids = rowids[slots]
            found_ids.append(rowids)
            found_sims.append(sims)
        if not found_ids:
            return {}
        ids = np.concatenate(found_ids)
        sims = np.concatenate(found_sims)
        order = np.argsort(-sims)[: request.limit]
        return dict(zip(ids[order].tolist(), sims[order].tolist()))

    def document_frequencies(self, namespace: str, terms: Sequence[str],
                             user_id: str | None = None) -> tuple[int, dict[str, int]]:
        with self._read() as conn:
            seq = self._seq(conn)
            rows, docs = self._fts_row_count(conn, seq), self._document_frequencies(conn, terms, seq)
            if user_id is None:
                return rows, docs
            scope = scope_token(namespace, user_id)
            scope_rows, whole_table = self._scope_row_count(conn, scope, rows, seq)
            if whole_table:
                return rows, {t: n for t, n in docs.items() if n}
            held = {}
            for term in terms:
                if not docs.get(term):
                    continue
                elif (count := self._held_count(seq, scope, term)) is not None:
                    held[term] = count
                elif docs[term] > COMMON_TERM_DOCS:  # too common to count: the scope's share of the table's
                    held[term] = round(docs[term] * scope_rows / max(1, rows))
                else:
                    held[term] = self._count_held(conn, seq, scope, term)
            return scope_rows, held

    def _held_count(self, seq: int, scope: str, term: str) -> int | None:
        return self._held.get((scope, term)) if self._held_seq == seq else None

    def _count_held(self, conn: sqlite3.Connection, seq: int, scope: str, term: str) -> int:
        """Rows of `scope` holding `term` (kept until the next write)."""
        match = f'scope : "{scope}" AND body : "{term.replace(chr(34), chr(34) * 2)}"'
        count = int(conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (match,)).fetchone()[0])
        if self._held_seq != seq:
            self._held = {}
            self._held_seq = seq
        self._held[(scope, term)] = count
        return count

    def _document_frequencies(self, conn: sqlite3.Connection, terms: Sequence[str], seq: int) -> dict[str, int]:
        """How many full-text rows hold each term (`memory_terms`), remembered until the next write."""
        if self._df_seq != seq or len(self._df) > 10_000:
            self._df = {}
            self._df_seq = seq
        known = self._df
        if asked := [term for term in dict.fromkeys(terms) if term not in known]:
            found = dict(conn.execute(f"SELECT term, docs FROM memory_terms WHERE term IN "
                                      f"({', '.join('?' for _ in asked)})", asked).fetchall())
            known.update((term, int(found.get(term, 0))) for term in asked)
        return {term: known[term] for term in terms}

    # -- the full-text rows and their term counts, written together ---------------------------
    @staticmethod
    def _index_text(conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Add full-text rows (rowid, scope, body) and count their terms."""
        conn.executemany("INSERT INTO memory_fts(rowid, scope, body) VALUES (?, ?, ?)", rows)
        SQLiteBackend._count_terms(conn, (body for _, _, body in rows), 1)

    @staticmethod
    def _unindex_text(conn: sqlite3.Connection, rowid: int) -> None:
        """Remove a full-text row and its terms' counts."""
        row = conn.execute("SELECT body FROM memory_fts WHERE rowid = ?", (rowid,)).fetchone()
        if row is not None:  # (a virtual table's DELETE takes no RETURNING)
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (rowid,))
            SQLiteBackend._count_terms(conn, [row[0]], -1)

    @staticmethod
    def _count_terms(conn: sqlite3.Connection, bodies: Iterable[str], sign: int) -> None:
        """Move `memory_terms` by `sign` for every term of each body (a body is its terms joined by
        spaces, `fts_row`; a term counts once a row)."""
        counts: dict[str, int] = {}
        for body in bodies:
            for term in set(body.split()):
                counts[term] = counts.get(term, 0) + sign
        conn.executemany("INSERT INTO memory_terms(term, docs) VALUES (?, ?) "
                         "ON CONFLICT(term) DO UPDATE SET docs = docs + excluded.docs", counts.items())

    def _count_stored_terms(self, conn: sqlite3.Connection) -> None:
        """Fill `memory_terms` from the full-text rows already stored (migration 12)."""
        conn.execute("DELETE FROM memory_terms")
        last = 0
        while batch := conn.execute("SELECT rowid, body FROM memory_fts WHERE rowid > ? ORDER BY rowid LIMIT 5000",
                                    (last,)).fetchall():
            last = batch[-1][0]
            self._count_terms(conn, (body for _, body in batch), 1)

    def _full_text_query(self, conn: sqlite3.Connection, request: SearchRequest, seq: int,
                         cache: _VectorCache | None) -> _FullTextQuery | None:
        """What `request` asks of the full-text index (None: none of its terms is selective)."""
        docs = self._document_frequencies(conn, request.terms, seq)
        table_rows = self._fts_row_count(conn, seq)
        selective = selective_terms(request.terms, docs, table_rows, with_vector=request.query_vector is not None)
        if not selective:
            return None
        scope = scope_token(request.namespace, request.user_id) if request.user_id is not None \
            else namespace_token(request.namespace)
        scope_rows, whole_table = self._scope_row_count(conn, scope, table_rows, seq)
        held_match, indexed = None, False
        if whole_table and cache is not None and request.agent_id is None and request.category is None \
                and not request.filter and cache.holds(request.namespace, request.user_id, request.user_id is None):
            held_match = _whole_table_match(selective)
            indexed = cache.indexed(request.namespace, request.user_id, request.user_id is None)
        return _FullTextQuery(tuple(selective), docs, table_rows, scope, scope_rows, whole_table, held_match, indexed)

    @contextmanager
    def _ranked_alongside(self, text: _FullTextQuery | None,
                          limit: int) -> Iterator[Future[sqlite3.Cursor] | None]:
        """FTS5's best matches for `text`'s held match (`_best_matches_held`), ranked on another
        core by a second connection while this thread scans the vectors (None: ranked in turn, as
        in a scope of fewer than `ALONGSIDE_ROWS` memories, or one its own index answers for).

        The statement's first step ranks every match; its cursor comes back to read the rest. Not
        inside a write transaction, whose rows only this connection sees, nor in memory."""
        window = None
        if text is not None and text.held_match is not None and text.scope_rows >= ALONGSIDE_ROWS \
                and not text.indexed \
                and self.path is not None and not self._in_write:
            if self._side is None:
                target, uri, busy_timeout_ms = self._target
                self._side = sqlite3.connect(target, timeout=busy_timeout_ms / 1000, isolation_level=None,
                                             check_same_thread=False, uri=uri)
                self._side.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
                self._side.execute("PRAGMA query_only = 1")
            window = alongside(self._side.execute, _BEST_MATCHES, (text.held_match, 2 * limit))
        try:
            yield window
        finally:
            if window is not None:  # the connection is free again only once its statement ran,
                wait([window])
                if window.exception() is None:  # and its rows were read or dropped: an open one holds a snapshot
                    window.result().close()

    def _text_candidates(self, conn: sqlite3.Connection, request: SearchRequest, now_us: int, seq: int,
                         text: _FullTextQuery, cache: _VectorCache | None = None,
                         window: Future[sqlite3.Cursor] | None = None,
                         ) -> tuple[dict[int, float], dict[int, tuple[Any, ...]]]:
        """Full-text matches ranked by BM25 over the asking scope's own statistics (rowid -> rank),
        and the rows (rowid, `_SCORED_COLUMNS`) of those whose scoring columns it read on the way.
        With the vector `cache` of the scope, which rows are in the scope and live is read there;
        `window`: the held match's best already ranked (`_ranked_alongside`).

        A name in every second memory of one user is no rarer for that user because a hundred
        other users never say it: term weights come from the scope's rows, not the table's."""
        selective, docs, table_rows, scope, scope_rows = text.terms, text.docs, text.table_rows, text.scope, \
            text.scope_rows
        where, params = self._scope_sql(request.namespace, request.user_id, request.agent_id, request.category,
                                        request.filter)
        # CROSS JOIN: the full-text match drives; probing it once per row of the user's is O(rows)
        matches = ("FROM memory_fts f CROSS JOIN memories m ON m.rowid = f.rowid "
                   f"WHERE memory_fts MATCH ? AND {where} AND m.status = 'active' "
                   "AND (m.expire_at IS NULL OR m.expire_at > ?)")
        if text.whole_table:  # the scope is the table: its weights are bm25()'s own, ranked in SQLite
            match = text.held_match or _whole_table_match(selective)
            if text.held_match is not None and cache is not None:
                ranked = window.result() if window is not None else conn.execute(
                    _BEST_MATCHES, (match, 2 * request.limit))
                held = self._best_matches_held(conn, cache, ranked.fetchall(), request, now_us, where, params)
                if held is not None:
                    best = min(map(itemgetter(1), held), default=0.0)
                    return {rowid: (rank / best if best < 0 else 1.0) for rowid, rank in held}, {}
            rows = self._best_matches_first(conn, match, where, params, now_us, request.limit)
            if rows is None:
                rows = conn.execute(f"SELECT f.rowid, bm25(memory_fts, 0.0, 1.0) AS rank, {_SCORED_COLUMNS} {matches} "
                                    "ORDER BY rank LIMIT ?", (match, *params, now_us, request.limit)).fetchall()
            best_rank = min((r[1] for r in rows), default=0.0)
            return ({int(r[0]): (float(r[1]) / best_rank if best_rank < 0 else 1.0) for r in rows},
                    {int(r[0]): (r[0], *r[2:]) for r in rows})
        scores: dict[int, float] = {}
        # FTS5's bm25() weighs a term by the whole table; one query per term lets each term's
        # share be re-weighted by the scope's own frequency.
        for term in selective:
            match = f'scope : "{scope}" AND body : "{term.replace(chr(34), chr(34) * 2)}"'
            in_scope = self._count_held(conn, seq, scope, term)
            if not in_scope:
                continue
            reweight = fts5_idf(scope_rows, in_scope) / fts5_idf(table_rows, docs[term])
            for rowid, rank in conn.execute(f"SELECT f.rowid, bm25(memory_fts, 0.0, 1.0) {matches}",
                                            (match, *params, now_us)):
                scores[rowid] = scores.get(rowid, 0.0) - rank * reweight
        if not scores:
            return {}, {}
        top = heapq.nlargest(request.limit, scores.items(), key=lambda item: item[1])
        best = top[0][1]
        return {int(rowid): (score / best if best > 0 else 1.0) for rowid, score in top}, {}

    @staticmethod
    def _best_matches_held(conn: sqlite3.Connection, cache: _VectorCache, window: builtins.list[Any],
                           request: SearchRequest, now_us: int, where: str,
                           params: Sequence[Any]) -> builtins.list[tuple[int, float]] | None:
        """`_best_matches_first` for a scope whose vectors `cache` holds, as (rowid, rank), from
        FTS5's best 2 x `limit` matches (`window`, as `_BEST_MATCHES` ranks them) without reading
        `memories`: a match the scope's blocks hold is active, in scope and live if its expiry says
        so; one another scope's block holds is not in scope; only a match no block holds (no vector
        of this model) is looked up. A recall then reads the rows of the matches it can use
        (`SearchRequest.worth_reading`), not of every match (20k memories: ~127 a query).
        None when fewer pass and more matches exist."""
        limit = request.limit
        if not window:
            return []
        ids = np.fromiter(map(itemgetter(0), window), dtype=np.int64, count=len(window))
        numbers, slots = cache.directory.locate(ids)
        passes = np.zeros(len(ids), dtype=bool)
        # the blocks holding a match, not every block of the scope (over every user: 100 blocks
        # cost 0.4 ms of numpy calls, for a window of 2 matches)
        in_scope = {block.number: block for block in
                    cache.scope_blocks(request.namespace, request.user_id, request.user_id is None)}
        for number, mine in cache.directory.by_block(numbers):
            if (block := in_scope.get(number)) is not None:
                passes[mine] = True if block.soonest > now_us else block.expire[slots[mine]] > now_us
        unheld = np.flatnonzero(numbers < 0)
        if len(unheld):
            asked = ids[unheld].tolist()
            live = {row[0] for row in conn.execute(
                f"SELECT m.rowid FROM memories m WHERE m.rowid IN ({', '.join('?' for _ in asked)}) AND {where} "
                "AND m.status = 'active' AND (m.expire_at IS NULL OR m.expire_at > ?)", (*asked, *params, now_us))}
            passes[unheld] = [rowid in live for rowid in asked]
        kept = [row for row, ok in zip(window, passes.tolist()) if ok]  # (rowid, rank) as SQLite gave them
        if len(kept) < limit and len(window) == 2 * limit:
            return None
        return kept[:limit]

    @staticmethod
    def _best_matches_first(conn: sqlite3.Connection, match: str, where: str, params: Sequence[Any], now_us: int,
                            limit: int) -> builtins.list[tuple[Any, ...]] | None:
        """The best `limit` matches that pass the filters, from FTS5's best 2 x `limit` matches
        alone, as (rowid, rank, `_SCORED_COLUMNS`); None when fewer pass and more matches exist
        (the caller then filters them all).

        Filtering each match before ranking reads every matching row of `memories` (10k rows, query
        terms in 5-12% of them: 1.65 ms a query, 1.17 without those reads)."""
        # Sorted by SQLite's sorter, not by FTS5's `ORDER BY rank` (the same rows in the same
        # order, ties by rowid, but 0.63 ms against 0.40 for 120 matches at 20k memories).
        window = conn.execute(
            "SELECT t.rowid, t.rank, m.rowid IS NOT NULL AND "
            f"{where} AND m.status = 'active' AND (m.expire_at IS NULL OR m.expire_at > ?), {_SCORED_COLUMNS} "
            "FROM (SELECT rowid, bm25(memory_fts, 0.0, 1.0) AS rank FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY rank LIMIT ?) t "
            "LEFT JOIN memories m ON m.rowid = t.rowid ORDER BY t.rank",
            (*params, now_us, match, 2 * limit)).fetchall()
        kept = [(row[0], row[1], *row[3:]) for row in window if row[2]]
        if len(kept) < limit and len(window) == 2 * limit:
            return None
        return kept[:limit]

    def _fts_row_count(self, conn: sqlite3.Connection, seq: int) -> int:
        """Rows in the full-text index, as FTS5's own BM25 counts them (its averages record); read
        again when `seq` moved."""
        if self._fts_rows[0] != seq:
            row = conn.execute("SELECT block FROM memory_fts_data WHERE id = 1").fetchone()
            self._fts_rows = (seq, _varint(row[0]) if row and row[0] else 0)
        return self._fts_rows[1]

    def _scope_row_count(self, conn: sqlite3.Connection, scope: str, table_rows: int,
                         seq: int) -> tuple[int, bool]:
        """Full-text rows of one scope, and whether they were the whole table when counted; cached
        until writes could move the count by more than 1%. Both come from the same moment: a
        fresh table count against a cached scope count would call a scope that is the whole
        table a part of it after its own few latest saves (and rank in Python, 10k: 8 ms)."""
        cached = self._scope_counts.get(scope)
        if cached is not None and 0 <= seq - cached[0] <= cached[1] // 100:
            return cached[1], cached[2]
        count = int(conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                                 (f'scope : "{scope}"',)).fetchone()[0])
        self._scope_counts[scope] = (seq, count, count >= table_rows)
        return count, count >= table_rows

    def count_foreign_vectors(self, namespace: str, model_id: str | None) -> int:
        with self._read() as conn:
            cache = self._cache(conn, model_id)
            return cache.foreign_counts[namespace]

    def blocked_sources(self, namespace: str) -> dict[str, dict[str, Any]]:
        with self._read() as conn:
            rows = conn.execute("SELECT source, reason, blocked_at, blocked_by FROM blocked_sources WHERE namespace = ? "
                                "ORDER BY source", (namespace,)).fetchall()
        return {r[0]: {"source": r[0], "reason": r[1], "blocked_at": to_iso(from_micros(r[2])), "blocked_by": r[3]}
                for r in rows}

    def block_source(self, namespace: str, source: str, reason: str | None, actor: str | None,
                     now: datetime, blocked: bool) -> bool:
        with self._write() as conn:
            if blocked:
                cur = conn.execute("INSERT OR IGNORE INTO blocked_sources VALUES (?, ?, ?, ?, ?)",
                                   (namespace, source, reason, to_micros(now), actor))
            else:
                cur = conn.execute("DELETE FROM blocked_sources WHERE namespace = ? AND source = ?", (namespace, source))
            return cur.rowcount > 0

    # -- bookkeeping --------------------------------------------------------------------------
    def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None:
        if bonuses and not self.read_only:  # a read-only store recalls without counting accesses
            self._bookkeeping.put((namespace, list(bonuses), to_micros(now)))

    def _write_bonuses(self, batch: _BonusBatch) -> None:
        """Write a batch of recall bonuses, then bring this process's vector caches current with
        them (`_catch_up_after_bonuses`).

        A batch of up to `BONUS_ROWS_HELD` rows (an agent's last few recalls) is written on the
        store's connection: a commit on another one makes this process's next read start over (its
        page cache emptied, the changed pages read again from the WAL): in the bench's turn at 100k
        the recall after a bonus commit took 3.6 ms p50 against 2.1 for the others. A larger batch
        (recalls back to back, ~600 rows at 100k in 0.1 s) is written on a connection of its own,
        which holds nothing of this process's: written on the store's, this process's recalls
        waited for it (p99 5.8-7.2 ms against 2.4-4.0), and its commit is one in hundreds of recalls."""
        rows = [(now_us, bonus, namespace, memory_id)
                for namespace, bonuses, now_us in batch for memory_id, bonus in bonuses]
        if self.path is None or len(rows) <= BONUS_ROWS_HELD:  # (a database in memory has one connection)
            self._write_bonuses_held(rows)
        else:
            self._write_bonuses_aside(rows)
        with self._lock:
            if not self._closed:
                self._catch_up_after_bonuses()

    def _write_bonuses_aside(self, rows: Sequence[tuple[int, float, str, str]]) -> None:
        """Bonus rows written on a connection of their own: this process's recalls read meanwhile,
        and while it waits for another connection's write (another process's import)."""
        if self._bonus is None:
            self._bonus = sqlite3.connect(self._target[0], timeout=self._target[2] / 1000, isolation_level=None,
                                          check_same_thread=False, uri=self._target[1])
            self._bonus.execute("PRAGMA wal_autocheckpoint = 0")  # (per connection: the checkpointer does it)
            self._bonus.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn = self._bonus
        conn.execute("BEGIN IMMEDIATE")  # waits for another writer up to the store's busy timeout
        try:
            self._apply_bonuses(conn, rows)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        with self._lock:
            if not self._closed:
                self._count_commit(self._conn)

    def _catch_up_after_bonuses(self) -> None:
        """Take the bonuses just written into this process's vector caches: the next recall would
        otherwise read the stamped rows itself (`_cache`)."""
        try:
            for model_id in builtins.list(self._caches):
                self._cache(self._conn, model_id)
        except sqlite3.Error:  # the next recall catches up as it always could
            log.debug("polymem: caches not brought current after recall bonuses", exc_info=True)

    def _write_bonuses_held(self, rows: Sequence[tuple[int, float, str, str]]) -> None:
        """Bonus rows written on the store's connection, only when no other connection is writing:
        waiting for one with the store held would make this process's recalls wait too."""
        give_up = time.monotonic() + self._target[2] / 1000  # the store's busy timeout, as a write waits
        while True:
            try:
                with self._write(wait=False) as conn:
                    self._apply_bonuses(conn, rows)
                return
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", 0) & 0xFF != _BUSY or time.monotonic() > give_up:
                    raise
            time.sleep(BUSY_PAUSE_S)

    @staticmethod
    def _apply_bonuses(conn: sqlite3.Connection, rows: Sequence[tuple[int, float, str, str]]) -> None:
        """Bonus rows `(when in µs, bonus, namespace, memory_id)`, stamped (`_VectorCache.touch`)."""
        stamp = int(conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                                 "WHERE key = 'accessed_seq' RETURNING value").fetchone()[0])
        conn.executemany("UPDATE memories SET access_count = access_count + 1, last_accessed_at = ?, "
                         "importance = MIN(1.0, importance + ?), accessed_seq = ? WHERE namespace = ? AND memory_id = ?",
                         [(now_us, bonus, stamp, namespace, memory_id) for now_us, bonus, namespace, memory_id in rows])

    def flush(self) -> None:
        self._bookkeeping.flush()

    # -- bulk ---------------------------------------------------------------------------------
    def active_users(self, namespace: str) -> builtins.list[str | None]:
        with self._read() as conn:
            return [r[0] for r in conn.execute(
                "SELECT DISTINCT user_id FROM memories WHERE namespace = ? AND status = 'active' ORDER BY user_id",
                (namespace,))]

    def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                    limit: int) -> tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]:
        keyset = " AND (m.created_at, m.rowid) > (?, ?)" if after is not None else ""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_RECORD_COLUMNS}, vector, created_at, rowid FROM memories m WHERE m.namespace = ? "
                f"AND m.user_id IS ? AND m.status = 'active'{keyset} ORDER BY m.created_at, m.rowid LIMIT ?",
                (namespace, user_id, *(after or ()), limit)).fetchall()
        out = []
        for row in rows:
            record = _row_to_record(row[:-3])
            vector = np.frombuffer(row[-3], dtype=np.float32) if row[-3] is not None and record.embedding_model == model_id else None
            out.append((record, vector))
        return out, ((rows[-1][-2], rows[-1][-1]) if rows else None)

    def pending_reembed(self, namespace: str | None, model_id: str, limit: int, missing_only: bool = False,
                        after: str | None = None) -> builtins.list[tuple[str, str]]:
        scope = "" if namespace is None else "namespace = ? AND "
        args: tuple[Any, ...] = () if namespace is None else (namespace,)
        with self._read() as conn:
            if missing_only:  # asked by recalls while the namespace holds memories of another model
                return [(r[0], r[1]) for r in conn.execute(_MISSING_VECTORS.format(scope=scope),
                                                           (*args, after or "", *args, after or "", limit))]
            return [(r[0], r[1]) for r in conn.execute(
                f"SELECT memory_id, content FROM memories {'INDEXED BY memories_id ' if namespace else ''}"
                f"WHERE {scope}memory_id > ? AND (embedding_model IS NULL OR embedding_model != ? OR vector IS NULL) "
                "ORDER BY memory_id LIMIT ?", (*args, after or "", model_id, limit))]

    def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None:
        with self._write() as conn:
            self._check_dimension(conn, model_id, (v for _, v in items))
            seq = self._next_seq(conn)
            conn.executemany("UPDATE memories SET vector = ?, embedding_model = ?, seq = ? "
                             "WHERE namespace = ? AND memory_id = ?",
                             [(_blob(v), model_id, seq, namespace, mid) for mid, v in items])

    def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]], model_id: str) -> None:
        with self._write() as conn:
            conn.executemany("UPDATE memory_versions SET vector = ?, vector_model = ? WHERE namespace = ? "
                             "AND memory_id = ? AND version = ? AND vector IS NULL",
                             [(_blob(v), model_id, namespace, mid, version) for mid, version, v in items])

    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> builtins.list[dict[str, Any]]:
        clause = " AND m.user_id = ?" if user_id is not None else ""
        args: tuple[Any, ...] = (namespace, after) + ((user_id,) if user_id is not None else ())
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT m.rowid, {_RECORD_COLUMNS}, m.vector, m.idempotency_key FROM memories m "
                f"WHERE m.namespace = ? AND m.rowid > ?{clause} ORDER BY m.rowid LIMIT ?", (*args, limit)).fetchall()
            out = []
            for row in rows:
                record = _row_to_record(row[1:20])
                out.append({
                    "cursor": row[0], "record": record.to_dict(), "versions": self._versions(conn, record),
                    "vector": None if row[20] is None else np.frombuffer(row[20], dtype=np.float32).tolist(),
                    "idempotency_key": row[21],
                })
            return out

    def export_tombstones(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        user, params = ("", []) if user_id is None else (" AND user_id = ?", [user_id])
        with self._read() as conn:
            dead = conn.execute(f"SELECT memory_id, user_id, deleted_at FROM memory_tombstones WHERE namespace = ?"
                                f"{user} ORDER BY deleted_at, memory_id", (namespace, *params)).fetchall()
            return [{"memory_id": memory_id, "user_id": owner, "deleted_at": to_iso(from_micros(deleted_at)),
                     "versions": [json.loads(r[0]) for r in conn.execute(
                         "SELECT record FROM memory_versions WHERE namespace = ? AND memory_id = ? ORDER BY version",
                         (namespace, memory_id))]}
                    for memory_id, owner, deleted_at in dead]

    def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        infos = self.session_list(namespace, user_id)
        out = []
        for info in infos:
            with self._read() as conn:
                rows = conn.execute(
                    "SELECT message, tokens, in_window FROM session_messages WHERE namespace = ? AND session_id = ? "
                    "ORDER BY rowid", (namespace, info.session_id)).fetchall()
            out.append({
                "session_id": info.session_id, "user_id": info.user_id, "agent_id": info.agent_id,
                "summary": info.summary, "created_at": info.created_at.isoformat(),
                "updated_at": info.updated_at.isoformat(),
                "expire_at": None if info.expire_at is None else info.expire_at.isoformat(),
                "messages": [{"message": json.loads(r[0]), "tokens": r[1], "in_window": bool(r[2])} for r in rows],
            })
        return out

    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime) -> ImportReport:
        report = ImportReport()
        with self._write() as conn:
            seq = self._next_seq(conn)
            for item in rows:
                record: MemoryRecord = item["record"]
                key = item.get("idempotency_key")
                if item.get("deleted_at") is not None:
                    report.duplicates += not self._import_tombstone(conn, namespace, record, item)
                    continue
                exists = conn.execute("SELECT 1 FROM memories WHERE namespace = ? AND memory_id = ?",
                                      (namespace, record.memory_id)).fetchone() or (
                    key is not None and conn.execute("SELECT 1 FROM memories WHERE namespace = ? AND idempotency_key = ?",
                                                     (namespace, key)).fetchone())
                if exists:
                    report.duplicates += 1
                    continue
                self._check_dimension(conn, record.embedding_model, [item.get("vector")])
                rowid = conn.execute(
                    f"INSERT INTO memories ({_RECORD_COLUMNS}, content_hash, vector, idempotency_key, seq, screened) "
                    f"VALUES ({', '.join('?' * 24)}) RETURNING rowid",
                    (*_record_values(record), item["content_hash"], _blob(item.get("vector")),
                     item.get("idempotency_key"), seq, item.get("screened")),
                ).fetchone()[0]
                self._index_text(conn, [(rowid, *fts_row(namespace, record.user_id, item["terms"]))])
                conn.executemany(
                    "INSERT OR REPLACE INTO memory_versions(namespace, memory_id, version, record) VALUES (?, ?, ?, ?)",
                    [(namespace, record.memory_id, v["version"], dumps(v)) for v in item["versions"]])
                report.imported += 1
            report.sessions = self._import_sessions(conn, namespace, sessions)
        return report

    @staticmethod
    def _import_tombstone(conn: sqlite3.Connection, namespace: str, record: MemoryRecord, item: dict[str, Any]) -> bool:
        """A deleted memory's versions and tombstone; False if the namespace knows its id already."""
        known = conn.execute("SELECT 1 FROM memories WHERE namespace = ? AND memory_id = ? UNION ALL "
                             "SELECT 1 FROM memory_tombstones WHERE namespace = ? AND memory_id = ?",
                             (namespace, record.memory_id, namespace, record.memory_id)).fetchone()
        if known:
            return False
        conn.execute("INSERT INTO memory_tombstones(memory_id, namespace, user_id, deleted_at) VALUES (?, ?, ?, ?)",
                     (record.memory_id, namespace, record.user_id, to_micros(item["deleted_at"])))
        conn.executemany(
            "INSERT OR REPLACE INTO memory_versions(namespace, memory_id, version, record) VALUES (?, ?, ?, ?)",
            [(namespace, record.memory_id, v["version"], dumps(v)) for v in item["versions"]])
        return True

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        with self._write() as conn:
            return self._import_sessions(conn, namespace, sessions)

    @staticmethod
    def _import_sessions(conn: sqlite3.Connection, namespace: str, sessions: Sequence[dict[str, Any]]) -> int:
        from ._time import from_iso

        count = 0
        for session in sessions:
            exists = conn.execute("SELECT 1 FROM sessions WHERE namespace = ? AND session_id = ?",
                                  (namespace, session["session_id"])).fetchone()
            if exists:
                continue

            def micros(key: str, session: dict[str, Any] = session) -> int | None:
                value = from_iso(session.get(key), key)
                return None if value is None else to_micros(value)

            conn.execute(
                "INSERT INTO sessions(namespace, session_id, user_id, agent_id, summary, created_at, updated_at, "
                "expire_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (namespace, session["session_id"], session.get("user_id"), session.get("agent_id"),
                 session.get("summary"), micros("created_at"), micros("updated_at"), micros("expire_at")))
            conn.executemany(
                "INSERT INTO session_messages(namespace, session_id, message_id, message, tokens, in_window) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(namespace, session["session_id"], m["message"]["message_id"], dumps(m["message"]), m["tokens"],
                  int(m["in_window"])) for m in session["messages"]])
            count += 1
        return count

    def stats(self, namespace: str) -> dict[str, Any]:
        with self._read() as conn:
            by_status = dict(conn.execute(
                "SELECT status, COUNT(*) FROM memories WHERE namespace = ? GROUP BY status", (namespace,)).fetchall())
            by_category = dict(conn.execute(
                "SELECT category, COUNT(*) FROM memories WHERE namespace = ? AND status = 'active' GROUP BY category",
                (namespace,)).fetchall())
            models = dict(conn.execute(
                "SELECT COALESCE(embedding_model, '(none)'), COUNT(*) FROM memories WHERE namespace = ? "
                "GROUP BY embedding_model", (namespace,)).fetchall())
            users = conn.execute("SELECT COUNT(DISTINCT user_id) FROM memories WHERE namespace = ?",
                                 (namespace,)).fetchone()[0]
            sessions = conn.execute("SELECT COUNT(*) FROM sessions WHERE namespace = ?", (namespace,)).fetchone()[0]
        return {
            "url": self.url, "namespace": namespace, "memories": sum(by_status.values()), "by_status": by_status,
            "by_category": by_category, "embedding_models": models, "users": users, "sessions": sessions,
            "schema_version": self.schema_version(),
        }

    # -- working memory -----------------------------------------------------------------------
    def session_touch(self, op: SessionTouch) -> None:
        namespace, session_id, user_id, agent_id, now, expire_at = op.args()
        now_us = to_micros(now)
        exp = None if expire_at is None else to_micros(expire_at)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO sessions(namespace, session_id, user_id, agent_id, created_at, updated_at, expire_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, session_id) DO UPDATE SET "
                "updated_at = excluded.updated_at, expire_at = excluded.expire_at",
                (namespace, session_id, user_id, agent_id, now_us, now_us, exp))

    def _session_info(self, conn: sqlite3.Connection, namespace: str, where: str,
                      params: Sequence[Any]) -> builtins.list[SessionInfo]:
        rows = conn.execute(
            "SELECT s.session_id, s.user_id, s.agent_id, s.summary, s.created_at, s.updated_at, s.expire_at, "
            "(SELECT COUNT(*) FROM session_messages q WHERE q.namespace = s.namespace AND q.session_id = s.session_id), "
            "(SELECT COUNT(*) FROM session_messages q WHERE q.namespace = s.namespace AND q.session_id = s.session_id "
            "AND q.in_window = 1) FROM sessions s WHERE s.namespace = ? " + where + " ORDER BY s.created_at",
            (namespace, *params)).fetchall()
        infos = []
        for r in rows:
            created, updated = from_micros(r[4]), from_micros(r[5])
            assert created is not None and updated is not None
            infos.append(SessionInfo(r[0], r[1], r[2], namespace, r[3], created, updated, from_micros(r[6]), r[7], r[8]))
        return infos

    def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        with self._read() as conn:
            found = self._session_info(conn, namespace, "AND s.session_id = ?", (session_id,))
        return found[0] if found else None

    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        with self._read() as conn:
            if user_id is None:
                return self._session_info(conn, namespace, "", ())
            return self._session_info(conn, namespace, "AND s.user_id = ?", (user_id,))

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO session_messages(namespace, session_id, message_id, message, tokens, in_window) "
                "VALUES (?, ?, ?, ?, ?, 1)",
                [(namespace, session_id, m.message_id, dumps(m.to_dict()), tokens) for m, tokens in messages])

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> builtins.list[tuple[Message, int]]:
        clause = " AND in_window = 1" if window_only else ""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT message, tokens FROM session_messages WHERE namespace = ? AND session_id = ?{clause} "
                "ORDER BY rowid", (namespace, session_id)).fetchall()
        return [(Message.from_dict(json.loads(r[0])), int(r[1])) for r in rows]

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        if not message_ids:
            return 0
        marks = ", ".join("?" for _ in message_ids)
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE session_messages SET in_window = 0 WHERE namespace = ? AND session_id = ? AND in_window = 1 "
                f"AND message_id IN ({marks})", (namespace, session_id, *message_ids))
            return cursor.rowcount

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]:
        if not memory_ids:
            return {}
        marks = ", ".join("?" for _ in memory_ids)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT memory_id, vector FROM memories WHERE namespace = ? AND memory_id IN ({marks}) "
                "AND embedding_model = ? AND vector IS NOT NULL", (namespace, *memory_ids, model_id)).fetchall()
        return {mid: np.frombuffer(blob, dtype=np.float32) for mid, blob in rows}

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        if not message_ids:
            return 0
        marks = ", ".join("?" for _ in message_ids)
        with self._write() as conn:
            cursor = conn.execute(
                f"DELETE FROM session_messages WHERE namespace = ? AND session_id = ? AND message_id IN ({marks})",
                (namespace, session_id, *message_ids))
            return cursor.rowcount

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        with self._write() as conn:
            conn.execute("UPDATE sessions SET summary = ? WHERE namespace = ? AND session_id = ?",
                         (summary, namespace, session_id))

    def session_delete(self, namespace: str, session_id: str) -> bool:
        with self._write() as conn:
            conn.execute("DELETE FROM session_messages WHERE namespace = ? AND session_id = ?", (namespace, session_id))
            cursor = conn.execute("DELETE FROM sessions WHERE namespace = ? AND session_id = ?", (namespace, session_id))
            return cursor.rowcount > 0

    def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        with self._read() as conn:
            return [r[0] for r in conn.execute(
                "SELECT session_id FROM sessions WHERE namespace = ? AND expire_at IS NOT NULL AND expire_at <= ?",
                (namespace, to_micros(now)))]

    def integrity_check(self) -> str:
        with self._read() as conn:
            return str(conn.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        if self._closed:
            return
        self._bookkeeping.close()
        if self._bonus is not None:
            self._bonus.close()
        self.indexes.close()
        if self._checkpointer is not None:
            self._checkpoint_stop = True
            self._checkpoint_due.set()
            self._checkpointer.join(timeout=10)
        with self._lock:
            self._closed = True
            for cache in self._caches.values():
                cache.release()
            self._caches.clear()
            if self.path is not None:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass
            self._conn.close()
            if self._side is not None:
                self._side.close()
