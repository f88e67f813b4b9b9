"""`PostgresBackend`: the PostgreSQL store over a psycopg connection pool, driving `Plans`."""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import numpy as np

from .._backend import Backend, Bookkeeping, Candidate, PageCursor, SearchRequest
from .._errors import LockTimeoutError, StoreClosedError, missing_extra
from .._models import ImportReport, MemoryRecord, Message, SessionInfo
from .._plan import drive
from .._storage import Batch, Insert, ListRecords, SessionTouch, Update
from ._cache import scope_load_statement, scope_vectors
from ._driver import _import_psycopg, retryable, run_plan_sync, session_settings
from ._plans import Plans, Staged, stage_import
from ._sql import PgPlan, Q, _hash64
from ._store import PostgresStore, SearchDone, SearchFlow

P = ParamSpec("P")
T = TypeVar("T")


class PostgresBackend(PostgresStore, Backend):
    """PostgreSQL + pgvector over a psycopg connection pool (thread-safe)."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int | None = None, auto_migrate: bool = True) -> None:
        _import_psycopg()
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover
            raise missing_extra("psycopg_pool", "postgres") from None
        super().__init__(url, auto_migrate=auto_migrate)

        def configure(conn: Any) -> None:
            conn.adapters.register_dumper(np.ndarray, self._dumper)
            conn.execute(session_settings(self.plans))

        min_size, max_size = self._pool_sizes(min_size, max_size)
        self._pool = ConnectionPool(
            self.conninfo, min_size=min_size, max_size=max_size,
            kwargs={"autocommit": True}, configure=configure, open=True, name="polymem")
        self._closed = False
        self._fan: Any = None  # threads running the second statement of a search
        self._load: Any = None  # the thread copying a scope's vectors into `vector_cache`
        self._fan_lock = threading.Lock()
        self._bookkeeping = Bookkeeping(self._write_bonuses, "polymem-pg-bookkeeping")

    def _call(self, plan: Callable[P, PgPlan[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a plan in one transaction; a serialization failure or deadlock reruns it."""
        for attempt in range(8):
            if self._closed:
                raise StoreClosedError("the store is closed")
            with self._pool.connection() as conn:
                try:
                    if plan.__name__ in Plans.READS:
                        return run_plan_sync(conn, plan(*args, **kwargs))
                    with conn.transaction():
                        return run_plan_sync(conn, plan(*args, **kwargs))
                except Exception as exc:
                    if not retryable(exc) or attempt == 7:
                        raise
            time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def apply(self, batch: Batch) -> builtins.list[Any]:
        """The batch's operations in one transaction (rerun whole on a serialization failure)."""
        held = self._held(batch)
        results = self._call(self._batch, batch, held)
        if held is not None:
            self.vector_cache.catch_up(held)
        return results

    # records
    def insert(self, op: Insert) -> builtins.list[tuple[MemoryRecord, bool]]:
        held = self.vector_cache.writes_for(op.items)
        results = self._call(self.plans.insert, op.items, op.now, held)
        self.vector_cache.catch_up(held)
        return results

    def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.get, namespace, memory_ids)

    def get_by_keys(self, namespace: str, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.get_by_keys, namespace, keys)

    def list(self, op: ListRecords) -> builtins.list[MemoryRecord]:
        return self._call(self.plans.list, *op.args())

    def update(self, op: Update) -> MemoryRecord:
        return self._call(self.plans.update, *op.args())

    def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> bool:
        return self._call(self.plans.delete, namespace, memory_id, now)

    def purge(self, namespace: str, memory_id: str) -> bool:
        return self._call(self.plans.purge, namespace, memory_id)

    def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
              model_id: str | None, changed_only: bool = False) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
        return self._call(self.plans.as_of, namespace, at, user_id, memory_ids, model_id, changed_only)

    def written_since(self, namespace: str, at: datetime, user_id: str | None) -> builtins.list[str]:
        return self._call(self.plans.written_since, namespace, at, user_id)

    def history(self, namespace: str, memory_ids: Sequence[str],
                model_id: str | None) -> dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]:
        return self._call(self.plans.history, namespace, memory_ids, model_id)

    def search(self, request: SearchRequest) -> builtins.list[Candidate]:
        """`_search_flow` driven here: the statements of a batch each on its own pooled connection
        (the second from a helper thread); a scope to copy is loaded by another thread."""
        flow: SearchFlow = self._search_flow(request)
        done: SearchDone = drive(flow, self._side_by_side)
        candidates, load = done
        if load is not None:
            self._loader().submit(self._load_scope, load, request)
        return candidates

    def _side_by_side(self, statements: builtins.list[Q]) -> builtins.list[Any]:
        if len(statements) < 2:
            return [self._call(self.plans.run, q) for q in statements]
        other = self._fan_out().submit(self._call, self.plans.run, statements[1])
        try:
            first = self._call(self.plans.run, statements[0])
        finally:
            second = other.result()
        return [first, second]

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
        return self._call(self.plans.count_foreign_vectors, namespace, model_id)

    def blocked_sources(self, namespace: str) -> dict[str, dict[str, Any]]:
        return self._call(self.plans.blocked_sources, namespace)

    def block_source(self, namespace: str, source: str, reason: str | None, actor: str | None,
                     now: datetime, blocked: bool) -> bool:
        return self._call(self.plans.block_source, namespace, source, reason, actor, now, blocked)

    # bookkeeping
    def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None:
        if bonuses:
            self._bookkeeping.put((namespace, list(bonuses), now))

    def _write_bonuses(self, batch: Sequence[tuple[str, Sequence[tuple[str, float]], datetime]]) -> None:
        self._call(self.plans.reinforce_batch, batch)

    def flush(self) -> None:
        self._bookkeeping.flush()

    # bulk
    def active_users(self, namespace: str) -> builtins.list[str | None]:
        return self._call(self.plans.active_users, namespace)

    def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                    limit: int) -> tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]:
        return self._call(self.plans.active_page, namespace, user_id, model_id, after, limit)

    def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]:
        return self._call(self.plans.vectors, namespace, memory_ids, model_id)

    def pending_reembed(self, namespace: str | None, model_id: str, limit: int,
                        missing_only: bool = False, after: str | None = None) -> builtins.list[tuple[str, str]]:
        return self._call(self.plans.pending_reembed, namespace, model_id, limit, missing_only, after)

    def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None:
        self._call(self.plans.set_vectors, namespace, items, model_id)

    def export_page(self, namespace: str, user_id: str | None, after: int, limit: int) -> builtins.list[dict[str, Any]]:
        return self._call(self.plans.export_page, namespace, user_id, after, limit)

    def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]], model_id: str) -> None:
        return self._call(self.plans.keep_version_vectors, namespace, items, model_id)

    def export_tombstones(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return self._call(self.plans.export_tombstones, namespace, user_id)

    def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return self._call(self.plans.export_sessions, namespace, user_id)

    def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                    now: datetime) -> ImportReport:
        deferred = len(rows) >= self.plans.bulk_rows and self._call(self.plans.defer_indexes, rows)
        try:
            return self._call(self.plans.import_rows, namespace, rows, sessions, now)
        finally:
            if deferred:  # loaded without them (or failed): built now, concurrently
                self.index_builder.request()

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        return self._call(self.plans.import_sessions, namespace, sessions)

    def stats(self, namespace: str) -> dict[str, Any]:
        return {"url": self.url, **self._call(self.plans.stats, namespace)}

    def bulk_import(self, namespace: str, batches: Iterable[Sequence[dict[str, Any]]], now: datetime, *,
                    build_index: bool = True) -> ImportReport:
        """Load many batches (each its own transaction; rows as `import_rows` takes them) with
        the vector indexes of their models (HNSW, covering scan index) dropped, and into a store
        holding fewer rows than twice the first batch the secondary indexes too
        (`Plans.defer_secondary_indexes`); returns once the rows are committed, the indexes then
        built concurrently in the background (`build_vector_indexes` waits for them;
        `build_index=False` leaves them for it).

        A worker thread stages batch n+1 (rows to COPY tuples: tsvectors, versions, vector bytes)
        while batch n loads; the next batch is only pulled from `batches` once that is done, so
        the caller's own work never overlaps the load.

        Until the indexes are valid, recall is exact: per user through the heap, over every user
        by a scan. A crash leaves them missing or invalid; the next store to open builds them.
        """
        from concurrent.futures import ThreadPoolExecutor

        report = ImportReport()
        models: set[str] = set()
        first, deferred = True, False

        def load(batch: Sequence[dict[str, Any]], staged: Staged) -> None:
            nonlocal first, deferred
            if first:  # into a small store, the secondary indexes dropped (built afterwards, concurrently)
                first, deferred = False, self._call(self.plans.defer_secondary_indexes, len(batch))
                self._gather_text_index_writes(True)
            for model, dim in {(r["record"].embedding_model, len(r["vector"])) for r in batch
                               if r.get("vector") is not None}:
                if model is not None and model not in models:
                    models.add(model)
                    self._call(self.plans.defer_vector_indexes, model, dim)
            part = self._call(self.plans.import_rows, namespace, batch, [], now, True, staged)
            report.imported += part.imported
            report.duplicates += part.duplicates

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
            if build_index and (models or deferred):  # (after a failed batch too: what it dropped)
                self.index_builder.request()
        return report

    def _gather_text_index_writes(self, gather: bool) -> None:
        """While `bulk_import` loads, the full-text index gathers the new entries in its pending
        list and merges them in bulk (100k rows: 8,300/s entry by entry); afterwards it merges
        what is left and takes each write at once again (migration 8)."""
        with self._pool.connection() as conn:  # (dropped meanwhile by `defer_secondary_indexes`: nothing to do)
            conn.execute(f"ALTER INDEX IF EXISTS polymem_memories_tsv SET (fastupdate = {'on' if gather else 'off'})")
            if not gather:
                conn.execute("SELECT gin_clean_pending_list(x) FROM to_regclass('polymem_memories_tsv') x "
                             "WHERE x IS NOT NULL")

    # working memory
    def session_touch(self, op: SessionTouch) -> None:
        self._call(self.plans.session_touch, *op.args())

    def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        return self._call(self.plans.session_info, namespace, session_id)

    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        return self._call(self.plans.session_list, namespace, user_id)

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        self._call(self.plans.session_append, namespace, session_id, messages)

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> builtins.list[tuple[Message, int]]:
        return self._call(self.plans.session_messages, namespace, session_id, window_only)

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._call(self.plans.session_evict, namespace, session_id, message_ids)

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._call(self.plans.session_forget, namespace, session_id, message_ids)

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        self._call(self.plans.session_set_summary, namespace, session_id, summary)

    def session_delete(self, namespace: str, session_id: str) -> bool:
        return self._call(self.plans.session_delete, namespace, session_id)

    def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        return self._call(self.plans.sessions_expired, namespace, now)

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
        self.index_builder.close()
        for executor in (self._fan, self._load):
            if executor is not None:
                executor.shutdown(wait=True)
        self._pool.close()
