"""What a process keeps between statements: copies of busy users' vectors (`VectorCache`,
checked against the scope's stamp in the very statement that uses them) and the full text's
term statistics (`TermStatistics`)."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import numpy as np

from .._backend import COMMON_TERM_DOCS, NewRecord, SearchRequest
from .._scan import bounds, quantize, shortlist
from ._sql import Q, scan_key_chars

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


def cached_rows(rows: Sequence[Sequence[Any]], entry: ScopeVectors) -> builtins.list[Sequence[Any]] | None:
    """`cached_statement`'s candidates as the SQL path gives them, or None when the copy is stale."""
    if not rows or rows[0][0] != entry.stamp:
        return None
    return [r[1:] for r in rows if r[1] is not None]
