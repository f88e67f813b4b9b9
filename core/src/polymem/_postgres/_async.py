"""`AsyncPostgresBackend`: the PostgreSQL store on psycopg's native async pool.

It drives the same plans as `PostgresBackend` (`Plans`) and shares everything but the
connection with it (`PostgresStore`), so both behave alike by construction; `AsyncMemory`
awaits its coroutine methods on the event loop, no worker thread involved. The pool opens
on first use, in the loop that uses it.

    >>> amem = AsyncMemory(AsyncPostgresBackend(url), engine)   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import numpy as np

from .._backend import REINFORCE_WINDOW_S, AsyncBackend, Candidate, PageCursor, SearchRequest, log
from .._errors import LockTimeoutError, StoreClosedError, missing_extra
from .._models import ImportReport, MemoryRecord, Message, SessionInfo
from .._plan import adrive
from .._storage import Batch, Insert, ListRecords, SessionTouch, Update
from ._cache import scope_load_statement, scope_vectors
from ._driver import _import_psycopg, retryable, run_plan_async, run_plan_sync, session_settings
from ._plans import Plans
from ._sql import PgPlan, Q, _hash64
from ._store import PostgresStore, SearchDone, SearchFlow

P = ParamSpec("P")
T = TypeVar("T")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class AsyncPostgresBackend(PostgresStore, AsyncBackend):
    """PostgreSQL + pgvector with coroutine methods over `psycopg_pool.AsyncConnectionPool`.

    `stats`, `flush`, `session_list`, `session_delete` and `close` are also callable
    from a worker thread (today's `AsyncMemory` calls them through `asyncio.to_thread`):
    they hand the work to the pool's loop.
    """

    def __init__(self, url: str, *, min_size: int = 1, max_size: int | None = None, auto_migrate: bool = True) -> None:
        _import_psycopg()
        try:
            import psycopg_pool  # noqa: F401
        except ImportError:  # pragma: no cover
            raise missing_extra("psycopg_pool", "postgres") from None
        super().__init__(url, auto_migrate=auto_migrate)
        self._sizes = self._pool_sizes(min_size, max_size)
        self._pool: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._bonuses: builtins.list[tuple[str, builtins.list[tuple[str, float]], datetime]] = []
        self._bonus_writer: asyncio.Task[None] | None = None
        self._flush_requested: asyncio.Event | None = None  # the writer's: write now, do not wait
        self._closed = False

    async def _open(self) -> Any:
        if self._pool is not None:
            return self._pool
        from psycopg_pool import AsyncConnectionPool

        async def configure(conn: Any) -> None:
            conn.adapters.register_dumper(np.ndarray, self._dumper)
            await conn.execute(session_settings(self.plans))

        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = AsyncConnectionPool(self.conninfo, min_size=self._sizes[0], max_size=self._sizes[1],
                                           kwargs={"autocommit": True}, configure=configure, open=False,
                                           name="polymem-async")
                await pool.open()
                self._loop = asyncio.get_running_loop()
                self._pool = pool
        return self._pool

    async def _call(self, plan: Callable[P, PgPlan[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a plan in one transaction; a serialization failure or deadlock reruns it."""
        pool = await self._open()
        for attempt in range(8):
            if self._closed:
                raise StoreClosedError("the store is closed")
            async with pool.connection() as conn:
                try:
                    if plan.__name__ in Plans.READS:
                        return await run_plan_async(conn, plan(*args, **kwargs))
                    async with conn.transaction():
                        return await run_plan_async(conn, plan(*args, **kwargs))
                except Exception as exc:
                    if not retryable(exc) or attempt == 7:
                        raise
            await asyncio.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def _blocking(self, plan: Callable[P, PgPlan[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a plan from a thread that is not the pool's loop (see the class docstring)."""
        loop = self._loop
        if loop is not None and loop.is_running():
            if _running_loop() is loop:
                raise RuntimeError("called synchronously on the event loop; await the AsyncMemory method instead")
            return asyncio.run_coroutine_threadsafe(self._call(plan, *args, **kwargs), loop).result()
        if self._closed:
            raise StoreClosedError("the store is closed")
        psycopg = _import_psycopg()
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.adapters.register_dumper(np.ndarray, self._dumper)
            with conn.transaction():
                return run_plan_sync(conn, plan(*args, **kwargs))

    async def apply(self, batch: Batch) -> builtins.list[Any]:
        """The batch's operations in one transaction (rerun whole on a serialization failure)."""
        held = self._held(batch)
        results = await self._call(self._batch, batch, held)
        if held is not None:
            self.vector_cache.catch_up(held)
        return results

    # records
    async def insert(self, op: Insert) -> builtins.list[tuple[MemoryRecord, bool]]:
        held = self.vector_cache.writes_for(op.items)
        results = await self._call(self.plans.insert, op.items, op.now, held)
        self.vector_cache.catch_up(held)
        return results

    async def get(self, namespace: str, memory_ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        return await self._call(self.plans.get, namespace, memory_ids)

    async def get_by_keys(self, namespace: str, keys: Sequence[str]) -> builtins.list[MemoryRecord]:
        return await self._call(self.plans.get_by_keys, namespace, keys)

    async def list(self, op: ListRecords) -> builtins.list[MemoryRecord]:
        return await self._call(self.plans.list, *op.args())

    async def update(self, op: Update) -> MemoryRecord:
        return await self._call(self.plans.update, *op.args())

    async def delete(self, namespace: str, memory_id: str, now: datetime | None = None) -> bool:
        return await self._call(self.plans.delete, namespace, memory_id, now)

    async def purge(self, namespace: str, memory_id: str) -> bool:
        return await self._call(self.plans.purge, namespace, memory_id)

    async def as_of(self, namespace: str, at: datetime, user_id: str | None, memory_ids: Sequence[str] | None,
                    model_id: str | None, changed_only: bool = False) -> builtins.list[tuple[MemoryRecord, np.ndarray | None]]:
        return await self._call(self.plans.as_of, namespace, at, user_id, memory_ids, model_id, changed_only)

    async def written_since(self, namespace: str, at: datetime, user_id: str | None) -> builtins.list[str]:
        return await self._call(self.plans.written_since, namespace, at, user_id)

    async def history(self, namespace: str, memory_ids: Sequence[str],
                      model_id: str | None) -> dict[str, builtins.list[tuple[MemoryRecord, np.ndarray | None]]]:
        return await self._call(self.plans.history, namespace, memory_ids, model_id)

    async def search(self, request: SearchRequest) -> builtins.list[Candidate]:
        """`_search_flow` driven on the loop: the statements of a batch each on its own pooled
        connection, gathered; a scope to copy is loaded by a task."""
        flow: SearchFlow = self._search_flow(request)
        done: SearchDone = await adrive(flow, self._side_by_side)
        candidates, load = done
        if load is not None:
            task = asyncio.get_running_loop().create_task(self._load_scope(load, request))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return candidates

    async def _side_by_side(self, statements: builtins.list[Q]) -> builtins.list[Any]:
        return builtins.list(await asyncio.gather(*(self._call(self.plans.run, q) for q in statements)))

    async def _load_scope(self, key: tuple[str, str, str], request: SearchRequest) -> None:
        entry = None
        try:
            assert request.query_vector is not None
            dim = len(request.query_vector)
            limit = self.vector_cache.max_rows(dim)
            rows = await self._call(self.plans.run, scope_load_statement(request, limit))
            entry = await asyncio.to_thread(scope_vectors, rows, dim, limit)
        except Exception:  # noqa: BLE001 - a copy that failed to load is simply not made
            pass
        finally:
            self.vector_cache.put(key, entry)

    async def count_foreign_vectors(self, namespace: str, model_id: str | None) -> int:
        return await self._call(self.plans.count_foreign_vectors, namespace, model_id)

    async def blocked_sources(self, namespace: str) -> dict[str, dict[str, Any]]:
        return await self._call(self.plans.blocked_sources, namespace)

    async def block_source(self, namespace: str, source: str, reason: str | None, actor: str | None,
                           now: datetime, blocked: bool) -> bool:
        return await self._call(self.plans.block_source, namespace, source, reason, actor, now, blocked)

    # bookkeeping: recall bonuses are written by a task on the loop, off the read path; those of
    # recalls within REINFORCE_WINDOW_S of each other in one transaction (as `Bookkeeping` does)
    async def reinforce(self, namespace: str, bonuses: Sequence[tuple[str, float]], now: datetime) -> None:
        if not bonuses:
            return
        self._bonuses.append((namespace, builtins.list(bonuses), now))
        if self._bonus_writer is None or self._bonus_writer.done():
            self._flush_requested = asyncio.Event()
            task = self._bonus_writer = asyncio.get_running_loop().create_task(
                self._write_bonuses(self._flush_requested))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write_bonuses(self, flush_requested: asyncio.Event) -> None:
        while self._bonuses:
            try:
                await asyncio.wait_for(flush_requested.wait(), REINFORCE_WINDOW_S)
            except TimeoutError:
                pass
            flush_requested.clear()
            batch, self._bonuses = self._bonuses, []
            try:
                await self._call(self.plans.reinforce_batch, batch)
            except StoreClosedError:
                pass
            except Exception:  # bookkeeping must never fail a recall: these bonuses are lost, no more
                log.warning("polymem: %d recall bonuses could not be written", len(batch), exc_info=True)

    async def aflush(self) -> None:
        """Write the pending recall bonuses now and wait for every background task."""
        if self._flush_requested is not None:
            self._flush_requested.set()
        while self._tasks:
            await asyncio.gather(*builtins.list(self._tasks), return_exceptions=True)

    def flush(self) -> None:
        loop = self._loop
        if loop is None or not self._tasks:
            return
        if loop.is_running():
            if _running_loop() is loop:
                raise RuntimeError("called synchronously on the event loop; await aflush() instead")
            asyncio.run_coroutine_threadsafe(self.aflush(), loop).result()
        elif not loop.is_closed():
            loop.run_until_complete(self.aflush())

    # bulk
    async def active_users(self, namespace: str) -> builtins.list[str | None]:
        return await self._call(self.plans.active_users, namespace)

    async def active_page(self, namespace: str, user_id: str | None, model_id: str | None, after: PageCursor | None,
                          limit: int) -> tuple[builtins.list[tuple[MemoryRecord, np.ndarray | None]], PageCursor | None]:
        return await self._call(self.plans.active_page, namespace, user_id, model_id, after, limit)

    async def vectors(self, namespace: str, memory_ids: Sequence[str], model_id: str) -> dict[str, np.ndarray]:
        return await self._call(self.plans.vectors, namespace, memory_ids, model_id)

    async def pending_reembed(self, namespace: str | None, model_id: str, limit: int,
                              missing_only: bool = False, after: str | None = None) -> builtins.list[tuple[str, str]]:
        return await self._call(self.plans.pending_reembed, namespace, model_id, limit, missing_only, after)

    async def set_vectors(self, namespace: str, items: Sequence[tuple[str, np.ndarray]], model_id: str) -> None:
        await self._call(self.plans.set_vectors, namespace, items, model_id)

    async def export_page(self, namespace: str, user_id: str | None, after: int,
                          limit: int) -> builtins.list[dict[str, Any]]:
        return await self._call(self.plans.export_page, namespace, user_id, after, limit)

    async def keep_version_vectors(self, namespace: str, items: Sequence[tuple[str, int, np.ndarray]], model_id: str) -> None:
        return await self._call(self.plans.keep_version_vectors, namespace, items, model_id)

    async def export_tombstones(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return await self._call(self.plans.export_tombstones, namespace, user_id)

    async def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return await self._call(self.plans.export_sessions, namespace, user_id)

    async def import_rows(self, namespace: str, rows: Sequence[dict[str, Any]], sessions: Sequence[dict[str, Any]],
                          now: datetime) -> ImportReport:
        deferred = len(rows) >= self.plans.bulk_rows and await self._call(self.plans.defer_indexes, rows)
        try:
            return await self._call(self.plans.import_rows, namespace, rows, sessions, now)
        finally:
            if deferred:  # loaded without them (or failed): built now, concurrently
                self.index_builder.request()

    async def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        return await self._call(self.plans.import_sessions, namespace, sessions)

    def stats(self, namespace: str) -> dict[str, Any]:
        return {"url": self.url, **self._blocking(self.plans.stats, namespace)}

    async def astats(self, namespace: str) -> dict[str, Any]:
        return {"url": self.url, **(await self._call(self.plans.stats, namespace))}

    # working memory
    async def session_touch(self, op: SessionTouch) -> None:
        await self._call(self.plans.session_touch, *op.args())

    async def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        return await self._call(self.plans.session_info, namespace, session_id)

    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        return self._blocking(self.plans.session_list, namespace, user_id)

    async def asession_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        return await self._call(self.plans.session_list, namespace, user_id)

    async def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        await self._call(self.plans.session_append, namespace, session_id, messages)

    async def session_messages(self, namespace: str, session_id: str,
                               window_only: bool) -> builtins.list[tuple[Message, int]]:
        return await self._call(self.plans.session_messages, namespace, session_id, window_only)

    async def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return await self._call(self.plans.session_evict, namespace, session_id, message_ids)

    async def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return await self._call(self.plans.session_forget, namespace, session_id, message_ids)

    async def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        await self._call(self.plans.session_set_summary, namespace, session_id, summary)

    def session_delete(self, namespace: str, session_id: str) -> bool:
        return self._blocking(self.plans.session_delete, namespace, session_id)

    async def asession_delete(self, namespace: str, session_id: str) -> bool:
        return await self._call(self.plans.session_delete, namespace, session_id)

    async def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        return await self._call(self.plans.sessions_expired, namespace, now)

    # consolidation lock
    @asynccontextmanager
    async def consolidation_lock(self, namespace: str = "default", *, timeout: float | None = None,
                                 poll: float = 0.2) -> AsyncIterator[None]:
        """`PostgresBackend.consolidation_lock` for asyncio: a session advisory lock held on a
        dedicated async connection, released by PostgreSQL if the holder dies."""
        psycopg = _import_psycopg()
        key = _hash64("consolidate\x00" + namespace)
        conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True, keepalives=1,
                                                     keepalives_idle=5, keepalives_interval=2, keepalives_count=3)
        try:
            await conn.execute("SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
                               "SET tcp_keepalives_count = 3")
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone())[0]:
                if deadline is not None and loop.time() >= deadline:
                    raise LockTimeoutError(f"another instance is consolidating namespace {namespace!r}")
                await asyncio.sleep(poll)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            await conn.close()

    async def aclose(self) -> None:
        if self._closed:
            return
        await self.aflush()
        self._closed = True
        await asyncio.to_thread(self.index_builder.close)
        if self._pool is not None:
            await self._pool.close()

    def close(self) -> None:
        loop = self._loop
        if loop is None:
            self._closed = True
            self.index_builder.close()
            return
        if loop.is_running():
            if _running_loop() is loop:
                raise RuntimeError("called synchronously on the event loop; await aclose() instead")
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        elif not loop.is_closed():
            loop.run_until_complete(self.aclose())
        else:
            self._closed = True
            self.index_builder.close()
