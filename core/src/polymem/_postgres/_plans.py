"""Every backend operation written once, as a plan (`Plans`): a generator that yields `Q`
statements and receives their results. The sync and the async store only drive them."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .._backend import Candidate, Changed, NewRecord, PageCursor, SearchRequest, selective_terms, versions_then
from .._errors import DimensionMismatchError, NotFoundError, VersionConflictError
from .._filters import dumps, to_micros
from .._models import ImportReport, MemoryRecord, Message, SessionInfo
from .._time import to_iso
from ._cache import (
    _STAMPS_OF,
    ScopeVectors,
    ScopeWrites,
    TermStatistics,
    VectorCache,
    _scope_arrays,
    cacheable,
    cached_statement,
)
from ._sql import (
    _INSERT_COLUMNS,
    _NCOLS,
    _RECORD_COLUMNS,
    RANK_WEIGHTS,
    SECONDARY_BUILD_LOCK,
    SECONDARY_INDEXES,
    PgPlan,
    Q,
    _hash64,
    _scope_sql,
    _utc,
    build_lock,
    index_name,
    namespace_lexeme,
    rank_tsquery_literal,
    record_values,
    row_to_record,
    scan_key_chars,
    scope_lexeme,
    tsquery_literal,
    tsvector_bytes,
    tsvector_literal,
    vector_bytes,
    vector_from_bytes,
    vector_index_statements,
)

# Saves wait for each other on the keys that would make them duplicates (idempotency key, or
# content in a scope), hashed into this many advisory locks. One lock per key ran a batch of
# 20,000 memories out of the server's lock table ("out of shared memory"); a shared lock only
# makes two unrelated saves wait for each other now and then.
SAVE_LOCKS = 256
_SAVE_LOCK_CLASS = 0x706D  # "pm": the two-key advisory locks, apart from the one-key ones

# A batch of saves this large may ANALYZE the table (`Plans._analyze_if_grown`).
ANALYZE_ROWS = 1000


class Plans:
    """Every backend operation as a plan; shared by the sync and async drivers."""

    # One-statement reads run without BEGIN/COMMIT (a statement is its own snapshot).
    READS = frozenset({"get", "list", "search", "run", "count_foreign_vectors", "blocked_sources", "session_info", "session_messages",
                       "sessions_expired", "pending_reembed", "vectors"})

    def __init__(self) -> None:
        self.known_models: set[str] = set()
        self.dimensions: dict[str, int] = {}  # each model's dimension, as its index registry row holds it
        self.ef_search = 200
        # An import this large builds the model's vector indexes once, after the load,
        # instead of inserting into the HNSW graph row by row (~50x faster).
        self.bulk_rows = 20_000
        self.term_statistics = TermStatistics()

    # records ------------------------------------------------------------------------------
    def _ensure_index(self, model_id: str | None, dimension: int, build: bool = True) -> PgPlan[None]:
        """One partial HNSW index per embedding model (and its covering scan index), created with its
        first vector and registered in `polymem_vector_indexes`; a vector of another dimension than
        the model's is refused (it would break every search of the model). `build=False` registers
        a new model only, its indexes left for the `IndexBuilder`."""
        if model_id is not None and self.dimensions.get(model_id, dimension) != dimension:
            raise DimensionMismatchError(f"vectors of model {model_id!r} have dimension "
                                         f"{self.dimensions[model_id]} in this store; got {dimension}")
        if model_id is None or model_id in self.known_models:
            return
        found = yield Q("SELECT dimension FROM polymem_vector_indexes WHERE model_id = %s", (model_id,), "one")
        if found is None:
            yield Q("SELECT pg_advisory_xact_lock(%s)", (_hash64("index:" + model_id),), "none")
            found = yield Q("SELECT dimension FROM polymem_vector_indexes WHERE model_id = %s", (model_id,), "one")
        if found is not None:
            self.dimensions[model_id] = int(found[0])
            if int(found[0]) != dimension:
                raise DimensionMismatchError(f"vectors of model {model_id!r} have dimension {found[0]} in this "
                                             f"store; got {dimension}")
            self.known_models.add(model_id)
            return
        if build:
            for _, statement in vector_index_statements(model_id, dimension):
                yield Q(statement, None, "none")
        yield Q("INSERT INTO polymem_vector_indexes (model_id, dimension, index_name) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING", (model_id, int(dimension), index_name(model_id)), "none")

    def insert(self, items: Sequence[NewRecord], now: datetime, held: ScopeWrites | None = None) -> PgPlan[builtins.list[tuple[MemoryRecord, bool]]]:
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
        touched: builtins.list[tuple[str, str]] = []
        for item in items:
            rec = item.record
            if item.idempotency_key is not None:
                existing = by_key.get((rec.namespace, item.idempotency_key))
            else:
                existing = by_hash.get((rec.namespace, rec.user_id, rec.agent_id, item.content_hash))
            if existing is not None:
                touched.append((existing.namespace, existing.memory_id))
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
            yield Q(_WRITE_VERSION, [(i.record.namespace, i.record.memory_id, i.record.version,
                                      dumps(i.record.to_dict())) for i in new], "many")
            if len(new) >= ANALYZE_ROWS:
                yield from self._analyze_if_grown(len(new))
        if held is not None and held.before:
            held.after = {(r[0], r[1]): r[2] for r in (yield Q(_STAMPS_OF, _scope_arrays(held.before)))}
            mine = {(i.record.namespace, i.record.memory_id): i for i in new
                    if (i.record.namespace, i.record.user_id) in held.before
                    and i.record.status == "active" and i.vector is not None and i.record.embedding_model is not None}
            if mine:
                for namespace, memory_id, row_id in (yield Q(
                        "SELECT namespace, memory_id, id FROM polymem_memories WHERE (namespace, memory_id) IN "
                        "(SELECT * FROM unnest(%s::text[], %s::text[]))",
                        ([n for n, _ in mine], [m for _, m in mine]))):
                    rec = mine[(namespace, memory_id)].record
                    held.rows.append((rec.namespace, rec.user_id or "", rec.embedding_model or "", int(row_id),
                                      np.asarray(mine[(namespace, memory_id)].vector, dtype=np.float32),
                                      np.inf if rec.expire_at is None else rec.expire_at.timestamp()))
        if touched:
            pairs = sorted(set(touched))
            yield Q("UPDATE polymem_memories SET last_accessed_at = %s WHERE (namespace, memory_id) IN "
                    "(SELECT * FROM unnest(%s::text[], %s::text[]))",
                    (now, [n for n, _ in pairs], [m for _, m in pairs]), "none")
        return results

    def _analyze_if_grown(self, added: int) -> PgPlan[None]:
        """ANALYZE once a batch has grown the table by a tenth: the planner otherwise keeps the
        statistics of the table as it was (empty, after a first import) until autovacuum's next
        round, and filters every row of a scope instead of using the full-text index (measured:
        a recall right after importing 10k memories 26 ms, 8 ms after)."""
        row = yield Q("SELECT reltuples FROM pg_class WHERE oid = 'polymem_memories'::regclass", None, "one")
        if row[0] < 0 or added >= row[0] / 10:  # -1: never analyzed
            # SKIP_LOCKED: never wait behind an index build (CREATE INDEX CONCURRENTLY holds the lock ANALYZE takes)
            yield Q("ANALYZE (SKIP_LOCKED) polymem_memories", None, "none")
            self.term_statistics.read_at = -np.inf  # read the new ones at the next search

    @staticmethod
    def _write_version(record: MemoryRecord) -> PgPlan[None]:
        yield Q(_WRITE_VERSION, (record.namespace, record.memory_id, record.version, dumps(record.to_dict())), "none")

    def get(self, namespace: str, memory_ids: Sequence[str]) -> PgPlan[builtins.list[MemoryRecord]]:
        if not memory_ids:
            return []
        rows = yield Q(f"SELECT {_RECORD_COLUMNS} FROM polymem_memories m WHERE m.namespace = %s "
                       "AND m.memory_id = ANY(%s)", (namespace, list(memory_ids)))
        found = {r[0]: row_to_record(r) for r in rows}
        return [found[i] for i in memory_ids if i in found]

    def get_by_keys(self, namespace: str, keys: Sequence[str]) -> PgPlan[builtins.list[MemoryRecord]]:
        """The records saved under these idempotency keys, whatever their status, in the keys' order."""
        if not keys:
            return []
        rows = yield Q(f"SELECT {_RECORD_COLUMNS}, m.idempotency_key FROM polymem_memories m "
                       "WHERE m.namespace = %s AND m.idempotency_key = ANY(%s)", (namespace, list(keys)))
        found = {r[-1]: row_to_record(r[:-1]) for r in rows}
        return [found[k] for k in keys if k in found]

    def list(self, namespace: str, user_id: str | None, agent_id: str | None, category: str | None,
             filter: dict[str, Any] | None, status: str | None, limit: int, offset: int) -> PgPlan[builtins.list[MemoryRecord]]:
        where, params = _scope_sql(namespace, user_id, agent_id, category, filter)
        if status is not None:
            where += " AND m.status = %s"
            params.append(status)
        rows = yield Q(f"SELECT {_RECORD_COLUMNS} FROM polymem_memories m WHERE {where} "
                       "ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s", (*params, limit, offset))
        return [row_to_record(r) for r in rows]

    def update(self, namespace: str, memory_id: str, changes: dict[str, Any], expected_version: int | None,
               now: datetime, vector: np.ndarray | None, model_id: str | None,
               content_hash: str | None, terms: Sequence[str] | None,
               screened: str | None = None) -> PgPlan[MemoryRecord]:
        """(`screened`, whose rules screened a new content, is not kept here: the read guard classifies
        every text it reads from PostgreSQL.)"""
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
        yield Q(_KEEP_VECTOR, (namespace, memory_id), "none")
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

    def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> PgPlan[bool]:
        yield Q(_KEEP_VECTOR, (namespace, memory_id), "none")
        row = yield Q("DELETE FROM polymem_memories WHERE namespace = %s AND memory_id = %s RETURNING user_id",
                      (namespace, memory_id), "one")
        if row is None:
            return False
        yield Q("INSERT INTO polymem_memory_tombstones (memory_id, namespace, user_id, deleted_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (namespace, memory_id) DO UPDATE SET deleted_at = EXCLUDED.deleted_at",
                (memory_id, namespace, row[0], now or datetime.now(timezone.utc)), "none")
        return True

    def purge(self, namespace: str, memory_id: str) -> PgPlan[bool]:
        live = yield Q("DELETE FROM polymem_memories WHERE namespace = %s AND memory_id = %s",
                       (namespace, memory_id), "rowcount")
        dead = yield Q("DELETE FROM polymem_memory_tombstones WHERE namespace = %s AND memory_id = %s",
                       (namespace, memory_id), "rowcount")
        if not (live or dead):
            return False
        yield Q("DELETE FROM polymem_memory_versions WHERE namespace = %s AND memory_id = %s", (namespace, memory_id),
                "none")
        return True

    def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
              model_id: str | None, changed_only: bool = False,
              ) -> PgPlan[builtins.list[tuple[MemoryRecord, np.ndarray | None]]]:
        scope = "namespace = %s"
        params: builtins.list[Any] = [namespace]
        if user_id is not None:
            scope += " AND user_id = %s"
            params.append(user_id)
        if memory_ids is not None:
            scope += " AND memory_id = ANY(%s)"
            params.append(builtins.list(memory_ids))
        out: builtins.list[tuple[MemoryRecord, np.ndarray | None]] = []
        changed: Changed = {}
        since = " AND updated_at > %s" if changed_only else ""
        for row in (yield Q(f"SELECT {_RECORD_COLUMNS}, vector_send(m.vector) FROM polymem_memories m "
                            f"WHERE {scope} AND created_at <= %s{since} ORDER BY created_at, id",
                            (*params, at, *([at] if changed_only else [])))):
            record = row_to_record(row)
            if record.updated_at > at:  # a later version; the one of `at` is among the kept ones
                changed[record.memory_id] = (record.content, row[19], record.embedding_model)
                continue
            vector = row[19] if row[19] is not None and record.embedding_model == model_id else None
            out.append((record, None if vector is None else vector_from_bytes(vector)))
        deleted = [r[0] for r in (yield Q(f"SELECT memory_id FROM polymem_memory_tombstones WHERE {scope} "
                                          "AND deleted_at > %s", (*params, at)))]
        wanted = [*changed, *deleted]
        versions: dict[str, builtins.list[dict[str, Any]]] = {}
        past_vectors: dict[tuple[str, int], tuple[bytes, str | None]] = {}
        if wanted:
            for memory_id, version, record_json, vector, vector_model in (yield Q(
                    "SELECT memory_id, version, record, vector_send(vector), vector_model FROM polymem_memory_versions "
                    "WHERE namespace = %s AND memory_id = ANY(%s)", (namespace, wanted))):
                versions.setdefault(memory_id, []).append(json.loads(record_json))
                if vector is not None:
                    past_vectors[(memory_id, version)] = (vector, vector_model)
        return out + versions_then(wanted, versions, changed, at, model_id, vector_from_bytes, past_vectors)

    def written_since(self, namespace: str, at: datetime, user_id: str | None) -> PgPlan[builtins.list[str]]:
        user, params = ("", []) if user_id is None else (" AND user_id = %s", [user_id])
        rows = yield Q(f"SELECT memory_id FROM polymem_memories WHERE namespace = %s AND updated_at > %s{user}",
                       (namespace, at, *params))
        return [r[0] for r in rows]

    def history(self, namespace: str, memory_ids: Sequence[str], model_id: str | None,
                ) -> PgPlan[dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]]:
        out: dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]] = {}
        # the present version's vector is the memory's own (its kept row may have none yet)
        for memory_id, record_json, vector in (yield Q(
                "SELECT v.memory_id, v.record, CASE WHEN m.version = v.version AND m.embedding_model = %s "
                "THEN vector_send(m.vector) WHEN v.vector_model = %s THEN vector_send(v.vector) END "
                "FROM polymem_memory_versions v LEFT JOIN polymem_memories m "
                "ON m.namespace = v.namespace AND m.memory_id = v.memory_id "
                "WHERE v.namespace = %s AND v.memory_id = ANY(%s) AND (m.memory_id IS NOT NULL OR EXISTS ("
                "SELECT 1 FROM polymem_memory_tombstones t WHERE t.namespace = v.namespace "
                "AND t.memory_id = v.memory_id)) ORDER BY v.memory_id, v.version",
                (model_id, model_id, namespace, builtins.list(memory_ids)))):
            out.setdefault(memory_id, []).append((MemoryRecord.from_dict(json.loads(record_json)),
                                                  None if vector is None or model_id is None
                                                  else vector_from_bytes(vector)))
        return out

    # search -------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> PgPlan[builtins.list[Candidate]]:
        """The search as one plan: its statements one after the other (the backends run them
        side by side on two connections instead: `search_statements`, `merge_search`)."""
        statements = self.search_statements(request)
        results = []
        for q in statements:
            results.append((yield q))
        return self.merge_search(results)

    @staticmethod
    def run(q: Q) -> PgPlan[Any]:
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
                          memory_id=r[1], importance=float(r[2]), category=r[3], created_us=to_micros(r[4]),
                          accessed_us=None if r[5] is None else to_micros(r[5]), access_count=int(r[6]))
                for _, r in sorted(merged.items())]

    def count_foreign_vectors(self, namespace: str, model_id: str | None) -> PgPlan[int]:
        row = yield Q(
            "SELECT (SELECT count(*) FROM polymem_memories WHERE namespace = %s AND status = 'active' "
            "AND (embedding_model < %s OR embedding_model > %s OR embedding_model IS NULL)) + "
            "(SELECT count(*) FROM polymem_memories WHERE namespace = %s AND status = 'active' AND vector IS NULL "
            "AND embedding_model = %s)", (namespace, model_id, model_id, namespace, model_id), "one")
        return int(row[0])

    @staticmethod
    def blocked_sources(namespace: str) -> PgPlan[dict[str, dict[str, Any]]]:
        rows = yield Q("SELECT source, reason, blocked_at, blocked_by FROM polymem_blocked_sources "
                       "WHERE namespace = %s ORDER BY source", (namespace,))
        return {r[0]: {"source": r[0], "reason": r[1], "blocked_at": to_iso(_utc(r[2])), "blocked_by": r[3]}
                for r in rows}

    @staticmethod
    def block_source(namespace: str, source: str, reason: str | None, actor: str | None, now: datetime,
                     blocked: bool) -> PgPlan[bool]:
        if blocked:
            row = yield Q("INSERT INTO polymem_blocked_sources VALUES (%s, %s, %s, %s, %s) "
                          "ON CONFLICT (namespace, source) DO NOTHING RETURNING 1",
                          (namespace, source, reason, now, actor), "one")
        else:
            row = yield Q("DELETE FROM polymem_blocked_sources WHERE namespace = %s AND source = %s RETURNING 1",
                          (namespace, source), "one")
        return row is not None

    # bookkeeping --------------------------------------------------------------------------
    @staticmethod
    def reinforce_batch(batch: Sequence[tuple[str, Sequence[tuple[str, float]], datetime]]) -> PgPlan[None]:
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
    def active_users(self, namespace: str) -> PgPlan[builtins.list[str | None]]:
        rows = yield Q("SELECT DISTINCT user_id FROM polymem_memories WHERE namespace = %s AND status = 'active' "
                       "ORDER BY user_id", (namespace,))
        return [r[0] for r in rows]

    def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                    limit: int) -> PgPlan[tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]]:
        owner = "m.user_id IS NULL" if user_id is None else "m.user_id = %s"
        keyset = " AND (m.created_at, m.id) > (%s, %s)" if after is not None else ""
        rows = yield Q(f"SELECT {_RECORD_COLUMNS}, vector_send(m.vector), m.created_at, m.id FROM polymem_memories m "
                       f"WHERE m.namespace = %s AND {owner} AND m.status = 'active'{keyset} "
                       "ORDER BY m.created_at, m.id LIMIT %s",
                       (namespace, *(() if user_id is None else (user_id,)), *(after or ()), limit))
        out = []
        for row in rows:
            record = row_to_record(row)
            vector = vector_from_bytes(row[19]) if record.embedding_model == model_id else None
            out.append((record, vector))
        return out, ((rows[-1][-2], rows[-1][-1]) if rows else None)

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> PgPlan[dict[str, np.ndarray]]:
        if not memory_ids:
            return {}
        rows = yield Q("SELECT memory_id, vector_send(vector) FROM polymem_memories WHERE namespace = %s "
                       "AND memory_id = ANY(%s) AND embedding_model = %s AND vector IS NOT NULL",
                       (namespace, list(memory_ids), model_id))
        return {r[0]: vector_from_bytes(r[1]) for r in rows}

    def pending_reembed(self, namespace: str | None, model_id: str, limit: int, missing_only: bool = False,
                        after: str | None = None) -> PgPlan[builtins.list[tuple[str, str]]]:
        clause = "" if namespace is None else "namespace = %s AND "
        args: tuple[Any, ...] = () if namespace is None else (namespace,)
        wanted = "status = 'active' AND vector IS NULL" if missing_only else \
            "(embedding_model IS DISTINCT FROM %s OR vector IS NULL)"
        models: tuple[Any, ...] = () if missing_only else (model_id,)
        # by (namespace, memory_id), from `after`: each batch of a re-embedding starts where the
        # last one ended, not at the first memory again (the rows done since no longer match)
        rows = yield Q(f"SELECT memory_id, content FROM polymem_memories WHERE {clause}memory_id > %s AND {wanted} "
                       "ORDER BY memory_id LIMIT %s", (*args, after or "", *models, limit))
        return [(r[0], r[1]) for r in rows]

    def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> PgPlan[None]:
        if not items:
            return None
        yield from self._ensure_index(model_id, len(items[0][1]))
        yield Q("UPDATE polymem_memories SET vector = %s::vector, embedding_model = %s "
                "WHERE namespace = %s AND memory_id = %s",
                [(np.asarray(v, dtype=np.float32), model_id, namespace, mid)
                 for mid, v in sorted(items, key=lambda x: x[0])], "many")
        return None

    def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]],
                             model_id: str) -> PgPlan[None]:
        yield Q("UPDATE polymem_memory_versions SET vector = %s::vector, vector_model = %s WHERE namespace = %s "
                "AND memory_id = %s AND version = %s AND vector IS NULL",
                [(np.asarray(v, dtype=np.float32), model_id, namespace, mid, version)
                 for mid, version, v in sorted(items, key=lambda x: (x[0], x[1]))], "many")

    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> PgPlan[builtins.list[dict[str, Any]]]:
        clause = " AND m.user_id = %s" if user_id is not None else ""
        args: tuple[Any, ...] = (namespace, after) + ((user_id,) if user_id is not None else ())
        rows = yield Q(f"SELECT {_RECORD_COLUMNS}, m.id, vector_send(m.vector), m.idempotency_key "
                       f"FROM polymem_memories m WHERE m.namespace = %s AND m.id > %s{clause} ORDER BY m.id LIMIT %s",
                       (*args, limit))
        if not rows:
            return []
        versions: dict[str, builtins.list[Any]] = {}
        for memory_id, record in (yield Q(
                "SELECT memory_id, record FROM polymem_memory_versions WHERE namespace = %s AND memory_id = ANY(%s) "
                "ORDER BY memory_id, version", (namespace, [r[0] for r in rows]))):
            versions.setdefault(memory_id, []).append(json.loads(record))
        out = []
        for row in rows:
            vector = vector_from_bytes(row[20])
            out.append({"cursor": row[19], "record": row_to_record(row).to_dict(), "versions": versions.get(row[0], []),
                        "vector": None if vector is None else vector.tolist(), "idempotency_key": row[21]})
        return out

    def export_sessions(self, namespace: str, user_id: str | None) -> PgPlan[builtins.list[dict[str, Any]]]:
        infos = yield from self.session_list(namespace, user_id)
        out = []
        for info in infos:
            rows = yield Q("SELECT message, tokens, in_window FROM polymem_session_messages WHERE namespace = %s "
                           "AND session_id = %s ORDER BY id", (namespace, info.session_id))
            out.append(session_dict(info, [{"message": json.loads(r[0]), "tokens": r[1], "in_window": bool(r[2])}
                                           for r in rows]))
        return out

    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime, with_sessions: bool = True, staged: Staged | None = None) -> PgPlan[ImportReport]:
        """Bulk import: binary COPY into a staging table, then one INSERT that skips ids
        (or idempotency keys) already present. `staged`: `stage_import(namespace, rows)`,
        when the caller made it beforehand (`bulk_import` does, while the previous batch loads)."""
        report = ImportReport()
        for item in (r for r in rows if r.get("deleted_at") is not None):
            report.duplicates += not (yield from self._import_tombstone(namespace, item))
        rows = [r for r in rows if r.get("deleted_at") is None]
        if rows:
            for model, dim in {(r["record"].embedding_model, len(r["vector"])) for r in rows
                               if r.get("vector") is not None}:
                yield from self._ensure_index(model, dim)
            stage, versions = staged if staged is not None else stage_import(namespace, rows)
            yield Q(_IMPORT_MEMORY, None, "none")
            report.imported = yield from self._load(namespace, stage, versions)
            report.duplicates += len(rows) - report.imported
        if with_sessions:
            report.sessions = yield from self.import_sessions(namespace, sessions)
        return report

    def _load(self, namespace: str, stage: Sequence[tuple[Any, ...]], versions: Sequence[tuple[Any, ...]]) -> PgPlan[int]:
        """Staged rows into the table; returns how many went in. Binary COPY straight into the
        table and the versions'. At the first row breaking a unique constraint (an id or idempotency
        key the namespace holds: a re-import, a writer beside it; versions of a deleted memory) the
        COPYs are undone and the rows go through a staging table and INSERT ... ON CONFLICT
        instead (`_load_staged`), which leaves those out."""
        yield Q("SAVEPOINT polymem_load", None, "none")
        try:
            yield Q(f"COPY polymem_memories ({_INSERT_COLUMNS}) FROM STDIN (FORMAT BINARY)", stage, "copy",
                    _COPY_TYPES)
            yield Q("COPY polymem_memory_versions (namespace, memory_id, version, record) FROM STDIN (FORMAT BINARY)",
                    versions, "copy", _VERSION_TYPES)
        except Exception as exc:
            if getattr(exc, "sqlstate", None) != "23505":  # unique_violation
                raise
            yield Q("ROLLBACK TO SAVEPOINT polymem_load", None, "none")
            return (yield from self._load_staged(namespace, stage, versions))
        yield Q("RELEASE SAVEPOINT polymem_load", None, "none")
        return len(stage)

    @staticmethod
    def _load_staged(namespace: str, stage: Sequence[tuple[Any, ...]], versions: Sequence[tuple[Any, ...]]) -> PgPlan[int]:
        """`_load`'s way round a conflict: the rows COPYed into a staging table, then one INSERT
        skipping ids (or idempotency keys) already present, in the rows' order."""
        yield Q(_STAGE_DDL, None, "none")
        yield Q("TRUNCATE polymem_stage, polymem_stage_versions", None, "none")
        yield Q(f"COPY polymem_stage (n, {_INSERT_COLUMNS}) FROM STDIN (FORMAT BINARY)",
                [(n, *row) for n, row in enumerate(stage)], "copy", ("int4", *_COPY_TYPES))
        yield Q("COPY polymem_stage_versions (namespace, memory_id, version, record) FROM STDIN (FORMAT BINARY)",
                versions, "copy", _VERSION_TYPES)
        columns = ", ".join(f"s.{c.strip()}" for c in _INSERT_COLUMNS.split(","))
        row = yield Q(
            f"WITH ins AS (INSERT INTO polymem_memories ({_INSERT_COLUMNS}) SELECT {columns} "
            "FROM polymem_stage s ORDER BY s.n ON CONFLICT DO NOTHING RETURNING memory_id), "
            "ver AS (INSERT INTO polymem_memory_versions (namespace, memory_id, version, record) "
            "SELECT %s, v.memory_id, v.version, v.record FROM polymem_stage_versions v JOIN ins USING (memory_id) "
            "ON CONFLICT (namespace, memory_id, version) DO UPDATE SET record = EXCLUDED.record) "
            "SELECT count(*) FROM ins", (namespace,), "one")
        return int(row[0])

    def _import_tombstone(self, namespace: str, item: dict[str, Any]) -> PgPlan[bool]:
        """A deleted memory's versions and tombstone; False if the namespace knows its id already."""
        record: MemoryRecord = item["record"]
        added = yield Q("INSERT INTO polymem_memory_tombstones (memory_id, namespace, user_id, deleted_at) "
                        "SELECT %s, %s, %s, %s WHERE NOT EXISTS (SELECT 1 FROM polymem_memories WHERE namespace = %s "
                        "AND memory_id = %s) ON CONFLICT (namespace, memory_id) DO NOTHING",
                        (record.memory_id, namespace, record.user_id, item["deleted_at"], namespace, record.memory_id),
                        "rowcount")
        if added:
            yield Q(_WRITE_VERSION, [(namespace, record.memory_id, v["version"], dumps(v)) for v in item["versions"]],
                    "many")
        return bool(added)

    def export_tombstones(self, namespace: str, user_id: str | None) -> PgPlan[builtins.list[dict[str, Any]]]:
        user, params = ("", []) if user_id is None else (" AND t.user_id = %s", [user_id])
        rows = yield Q("SELECT t.memory_id, t.user_id, t.deleted_at, array_agg(v.record ORDER BY v.version) "
                       "FROM polymem_memory_tombstones t JOIN polymem_memory_versions v "
                       "ON v.namespace = t.namespace AND v.memory_id = t.memory_id "
                       f"WHERE t.namespace = %s{user} GROUP BY t.memory_id, t.user_id, t.deleted_at "
                       "ORDER BY t.deleted_at, t.memory_id", (namespace, *params))
        return [{"memory_id": memory_id, "user_id": owner, "deleted_at": to_iso(deleted_at.astimezone(timezone.utc)),
                 "versions": [json.loads(v) for v in versions]} for memory_id, owner, deleted_at, versions in rows]

    def defer_indexes(self, rows: Sequence[dict[str, Any]]) -> PgPlan[bool]:
        """Before `import_rows` loads `rows` (as many as `bulk_rows` or more) into a store holding
        fewer than twice as many, in a transaction of its own (dropping an index locks the table,
        readers included, until the transaction ends): the secondary indexes and the rows' models'
        vector indexes dropped, to be built afterwards, concurrently (`IndexBuilder`). Into a larger
        store every index is kept (building them again would cost more than the load saves): False."""
        (stored,) = yield Q("SELECT count(*) FROM (SELECT FROM polymem_memories LIMIT %s) s", (2 * len(rows),), "one")
        if stored >= 2 * len(rows):
            return False
        yield from self.defer_secondary_indexes(len(rows))
        for model, dim in {(r["record"].embedding_model, len(r["vector"])) for r in rows if r.get("vector") is not None}:
            yield from self.defer_vector_indexes(model, dim)
        return True

    def defer_secondary_indexes(self, rows: int) -> PgPlan[bool]:
        """Before loading `rows` rows into a store holding fewer than twice as many: the secondary
        indexes (`SECONDARY_INDEXES`) dropped, to be built once afterwards and concurrently
        (`IndexBuilder`; about 40% of the server's work per row loaded, measured). No query needs
        them to be right; the constraints', the scope's and the content hash's stay. Into a larger
        store (building them again would cost more than the load saves), or while another process
        builds them, they are kept: False."""
        from psycopg import sql

        (stored,) = yield Q("SELECT count(*) FROM (SELECT FROM polymem_memories LIMIT %s) s", (2 * rows,), "one")
        if stored >= 2 * rows:
            return False
        (free,) = yield Q("SELECT pg_try_advisory_xact_lock(%s)", (SECONDARY_BUILD_LOCK,), "one")
        if not free:
            return False
        yield Q(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.SQL(", ").join(
            sql.Identifier(name) for name, _ in SECONDARY_INDEXES)), None, "none")
        return True

    def defer_vector_indexes(self, model_id: str | None, dimension: int) -> PgPlan[None]:
        """Before a large load: the model registered, its vector indexes dropped (in the load's
        transaction), to be built once afterwards and concurrently (`IndexBuilder`): ~50x faster
        than the HNSW graph taking rows one by one. Meanwhile recall stays exact (per user through
        the heap, over every user by a scan). Indexes another process is building are kept: that
        build takes the loaded rows in (CREATE INDEX CONCURRENTLY's last pass)."""
        from psycopg import sql

        if model_id is None:
            return
        yield from self._ensure_index(model_id, dimension, build=False)
        (free,) = yield Q("SELECT pg_try_advisory_xact_lock(%s)", (build_lock(model_id),), "one")
        if free:
            yield Q(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.SQL(", ").join(
                sql.Identifier(name) for name, _ in vector_index_statements(model_id, dimension))), None, "none")

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]]) -> PgPlan[int]:
        from .._time import from_iso

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

    def stats(self, namespace: str, with_sessions: bool = True) -> PgPlan[dict[str, Any]]:
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
                      now: datetime, expire_at: datetime | None) -> PgPlan[None]:
        yield Q("INSERT INTO polymem_sessions (namespace, session_id, user_id, agent_id, created_at, updated_at, "
                "expire_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, session_id) DO UPDATE SET "
                "updated_at = EXCLUDED.updated_at, expire_at = EXCLUDED.expire_at",
                (namespace, session_id, user_id, agent_id, now, now, expire_at), "none")

    def _session_infos(self, namespace: str, where: str, params: Sequence[Any]) -> PgPlan[builtins.list[SessionInfo]]:
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

    def session_info(self, namespace: str, session_id: str) -> PgPlan[SessionInfo | None]:
        found = yield from self._session_infos(namespace, "AND s.session_id = %s", (session_id,))
        return found[0] if found else None

    def session_list(self, namespace: str, user_id: str | None) -> PgPlan[builtins.list[SessionInfo]]:
        if user_id is None:
            return (yield from self._session_infos(namespace, "", ()))
        return (yield from self._session_infos(namespace, "AND s.user_id = %s", (user_id,)))

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> PgPlan[None]:
        if messages:
            yield Q("INSERT INTO polymem_session_messages (namespace, session_id, message_id, message, tokens) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    [(namespace, session_id, m.message_id, dumps(m.to_dict()), tokens) for m, tokens in messages],
                    "many")

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> PgPlan[builtins.list[tuple[Message, int]]]:
        clause = " AND in_window" if window_only else ""
        rows = yield Q(f"SELECT message, tokens FROM polymem_session_messages WHERE namespace = %s "
                       f"AND session_id = %s{clause} ORDER BY id", (namespace, session_id))
        return [(Message.from_dict(json.loads(r[0])), int(r[1])) for r in rows]

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> PgPlan[int]:
        if not message_ids:
            return 0
        count: int = yield Q("UPDATE polymem_session_messages SET in_window = false WHERE namespace = %s "
                             "AND session_id = %s AND in_window AND message_id = ANY(%s)",
                             (namespace, session_id, list(message_ids)), "rowcount")
        return count

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> PgPlan[int]:
        if not message_ids:
            return 0
        count: int = yield Q("DELETE FROM polymem_session_messages WHERE namespace = %s AND session_id = %s "
                             "AND message_id = ANY(%s)", (namespace, session_id, list(message_ids)), "rowcount")
        return count

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> PgPlan[None]:
        yield Q("UPDATE polymem_sessions SET summary = %s WHERE namespace = %s AND session_id = %s",
                (summary, namespace, session_id), "none")

    def session_delete(self, namespace: str, session_id: str) -> PgPlan[bool]:
        yield Q("DELETE FROM polymem_session_messages WHERE namespace = %s AND session_id = %s",
                (namespace, session_id), "none")
        count: int = yield Q("DELETE FROM polymem_sessions WHERE namespace = %s AND session_id = %s",
                             (namespace, session_id), "rowcount")
        return count > 0

    def sessions_expired(self, namespace: str, now: datetime) -> PgPlan[builtins.list[str]]:
        rows = yield Q("SELECT session_id FROM polymem_sessions WHERE namespace = %s AND expire_at IS NOT NULL "
                       "AND expire_at <= %s", (namespace, now))
        return [r[0] for r in rows]


# The version a memory's row holds keeps the row's vector (and its model) before the row is
# replaced or deleted: a recall `as_of` then ranks that version by it, without embedding it again.
_KEEP_VECTOR = ("UPDATE polymem_memory_versions v SET vector = m.vector, vector_model = m.embedding_model "
                "FROM polymem_memories m WHERE m.namespace = %s AND m.memory_id = %s AND v.namespace = m.namespace "
                "AND v.memory_id = m.memory_id AND v.version = m.version")
_WRITE_VERSION = ("INSERT INTO polymem_memory_versions (namespace, memory_id, version, record) VALUES (%s, %s, %s, %s) "
                  "ON CONFLICT (namespace, memory_id, version) DO UPDATE SET record = EXCLUDED.record")

Staged = tuple[builtins.list[tuple[Any, ...]], builtins.list[tuple[Any, ...]]]


def stage_import(namespace: str, rows: Sequence[dict[str, Any]]) -> Staged:
    """Import rows as the COPYs take them: (memories, versions).

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
        stage.append((*record_values(record), item["content_hash"], None if vector is None else vector_bytes(vector),
                      key, tsvector_bytes(namespace, record.user_id, item["terms"])))
        versions.extend((namespace, record.memory_id, v["version"], dumps(v)) for v in item["versions"])
    return stage, versions


# An import batch's sorts and its rows captured for the scope stamps' trigger stay in memory (with
# the default 4 MB, a batch of 10,000 384-d rows went to disk three times).
_IMPORT_MEMORY = "SET LOCAL work_mem = '128MB'"
_STAGE_DDL = """
CREATE TEMP TABLE IF NOT EXISTS polymem_stage (
    n INTEGER, memory_id TEXT, namespace TEXT, user_id TEXT, agent_id TEXT, session_id TEXT, content TEXT,
    category TEXT, source TEXT, importance DOUBLE PRECISION, entities TEXT[], metadata TEXT,
    created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, last_accessed_at TIMESTAMPTZ, access_count INTEGER,
    expire_at TIMESTAMPTZ, embedding_model TEXT, version INTEGER, status TEXT, content_hash TEXT, vector vector,
    idempotency_key TEXT, tsv tsvector) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS polymem_stage_versions (namespace TEXT, memory_id TEXT, version INTEGER, record TEXT)
    ON COMMIT DELETE ROWS;
"""
# The binary COPY's types, column by column (`_INSERT_COLUMNS`); "bytea": bytes sent as they are,
# in the column's own binary form (pgvector's, `vector_bytes`; tsvector's, `tsvector_bytes`).
_COPY_TYPES = ("text", "text", "text", "text", "text", "text", "text", "text", "float8", "text[]", "text",
               "timestamptz", "timestamptz", "timestamptz", "int4", "timestamptz", "text", "int4", "text",
               "text", "bytea", "text", "bytea")
_VERSION_TYPES = ("text", "text", "int4", "text")


def session_dict(info: SessionInfo, messages: builtins.list[dict[str, Any]]) -> dict[str, Any]:
    """A session as the snapshot writes it."""
    return {
        "session_id": info.session_id, "user_id": info.user_id, "agent_id": info.agent_id, "summary": info.summary,
        "created_at": info.created_at.isoformat(), "updated_at": info.updated_at.isoformat(),
        "expire_at": None if info.expire_at is None else info.expire_at.isoformat(), "messages": messages,
    }


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
