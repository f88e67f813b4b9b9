"""Connections: the URL's parts and options, what every pooled connection sets, the vector
dumper, and the two drivers of a plan (psycopg's sync and async connections)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._errors import missing_extra
from .._plan import adrive, drive
from ._sql import PgPlan, vector_bytes

if TYPE_CHECKING:
    from ._plans import Plans

T = TypeVar("T")

_RETRYABLE = ("40001", "40P01")  # serialization_failure, deadlock_detected


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - exercised by the "absent" CI leg
        raise missing_extra("psycopg", "postgres") from None
    return psycopg


# -- connections ----------------------------------------------------------------------------------
def split_url(url: str) -> tuple[str, str, dict[str, str]]:
    """(conninfo for psycopg, the URL without its password, polymem options from the query)."""
    parts = urlsplit(url)
    scheme = "postgresql"
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    options = {k: query.pop(k) for k in list(query)
               if k.startswith("pool_") or k in ("ef_search", "namespace", "vector_cache_mb", "language")}
    conninfo = urlunsplit((scheme, parts.netloc, parts.path, urlencode(query), ""))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = userinfo.split(":", 1)[0] + "@" + host
    public = urlunsplit((scheme, netloc, parts.path, urlencode(query), ""))
    return conninfo, public, options


def session_settings(plans: Plans) -> str:
    """What every pooled connection sets once: UTC, HNSW scans that keep going past filtered rows,
    and room for an import's staging table in memory (allocated only as it is used; settable only
    before a session's first temporary table)."""
    return (f"SET TIME ZONE 'UTC'; SET hnsw.iterative_scan = relaxed_order; SET temp_buffers = '64MB'; "
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


def _execute(cur: Any, q: Any) -> Any:
    """One statement of a plan on a cursor: its result as the plan asked for it."""
    if q.mode == "many":
        if q.params:
            cur.executemany(q.sql, q.params)
        return None
    if q.mode == "copy":
        with cur.copy(q.sql) as copy:
            copy.set_types(list(q.types or ()))
            for row in q.params:
                copy.write_row(row)
        return None
    cur.execute(q.sql, q.params, binary=q.binary)
    return _result(cur, q.mode)


async def _aexecute(cur: Any, q: Any) -> Any:
    """`_execute` on an async cursor."""
    if q.mode == "many":
        if q.params:
            await cur.executemany(q.sql, q.params)
        return None
    if q.mode == "copy":
        async with cur.copy(q.sql) as copy:
            copy.set_types(list(q.types or ()))
            for row in q.params:
                await copy.write_row(row)
        return None
    await cur.execute(q.sql, q.params, binary=q.binary)
    return await _aresult(cur, q.mode)


def run_plan_sync(conn: Any, plan: PgPlan[T]) -> T:
    """Drive a plan on a psycopg connection (the caller owns the transaction)."""
    with conn.cursor() as cur:
        return drive(plan, lambda q: _execute(cur, q))


async def run_plan_async(conn: Any, plan: PgPlan[T]) -> T:
    """`run_plan_sync` for psycopg's async connections."""
    async with conn.cursor() as cur:
        return await adrive(plan, lambda q: _aexecute(cur, q))


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
