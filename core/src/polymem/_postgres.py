"""PostgreSQL + pgvector: the scale-out backend (`polymem.open("postgresql://...")`).

Every method is written once, as a *plan*: a generator that yields `Q`
statements and receives their results. `PostgresBackend` drives plans over a
psycopg connection pool, `AsyncPostgresBackend` (`_postgres_async.py`) over
psycopg's native async pool; each plan runs in one transaction, retried on a
serialization failure or deadlock.

- Vectors are pgvector `vector` columns; each embedding model gets its own
  partial HNSW index (`(vector::vector(dim)) WHERE embedding_model = '<model>'`),
  so vector spaces never mix. A recall scoped to one user is exact (HNSW with a
  per-user filter drops rows): an index-only scan of the model's covering btree
  `(namespace, user_id) INCLUDE (id, expire_at, vector)`, where a user's vectors
  sit side by side (models up to 576 dimensions; above, and for keys too long
  for a btree entry, the same exact scan goes through the heap). A recall over
  every user uses HNSW with `hnsw.iterative_scan`.
- A process may hold copies of busy users' vectors (`VectorCache`, 512 MB by
  default, `vector_cache_mb=` in the URL): numpy picks the candidates, and the
  statement fetching them checks the user's stamp (bumped by triggers in the
  writing transaction), so a copy is never used once the user's rows changed.
  A save made by the process itself keeps its copy current: the insert locks the
  user's stamp, so the copy as of the stamp before it plus the new rows is the
  scope after it (`VectorCache.catch_up`); writes of other processes make the
  copy stale, and it is loaded again in the background.
- The vector and full-text candidates are two statements run side by side.
- Full text is a `tsvector` of the terms `_text.terms()` computes (CJK bigrams
  included), written position by position with no dictionary, plus a scope
  lexeme so a per-user search intersects posting lists instead of filtering
  (weighted A, which the rank weighs 0, and left out of the ranked query).
- Every read-modify-write is a transaction: updates lock the row
  (`SELECT ... FOR UPDATE`, then compare-and-set on `version`), idempotent saves
  take transaction-scoped advisory locks on their keys, reinforcement is one
  atomic `UPDATE` per row in a fixed order, applied off the read path.
- The schema is `MIGRATIONS`, an ordered list applied and recorded by `migrate()`.

    >>> mem = polymem.open("postgresql://user@host/db")      # doctest: +SKIP
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import json
import struct
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ._backend import COMMON_TERM_DOCS, Backend, Bookkeeping, Candidate, NewRecord, SearchRequest, selective_terms
from ._errors import (
    LockTimeoutError,
    NotFoundError,
    PolymemError,
    StoreClosedError,
    VersionConflictError,
    missing_extra,
)
from ._filters import Condition, dumps, from_micros, parse_filter
from ._models import ImportReport, MemoryRecord, Message, SessionInfo
from ._scan import bounds, quantize, shortlist
from ._text import ANALYZER_VERSION, terms

MIGRATIONS: builtins.list[str] = [
    # 1: records, versions, full text, vector index registry
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE polymem_memories (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        memory_id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, session_id TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        importance DOUBLE PRECISION NOT NULL,
        entities TEXT[] NOT NULL DEFAULT '{}',
        metadata TEXT NOT NULL DEFAULT '{}',
        metadata_j JSONB GENERATED ALWAYS AS (metadata::jsonb) STORED,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        last_accessed_at TIMESTAMPTZ,
        access_count INTEGER NOT NULL DEFAULT 0,
        expire_at TIMESTAMPTZ,
        embedding_model TEXT,
        vector vector,
        version INTEGER NOT NULL DEFAULT 1,
        status TEXT NOT NULL DEFAULT 'active',
        idempotency_key TEXT,
        tsv TSVECTOR NOT NULL
    );
    CREATE UNIQUE INDEX polymem_memories_idempotency ON polymem_memories (namespace, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE INDEX polymem_memories_scope ON polymem_memories (namespace, user_id, status, created_at);
    CREATE INDEX polymem_memories_recent ON polymem_memories (namespace, status, created_at);
    CREATE INDEX polymem_memories_hash ON polymem_memories (namespace, content_hash);
    CREATE INDEX polymem_memories_models ON polymem_memories (namespace, embedding_model) WHERE status = 'active';
    CREATE INDEX polymem_memories_novector ON polymem_memories (namespace)
        WHERE status = 'active' AND vector IS NULL;
    CREATE INDEX polymem_memories_tsv ON polymem_memories USING gin (tsv);
    CREATE TABLE polymem_memory_versions (
        memory_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (memory_id, version)
    );
    CREATE TABLE polymem_vector_indexes (
        model_id TEXT PRIMARY KEY,
        dimension INTEGER NOT NULL,
        index_name TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    """,
    # 2: working memory
    """
    CREATE TABLE polymem_sessions (
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT, agent_id TEXT,
        summary TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        expire_at TIMESTAMPTZ,
        PRIMARY KEY (namespace, session_id)
    );
    CREATE INDEX polymem_sessions_expire ON polymem_sessions (namespace, expire_at) WHERE expire_at IS NOT NULL;
    CREATE TABLE polymem_session_messages (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        message TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        in_window BOOLEAN NOT NULL DEFAULT true
    );
    CREATE INDEX polymem_session_messages_session ON polymem_session_messages (namespace, session_id, id);
    """,
    # 3: room on each page, so recall bookkeeping (access count, last access, importance: no
    # indexed column) updates rows in place (HOT) instead of inserting into every index, HNSW included
    """
    ALTER TABLE polymem_memories SET (fillfactor = 80);
    """,
    # 4: per-user exact vector search reads one btree, not the heap: per model, a covering index on
    # the scope holding the vectors (`_scan_index_sql`), built here for the models already registered
    # (every new model gets one with its HNSW index). Recall bookkeeping stays a HOT update (no indexed
    # column changes); vacuum runs sooner so index-only scans find pages marked all-visible. Rows up
    # to 4000 bytes stay whole in the heap (a 384-d row is ~2.1 KB: by default about half of them had
    # their vector moved to TOAST, one more index probe and page per row read or written).
    """
    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT model_id, dimension, index_name FROM polymem_vector_indexes LOOP
            IF 2560 - 4 * r.dimension >= 256 THEN
                EXECUTE format(
                    'CREATE INDEX IF NOT EXISTS %I ON polymem_memories (namespace, user_id) '
                    'INCLUDE (id, expire_at, vector) WHERE embedding_model = %L AND status = ''active'' '
                    'AND vector IS NOT NULL AND length(namespace) + length(user_id) <= %s',
                    'polymem_scan_' || substr(r.index_name, length('polymem_hnsw_') + 1),
                    r.model_id, (2560 - 4 * r.dimension) / 4);
            END IF;
        END LOOP;
    END $$;
    ALTER TABLE polymem_memories SET (autovacuum_vacuum_scale_factor = 0.02,
                                      autovacuum_vacuum_insert_scale_factor = 0.02, toast_tuple_target = 4000);
    """,
    # 5: settings of the store itself (the analyzer that built the full text: `_migrate_plan`)
    """
    CREATE TABLE polymem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 6: a stamp per (namespace, user) that changes, in the same transaction, whenever a row of that
    # scope is inserted or deleted or changes status, vector, model, expiry or owner: a process holding
    # a copy of a user's vectors (`VectorCache`) checks it in the very statement that uses the copy.
    # Stamps come from a sequence, so a value is never given twice. Statement triggers with transition
    # tables: one upsert per statement and scope (in scope order, so writers lock stamps alike), none
    # for recall bookkeeping (it changes no watched column).
    """
    CREATE SEQUENCE polymem_stamp_seq;
    CREATE TABLE polymem_scope_stamps (
        namespace TEXT NOT NULL,
        user_id TEXT NOT NULL,
        stamp BIGINT NOT NULL,
        PRIMARY KEY (namespace, user_id)
    );
    INSERT INTO polymem_scope_stamps (namespace, user_id, stamp)
        SELECT namespace, user_id, nextval('polymem_stamp_seq')
        FROM (SELECT DISTINCT namespace, user_id FROM polymem_memories WHERE user_id IS NOT NULL) s;
    CREATE FUNCTION polymem_stamp_scopes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO polymem_scope_stamps AS s (namespace, user_id, stamp)
            SELECT namespace, user_id, nextval('polymem_stamp_seq')
            FROM (SELECT DISTINCT namespace, user_id FROM new_rows WHERE user_id IS NOT NULL ORDER BY 1, 2) x
            ON CONFLICT (namespace, user_id) DO UPDATE SET stamp = excluded.stamp;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE polymem_scope_stamps s SET stamp = nextval('polymem_stamp_seq')
            FROM (SELECT DISTINCT namespace, user_id FROM old_rows WHERE user_id IS NOT NULL ORDER BY 1, 2) x
            WHERE s.namespace = x.namespace AND s.user_id = x.user_id;
        ELSE
            INSERT INTO polymem_scope_stamps AS s (namespace, user_id, stamp)
            SELECT namespace, user_id, nextval('polymem_stamp_seq') FROM (
                SELECT DISTINCT x.namespace, x.user_id
                FROM old_rows o JOIN new_rows n ON n.id = o.id,
                     LATERAL (VALUES (o.namespace, o.user_id), (n.namespace, n.user_id)) AS x(namespace, user_id)
                WHERE x.user_id IS NOT NULL
                  AND ((o.namespace, o.user_id, o.status, o.embedding_model, o.expire_at)
                       IS DISTINCT FROM (n.namespace, n.user_id, n.status, n.embedding_model, n.expire_at)
                       OR o.vector IS DISTINCT FROM n.vector)
                ORDER BY 1, 2) c
            ON CONFLICT (namespace, user_id) DO UPDATE SET stamp = excluded.stamp;
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION polymem_stamp_all() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE polymem_scope_stamps SET stamp = nextval('polymem_stamp_seq');
        RETURN NULL;
    END $$;
    CREATE TRIGGER polymem_stamp_insert AFTER INSERT ON polymem_memories
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_update AFTER UPDATE ON polymem_memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_delete AFTER DELETE ON polymem_memories
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_truncate AFTER TRUNCATE ON polymem_memories
        FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_all();
    """,
    # 7: the full text's scope lexemes carry weight A (`TSV_FORMAT` 2). The rank's query never holds
    # a scope lexeme, so a tsv written before (everything weight D) ranks exactly alike: an existing
    # store is marked format 2 without a rebuild (at 1M rows one blocks reads for minutes).
    """
    INSERT INTO polymem_meta (key, value) VALUES ('tsv_format', '2') ON CONFLICT (key) DO NOTHING;
    """,
    # 8: the full-text index takes each write at once. With GIN's pending list (the default) every
    # full-text query also read the list linearly, up to 4 MB of not-yet-merged entries after a
    # batch of saves: a rare term cost 5.5 ms at 10k rows instead of under 1 ms (measured).
    """
    ALTER INDEX polymem_memories_tsv SET (fastupdate = off);
    SELECT gin_clean_pending_list('polymem_memories_tsv'::regclass);
    """,
]

# Saves wait for each other on the keys that would make them duplicates (idempotency key, or
# content in a scope), hashed into this many advisory locks. One lock per key ran a batch of
# 20,000 memories out of the server's lock table ("out of shared memory"); a shared lock only
# makes two unrelated saves wait for each other now and then.
SAVE_LOCKS = 256
_SAVE_LOCK_CLASS = 0x706D  # "pm": the two-key advisory locks, apart from the one-key ones

# A batch of saves this large may ANALYZE the table (`Plans._analyze_if_grown`).
ANALYZE_ROWS = 1000

_MIGRATION_LOCK = 0x706F6C796D656D  # "polymem": one migrator at a time
_RECORD_COLUMNS = (
    "m.memory_id, m.namespace, m.user_id, m.agent_id, m.session_id, m.content, m.category, m.source, m.importance, "
    "m.entities, m.metadata, m.created_at, m.updated_at, m.last_accessed_at, m.access_count, m.expire_at, "
    "m.embedding_model, m.version, m.status"
)
_INSERT_COLUMNS = (
    "memory_id, namespace, user_id, agent_id, session_id, content, category, source, importance, entities, "
    "metadata, created_at, updated_at, last_accessed_at, access_count, expire_at, embedding_model, version, status, "
    "content_hash, vector, idempotency_key, tsv"
)
_NCOLS = 19
_RETRYABLE = ("40001", "40P01")  # serialization_failure, deadlock_detected


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - exercised by the "absent" CI leg
        raise missing_extra("psycopg", "postgres") from None
    return psycopg


# -- values ------------------------------------------------------------------------------------
def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(timezone.utc)


def row_to_record(row: Sequence[Any]) -> MemoryRecord:
    created, updated = _utc(row[11]), _utc(row[12])
    assert created is not None and updated is not None
    return MemoryRecord(
        memory_id=row[0], namespace=row[1], user_id=row[2], agent_id=row[3], session_id=row[4],
        content=row[5], category=row[6], source=row[7], importance=float(row[8]),
        entities=tuple(row[9] or ()), metadata=json.loads(row[10]),
        created_at=created, updated_at=updated, last_accessed_at=_utc(row[13]),
        access_count=int(row[14]), expire_at=_utc(row[15]), embedding_model=row[16],
        version=int(row[17]), status=row[18],
    )


def record_values(record: MemoryRecord) -> tuple[Any, ...]:
    return (
        record.memory_id, record.namespace, record.user_id, record.agent_id, record.session_id, record.content,
        record.category, record.source, float(record.importance), list(record.entities),
        dumps(record.metadata) if record.metadata else "{}",
        record.created_at, record.updated_at, record.last_accessed_at, record.access_count, record.expire_at,
        record.embedding_model, record.version, record.status,
    )


def vector_bytes(vector: np.ndarray | Sequence[float]) -> bytes:
    """pgvector's binary form: dimension, a reserved zero, big-endian float32s."""
    array = np.asarray(vector, dtype=">f4").ravel()
    return struct.pack(">HH", len(array), 0) + array.tobytes()


def vector_from_bytes(data: bytes | memoryview | None) -> np.ndarray | None:
    if data is None:
        return None
    return np.frombuffer(bytes(data)[4:], dtype=">f4").astype(np.float32)


def _hash64(text: str) -> int:
    """A stable signed 64-bit key for advisory locks."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)


@functools.lru_cache(maxsize=4096)
def scope_lexeme(namespace: str, user_id: str | None) -> str:
    return "zs" + hashlib.sha1(f"{namespace}\x00{user_id or ''}".encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=256)
def namespace_lexeme(namespace: str) -> str:
    return "zn" + hashlib.sha1(namespace.encode()).hexdigest()[:16]


def _quote_lexeme(term: str) -> str:
    if "'" in term or "\\" in term:
        term = term.replace("\\", "\\\\").replace("'", "''")
    return "'" + term + "'"


def _too_long(term: str) -> bool:
    """A lexeme PostgreSQL refuses (2 KB and more); under 500 characters a string is short enough."""
    return len(term) > 500 and len(term.encode()) > 2000


# How the stored tsv is written (`polymem_meta` 'tsv_format'; another value is rebuilt by migrate):
# 2 = the two scope lexemes at positions 1 and 2 with weight A, the memory's terms without weight (D).
TSV_FORMAT = "2"
# ts_rank's weights, in its order {D, C, B, A}: the memory's terms count, the scope lexemes (A) do not.
RANK_WEIGHTS = "{1,1,1,0}"


def tsvector_literal(namespace: str, user_id: str | None, terms: Sequence[str]) -> str:
    """A tsvector written lexeme by lexeme (no parser, no dictionary), with positions
    so term frequency and length count in the rank. The namespace and scope lexemes come
    first, weighted A (`RANK_WEIGHTS` gives A no weight): they select rows, never rank them."""
    positions: dict[str, builtins.list[int]] = {}
    for n, term in enumerate(terms, start=3):
        if not term or _too_long(term):
            continue
        slot = positions.get(term)
        if slot is None:
            positions[term] = [n if n < 16383 else 16383]
        elif len(slot) < 255:
            slot.append(n if n < 16383 else 16383)
    # (A term equal to a scope lexeme is merged into it by PostgreSQL: its own positions stay D.)
    body = " ".join([f"{_quote_lexeme(t)}:{p[0]}" if len(p) == 1 else f"{_quote_lexeme(t)}:{','.join(map(str, p))}"
                     for t, p in positions.items()])
    return f"{namespace_lexeme(namespace)}:1A {scope_lexeme(namespace, user_id)}:2A {body}".rstrip()


def tsquery_literal(scope: str, terms: Sequence[str]) -> str:
    """What a search matches: the scope lexeme and any of the terms (the GIN index intersects)."""
    return f"{_quote_lexeme(scope)} & ({rank_tsquery_literal(terms)})"


def rank_tsquery_literal(terms: Sequence[str]) -> str:
    """What ranks a match: its terms alone. (With the scope lexeme AND-ed in, ts_rank scores pairs
    of query lexemes by proximity: the scope lexeme at position 2 rewarded memories whose terms
    come first, i.e. short ones, and weighing it 0 would leave a single matched term no score.)"""
    return " | ".join(_quote_lexeme(t) for t in terms if t and not _too_long(t))


def index_name(model_id: str) -> str:
    return "polymem_hnsw_" + hashlib.sha1(model_id.encode()).hexdigest()[:12]


def scan_index_name(model_id: str) -> str:
    return "polymem_scan_" + hashlib.sha1(model_id.encode()).hexdigest()[:12]


def scan_key_chars(dimension: int) -> int | None:
    """How many characters namespace + user_id may have for a row to sit in the model's covering
    scan index, or None when vectors of this dimension leave no room for one.

    A btree entry holds at most 2704 bytes: the vector takes 8 + 4·dim, headers and the two
    8-byte columns under 64; the rest (kept under 2560 − 4·dim bytes, 4 bytes a character at
    most in any server encoding) is for the two strings. Rows with longer keys, and models
    above 576 dimensions, take the heap path (exact as well, slower)."""
    room = 2560 - 4 * int(dimension)
    return room // 4 if room >= 256 else None


def _scan_index_sql(model_id: str, dimension: int) -> Any:
    """The covering index of one model: a user's vectors side by side in btree order, read by an
    index-only scan (no heap, no TOAST) when recall is scoped to that user."""
    from psycopg import sql

    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {} ON polymem_memories (namespace, user_id) INCLUDE (id, expire_at, vector) "
        "WHERE embedding_model = {} AND status = 'active' AND vector IS NOT NULL "
        "AND length(namespace) + length(user_id) <= {}").format(
            sql.Identifier(scan_index_name(model_id)), sql.Literal(model_id), sql.Literal(scan_key_chars(dimension)))


# -- filters: `_filters.parse_filter` validates, this writes PostgreSQL -------------------------------
def compile_filter_pg(filter: dict[str, Any] | None, alias: str = "m") -> tuple[str, builtins.list[Any]]:
    """Validate a filter dict (`parse_filter`: same rules and errors as SQLite) and compile it to PostgreSQL."""
    clauses: builtins.list[str] = []
    params: builtins.list[Any] = []
    for condition in parse_filter(filter):
        sql, args = _compile_pg(condition, alias)
        clauses.append(sql)
        params.extend(args)
    return " AND ".join(clauses), params


_PG_OPS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _pg_value(kind: str, value: Any) -> Any:
    """A parsed scalar as PostgreSQL compares it: a time as a datetime, a metadata value as JSON text."""
    if kind == "time":
        return from_micros(value)
    if kind == "json":
        return None if value is None else json.dumps(value)
    return value


def _compile_pg(c: Condition, alias: str) -> tuple[str, builtins.list[Any]]:
    op, kind = c.op, c.kind
    column = f"{alias}.{c.field}"
    params: builtins.list[Any] = []
    if kind == "json":
        column = f"({alias}.metadata_j #> %s::text[])"
        params = [builtins.list(c.path)]
    if op == "$exists":
        if kind == "entities":
            return f"cardinality({column}) {'>' if c.value else '='} 0", []
        if kind == "json":
            test = f"({column} IS NOT NULL AND {column} <> 'null'::jsonb)"
            return (test if c.value else f"NOT COALESCE({test}, false)"), params * 2
        return f"{column} IS {'NOT ' if c.value else ''}NULL", []
    if op == "$contains":
        if kind == "entities":
            return f"%s = ANY({column})", [str(c.value)]
        if kind == "json":
            scalar = _pg_value(kind, c.value)
            return (f"(CASE jsonb_typeof({column}) WHEN 'array' THEN {column} @> ('[' || %s || ']')::jsonb "
                    f"ELSE {column} = %s::jsonb END)"), [*params, *params, scalar, *params, scalar]
        return f"strpos({column}, %s) > 0", [c.value]
    if kind == "entities":  # $eq
        return f"%s = ANY({column})", [c.value]
    if op in ("$in", "$nin"):
        values = [_pg_value(kind, v) for v in c.value]
        array = "%s::jsonb[]" if kind == "json" else "%s"
        return (f"{column} = ANY({array})" if op == "$in" else f"{column} <> ALL({array})"), [*params, values]
    scalar = _pg_value(kind, c.value)
    if scalar is None:  # $eq or $ne (`parse_filter` refuses null in a range)
        test = f"({column} IS NULL OR {column} = 'null'::jsonb)" if kind == "json" else f"{column} IS NULL"
        args = params * 2 if kind == "json" else []
        return (test if op == "$eq" else f"NOT {test}"), args
    if kind == "json":
        if op == "$ne":
            return f"({column} IS NULL OR {column} <> %s::jsonb)", [*params, *params, scalar]
        if op == "$eq":
            return f"{column} = %s::jsonb", [*params, scalar]
        # Ranges compare like with like: numbers with numbers, text with text.
        return (f"(jsonb_typeof({column}) = jsonb_typeof(%s::jsonb) AND {column} {_PG_OPS[op]} %s::jsonb)",
                [*params, scalar, *params, scalar])
    if op == "$ne":
        return f"({column} IS NULL OR {column} <> %s)", [scalar]
    if c.field == "expire_at" and op in ("$gt", "$gte"):  # no expiry means "never": later than any time
        return f"({column} IS NULL OR {column} {_PG_OPS[op]} %s)", [scalar]
    return f"{column} {_PG_OPS[op]} %s", [scalar]

# -- plans --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Q:
    """One statement of a plan. `mode`: all, one, none, rowcount, many (executemany), copy."""

    sql: Any
    params: Any = None
    mode: str = "all"
    types: tuple[str, ...] | None = None  # for copy: binary column types
    binary: bool | None = None  # results in binary: bytea as it is rather than as hex text to decode


PgPlan = Generator[Q, Any, Any]


def _scope_sql(namespace: str, user_id: str | None, agent_id: str | None, category: str | None,
               filter: dict[str, Any] | None, indexable: bool = True) -> tuple[str, builtins.list[Any]]:
    """The WHERE clause of a scope and filter. `indexable=False` writes namespace and user as
    `IS NOT DISTINCT FROM` (same rows for a non-null value), which no btree serves: the full-text
    search then stays on its GIN index, whose query already holds the scope lexeme, instead of
    AND-ing it with a bitmap of every row of the user."""
    eq = "=" if indexable else "IS NOT DISTINCT FROM"
    clauses = [f"m.namespace {eq} %s"]
    params: builtins.list[Any] = [namespace]
    if user_id is not None:
        clauses.append(f"m.user_id {eq} %s")
        params.append(user_id)
    if agent_id is not None:
        clauses.append("m.agent_id = %s")
        params.append(agent_id)
    if category is not None:
        clauses.append("m.category = %s")
        params.append(category)
    sql, args = compile_filter_pg(filter)
    if sql:
        clauses.append(sql)
        params.extend(args)
    return " AND ".join(clauses), params


class Plans:
    """Every backend operation as a plan; shared by the sync and async drivers."""

    # One-statement reads run without BEGIN/COMMIT (a statement is its own snapshot).
    READS = frozenset({"get", "list", "search", "run", "count_foreign_vectors", "session_info", "session_messages",
                       "sessions_expired", "pending_reembed", "vectors"})

    def __init__(self) -> None:
        self.known_models: set[str] = set()
        self.ef_search = 200
        # An import this large rebuilds the model's HNSW index once, after the load,
        # instead of inserting into the graph row by row (~50x faster).
        self.bulk_rows = 20_000
        self.deferred: set[str] = set()  # models whose index waits for `build_vector_indexes`
        self.term_statistics = TermStatistics()

    # records ------------------------------------------------------------------------------
    def _ensure_index(self, model_id: str | None, dimension: int) -> PgPlan:
        """One partial HNSW index per embedding model, created with its first vector."""
        if model_id is None or model_id in self.known_models or model_id in self.deferred:
            return
        from psycopg import sql

        name = index_name(model_id)
        found = yield Q("SELECT dimension FROM polymem_vector_indexes WHERE model_id = %s", (model_id,), "one")
        if found is None:
            yield Q("SELECT pg_advisory_xact_lock(%s)", (_hash64("index:" + model_id),), "none")
            found = yield Q("SELECT dimension FROM polymem_vector_indexes WHERE model_id = %s", (model_id,), "one")
        if found is not None:
            self.known_models.add(model_id)
            return
        yield Q(sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON polymem_memories USING hnsw ((vector::vector({})) vector_cosine_ops) "
            "WHERE embedding_model = {}").format(sql.Identifier(name), sql.Literal(int(dimension)),
                                                   sql.Literal(model_id)), None, "none")
        if scan_key_chars(dimension) is not None:
            yield Q(_scan_index_sql(model_id, dimension), None, "none")
        yield Q("INSERT INTO polymem_vector_indexes (model_id, dimension, index_name) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING", (model_id, int(dimension), name), "none")

    def insert(self, items: Sequence[NewRecord], now: datetime, held: ScopeWrites | None = None) -> PgPlan:
        """Save new records (or find what already stands for them). `held`: scopes whose vectors
        the caller holds a copy of; their stamps are locked for the transaction, and what the
        insert did to them is written into `held` (`VectorCache.catch_up`)."""
        locks = set()
        for item in items:
            rec = item.record
            if item.idempotency_key is not None:
                key = f"idem\x00{rec.namespace}\x00{item.idempotency_key}"
            else:
                key = f"hash\x00{rec.namespace}\x00{rec.user_id}\x00{rec.agent_id}\x00{item.content_hash}"
            locks.add(_hash64(key) % SAVE_LOCKS)
        # Sorted, so two batches never wait on each other in opposite orders.
        yield Q("SELECT pg_advisory_xact_lock(%s, k) FROM unnest(%s::int[]) WITH ORDINALITY AS u(k, i) ORDER BY i",
                (_SAVE_LOCK_CLASS, sorted(locks)), "none")
        if held is not None:
            held.before, held.after, held.rows = {}, {}, []  # a rerun starts afresh
            if held.scopes:  # after the save locks, as every writer takes them; sorted, as the trigger does
                held.before = {(r[0], r[1]): r[2] for r in (yield Q(
                    f"{_STAMPS_OF} ORDER BY 1, 2 FOR UPDATE OF s", _scope_arrays(held.scopes)))}
        for model, dim in {(i.record.embedding_model, len(i.vector)) for i in items if i.vector is not None}:
            yield from self._ensure_index(model, dim)
        # What is already stored, for the whole batch in two statements: rows by idempotency key,
        # and the oldest active row per (user, agent, content hash) for items without a key.
        keyed = [(i.record.namespace, i.idempotency_key) for i in items if i.idempotency_key is not None]
        by_key: dict[tuple[str, str], MemoryRecord] = {}
        if keyed:
            rows = yield Q(f"SELECT {_RECORD_COLUMNS}, m.idempotency_key FROM polymem_memories m "
                           "JOIN unnest(%s::text[], %s::text[]) AS q(ns, k) ON m.namespace = q.ns "
                           "AND m.idempotency_key = q.k", ([n for n, _ in keyed], [k for _, k in keyed]))
            by_key = {(r[1], r[_NCOLS]): row_to_record(r) for r in rows}
        plain = [i for i in items if i.idempotency_key is None]
        by_hash: dict[tuple[str, str | None, str | None, str], MemoryRecord] = {}
        if plain:
            rows = yield Q(
                f"SELECT DISTINCT ON (q.i) {_RECORD_COLUMNS}, m.content_hash FROM unnest(%s::text[], %s::text[], "
                "%s::text[], %s::text[]) WITH ORDINALITY AS q(ns, u, a, h, i) JOIN polymem_memories m "
                "ON m.namespace = q.ns AND m.content_hash = q.h AND m.user_id IS NOT DISTINCT FROM q.u "
                "AND m.agent_id IS NOT DISTINCT FROM q.a AND m.status = 'active' ORDER BY q.i, m.id",
                ([i.record.namespace for i in plain], [i.record.user_id for i in plain],
                 [i.record.agent_id for i in plain], [i.content_hash for i in plain]))
            by_hash = {(r[1], r[2], r[3], r[_NCOLS]): row_to_record(r) for r in rows}
        # Then item by item, as if each were saved alone in this order: a key decides alone (two
        # keys are two writes); without one, the oldest active copy of the content wins, an item
        # of this batch included.
        results: builtins.list[tuple[MemoryRecord, bool]] = []
        new: builtins.list[NewRecord] = []
        touched: builtins.list[str] = []
        for item in items:
            rec = item.record
            if item.idempotency_key is not None:
                existing = by_key.get((rec.namespace, item.idempotency_key))
            else:
                existing = by_hash.get((rec.namespace, rec.user_id, rec.agent_id, item.content_hash))
            if existing is not None:
                touched.append(existing.memory_id)
                results.append((existing.replace(last_accessed_at=now), False))
                continue
            if item.idempotency_key is not None:
                by_key[(rec.namespace, item.idempotency_key)] = rec
            if rec.status == "active":
                by_hash.setdefault((rec.namespace, rec.user_id, rec.agent_id, item.content_hash), rec)
            new.append(item)
            results.append((rec, True))
        if new:
            yield Q(f"INSERT INTO polymem_memories ({_INSERT_COLUMNS}) VALUES ({', '.join(['%s'] * 22)}, %s::tsvector)",
                    [(*record_values(i.record), i.content_hash, i.vector, i.idempotency_key,
                      tsvector_literal(i.record.namespace, i.record.user_id, i.terms)) for i in new], "many")
            yield Q("INSERT INTO polymem_memory_versions (memory_id, version, record) VALUES (%s, %s, %s) "
                    "ON CONFLICT (memory_id, version) DO UPDATE SET record = EXCLUDED.record",
                    [(i.record.memory_id, i.record.version, dumps(i.record.to_dict())) for i in new], "many")
            if len(new) >= ANALYZE_ROWS:
                yield from self._analyze_if_grown(len(new))
        if held is not None and held.before:
            held.after = {(r[0], r[1]): r[2] for r in (yield Q(_STAMPS_OF, _scope_arrays(held.before)))}
            mine = {i.record.memory_id: i for i in new if (i.record.namespace, i.record.user_id) in held.before
                    and i.record.status == "active" and i.vector is not None and i.record.embedding_model is not None}
            if mine:
                for memory_id, row_id in (yield Q("SELECT memory_id, id FROM polymem_memories WHERE memory_id = ANY(%s)",
                                                  (builtins.list(mine),))):
                    rec = mine[memory_id].record
                    held.rows.append((rec.namespace, rec.user_id or "", rec.embedding_model or "", int(row_id),
                                      np.asarray(mine[memory_id].vector, dtype=np.float32),
                                      np.inf if rec.expire_at is None else rec.expire_at.timestamp()))
        if touched:
            yield Q("UPDATE polymem_memories SET last_accessed_at = %s WHERE memory_id = ANY(%s)",
                    (now, sorted(set(touched))), "none")
        return results

    def _analyze_if_grown(self, added: int) -> PgPlan:
        """ANALYZE once a batch has grown the table by a tenth: the planner otherwise keeps the
        statistics of the table as it was (empty, after a first import) until autovacuum's next
        round, and filters every row of a scope instead of using the full-text index (measured:
        a recall right after importing 10k memories 26 ms, 8 ms after)."""
        row = yield Q("SELECT reltuples FROM pg_class WHERE oid = 'polymem_memories'::regclass", None, "one")
        if row[0] < 0 or added >= row[0] / 10:  # -1: never analyzed
            yield Q("ANALYZE polymem_memories", None, "none")
            self.term_statistics.read_at = -np.inf  # read the new ones at the next search

    @staticmethod
    def _write_version(record: MemoryRecord) -> PgPlan:
        yield Q("INSERT INTO polymem_memory_versions (memory_id, version, record) VALUES (%s, %s, %s) "
                "ON CONFLICT (memory_id, version) DO UPDATE SET record = EXCLUDED.record",
                (record.memory_id, record.version, dumps(record.to_dict())), "none")

    def get(self, namespace: str, memory_ids: Sequence[str]) -> PgPlan:
        if not memory_ids:
            return []
        rows = yield Q(f"SELECT {_RECORD_COLUMNS} FROM polymem_memories m WHERE m.namespace = %s "
                       "AND m.memory_id = ANY(%s)", (namespace, list(memory_ids)))
        found = {r[0]: row_to_record(r) for r in rows}
        return [found[i] for i in memory_ids if i in found]

    def list(self, namespace: str, user_id: str | None, agent_id: str | None, category: str | None,
             filter: dict[str, Any] | None, status: str | None, limit: int, offset: int) -> PgPlan:
        where, params = _scope_sql(namespace, user_id, agent_id, category, filter)
        if status is not None:
            where += " AND m.status = %s"
            params.append(status)
        rows = yield Q(f"SELECT {_RECORD_COLUMNS} FROM polymem_memories m WHERE {where} "
                       "ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s", (*params, limit, offset))
        return [row_to_record(r) for r in rows]

    def update(self, namespace: str, memory_id: str, changes: dict[str, Any], expected_version: int | None,
               now: datetime, vector: np.ndarray | None, model_id: str | None,
               content_hash: str | None, terms: Sequence[str] | None) -> PgPlan:
        row = yield Q(f"SELECT {_RECORD_COLUMNS}, m.id FROM polymem_memories m WHERE m.namespace = %s "
                      "AND m.memory_id = %s FOR UPDATE", (namespace, memory_id), "one")
        if row is None:
            raise NotFoundError(f"no memory {memory_id!r} in namespace {namespace!r}")
        current = row_to_record(row)
        if expected_version is not None and current.version != expected_version:
            raise VersionConflictError(f"memory {memory_id} is at version {current.version}, not {expected_version}")
        new = current.replace(**changes, version=current.version + 1, updated_at=now)
        if content_hash is not None:
            new = new.replace(embedding_model=model_id)
            if vector is not None:
                yield from self._ensure_index(model_id, len(vector))
        v = record_values(new)
        tsv = None if terms is None else tsvector_literal(namespace, new.user_id, terms)
        count = yield Q(
            "UPDATE polymem_memories SET content = %s, category = %s, source = %s, importance = %s, entities = %s, "
            "metadata = %s, updated_at = %s, expire_at = %s, embedding_model = %s, version = %s, status = %s, "
            "last_accessed_at = %s, access_count = %s, content_hash = COALESCE(%s, content_hash), "
            "vector = CASE WHEN %s THEN %s::vector ELSE vector END, tsv = COALESCE(%s::tsvector, tsv) "
            "WHERE id = %s AND version = %s",
            (v[5], v[6], v[7], v[8], v[9], v[10], v[12], v[15], v[16], v[17], v[18], v[13], v[14], content_hash,
             content_hash is not None, vector, tsv, row[-1], current.version), "rowcount")
        if count != 1:  # pragma: no cover - the row lock makes this unreachable
            raise VersionConflictError(f"memory {memory_id} changed concurrently")
        yield from self._write_version(new)
        return new

    def delete(self, namespace: str, memory_id: str) -> PgPlan:
        row = yield Q("DELETE FROM polymem_memories WHERE namespace = %s AND memory_id = %s RETURNING id",
                      (namespace, memory_id), "one")
        if row is None:
            return False
        yield Q("DELETE FROM polymem_memory_versions WHERE memory_id = %s", (memory_id,), "none")
        return True

    def history(self, namespace: str, memory_id: str) -> PgPlan:
        owner = yield Q("SELECT 1 FROM polymem_memories WHERE namespace = %s AND memory_id = %s",
                        (namespace, memory_id), "one")
        if owner is None:
            return []
        rows = yield Q("SELECT record FROM polymem_memory_versions WHERE memory_id = %s ORDER BY version", (memory_id,))
        return [MemoryRecord.from_dict(json.loads(r[0])) for r in rows]

    # search -------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> PgPlan:
        """The search as one plan: its statements one after the other (the backends run them
        side by side on two connections instead: `search_statements`, `merge_search`)."""
        statements = self.search_statements(request)
        results = []
        for q in statements:
            results.append((yield q))
        return self.merge_search(results)

    @staticmethod
    def run(q: Q) -> PgPlan:
        """One read statement as a plan."""
        return (yield q)

    def search_statements(self, request: SearchRequest) -> builtins.list[Q]:
        """The vector candidates and the full-text candidates: two independent statements, each
        bringing what scoring reads (`merge_search` puts them together)."""
        from psycopg import sql

        live = " AND m.status = 'active' AND (m.expire_at IS NULL OR m.expire_at > %s)"
        where, params = _scope_sql(request.namespace, request.user_id, request.agent_id, request.category,
                                   request.filter)
        where += live
        params.append(request.now)
        columns = "m.id, m.memory_id, m.importance, m.category, m.created_at, m.last_accessed_at, m.access_count"
        statements: builtins.list[Q] = []
        query = request.query_vector
        model = request.model_id
        vector_part = query is not None and model is not None
        if query is not None and model is not None:
            dim = int(len(query))
            # The model as a literal, so the planner can prove the partial indexes' predicates.
            model_sql = sql.Literal(model).as_string(None).replace("%", "%%")
            if request.user_id is None:
                # Every user: HNSW (the index expression and the model literal must match the index);
                # each connection runs with hnsw.iterative_scan, so a filter never starves the LIMIT.
                v = (f"SELECT m.id, (m.vector::vector({dim})) <=> %s::vector({dim}) AS d FROM polymem_memories m "
                     f"WHERE m.embedding_model = {model_sql} AND {where} ORDER BY 2 LIMIT %s")
            else:
                # One user: exact. `m.vector` (not the HNSW expression) keeps the planner off HNSW, whose
                # post-filter would drop rows; the length bound (true for this scope, so it changes no
                # result) lets it read the user's vectors from the model's covering scan index alone.
                chars = scan_key_chars(dim)
                fits = chars is not None and len(request.namespace) + len(request.user_id) <= chars
                bound = f" AND length(m.namespace) + length(m.user_id) <= {chars}" if fits else ""
                v = (f"SELECT m.id, m.vector <=> %s::vector AS d FROM polymem_memories m "
                     f"WHERE m.embedding_model = {model_sql} AND m.vector IS NOT NULL AND {where}{bound} "
                     "ORDER BY 2 LIMIT %s")
            statements.append(Q(f"WITH v AS ({v}) SELECT {columns}, 1 - v.d FROM v JOIN polymem_memories m "
                                "ON m.id = v.id", (query, *params, request.limit)))
        if request.terms:
            scope = scope_lexeme(request.namespace, request.user_id) if request.user_id is not None \
                else namespace_lexeme(request.namespace)
            text_where, text_params = _scope_sql(request.namespace, request.user_id, request.agent_id,
                                                 request.category, request.filter, indexable=False)
            sim = "NULL::float8"
            tail: builtins.list[Any] = []
            if vector_part:
                sim = "CASE WHEN m.embedding_model = %s AND m.vector IS NOT NULL THEN 1 - (m.vector <=> %s::vector) END"
                tail = [model, query]
            statements.append(Q(
                f"WITH t AS (SELECT m.id, ts_rank('{RANK_WEIGHTS}', m.tsv, q.r, 1) AS r FROM polymem_memories m, "
                f"(SELECT %s::tsquery AS q, %s::tsquery AS r) q WHERE m.tsv @@ q.q AND {text_where}{live} "
                f"ORDER BY r DESC, m.id LIMIT %s) SELECT {columns}, {sim}, t.r FROM t JOIN polymem_memories m "
                "ON m.id = t.id",
                (tsquery_literal(scope, request.terms), rank_tsquery_literal(request.terms), *text_params,
                 request.now, request.limit, *tail)))
        return statements

    @staticmethod
    def merge_search(results: Sequence[Any]) -> builtins.list[Candidate]:
        """Vector and full-text candidates as one list (by row id): similarity from either, text
        rank from the full-text side, scaled by the best."""
        merged: dict[int, builtins.list[Any]] = {}
        for rows in results:
            for r in rows:
                rank = r[8] if len(r) > 8 else None
                found = merged.get(r[0])
                if found is None:
                    merged[r[0]] = [*r[:8], rank]
                else:
                    if found[7] is None:
                        found[7] = r[7]
                    if rank is not None:
                        found[8] = rank
        best = max((r[8] for r in merged.values() if r[8] is not None), default=0.0)
        return [Candidate(None, None if r[7] is None else float(r[7]),
                          None if r[8] is None else (float(r[8]) / best if best > 0 else 1.0),
                          memory_id=r[1], importance=float(r[2]), category=r[3], created_at=_utc(r[4]),
                          last_accessed_at=_utc(r[5]), access_count=int(r[6])) for _, r in sorted(merged.items())]

    def count_foreign_vectors(self, namespace: str, model_id: str | None) -> PgPlan:
        row = yield Q(
            "SELECT (SELECT count(*) FROM polymem_memories WHERE namespace = %s AND status = 'active' "
            "AND (embedding_model < %s OR embedding_model > %s OR embedding_model IS NULL)) + "
            "(SELECT count(*) FROM polymem_memories WHERE namespace = %s AND status = 'active' AND vector IS NULL "
            "AND embedding_model = %s)", (namespace, model_id, model_id, namespace, model_id), "one")
        return int(row[0])

    # bookkeeping --------------------------------------------------------------------------
    @staticmethod
    def reinforce_batch(batch: Sequence[tuple[str, Sequence[tuple[str, float]], datetime]]) -> PgPlan:
        """Apply queued recall bonuses: one atomic increment per row, rows in a fixed order."""
        merged: dict[tuple[str, str], builtins.list[Any]] = {}
        for namespace, bonuses, now in batch:
            for memory_id, bonus in bonuses:
                slot = merged.setdefault((namespace, memory_id), [0, 0.0, now])
                slot[0] += 1
                slot[1] += bonus
                slot[2] = now
        rows = [(count, now, bonus, namespace, memory_id)
                for (namespace, memory_id), (count, bonus, now) in sorted(merged.items())]
        yield Q("UPDATE polymem_memories SET access_count = access_count + %s, last_accessed_at = %s, "
                "importance = LEAST(1.0, importance + %s) WHERE namespace = %s AND memory_id = %s", rows, "many")

    # bulk ---------------------------------------------------------------------------------
    def active_with_vectors(self, namespace: str, model_id: str | None) -> PgPlan:
        rows = yield Q(f"SELECT {_RECORD_COLUMNS}, vector_send(m.vector) FROM polymem_memories m "
                       "WHERE m.namespace = %s AND m.status = 'active' ORDER BY m.created_at, m.id", (namespace,))
        out = []
        for row in rows:
            record = row_to_record(row)
            vector = vector_from_bytes(row[19]) if record.embedding_model == model_id else None
            out.append((record, vector))
        return out

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> PgPlan:
        if not memory_ids:
            return {}
        rows = yield Q("SELECT memory_id, vector_send(vector) FROM polymem_memories WHERE namespace = %s "
                       "AND memory_id = ANY(%s) AND embedding_model = %s AND vector IS NOT NULL",
                       (namespace, list(memory_ids), model_id))
        return {r[0]: vector_from_bytes(r[1]) for r in rows}

    def pending_reembed(self, namespace: str | None, model_id: str, limit: int) -> PgPlan:
        clause = "" if namespace is None else "namespace = %s AND "
        args: tuple[Any, ...] = () if namespace is None else (namespace,)
        rows = yield Q(f"SELECT memory_id, content FROM polymem_memories WHERE {clause}"
                       "(embedding_model IS DISTINCT FROM %s OR vector IS NULL) ORDER BY id LIMIT %s",
                       (*args, model_id, limit))
        return [(r[0], r[1]) for r in rows]

    def set_vectors(self, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> PgPlan:
        if not items:
            return None
        yield from self._ensure_index(model_id, len(items[0][1]))
        yield Q("UPDATE polymem_memories SET vector = %s::vector, embedding_model = %s WHERE memory_id = %s",
                [(np.asarray(v, dtype=np.float32), model_id, mid) for mid, v in sorted(items, key=lambda x: x[0])],
                "many")
        return None

    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> PgPlan:
        clause = " AND m.user_id = %s" if user_id is not None else ""
        args: tuple[Any, ...] = (namespace, after) + ((user_id,) if user_id is not None else ())
        rows = yield Q(f"SELECT {_RECORD_COLUMNS}, m.id, vector_send(m.vector), m.idempotency_key "
                       f"FROM polymem_memories m WHERE m.namespace = %s AND m.id > %s{clause} ORDER BY m.id LIMIT %s",
                       (*args, limit))
        if not rows:
            return []
        versions: dict[str, builtins.list[Any]] = {}
        for memory_id, record in (yield Q(
                "SELECT memory_id, record FROM polymem_memory_versions WHERE memory_id = ANY(%s) "
                "ORDER BY memory_id, version", ([r[0] for r in rows],))):
            versions.setdefault(memory_id, []).append(json.loads(record))
        out = []
        for row in rows:
            vector = vector_from_bytes(row[20])
            out.append({"cursor": row[19], "record": row_to_record(row).to_dict(), "versions": versions.get(row[0], []),
                        "vector": None if vector is None else vector.tolist(), "idempotency_key": row[21]})
        return out

    def export_sessions(self, namespace: str, user_id: str | None) -> PgPlan:
        infos = yield from self.session_list(namespace, user_id)
        out = []
        for info in infos:
            rows = yield Q("SELECT message, tokens, in_window FROM polymem_session_messages WHERE namespace = %s "
                           "AND session_id = %s ORDER BY id", (namespace, info.session_id))
            out.append(session_dict(info, [{"message": json.loads(r[0]), "tokens": r[1], "in_window": bool(r[2])}
                                           for r in rows]))
        return out

    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime, with_sessions: bool = True, staged: Staged | None = None) -> PgPlan:
        """Bulk import: binary COPY into a staging table, then one INSERT that skips ids
        (or idempotency keys) already present. `staged`: `stage_import(namespace, rows)`,
        when the caller made it beforehand (`bulk_import` does, while the previous batch loads)."""
        report = ImportReport()
        if rows:
            models = {(r["record"].embedding_model, len(r["vector"])) for r in rows if r.get("vector") is not None}
            bulk = len(rows) >= self.bulk_rows
            if bulk:  # drop now, build once after the load (same transaction: all or nothing)
                for model, _ in models:
                    yield from self.drop_vector_index(model)
            else:
                for model, dim in models:
                    yield from self._ensure_index(model, dim)
            stage, versions = staged if staged is not None else stage_import(namespace, rows)
            yield Q(_STAGE_DDL, None, "none")
            yield Q("TRUNCATE polymem_stage, polymem_stage_versions", None, "none")
            yield Q(f"COPY polymem_stage (n, {_INSERT_COLUMNS}) FROM STDIN (FORMAT BINARY)", stage, "copy",
                    _STAGE_TYPES)
            yield Q("COPY polymem_stage_versions (memory_id, version, record) FROM STDIN (FORMAT BINARY)", versions,
                    "copy", ("text", "int4", "text"))
            columns = ", ".join(f"s.{c.strip()}" for c in _INSERT_COLUMNS.split(",")).replace("s.tsv", "s.tsv::tsvector")
            row = yield Q(
                f"WITH ins AS (INSERT INTO polymem_memories ({_INSERT_COLUMNS}) SELECT {columns} "
                "FROM polymem_stage s ORDER BY s.n ON CONFLICT DO NOTHING RETURNING memory_id), "
                "ver AS (INSERT INTO polymem_memory_versions (memory_id, version, record) "
                "SELECT v.memory_id, v.version, v.record FROM polymem_stage_versions v JOIN ins USING (memory_id) "
                "ON CONFLICT (memory_id, version) DO UPDATE SET record = EXCLUDED.record) "
                "SELECT count(*) FROM ins", None, "one")
            report.imported = int(row[0])
            if bulk:
                for model, dim in models:
                    self.known_models.discard(model or "")
                    yield from self._ensure_index(model, dim)
            report.duplicates = len(rows) - report.imported
        if with_sessions:
            report.sessions = yield from self.import_sessions(namespace, sessions)
        return report

    def drop_vector_index(self, model_id: str | None) -> PgPlan:
        if model_id is None:
            return
        yield Q("SELECT pg_advisory_xact_lock(%s)", (_hash64("index:" + model_id),), "none")
        yield Q(f"DROP INDEX IF EXISTS {index_name(model_id)}, {scan_index_name(model_id)}", None, "none")
        yield Q("DELETE FROM polymem_vector_indexes WHERE model_id = %s", (model_id,), "none")
        self.known_models.discard(model_id)

    def build_vector_index(self, model_id: str, dimension: int) -> PgPlan:
        self.deferred.discard(model_id)
        self.known_models.discard(model_id)
        yield from self._ensure_index(model_id, dimension)

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]]) -> PgPlan:
        from ._time import from_iso

        count = 0
        for session in sessions:
            created = yield Q(
                "INSERT INTO polymem_sessions (namespace, session_id, user_id, agent_id, summary, created_at, "
                "updated_at, expire_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (namespace, session["session_id"], session.get("user_id"), session.get("agent_id"),
                 session.get("summary"), from_iso(session.get("created_at"), "created_at"),
                 from_iso(session.get("updated_at"), "updated_at"), from_iso(session.get("expire_at"), "expire_at")),
                "rowcount")
            if not created:
                continue
            if session["messages"]:
                yield Q("INSERT INTO polymem_session_messages (namespace, session_id, message_id, message, tokens, "
                        "in_window) VALUES (%s, %s, %s, %s, %s, %s)",
                        [(namespace, session["session_id"], m["message"]["message_id"], dumps(m["message"]),
                          int(m["tokens"]), bool(m["in_window"])) for m in session["messages"]], "many")
            count += 1
        return count

    def stats(self, namespace: str, with_sessions: bool = True) -> PgPlan:
        by_status = dict((yield Q("SELECT status, count(*) FROM polymem_memories WHERE namespace = %s GROUP BY status",
                                  (namespace,))))
        by_category = dict((yield Q("SELECT category, count(*) FROM polymem_memories WHERE namespace = %s "
                                    "AND status = 'active' GROUP BY category", (namespace,))))
        models = dict((yield Q("SELECT COALESCE(embedding_model, '(none)'), count(*) FROM polymem_memories "
                               "WHERE namespace = %s GROUP BY embedding_model", (namespace,))))
        users = (yield Q("SELECT count(DISTINCT user_id) FROM polymem_memories WHERE namespace = %s",
                         (namespace,), "one"))[0]
        version = (yield Q("SELECT COALESCE(max(version), 0) FROM polymem_schema_migrations", None, "one"))[0]
        out = {"namespace": namespace, "memories": sum(by_status.values()), "by_status": by_status,
               "by_category": by_category, "embedding_models": models, "users": users, "schema_version": version}
        if with_sessions:
            out["sessions"] = (yield Q("SELECT count(*) FROM polymem_sessions WHERE namespace = %s",
                                       (namespace,), "one"))[0]
        return out

    # working memory -----------------------------------------------------------------------
    def session_touch(self, namespace: str, session_id: str, user_id: str | None, agent_id: str | None,
                      now: datetime, expire_at: datetime | None) -> PgPlan:
        yield Q("INSERT INTO polymem_sessions (namespace, session_id, user_id, agent_id, created_at, updated_at, "
                "expire_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, session_id) DO UPDATE SET "
                "updated_at = EXCLUDED.updated_at, expire_at = EXCLUDED.expire_at",
                (namespace, session_id, user_id, agent_id, now, now, expire_at), "none")

    def _session_infos(self, namespace: str, where: str, params: Sequence[Any]) -> PgPlan:
        rows = yield Q(
            "SELECT s.session_id, s.user_id, s.agent_id, s.summary, s.created_at, s.updated_at, s.expire_at, "
            "(SELECT count(*) FROM polymem_session_messages q WHERE q.namespace = s.namespace "
            "AND q.session_id = s.session_id), "
            "(SELECT count(*) FROM polymem_session_messages q WHERE q.namespace = s.namespace "
            "AND q.session_id = s.session_id AND q.in_window) "
            f"FROM polymem_sessions s WHERE s.namespace = %s {where} ORDER BY s.created_at, s.session_id",
            (namespace, *params))
        return [SessionInfo(r[0], r[1], r[2], namespace, r[3], r[4].astimezone(timezone.utc),
                            r[5].astimezone(timezone.utc), _utc(r[6]), int(r[7]), int(r[8])) for r in rows]

    def session_info(self, namespace: str, session_id: str) -> PgPlan:
        found = yield from self._session_infos(namespace, "AND s.session_id = %s", (session_id,))
        return found[0] if found else None

    def session_list(self, namespace: str, user_id: str | None) -> PgPlan:
        if user_id is None:
            return (yield from self._session_infos(namespace, "", ()))
        return (yield from self._session_infos(namespace, "AND s.user_id = %s", (user_id,)))

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> PgPlan:
        if messages:
            yield Q("INSERT INTO polymem_session_messages (namespace, session_id, message_id, message, tokens) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    [(namespace, session_id, m.message_id, dumps(m.to_dict()), tokens) for m, tokens in messages],
                    "many")

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> PgPlan:
        clause = " AND in_window" if window_only else ""
        rows = yield Q(f"SELECT message, tokens FROM polymem_session_messages WHERE namespace = %s "
                       f"AND session_id = %s{clause} ORDER BY id", (namespace, session_id))
        return [(Message.from_dict(json.loads(r[0])), int(r[1])) for r in rows]

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> PgPlan:
        if not message_ids:
            return 0
        return (yield Q("UPDATE polymem_session_messages SET in_window = false WHERE namespace = %s "
                        "AND session_id = %s AND in_window AND message_id = ANY(%s)",
                        (namespace, session_id, list(message_ids)), "rowcount"))

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> PgPlan:
        if not message_ids:
            return 0
        return (yield Q("DELETE FROM polymem_session_messages WHERE namespace = %s AND session_id = %s "
                        "AND message_id = ANY(%s)", (namespace, session_id, list(message_ids)), "rowcount"))

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> PgPlan:
        yield Q("UPDATE polymem_sessions SET summary = %s WHERE namespace = %s AND session_id = %s",
                (summary, namespace, session_id), "none")

    def session_delete(self, namespace: str, session_id: str) -> PgPlan:
        yield Q("DELETE FROM polymem_session_messages WHERE namespace = %s AND session_id = %s",
                (namespace, session_id), "none")
        count = yield Q("DELETE FROM polymem_sessions WHERE namespace = %s AND session_id = %s",
                        (namespace, session_id), "rowcount")
        return count > 0

    def sessions_expired(self, namespace: str, now: datetime) -> PgPlan:
        rows = yield Q("SELECT session_id FROM polymem_sessions WHERE namespace = %s AND expire_at IS NOT NULL "
                       "AND expire_at <= %s", (namespace, now))
        return [r[0] for r in rows]


Staged = tuple[builtins.list[tuple[Any, ...]], builtins.list[tuple[Any, ...]]]


def stage_import(namespace: str, rows: Sequence[dict[str, Any]]) -> Staged:
    """Import rows as the staging COPYs take them: (memories, versions).

    Within the batch the first row of a memory id or of an idempotency key wins, as it
    would row by row; the later ones count as duplicates, like rows already stored."""
    stage: builtins.list[tuple[Any, ...]] = []
    versions: builtins.list[tuple[Any, ...]] = []
    ids: set[str] = set()
    keys: set[str] = set()
    for item in rows:
        record: MemoryRecord = item["record"]
        key = item.get("idempotency_key")
        if record.memory_id in ids or (key is not None and key in keys):
            continue
        ids.add(record.memory_id)
        if key is not None:
            keys.add(key)
        vector = item.get("vector")
        stage.append((len(stage), *record_values(record), item["content_hash"],
                      None if vector is None else vector_bytes(vector), key,
                      tsvector_literal(namespace, record.user_id, item["terms"])))
        versions.extend((record.memory_id, v["version"], dumps(v)) for v in item["versions"])
    return stage, versions


_STAGE_DDL = """
CREATE TEMP TABLE IF NOT EXISTS polymem_stage (
    n INTEGER, memory_id TEXT, namespace TEXT, user_id TEXT, agent_id TEXT, session_id TEXT, content TEXT,
    category TEXT, source TEXT, importance DOUBLE PRECISION, entities TEXT[], metadata TEXT,
    created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, last_accessed_at TIMESTAMPTZ, access_count INTEGER,
    expire_at TIMESTAMPTZ, embedding_model TEXT, version INTEGER, status TEXT, content_hash TEXT, vector vector,
    idempotency_key TEXT, tsv TEXT) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS polymem_stage_versions (memory_id TEXT, version INTEGER, record TEXT)
    ON COMMIT DELETE ROWS;
"""
_STAGE_TYPES = ("int4", "text", "text", "text", "text", "text", "text", "text", "text", "float8", "text[]", "text",
                "timestamptz", "timestamptz", "timestamptz", "int4", "timestamptz", "text", "int4", "text",
                "text", "bytea", "text", "text")


def session_dict(info: SessionInfo, messages: builtins.list[dict[str, Any]]) -> dict[str, Any]:
    """A session as the snapshot writes it."""
    return {
        "session_id": info.session_id, "user_id": info.user_id, "agent_id": info.agent_id, "summary": info.summary,
        "created_at": info.created_at.isoformat(), "updated_at": info.updated_at.isoformat(),
        "expire_at": None if info.expire_at is None else info.expire_at.isoformat(), "messages": messages,
    }


# -- a process's copy of per-user vectors ---------------------------------------------------------
DEFAULT_VECTOR_CACHE_MB = 512


# A cached copy hands PostgreSQL at most this many candidates to measure again; more (rows too
# close together for the int8 copy to tell apart) and the search runs in SQL.
MAX_SHORTLIST = 2_000


@dataclass
class ScopeVectors:
    """The active vectors of one model in one (namespace, user), as of `stamp`."""

    stamp: int
    ids: np.ndarray  # row ids (int64)
    codes: np.ndarray  # the unit vectors as int8 codes, one row per id (`_scan.quantize`)
    scales: np.ndarray
    lost: np.ndarray
    norms: np.ndarray  # of the unit vectors: 1, or 0 for a zero vector
    expire: np.ndarray  # seconds since the epoch, inf for never
    used: float = 0.0
    # The arrays' whole buffers, when they were grown with room to spare (`extended`).
    full: tuple[np.ndarray, ...] | None = None

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.ids, self.codes, self.scales, self.lost, self.norms, self.expire

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.full or self.arrays)))

    def extended(self, stamp: int, ids: np.ndarray, vectors: np.ndarray, expire: np.ndarray) -> ScopeVectors:
        """This copy with more rows, as of `stamp`. The rows go into the room left at the end of
        the buffers, which a search reading this copy never looks at, or into buffers a quarter
        larger than needed: a copy catching up with one save at a time costs no whole-scope copy."""
        n, k = len(self.ids), len(ids)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(k, -1)
        lengths = np.linalg.norm(vectors, axis=1)
        codes, scales, lost = quantize(vectors / np.where(lengths > 0, lengths, 1.0)[:, None])
        parts = (np.asarray(ids, dtype=np.int64), codes, scales, lost, (lengths > 0).astype(np.float32),
                 np.asarray(expire, dtype=np.float64))
        full = self.full
        if full is None or len(full[0]) < n + k:
            room = n + k + max(k, (n + k) // 4)
            full = tuple(np.empty((room, *a.shape[1:]), dtype=a.dtype) for a in self.arrays)
            for whole, a in zip(full, self.arrays):
                whole[:n] = a
        for whole, part in zip(full, parts):
            whole[n:n + k] = part
        ids_, codes_, scales_, lost_, norms_, expire_ = (whole[:n + k] for whole in full)
        return ScopeVectors(stamp, ids_, codes_, scales_, lost_, norms_, expire_, self.used, full)


@dataclass
class ScopeWrites:
    """What an insert did to scopes this process holds copies of (`Plans.insert`, `held=`):
    each (namespace, user) stamp before and after it, and its new active rows with vectors
    as (namespace, user, model, row id, vector, expiry in seconds since the epoch or inf)."""

    scopes: frozenset[tuple[str, str]]
    before: dict[tuple[str, str], int] = dataclass_field(default_factory=dict)
    after: dict[tuple[str, str], int] = dataclass_field(default_factory=dict)
    rows: builtins.list[tuple[str, str, str, int, np.ndarray, float]] = dataclass_field(default_factory=list)


class VectorCache:
    """Copies of per-user vectors, so a recall scoped to one user ranks them with numpy instead of
    PostgreSQL reading every one; bounded (`vector_cache_mb=` in the URL, 0 turns it off).

    Never trusted blindly: the statement that fetches the chosen candidates also reads the scope's
    stamp (`polymem_scope_stamps`, migration 6), and a copy whose stamp differs is dropped and the
    search runs in SQL. A copy is made off the read path after a miss, one at a time (a load holds
    a connection and, briefly, about twice the copy's size); when the cache is full, copies unused
    for 10 minutes make room, others stay, and a scope that found no room is not loaded again for
    a while (no churn when more users are busy than fit)."""

    IDLE = 600.0  # a copy unused this long may make room; a scope not worth a copy is not tried again before
    COOL = 5.0  # after a copy went stale, the scope is searched in SQL this long before a new copy
    FULL = 60.0  # after a loaded copy found no room, the scope is searched in SQL this long
    MIN_ROWS = 256  # smaller scopes are quick in SQL

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: dict[tuple[str, str, str], ScopeVectors] = {}
        self.loading: set[tuple[str, str, str]] = set()
        self.stale: dict[tuple[str, str, str], float] = {}  # until when a scope stays in SQL (copy found stale)
        self.skip: dict[tuple[str, str, str], float] = {}  # until when (too small, too big, or no room)
        self.used_bytes = 0
        self.lock = threading.Lock()

    def max_rows(self, dim: int) -> int:
        return self.max_bytes // (dim + 32)

    def get(self, key: tuple[str, str, str]) -> ScopeVectors | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None:
                entry.used = time.monotonic()
            return entry

    @staticmethod
    def _wait(waits: dict[tuple[str, str, str], float], key: tuple[str, str, str], until: float) -> None:
        if len(waits) > 10_000:
            now = time.monotonic()
            for k in [k for k, t in waits.items() if t <= now]:
                del waits[k]
        waits[key] = until

    def drop(self, key: tuple[str, str, str], stamp: int) -> None:
        """Forget a copy found stale (a write in the scope since it was made)."""
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None and entry.stamp == stamp:
                self.used_bytes -= self.entries.pop(key).nbytes
            self._wait(self.stale, key, time.monotonic() + self.COOL)

    def claim(self, key: tuple[str, str, str]) -> bool:
        """True when the caller should load this scope: not cached, no load under way, not just
        gone stale (a scope written to as often as it is read stays in SQL), not recently found
        too small, too big or without room."""
        with self.lock:
            if self.max_bytes <= 0 or key in self.entries or self.loading:
                return False
            now = time.monotonic()
            for waits in (self.stale, self.skip):
                until = waits.get(key)
                if until is not None:
                    if now < until:
                        return False
                    del waits[key]
            self.loading.add(key)
            return True

    def writes_for(self, items: Sequence[NewRecord]) -> ScopeWrites | None:
        """What an insert of `items` should note for `catch_up`: the (namespace, user) scopes of
        theirs this process holds a copy of (None: none)."""
        with self.lock:
            held = {key[:2] for key in self.entries}
        scopes = frozenset(scope for i in items if (scope := (i.record.namespace, i.record.user_id or "")) in held
                           and i.record.user_id is not None)
        return ScopeWrites(scopes) if scopes else None

    def catch_up(self, writes: ScopeWrites | None) -> None:
        """Bring the copies of the scopes an insert of this process held (`ScopeWrites`) up to
        it: a copy as of the stamp before the insert, whose stamp no one else could move while
        the insert held it, is that copy plus the insert's rows. Any other copy is left to the
        next search, which finds it stale."""
        if writes is None:
            return
        with self.lock:
            for key in [k for k in self.entries if k[:2] in writes.before]:
                entry, scope = self.entries[key], key[:2]
                after = writes.after.get(scope)
                if after is None or entry.stamp != writes.before[scope]:
                    continue
                rows = [r for r in writes.rows if r[:3] == key]
                if rows and any(len(r[4]) != entry.codes.shape[1] for r in rows):
                    continue
                grown = entry.extended(after, np.array([r[3] for r in rows], dtype=np.int64),
                                       np.array([r[4] for r in rows], dtype=np.float32).reshape(len(rows), -1),
                                       np.array([r[5] for r in rows], dtype=np.float64))
                self.used_bytes += grown.nbytes - entry.nbytes
                self.entries[key] = grown
            while self.used_bytes > self.max_bytes and self.entries:  # grown past the budget: the oldest copy goes
                oldest = min(self.entries, key=lambda k: self.entries[k].used)
                self.used_bytes -= self.entries.pop(oldest).nbytes

    def put(self, key: tuple[str, str, str], entry: ScopeVectors | None) -> None:
        """Keep a loaded copy (None: the scope is not worth one, or failed to load)."""
        with self.lock:
            self.loading.discard(key)
            now = time.monotonic()
            if entry is None or entry.nbytes > self.max_bytes:
                self._wait(self.skip, key, now + self.IDLE)
                return
            if self.used_bytes + entry.nbytes > self.max_bytes:
                for old in sorted((k for k, e in self.entries.items() if now - e.used > self.IDLE),
                                  key=lambda k: self.entries[k].used):
                    self.used_bytes -= self.entries.pop(old).nbytes
                    if self.used_bytes + entry.nbytes <= self.max_bytes:
                        break
                if self.used_bytes + entry.nbytes > self.max_bytes:
                    self._wait(self.skip, key, now + self.FULL)
                    return
            entry.used = now
            old_entry = self.entries.pop(key, None)
            if old_entry is not None:
                self.used_bytes -= old_entry.nbytes
            self.entries[key] = entry
            self.used_bytes += entry.nbytes


_STAMPS_OF = ("SELECT s.namespace, s.user_id, s.stamp FROM polymem_scope_stamps s JOIN unnest(%s::text[], %s::text[]) "
              "AS q(ns, u) ON s.namespace = q.ns AND s.user_id = q.u")


def _scope_arrays(scopes: Iterable[tuple[str, str]]) -> tuple[builtins.list[str], builtins.list[str]]:
    ordered = sorted(scopes)
    return [ns for ns, _ in ordered], [user for _, user in ordered]


def cacheable(request: SearchRequest) -> tuple[str, str, str] | None:
    """The cache key of a search the cache can answer: one user, a query vector, no other filter."""
    if (request.user_id is None or request.query_vector is None or request.model_id is None
            or request.agent_id is not None or request.category is not None or request.filter):
        return None
    return (request.namespace, request.user_id, request.model_id)


def _scope_bound(request: SearchRequest, dim: int) -> str:
    chars = scan_key_chars(dim)
    assert request.user_id is not None
    fits = chars is not None and len(request.namespace) + len(request.user_id) <= chars
    return f" AND length(m.namespace) + length(m.user_id) <= {chars}" if fits else ""


def scope_load_statement(request: SearchRequest, max_rows: int) -> Q:
    """The scope's active vectors of the model, and its stamp, from one snapshot (one row more
    than a copy may hold, to tell a scope too big for the cache). Read in binary: 50k 384-d
    rows arrive in 0.25 s instead of 0.4 s as hex text."""
    from psycopg import sql

    assert request.query_vector is not None and request.model_id is not None
    model_sql = sql.Literal(request.model_id).as_string(None).replace("%", "%%")
    return Q("SELECT (SELECT stamp FROM polymem_scope_stamps WHERE namespace = %s AND user_id = %s), m.id, "
             "vector_send(m.vector), m.expire_at FROM polymem_memories m WHERE m.namespace = %s AND m.user_id = %s "
             f"AND m.status = 'active' AND m.embedding_model = {model_sql} AND m.vector IS NOT NULL"
             f"{_scope_bound(request, len(request.query_vector))} LIMIT %s",
             (request.namespace, request.user_id, request.namespace, request.user_id, max_rows + 1), binary=True)


def scope_vectors(rows: Sequence[Sequence[Any]], dim: int, max_rows: int) -> ScopeVectors | None:
    """A copy from `scope_load_statement`'s rows (None: no stamp yet, too few or too many rows for
    a copy to pay, or vectors of another size)."""
    if not VectorCache.MIN_ROWS <= len(rows) <= max_rows or rows[0][0] is None:
        return None
    size = 4 + 4 * dim
    codes = np.empty((len(rows), dim), dtype=np.int8)
    scales = np.empty(len(rows), dtype=np.float32)
    lost = np.empty(len(rows), dtype=np.float32)
    norms = np.empty(len(rows), dtype=np.float32)
    chunk = np.empty((4096, dim), dtype=np.float32)  # converted a chunk at a time: no float32 copy of the scope
    for start in range(0, len(rows), len(chunk)):
        part = rows[start:start + len(chunk)]
        for i, r in enumerate(part):
            if len(r[2]) != size:
                return None
            chunk[i] = np.frombuffer(r[2], dtype=">f4", count=dim, offset=4)
        vectors = chunk[: len(part)]
        lengths = np.linalg.norm(vectors, axis=1)
        done = slice(start, start + len(part))
        norms[done] = lengths > 0
        codes[done], scales[done], lost[done] = quantize(vectors / np.where(lengths > 0, lengths, 1.0)[:, None])
    expire = np.array([np.inf if r[3] is None else r[3].timestamp() for r in rows], dtype=np.float64)
    return ScopeVectors(int(rows[0][0]), np.array([r[1] for r in rows], dtype=np.int64), codes, scales, lost,
                        norms, expire)


def cached_statement(request: SearchRequest, entry: ScopeVectors) -> Q | None:
    """The vector candidates of a cached scope: the int8 copy shortlists the unexpired rows
    that can be among the best `limit`; PostgreSQL measures those again (pgvector's own distance,
    so similarities and order are the SQL path's), keeps the best `limit`, and returns the scope's
    stamp with them. None: the copy cannot tell (a zero query, rows too close), ask SQL."""
    from psycopg import sql

    assert request.query_vector is not None and request.model_id is not None
    query = np.asarray(request.query_vector, dtype=np.float32)
    length = float(np.linalg.norm(query))
    if length == 0:
        return None
    lower, upper = bounds(entry.codes, entry.scales, entry.lost, entry.norms, query / length)
    # A zero vector has no direction (pgvector: NaN, sorted last): last here too; expired: out.
    zero, expired = entry.norms == 0, entry.expire <= request.now.timestamp()
    lower[zero] = upper[zero] = -1e30
    lower[expired] = upper[expired] = -np.inf
    best = shortlist(lower, upper, request.limit)
    if len(best) > MAX_SHORTLIST:
        return None
    ids = [int(i) for i in entry.ids[best]]
    model_sql = sql.Literal(request.model_id).as_string(None).replace("%", "%%")
    return Q(
        "WITH s AS (SELECT (SELECT stamp FROM polymem_scope_stamps WHERE namespace = %s AND user_id = %s) AS stamp), "
        # The scope as IS NOT DISTINCT FROM (same rows): only the primary key can serve this statement,
        # whatever plan a prepared statement settles on.
        "v AS (SELECT m.id, m.vector <=> %s::vector AS d FROM polymem_memories m WHERE m.id = ANY(%s) "
        "AND m.namespace IS NOT DISTINCT FROM %s AND m.user_id IS NOT DISTINCT FROM %s "
        f"AND m.embedding_model = {model_sql} AND m.vector IS NOT NULL "
        "AND m.status = 'active' AND (m.expire_at IS NULL OR m.expire_at > %s) ORDER BY 2 LIMIT %s) "
        "SELECT s.stamp, x.* FROM s LEFT JOIN LATERAL (SELECT m.id, m.memory_id, m.importance, m.category, "
        "m.created_at, m.last_accessed_at, m.access_count, 1 - v.d FROM v JOIN polymem_memories m ON m.id = v.id) x "
        "ON true",
        (request.namespace, request.user_id, query, ids, request.namespace, request.user_id, request.now,
         request.limit))


# How often a process reads the full text's statistics again (`TermStatistics`).
TERM_STATISTICS_S = 60.0


class TermStatistics:
    """The lexemes held by more than `COMMON_TERM_DOCS` memories, and how many memories there are,
    as the planner's statistics of
    the full text count them (pg_stats' most common elements, as of the table's last ANALYZE),
    read again every `TERM_STATISTICS_S` seconds: what `selective_terms` needs, for the price
    of one small query a minute instead of counting a term's rows at every recall."""

    STATEMENT = Q(
        "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stats s ON s.schemaname = n.nspname "
        "AND s.tablename = c.relname AND s.attname = 'tsv' WHERE c.oid = 'polymem_memories'::regclass",
        None, "one")

    def __init__(self) -> None:
        self.common: dict[str, int] = {}
        self.rows = 0
        self.read_at = -np.inf

    def due(self) -> bool:
        return time.monotonic() - self.read_at >= TERM_STATISTICS_S

    def update(self, row: Sequence[Any] | None) -> None:
        elements, frequencies, rows = row if row is not None else (None, None, 0)
        rows = max(0.0, float(rows))
        self.common = {e: int(f * rows) for e, f in zip(elements or (), frequencies or ())
                       if f * rows > COMMON_TERM_DOCS}
        self.rows = int(rows)
        self.read_at = time.monotonic()

    def documents(self, terms: Sequence[str]) -> dict[str, int]:
        """Memories holding each term: the common ones' counts; any other term counts as rare."""
        return {t: self.common.get(t, 1) for t in terms}


def search_statements(plans: Plans, cache: VectorCache, request: SearchRequest,
                      ) -> tuple[builtins.list[Q], tuple[str, str, str] | None, ScopeVectors | None]:
    """A search's statements, the cache key of its scope (None: not cacheable) and the cached
    copy its vector statement reads (None: the vector candidates come from SQL). The full-text
    statement matches only `selective_terms`."""
    if request.terms:
        kept = selective_terms(request.terms, plans.term_statistics.documents(request.terms),
                               plans.term_statistics.rows, with_vector=request.query_vector is not None)
        request = replace(request, terms=tuple(kept))
    statements = plans.search_statements(request)
    key = cacheable(request)
    entry = cache.get(key) if key is not None else None
    cached = None if entry is None else cached_statement(request, entry)
    if cached is None:
        return statements, key, None
    statements[0] = cached
    return statements, key, entry


def cached_rows(rows: Sequence[Sequence[Any]], entry: ScopeVectors) -> builtins.list[Sequence[Any]] | None:
    """`cached_statement`'s candidates as the SQL path gives them, or None when the copy is stale."""
    if not rows or rows[0][0] != entry.stamp:
        return None
    return [r[1:] for r in rows if r[1] is not None]


# -- connections ----------------------------------------------------------------------------------
def split_url(url: str) -> tuple[str, str, dict[str, str]]:
    """(conninfo for psycopg, the URL without its password, polymem options from the query)."""
    parts = urlsplit(url)
    scheme = "postgresql"
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    options = {k: query.pop(k) for k in list(query)
               if k.startswith("pool_") or k in ("ef_search", "namespace", "vector_cache_mb")}
    conninfo = urlunsplit((scheme, parts.netloc, parts.path, urlencode(query), ""))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = userinfo.split(":", 1)[0] + "@" + host
    public = urlunsplit((scheme, netloc, parts.path, urlencode(query), ""))
    return conninfo, public, options


def session_settings(plans: Plans) -> str:
    """What every pooled connection sets once: UTC, and HNSW scans that keep going past filtered rows."""
    return (f"SET TIME ZONE 'UTC'; SET hnsw.iterative_scan = relaxed_order; "
            f"SET hnsw.ef_search = {int(plans.ef_search)}")


def vector_dumper(oid: int) -> type:
    """A psycopg dumper sending numpy vectors in pgvector's binary form."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return vector_bytes(obj)

    VectorDumper.oid = oid
    return VectorDumper


def _migrate_plan(report: dict[str, Any] | None = None) -> PgPlan:
    yield Q("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,), "none")
    yield Q("CREATE TABLE IF NOT EXISTS polymem_schema_migrations (version INTEGER PRIMARY KEY, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())", None, "none")
    done = {r[0] for r in (yield Q("SELECT version FROM polymem_schema_migrations"))}
    applied = []
    for version, script in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        yield Q(script, None, "none")
        yield Q("INSERT INTO polymem_schema_migrations (version) VALUES (%s)", (version,), "none")
        applied.append(version)
    meta = dict((yield Q("SELECT key, value FROM polymem_meta WHERE key IN ('analyzer', 'tsv_format')")))
    if meta.get("analyzer") != ANALYZER_VERSION or meta.get("tsv_format") != TSV_FORMAT:
        # full text built by another analyzer, or written in another format
        rows = yield from rebuild_tsv()
        if report is not None:
            report["tsv_rebuilt"] = rows
        yield Q("INSERT INTO polymem_meta (key, value) VALUES ('analyzer', %s), ('tsv_format', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (ANALYZER_VERSION, TSV_FORMAT), "none")
    return applied


_REBUILD_BATCH = 20_000


def _stage_tsv(rows: Sequence[Sequence[Any]]) -> Q:
    return Q("COPY polymem_tsv_stage (id, content, tsv) FROM STDIN (FORMAT BINARY)",
             [(r[0], r[3], tsvector_literal(r[1], r[2], terms(r[3]))) for r in rows], "copy", ("int8", "text", "text"))


def rebuild_tsv() -> PgPlan:
    """Write every row's tsv again (`_migrate_plan`, in its transaction, under its lock), set-based.

    The new tsv strings are computed in Python batch by batch and COPYed into a staging table
    while the store stays in use. Then, with the table locked: rows written since (new ones, or
    whose content changed) are staged again, the indexes an UPDATE of every row would have to
    maintain (all but the constraints': GIN, HNSW, covering scan, btrees) are dropped, one
    UPDATE joins the staging table, and the indexes are built again, with a generous
    maintenance_work_mem and parallel workers. The statement trigger stamping scopes
    (migration 6) is off for that UPDATE: the tsv is none of the columns it watches.
    Returns the number of rows rewritten."""
    from psycopg import sql

    yield Q("CREATE TEMP TABLE polymem_tsv_stage (id BIGINT PRIMARY KEY, content TEXT NOT NULL, tsv TEXT NOT NULL) "
            "ON COMMIT DROP", None, "none")
    last = 0
    while batch := (yield Q("SELECT id, namespace, user_id, content FROM polymem_memories WHERE id > %s "
                            "ORDER BY id LIMIT %s", (last, _REBUILD_BATCH))):
        last = batch[-1][0]
        yield _stage_tsv(batch)
    yield Q("LOCK TABLE polymem_memories IN ACCESS EXCLUSIVE MODE", None, "none")
    changed = yield Q("SELECT m.id, m.namespace, m.user_id, m.content FROM polymem_memories m "
                      "LEFT JOIN polymem_tsv_stage s ON s.id = m.id WHERE s.content IS DISTINCT FROM m.content")
    if changed:
        yield Q("DELETE FROM polymem_tsv_stage WHERE id = ANY(%s)", ([r[0] for r in changed],), "none")
        yield _stage_tsv(changed)
    if last == 0 and not changed:
        return 0
    yield Q("ANALYZE polymem_tsv_stage", None, "none")
    indexes = yield Q(
        "SELECT c.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'polymem_memories'::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid) ORDER BY c.relname")
    for name, _ in indexes:
        yield Q(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)), None, "none")
    yield Q("ALTER TABLE polymem_memories DISABLE TRIGGER polymem_stamp_update", None, "none")
    count = yield Q("UPDATE polymem_memories m SET tsv = s.tsv::tsvector FROM polymem_tsv_stage s WHERE m.id = s.id",
                    None, "rowcount")
    yield Q("ALTER TABLE polymem_memories ENABLE TRIGGER polymem_stamp_update", None, "none")
    # Raise (never lower) what the index builds may use: an HNSW graph built in memory is many
    # times faster than one spilling (about 2 KB a 384-d row).
    yield Q("SELECT set_config('maintenance_work_mem', CASE WHEN pg_size_bytes(current_setting("
            "'maintenance_work_mem')) < pg_size_bytes('2GB') THEN '2GB' ELSE current_setting('maintenance_work_mem') "
            "END, true), set_config('max_parallel_maintenance_workers', GREATEST(2, current_setting("
            "'max_parallel_maintenance_workers')::int)::text, true)", None, "none")
    for _, definition in indexes:
        yield Q(definition, None, "none")
    return int(count)


def run_plan_sync(conn: Any, plan: PgPlan) -> Any:
    """Drive a plan on a psycopg connection (the caller owns the transaction)."""
    send: Any = None
    with conn.cursor() as cur:
        while True:
            try:
                q = plan.send(send)
            except StopIteration as stop:
                return stop.value
            if q.mode == "many":
                if q.params:
                    cur.executemany(q.sql, q.params)
                send = None
            elif q.mode == "copy":
                with cur.copy(q.sql) as copy:
                    copy.set_types(list(q.types or ()))
                    for row in q.params:
                        copy.write_row(row)
                send = None
            else:
                cur.execute(q.sql, q.params, binary=q.binary)
                send = _result(cur, q.mode)


async def run_plan_async(conn: Any, plan: PgPlan) -> Any:
    """`run_plan_sync` for psycopg's async connections."""
    send: Any = None
    async with conn.cursor() as cur:
        while True:
            try:
                q = plan.send(send)
            except StopIteration as stop:
                return stop.value
            if q.mode == "many":
                if q.params:
                    await cur.executemany(q.sql, q.params)
                send = None
            elif q.mode == "copy":
                async with cur.copy(q.sql) as copy:
                    copy.set_types(list(q.types or ()))
                    for row in q.params:
                        await copy.write_row(row)
                send = None
            else:
                await cur.execute(q.sql, q.params, binary=q.binary)
                send = await _aresult(cur, q.mode)


def _result(cur: Any, mode: str) -> Any:
    if mode == "all":
        return cur.fetchall()
    if mode == "one":
        return cur.fetchone()
    if mode == "rowcount":
        return cur.rowcount
    return None


async def _aresult(cur: Any, mode: str) -> Any:
    if mode == "all":
        return await cur.fetchall()
    if mode == "one":
        return await cur.fetchone()
    if mode == "rowcount":
        return cur.rowcount
    return None


def retryable(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in _RETRYABLE


def migrate(url: str) -> builtins.list[int]:
    """Apply the pending schema migrations to the database at `url`; returns their numbers.

    Safe to run from several processes at once (an advisory lock serialises them).
    """
    psycopg = _import_psycopg()
    conninfo, _, _ = split_url(url)
    report: dict[str, Any] = {}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        with conn.transaction():
            applied = run_plan_sync(conn, _migrate_plan(report))
        if report.get("tsv_rebuilt"):
            # Every row was rewritten: mark the pages all-visible again (index-only scans of the
            # covering scan indexes need it) and refresh the statistics.
            conn.execute("VACUUM (ANALYZE) polymem_memories")
    return applied  # type: ignore[no-any-return]


def schema_version(url: str) -> int:
    psycopg = _import_psycopg()
    conninfo, _, _ = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('polymem_schema_migrations') IS NOT NULL").fetchone()
        if not row[0]:
            return 0
        return int(conn.execute("SELECT COALESCE(max(version), 0) FROM polymem_schema_migrations").fetchone()[0])


# -- the sync backend -------------------------------------------------------------------------------
class PostgresBackend(Backend):
    """PostgreSQL + pgvector over a psycopg connection pool (thread-safe)."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int | None = None, auto_migrate: bool = True) -> None:
        psycopg = _import_psycopg()
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover
            raise missing_extra("psycopg_pool", "postgres") from None
        conninfo, self.url, options = split_url(url)
        self.conninfo = conninfo
        self.plans = Plans()
        if "ef_search" in options:
            self.plans.ef_search = int(options["ef_search"])
        self.vector_cache = VectorCache(int(float(options.get("vector_cache_mb", DEFAULT_VECTOR_CACHE_MB)) * 2**20))
        if auto_migrate:
            migrate(url)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            info = psycopg.types.TypeInfo.fetch(conn, "vector")
            if info is None:
                raise PolymemError("the pgvector extension is missing; run polymem migrate")
            self._dumper = vector_dumper(info.oid)

        def configure(conn: Any) -> None:
            conn.adapters.register_dumper(np.ndarray, self._dumper)
            conn.execute(session_settings(self.plans))

        self._pool = ConnectionPool(
            conninfo, min_size=int(options.get("pool_min_size", min_size)),
            max_size=int(options.get("pool_max_size", max_size or 10)),
            kwargs={"autocommit": True}, configure=configure, open=True, name="polymem")
        self._closed = False
        self._fan: Any = None  # threads running the second statement of a search
        self._load: Any = None  # the thread copying a scope's vectors into `vector_cache`
        self._fan_lock = threading.Lock()
        self._bookkeeping = Bookkeeping(self._write_bonuses, "polymem-pg-bookkeeping")

    def _call(self, plan: Callable[..., PgPlan], *args: Any) -> Any:
        """Run a plan in one transaction; a serialization failure or deadlock reruns it."""
        for attempt in range(8):
            if self._closed:
                raise StoreClosedError("the store is closed")
            with self._pool.connection() as conn:
                try:
                    if plan.__name__ in Plans.READS:
                        return run_plan_sync(conn, plan(*args))
                    with conn.transaction():
                        return run_plan_sync(conn, plan(*args))
                except Exception as exc:
                    if not retryable(exc) or attempt == 7:
                        raise
            time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    # records
    def insert(self, items: Sequence[NewRecord], now: datetime) -> builtins.list[tuple[MemoryRecord, bool]]:
        held = self.vector_cache.writes_for(items)
        results = self._call(self.plans.insert, items, now, held)
        self.vector_cache.catch_up(held)
        return results  # type: ignore[no-any-return]

    def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.get, namespace, memory_ids)  # type: ignore[no-any-return]

    def list(self, namespace: str, user_id: str | None, agent_id: str | None, category: str | None,
             filter: dict[str, Any] | None, status: str | None, limit: int, offset: int) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.list, namespace, user_id, agent_id, category, filter, status, limit, offset)  # type: ignore[no-any-return]

    def update(self, namespace: str, memory_id: str, changes: dict[str, Any], expected_version: int | None,
               now: datetime, vector: np.ndarray | None, model_id: str | None,
               content_hash: str | None, terms: Sequence[str] | None) -> MemoryRecord:
        return self._call(self.plans.update, namespace, memory_id, changes,  # type: ignore[no-any-return]
                          expected_version, now, vector, model_id, content_hash, terms)

    def delete(self, namespace: str, memory_id: str) -> bool:
        return self._call(self.plans.delete, namespace, memory_id)  # type: ignore[no-any-return]

    def history(self, namespace: str, memory_id: str) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.history, namespace, memory_id)  # type: ignore[no-any-return]

    def search(self, request: SearchRequest) -> builtins.list[Candidate]:
        """Vector and full-text candidates side by side, each statement on its own pooled
        connection (the full-text one from a helper thread), merged when both are back. A
        recall scoped to one user whose vectors this process holds (`VectorCache`) takes its
        vector candidates from the copy, checked against the scope's stamp."""
        if self.plans.term_statistics.due():
            self.plans.term_statistics.update(self._call(self.plans.run, TermStatistics.STATEMENT))
        statements, key, entry = search_statements(self.plans, self.vector_cache, request)
        if len(statements) < 2:
            results = [self._call(self.plans.run, q) for q in statements]
        else:
            other = self._fan_out().submit(self._call, self.plans.run, statements[1])
            try:
                first = self._call(self.plans.run, statements[0])
            finally:
                second = other.result()
            results = [first, second]
        if key is not None:
            if entry is not None:
                rows = cached_rows(results[0], entry)
                if rows is None:  # written to since the copy: this time in SQL
                    self.vector_cache.drop(key, entry.stamp)
                    rows = self._call(self.plans.run, self.plans.search_statements(request)[0])
                    entry = None
                results[0] = rows
            if entry is None and self.vector_cache.claim(key):
                self._loader().submit(self._load_scope, key, request)
        return self.plans.merge_search(results)

    def _load_scope(self, key: tuple[str, str, str], request: SearchRequest) -> None:
        entry = None
        try:
            assert request.query_vector is not None
            dim = len(request.query_vector)
            limit = self.vector_cache.max_rows(dim)
            entry = scope_vectors(self._call(self.plans.run, scope_load_statement(request, limit)), dim, limit)
        except Exception:  # noqa: BLE001 - a copy that failed to load is simply not made
            pass
        finally:
            self.vector_cache.put(key, entry)

    def _loader(self) -> Any:
        """The thread making cache copies (one at a time: never in the way of the search fan-out)."""
        with self._fan_lock:
            if self._load is None:
                from concurrent.futures import ThreadPoolExecutor

                self._load = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polymem-pg-cache")
            return self._load

    def _fan_out(self) -> Any:
        with self._fan_lock:
            if self._fan is None:
                from concurrent.futures import ThreadPoolExecutor

                self._fan = ThreadPoolExecutor(max_workers=self._pool.max_size, thread_name_prefix="polymem-pg-search")
            return self._fan

    def count_foreign_vectors(self, namespace: str, model_id: str | None) -> int:
        return self._call(self.plans.count_foreign_vectors, namespace, model_id)  # type: ignore[no-any-return]

    # bookkeeping
    def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None:
        if bonuses:
            self._bookkeeping.put((namespace, list(bonuses), now))

    def _write_bonuses(self, batch: Sequence[tuple[str, Sequence[tuple[str, float]], datetime]]) -> None:
        self._call(self.plans.reinforce_batch, batch)

    def flush(self) -> None:
        self._bookkeeping.flush()

    # bulk
    def active_with_vectors(self, namespace: str, model_id: str | None) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
        return self._call(self.plans.active_with_vectors, namespace, model_id)  # type: ignore[no-any-return]

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]:
        return self._call(self.plans.vectors, namespace, memory_ids, model_id)  # type: ignore[no-any-return]

    def pending_reembed(self, namespace: str | None, model_id: str, limit: int) -> builtins.list[tuple[str, str]]:
        return self._call(self.plans.pending_reembed, namespace, model_id, limit)  # type: ignore[no-any-return]

    def set_vectors(self, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None:
        self._call(self.plans.set_vectors, items, model_id)

    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> builtins.list[dict[str, Any]]:
        return self._call(self.plans.export_page, namespace, user_id, after, limit)  # type: ignore[no-any-return]

    def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return self._call(self.plans.export_sessions, namespace, user_id)  # type: ignore[no-any-return]

    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime) -> ImportReport:
        return self._call(self.plans.import_rows, namespace, rows, sessions, now)  # type: ignore[no-any-return]

    def stats(self, namespace: str) -> dict[str, Any]:
        return {"url": self.url, **self._call(self.plans.stats, namespace)}

    def bulk_import(self, namespace: str, batches: Iterable[Sequence[dict[str, Any]]], now: datetime, *,
                    build_index: bool = True) -> ImportReport:
        """Load many batches (each its own transaction; rows as `import_rows` takes them) with
        the vector indexes of their models (HNSW, covering scan index) dropped, then build each
        once (`build_vector_indexes`).

        A worker thread stages batch n+1 (rows to COPY tuples: tsvectors, versions, vector bytes)
        while batch n loads; the next batch is only pulled from `batches` once that is done, so
        the caller's own work never overlaps the load.

        A maintenance operation: until the build, recalls are exact scans through the heap.
        A crash mid-way leaves no index; the next write of the model creates them again.
        """
        from concurrent.futures import ThreadPoolExecutor

        report = ImportReport()
        models: dict[str, int] = {}

        def load(batch: Sequence[dict[str, Any]], staged: Staged) -> None:
            for model, dim in {(r["record"].embedding_model, len(r["vector"])) for r in batch
                               if r.get("vector") is not None}:
                if model is not None and model not in models:
                    models[model] = dim
                    self.plans.deferred.add(model)
                    self._call(self.plans.drop_vector_index, model)
            part = self._call(self.plans.import_rows, namespace, batch, [], now, True, staged)
            report.imported += part.imported
            report.duplicates += part.duplicates

        self._gather_text_index_writes(True)
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="polymem-stage") as pool:
                pending: tuple[Sequence[dict[str, Any]], Staged] | None = None
                for batch in batches:
                    future = pool.submit(stage_import, namespace, batch)
                    if pending is not None:
                        load(*pending)
                    pending = (batch, future.result())
                if pending is not None:
                    load(*pending)
        finally:
            self._gather_text_index_writes(False)
        if build_index:
            self.build_vector_indexes(models)
        return report

    def _gather_text_index_writes(self, gather: bool) -> None:
        """While `bulk_import` loads, the full-text index gathers the new entries in its pending
        list and merges them in bulk (100k rows: 8,300/s entry by entry); afterwards it merges
        what is left and takes each write at once again (migration 8)."""
        with self._pool.connection() as conn:
            conn.execute(f"ALTER INDEX polymem_memories_tsv SET (fastupdate = {'on' if gather else 'off'})")
            if not gather:
                conn.execute("SELECT gin_clean_pending_list('polymem_memories_tsv'::regclass)")

    def build_vector_indexes(self, models: dict[str, int] | None = None) -> None:
        """Build the vector indexes (HNSW, covering scan index) of every deferred model
        (`{model_id: dimension}`), then VACUUM ANALYZE the memories: fresh statistics, and
        pages marked all-visible, which index-only scans of the covering index need."""
        for model, dim in (models or {}).items():
            self._call(self.plans.build_vector_index, model, dim)
        if models:
            with self._pool.connection() as conn:
                conn.execute("VACUUM (ANALYZE) polymem_memories")

    # working memory
    def session_touch(self, namespace: str, session_id: str, user_id: str | None, agent_id: str | None,
                      now: datetime, expire_at: datetime | None) -> None:
        self._call(self.plans.session_touch, namespace, session_id, user_id, agent_id, now, expire_at)

    def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        return self._call(self.plans.session_info, namespace, session_id)  # type: ignore[no-any-return]

    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        return self._call(self.plans.session_list, namespace, user_id)  # type: ignore[no-any-return]

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        self._call(self.plans.session_append, namespace, session_id, messages)

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> builtins.list[tuple[Message, int]]:
        return self._call(self.plans.session_messages, namespace, session_id, window_only)  # type: ignore[no-any-return]

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._call(self.plans.session_evict, namespace, session_id, message_ids)  # type: ignore[no-any-return]

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._call(self.plans.session_forget, namespace, session_id, message_ids)  # type: ignore[no-any-return]

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        self._call(self.plans.session_set_summary, namespace, session_id, summary)

    def session_delete(self, namespace: str, session_id: str) -> bool:
        return self._call(self.plans.session_delete, namespace, session_id)  # type: ignore[no-any-return]

    def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        return self._call(self.plans.sessions_expired, namespace, now)  # type: ignore[no-any-return]

    # consolidation lock
    @contextmanager
    def consolidation_lock(self, namespace: str = "default", *, timeout: float | None = None,
                           poll: float = 0.2) -> Iterator[None]:
        """Hold the namespace's consolidation lock (a session advisory lock on a dedicated
        connection): PostgreSQL drops it when the holder's connection dies, so a killed
        consolidator never blocks the next; keepalives make a vanished host count as dead."""
        psycopg = _import_psycopg()
        key = _hash64("consolidate\x00" + namespace)
        conn = psycopg.connect(self.conninfo, autocommit=True, keepalives=1, keepalives_idle=5,
                               keepalives_interval=2, keepalives_count=3)
        try:
            conn.execute("SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3")
            deadline = None if timeout is None else time.monotonic() + timeout
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeoutError(f"another instance is consolidating namespace {namespace!r}")
                time.sleep(poll)
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            conn.close()

    def close(self) -> None:
        if self._closed:
            return
        self._bookkeeping.close()
        self._closed = True
        for executor in (self._fan, self._load):
            if executor is not None:
                executor.shutdown(wait=True)
        self._pool.close()
