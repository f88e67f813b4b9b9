"""A large import on PostgreSQL returns once its rows are committed; the vector indexes are built
afterwards, concurrently, in the background: writes go on, recall stays exact until they are
valid, and a build that died is repaired by the next store to open."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest

import polymem
from polymem._backend import NewRecord, SearchRequest
from polymem._storage import Insert
from polymem._text import content_hash, terms

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
MODEL = "bulk"


def _record(i: int, user: str) -> polymem.MemoryRecord:
    return polymem.MemoryRecord(memory_id=f"b-{i}", content=f"bulk memory {i}", user_id=user, created_at=NOW,
                                updated_at=NOW, embedding_model=MODEL, namespace="default", category="fact",
                                source="import", importance=0.5, agent_id=None, session_id=None)


def _vectors(n: int, start: int) -> np.ndarray:
    v = np.random.default_rng(start).normal(size=(n, 16)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    out = []
    for i, v in zip(range(start, start + n), _vectors(n, start)):
        rec = _record(i, f"u{i % 3}")
        out.append({"record": rec, "versions": [rec.to_dict()], "vector": v, "idempotency_key": None,
                    "content_hash": content_hash(rec.content), "terms": terms(rec.content)})
    return out


def _states(conninfo: str) -> dict[str, bool]:
    """The model's vector indexes: name -> valid."""
    import psycopg

    from polymem._postgres import vector_index_statements

    names = [name for name, _ in vector_index_statements(MODEL, 16)]
    with psycopg.connect(conninfo) as conn:
        return dict(conn.execute("SELECT c.relname, x.indisvalid FROM pg_index x JOIN pg_class c ON "
                                 "c.oid = x.indexrelid WHERE c.relname = ANY(%s)", (names,)).fetchall())


def _top10(backend: Any, query: np.ndarray, user: str | None) -> list[str]:
    hits = backend.search(SearchRequest("default", user, None, None, None, query, MODEL, (), NOW, 10))
    return [c.id for c in sorted(hits, key=lambda c: -(c.similarity or 0.0))]


def _exact_top10(rows: list[dict[str, Any]], query: np.ndarray, user: str | None) -> list[str]:
    mine = [r for r in rows if user is None or r["record"].user_id == user]
    sims = np.array([r["vector"] for r in mine]) @ query
    return [mine[i]["record"].memory_id for i in np.argsort(-sims, kind="stable")[:10]]


@contextmanager
def _building_held(conninfo: str) -> Iterator[None]:
    """Another process 'building' the model's indexes: its build lock held, so this one's builder
    leaves them alone."""
    import psycopg

    from polymem._postgres import build_lock

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (build_lock(MODEL),))
        yield
        # Released here, not by closing: a closed connection's server process may still hold the
        # lock for a moment while it exits, and a builder trying it then skips the model.
        conn.execute("SELECT pg_advisory_unlock(%s)", (build_lock(MODEL),))


@contextmanager
def _writer_open(conninfo: str) -> Iterator[Any]:
    """A transaction holding a write lock on the memories: CREATE INDEX CONCURRENTLY, once its
    (invalid) index is in the catalog, waits for it to end."""
    import psycopg

    with psycopg.connect(conninfo) as conn:
        conn.execute("LOCK TABLE polymem_memories IN ROW EXCLUSIVE MODE")
        yield conn


def _wait_for_build_start(conninfo: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while not conn.execute("SELECT 1 FROM pg_stat_progress_create_index WHERE phase = "
                               "'waiting for writers before build'").fetchone():
            assert time.monotonic() < deadline, "no concurrent index build started"
            time.sleep(0.05)


@pytest.fixture
def backend(pg_url: str) -> Iterator[Any]:
    from polymem._postgres import PostgresBackend

    store = PostgresBackend(pg_url)
    store.plans.bulk_rows = 50  # an import this large loads without the vector indexes
    try:
        yield store
    finally:
        store.close()


def test_a_large_import_returns_with_its_rows_searchable_per_user_before_any_index(backend: Any) -> None:
    rows = _rows(120)
    with _building_held(backend.conninfo):
        assert backend.import_rows("default", rows, [], NOW).imported == 120
        assert backend.index_builder.wait(30) and _states(backend.conninfo) == {}
        for n, user in enumerate(["u0", "u1", "u2"]):
            query = _vectors(1, 1000 + n)[0]
            assert _top10(backend, query, user) == _exact_top10(rows, query, user)


def test_recall_over_every_user_is_the_exact_top_10_until_the_hnsw_index_is_built(backend: Any) -> None:
    rows = _rows(120)
    with _building_held(backend.conninfo):
        backend.import_rows("default", rows, [], NOW)
        assert backend.index_builder.wait(30)
        for n in range(5):
            query = _vectors(1, 2000 + n)[0]
            assert _top10(backend, query, None) == _exact_top10(rows, query, None)


def test_the_vector_indexes_appear_valid_after_a_large_import(backend: Any) -> None:
    from polymem._postgres import vector_index_statements

    backend.import_rows("default", _rows(120), [], NOW)
    assert backend.build_vector_indexes(timeout=60)
    assert _states(backend.conninfo) == {name: True for name, _ in vector_index_statements(MODEL, 16)}


def test_writes_go_on_and_recall_stays_exact_while_the_indexes_are_built(backend: Any) -> None:
    rows = _rows(120)
    with _building_held(backend.conninfo):
        backend.import_rows("default", rows, [], NOW)
        assert backend.index_builder.wait(30)
    with _writer_open(backend.conninfo) as writer:
        backend.build_vector_indexes(timeout=0)
        _wait_for_build_start(backend.conninfo)  # its index in the catalog, not valid yet
        assert False in _states(backend.conninfo).values()
        added = _rows(5, 500)
        started = time.monotonic()
        for row in added:
            backend.insert(Insert([NewRecord(row["record"], row["vector"], row["content_hash"], None, row["terms"])],
                                  NOW))
        assert time.monotonic() - started < 5  # not waiting for the build
        query = added[0]["vector"]
        assert _top10(backend, query, None) == _exact_top10(rows + added, query, None)
        assert not backend.build_vector_indexes(timeout=0.2)  # still building
        writer.commit()
    assert backend.build_vector_indexes(timeout=60)
    assert set(_states(backend.conninfo).values()) == {True}
    assert _top10(backend, query, None)[0] == "b-500"


def test_an_index_a_dead_build_left_invalid_is_rebuilt_when_a_store_opens(pg_url: str) -> None:
    import psycopg

    from polymem._postgres import PostgresBackend, vector_index_statements

    first = PostgresBackend(pg_url)
    first.plans.bulk_rows = 50
    with _building_held(pg_url):
        first.import_rows("default", _rows(120), [], NOW)
        first.close()
    (name, statement), _ = vector_index_statements(MODEL, 16, concurrently=True)
    with _writer_open(pg_url), psycopg.connect(pg_url, autocommit=True) as builder:
        builder.execute("SET statement_timeout = '1s'")  # the build dies waiting for the writer
        with pytest.raises(psycopg.errors.QueryCanceled):
            builder.execute(statement)
    assert _states(pg_url) == {name: False}
    second = PostgresBackend(pg_url)
    try:
        assert second.index_builder.wait(60)
        assert _states(pg_url) == {name: True for name, _ in vector_index_statements(MODEL, 16)}
    finally:
        second.close()


def test_closing_a_store_mid_build_leaves_the_build_to_the_next_open(pg_url: str) -> None:
    from polymem._postgres import PostgresBackend

    first = PostgresBackend(pg_url)
    first.plans.bulk_rows = 50
    with _building_held(pg_url):
        first.import_rows("default", _rows(120), [], NOW)
        assert first.index_builder.wait(30)
    with _writer_open(pg_url):
        first.build_vector_indexes(timeout=0)
        _wait_for_build_start(pg_url)
        first.close()
        assert False in _states(pg_url).values()
    second = PostgresBackend(pg_url)
    try:
        assert second.index_builder.wait(60)
        assert set(_states(pg_url).values()) == {True}
    finally:
        second.close()


def test_an_async_store_builds_the_indexes_of_a_large_import_in_the_background(pg_url: str) -> None:
    from polymem._postgres import vector_index_statements
    from polymem._postgres_async import AsyncPostgresBackend

    async def main() -> None:
        store = AsyncPostgresBackend(pg_url)
        store.plans.bulk_rows = 50
        try:
            assert (await store.import_rows("default", _rows(120), [], NOW)).imported == 120
            assert await asyncio.to_thread(store.build_vector_indexes, 60)
        finally:
            await store.aclose()

    asyncio.run(main())
    assert _states(pg_url) == {name: True for name, _ in vector_index_statements(MODEL, 16)}
