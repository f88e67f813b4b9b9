"""Statements and values: the `Q` a plan yields, rows to records and back, pgvector's binary
form, the full text's tsvector and tsquery literals, index names, and the filter compiler
(`_filters.parse_filter` validates; this only writes PostgreSQL)."""

from __future__ import annotations

import builtins
import functools
import hashlib
import json
import math
import re
import struct
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, TypeVar, overload

import numpy as np

from .._filters import Condition, dumps, from_micros, parse_filter
from .._models import MemoryRecord

T = TypeVar("T")

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


@overload
def vector_from_bytes(data: bytes | memoryview) -> np.ndarray: ...
@overload
def vector_from_bytes(data: None) -> None: ...
def vector_from_bytes(data: bytes | memoryview | None) -> np.ndarray | None:
    """A vector from pgvector's binary form (`vector_send`); None for NULL."""
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


_WEIGHT_A = 3 << 14  # a position's weight, in its top two bits (D = 0)
# A lexeme's terminating NUL, one position, that position without weight: the common case, ready made.
_ONE_POSITION = [struct.pack(">xHH", 1, n) for n in range(16384)]


def tsvector_bytes(namespace: str, user_id: str | None, terms: Sequence[str]) -> bytes:
    """`tsvector_literal`'s tsvector in PostgreSQL's binary form (`tsvectorrecv`), for a binary
    COPY: the lexeme count, then each lexeme NUL-terminated with its positions. Lexemes go in
    PostgreSQL's order (bytewise; the server then neither sorts nor parses), positions ascending."""
    positions: dict[str, builtins.list[int]] = {namespace_lexeme(namespace): [1 | _WEIGHT_A],
                                                scope_lexeme(namespace, user_id): [2 | _WEIGHT_A]}
    for n, term in enumerate(terms, start=3):
        slot = positions.get(term)
        if slot is None:
            if term and not (len(term) > 500 and _too_long(term)):
                positions[term] = [n if n < 16383 else 16383]
        elif len(slot) < 255 and slot[-1] & 0x3FFF < 16383:
            slot.append(n if n < 16383 else 16383)
    parts = [struct.pack(">i", len(positions))]
    for lexeme, at in sorted([(t.encode(), p) for t, p in positions.items()]):
        parts.append(lexeme)
        parts.append(_ONE_POSITION[at[0]] if len(at) == 1 and at[0] < 16384 else struct.pack(f">xH{len(at)}H", len(at), *at))
    return b"".join(parts)


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


def build_lock(model_id: str) -> int:
    """The advisory lock held while a model's vector indexes are built (`IndexBuilder`)."""
    return _hash64("build:" + model_id)


def scan_key_chars(dimension: int) -> int | None:
    """How many characters namespace + user_id may have for a row to sit in the model's covering
    scan index, or None when vectors of this dimension leave no room for one.

    A btree entry holds at most 2704 bytes: the vector takes 8 + 4·dim, headers and the two
    8-byte columns under 64; the rest (kept under 2560 − 4·dim bytes, 4 bytes a character at
    most in any server encoding) is for the two strings. Rows with longer keys, and models
    above 576 dimensions, take the heap path (exact as well, slower)."""
    room = 2560 - 4 * int(dimension)
    return room // 4 if room >= 256 else None


def vector_index_statements(model_id: str, dimension: int, *, concurrently: bool = False) -> builtins.list[tuple[str, Any]]:
    """The vector indexes of one model, as (name, CREATE INDEX statement): when the dimension
    leaves room for one, its covering scan index (a user's vectors side by side in btree order,
    read by an index-only scan, no heap, no TOAST, when recall is scoped to that user), then its
    partial HNSW index (recall over every user). `concurrently`: built without blocking writes
    (`IndexBuilder`; not inside a transaction)."""
    from psycopg import sql

    how = sql.SQL("CONCURRENTLY " if concurrently else "")
    out = []
    chars = scan_key_chars(dimension)
    if chars is not None:
        out.append((scan_index_name(model_id), sql.SQL(
            "CREATE INDEX {}IF NOT EXISTS {} ON polymem_memories (namespace, user_id) INCLUDE (id, expire_at, vector) "
            "WHERE embedding_model = {} AND status = 'active' AND vector IS NOT NULL "
            "AND length(namespace) + length(user_id) <= {}").format(
                how, sql.Identifier(scan_index_name(model_id)), sql.Literal(model_id), sql.Literal(chars))))
    out.append((index_name(model_id), sql.SQL(
        "CREATE INDEX {}IF NOT EXISTS {} ON polymem_memories USING hnsw ((vector::vector({})) vector_cosine_ops) "
        "WHERE embedding_model = {}").format(how, sql.Identifier(index_name(model_id)), sql.Literal(int(dimension)),
                                               sql.Literal(model_id))))
    return out


# The indexes no query needs to be right, only fast (the constraints' indexes, the scope's and the
# content hash's are not among them: they serve a user's exact recall, get, list and dedupe). A large
# import into a small store drops them and `IndexBuilder` builds them again concurrently afterwards
# (`Plans.defer_secondary_indexes`), as migrations 1, 8 and 12 made them: (name, CREATE INDEX statement).
SECONDARY_INDEXES = (
    ("polymem_memories_tsv", "CREATE INDEX CONCURRENTLY IF NOT EXISTS polymem_memories_tsv ON polymem_memories "
                             "USING gin (tsv) WITH (fastupdate = off)"),
    ("polymem_memories_recent", "CREATE INDEX CONCURRENTLY IF NOT EXISTS polymem_memories_recent ON polymem_memories "
                                "(namespace, status, created_at)"),
    ("polymem_memories_models", "CREATE INDEX CONCURRENTLY IF NOT EXISTS polymem_memories_models ON polymem_memories "
                                "(namespace, embedding_model) WHERE status = 'active'"),
    ("polymem_memories_novector", "CREATE INDEX CONCURRENTLY IF NOT EXISTS polymem_memories_novector ON "
                                  "polymem_memories (namespace) WHERE status = 'active' AND vector IS NULL"),
    ("polymem_memories_written", "CREATE INDEX CONCURRENTLY IF NOT EXISTS polymem_memories_written ON polymem_memories "
                                 "(namespace, updated_at)"),
)
# Held while the secondary indexes are dropped or built (one builder at a time, no drop under a build).
SECONDARY_BUILD_LOCK = _hash64("build:\x00secondary")


# Raise (never lower) what an index build may use: an HNSW graph built in memory is many times
# faster than one spilling (about 2 KB a 384-d row). Parameter: local to the transaction or not.
MAINTENANCE_SETTINGS = (
    "SELECT set_config('maintenance_work_mem', CASE WHEN pg_size_bytes(current_setting('maintenance_work_mem')) "
    "< pg_size_bytes('2GB') THEN '2GB' ELSE current_setting('maintenance_work_mem') END, %(local)s), "
    "set_config('max_parallel_maintenance_workers', GREATEST(2, current_setting("
    "'max_parallel_maintenance_workers')::int)::text, %(local)s)")


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


def _jsonb_holds(value: Any) -> bool:
    """Whether jsonb (and text) can hold `value`: no NUL character, no infinite or NaN number. No
    stored value holds what they cannot, so such a filter value is compared without being sent."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, (list, tuple)):
        return all(_jsonb_holds(v) for v in value)
    if isinstance(value, dict):
        return all(_jsonb_holds(k) and _jsonb_holds(v) for k, v in value.items())
    return True


def _compile_unheld(c: Condition, column: str, params: builtins.list[Any]) -> tuple[str, builtins.list[Any]]:
    """A comparison with a value jsonb cannot hold, as SQLite answers it: equal to nothing, and in
    order, infinity beyond every number, NaN comparable with none, and a text with a NUL after its
    part before the NUL (stored texts have none, so `x > "ab\\x00c"` holds exactly when `x > "ab"`)."""
    value = c.value
    if c.op in ("$eq", "$contains"):
        return "FALSE", []
    if c.op == "$ne":
        return "TRUE", []
    above = c.op in ("$gt", "$gte")
    if isinstance(value, float):
        if math.isnan(value) or (value > 0) == above:
            return "FALSE", []
        return f"jsonb_typeof({column}) = 'number'", params
    prefix = value[:value.index("\x00")]
    operator = ">" if above else "<="
    if c.kind != "json":
        return f"{column} {operator} %s", [prefix]
    return (f"(jsonb_typeof({column}) = 'string' AND {column} {operator} %s::jsonb)", [*params, *params, json.dumps(prefix)])


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")  # a metadata key SQL may hold as written


def _compile_pg(c: Condition, alias: str) -> tuple[str, builtins.list[Any]]:
    op, kind = c.op, c.kind
    column = f"{alias}.{c.field}"
    params: builtins.list[Any] = []
    if kind == "json":
        column = f"({alias}.metadata_j #> %s::text[])"
        params = [builtins.list(c.path)]
    if kind in ("json", "text") and op in ("$in", "$nin"):
        c = replace(c, value=[v for v in c.value if _jsonb_holds(v)])
    elif kind in ("json", "text") and op != "$exists" and not _jsonb_holds(c.value):
        return _compile_unheld(c, column, params)
    if op == "$exists":
        if kind == "entities":
            return f"cardinality({column}) {'>' if c.value else '='} 0", []
        if kind == "json":
            test = f"({column} IS NOT NULL AND {column} <> 'null'::jsonb)"
            if c.value and len(c.path) == 1 and _PLAIN_KEY.fullmatch(c.path[0]):
                # the key's presence, written out: the planner takes a partial index only for a
                # query whose condition holds its own (`valid_at`'s memories declaring a validity)
                return f"({alias}.metadata_j ? '{c.path[0]}' AND {test})", params * 2
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

# -- statements ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Q:
    """One statement of a plan. `mode`: all, one, none, rowcount, many (executemany), copy."""

    sql: Any
    params: Any = None
    mode: str = "all"
    types: tuple[str, ...] | None = None  # for copy: binary column types
    binary: bool | None = None  # results in binary: bytea as it is rather than as hex text to decode


# A plan: yields statements, receives each one's result, returns its own.
PgPlan = Generator[Q, Any, T]


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
