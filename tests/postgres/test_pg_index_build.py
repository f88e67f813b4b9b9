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


# -- the secondary indexes (full text, recency, models, write times) of a large import into a small store --
def _secondary(conninfo: str) -> dict[str, str]:
    """The secondary indexes present (valid or not): name -> definition."""
    import psycopg

    from polymem._postgres._sql import SECONDARY_INDEXES

    with psycopg.connect(conninfo) as conn:
        return dict(conn.execute("SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_class c WHERE c.relname = ANY(%s)",
                                 ([name for name, _ in SECONDARY_INDEXES],)).fetchall())


def _memories_indexes(conninfo: str) -> dict[str, tuple[str, bool]]:
    import psycopg

    with psycopg.connect(conninfo) as conn:
        return {name: (definition, valid) for name, definition, valid in conn.execute(
            "SELECT c.relname, pg_get_indexdef(c.oid), x.indisvalid FROM pg_index x JOIN pg_class c "
            "ON c.oid = x.indexrelid WHERE x.indrelid = 'polymem_memories'::regclass").fetchall()}


def _text_hits(backend: Any, text: str, user: str) -> list[str]:
    request = SearchRequest("default", user, None, None, None, None, None, tuple(terms(text)), NOW, 10)
    return [c.id for c in backend.search(request)]


def _unloaded(backend: Any, rows: list[dict[str, Any]], size: int = 10_000) -> Any:
    """`bulk_import` in batches of `size`, the index builds left for later (`build_index=False`)."""
    return backend.bulk_import("default", [rows[i:i + size] for i in range(0, len(rows), size)], NOW, build_index=False)


def test_a_large_import_into_an_empty_store_returns_before_its_secondary_indexes_and_stays_right(backend: Any) -> None:
    from polymem._storage import ListRecords

    before = _memories_indexes(backend.conninfo)
    rows = _rows(120)
    assert _unloaded(backend, rows).imported == 120
    assert _secondary(backend.conninfo) == {}
    # the constraints', the scope's and the content hash's indexes stay
    for name in ("polymem_memories_id", "polymem_memories_scope", "polymem_memories_hash", "polymem_memories_idempotency"):
        assert name in _memories_indexes(backend.conninfo)
    query = _vectors(1, 3000)[0]
    assert _top10(backend, query, "u1") == _exact_top10(rows, query, "u1")
    assert _top10(backend, query, None) == _exact_top10(rows, query, None)
    text = _text_hits(backend, "bulk memory 31", "u1")
    assert "b-31" in text
    assert [r.memory_id for r in backend.get("default", ["b-7", "b-8"])] == ["b-7", "b-8"]
    assert len(backend.list(ListRecords("default", user_id="u2", limit=1000))) == 40
    assert len(backend.list(ListRecords("default", limit=1000))) == 120
    again = rows[4]  # the same content, saved again by its user: the stored memory, not a second one
    (record, created), = backend.insert(Insert([NewRecord(_record(900, "u1").replace(content="bulk memory 4"),
                                                          again["vector"], again["content_hash"], None,
                                                          again["terms"])], NOW))
    assert (record.memory_id, created) == ("b-4", False)
    assert backend.build_vector_indexes(timeout=60)
    assert sorted(_text_hits(backend, "bulk memory 31", "u1")) == sorted(text)
    assert _memories_indexes(backend.conninfo) == before | {
        name: (definition, True) for name, (definition, _) in _memories_indexes(backend.conninfo).items()
        if name.startswith(("polymem_hnsw_", "polymem_scan_"))}


def test_an_import_into_a_store_holding_more_rows_keeps_its_secondary_indexes(backend: Any) -> None:
    backend.plans.bulk_rows = 1000
    backend.import_rows("default", _rows(300, 10_000), [], NOW)  # not bulk: every index kept
    present = _secondary(backend.conninfo)
    assert len(present) == 5
    assert _unloaded(backend, _rows(120)).imported == 120  # 300 stored >= twice the 120 loaded
    assert _secondary(backend.conninfo) == present


def test_a_large_import_counts_the_ids_it_already_holds_or_repeats_as_duplicates(backend: Any) -> None:
    import psycopg

    rows = _rows(120)
    report = _unloaded(backend, rows[:60] + rows[:60] + rows[60:], size=50)
    assert (report.imported, report.duplicates) == (120, 60)
    assert _secondary(backend.conninfo) == {}
    assert backend.import_rows("default", rows[:10], [], NOW).duplicates == 10
    with psycopg.connect(backend.conninfo) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT memory_id) FROM polymem_memories").fetchone() == (120, 120)


def test_writers_beside_a_large_import_keep_one_row_per_memory_id(backend: Any) -> None:
    import threading

    import psycopg

    rows = _rows(3000)
    errors: list[BaseException] = []

    def write(part: list[dict[str, Any]]) -> None:
        try:
            for start in range(0, len(part), 40):
                backend.import_rows("default", part[start:start + 40], [], NOW)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    writer = threading.Thread(target=write, args=(rows[::7],))
    writer.start()
    report = _unloaded(backend, rows, size=500)
    writer.join()
    assert errors == []
    assert report.imported + report.duplicates == 3000
    with psycopg.connect(backend.conninfo) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT memory_id) FROM polymem_memories").fetchone() == (3000, 3000)
    assert backend.build_vector_indexes(timeout=60)
    assert len(_secondary(backend.conninfo)) == 5


def test_a_large_import_through_import_rows_builds_its_secondary_indexes_in_the_background(backend: Any) -> None:
    rows = _rows(120)
    assert backend.import_rows("default", rows, [], NOW).imported == 120
    assert backend.build_vector_indexes(timeout=60)
    assert set(valid for _, valid in _memories_indexes(backend.conninfo).values()) == {True}
    assert len(_secondary(backend.conninfo)) == 5
    assert "b-31" in _text_hits(backend, "bulk memory 31", "u1")


def test_a_secondary_index_a_dead_build_left_invalid_is_rebuilt_when_a_store_opens(pg_url: str) -> None:
    import psycopg

    from polymem._postgres import PostgresBackend
    from polymem._postgres._sql import SECONDARY_INDEXES

    first = PostgresBackend(pg_url)
    _unloaded(first, _rows(120))
    first.close()
    name, statement = SECONDARY_INDEXES[0]
    with _writer_open(pg_url), psycopg.connect(pg_url, autocommit=True) as builder:
        builder.execute("SET statement_timeout = '1s'")  # the build dies waiting for the writer
        with pytest.raises(psycopg.errors.QueryCanceled):
            builder.execute(statement)
    assert _memories_indexes(pg_url)[name][1] is False
    second = PostgresBackend(pg_url)
    try:
        assert second.index_builder.wait(60)
        assert len(_secondary(pg_url)) == 5
        assert set(valid for _, valid in _memories_indexes(pg_url).values()) == {True}
    finally:
        second.close()


def _with_terms(i: int, words: list[str]) -> dict[str, Any]:
    row = _rows(1, i)[0]
    return {**row, "terms": words}


def test_an_imported_memorys_full_text_is_the_one_a_save_writes(backend: Any) -> None:
    import psycopg

    from polymem._postgres._sql import scope_lexeme, tsvector_literal

    odd = [["it's", "back\\slash", "zoë", "naïve", "日本"], ["again", "and", "again", "again"],
           ["word"] * 300, [f"w{n % 40}" for n in range(17_000)], [], ["", "x" * 2100, "kept"]]
    rows = [_with_terms(i, words) for i, words in enumerate(odd)]
    rows.append(_with_terms(99, [scope_lexeme("default", "u0")]))  # a term equal to the scope lexeme
    rows += _rows(60, 100)  # large enough to load in bulk
    assert _unloaded(backend, rows).imported == len(rows)
    with psycopg.connect(backend.conninfo) as conn:
        for row in rows:
            rec = row["record"]
            same = conn.execute("SELECT tsv = %s::tsvector FROM polymem_memories WHERE memory_id = %s",
                                (tsvector_literal("default", rec.user_id, row["terms"]), rec.memory_id)).fetchone()
            assert same == (True,), rec.memory_id


def test_importing_the_same_rows_again_stores_each_memory_and_version_once(backend: Any) -> None:
    import psycopg

    rows = _rows(150)
    assert _unloaded(backend, rows[:120], size=60).imported == 120
    report = _unloaded(backend, rows, size=60)  # 120 stored already, 30 new among them
    assert (report.imported, report.duplicates) == (30, 120)
    with psycopg.connect(backend.conninfo) as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT memory_id) FROM polymem_memories").fetchone() == (150, 150)
        assert conn.execute("SELECT count(*) FROM polymem_memory_versions").fetchone() == (150,)
    query = _vectors(1, 4000)[0]
    assert _top10(backend, query, "u2") == _exact_top10(rows, query, "u2")


def test_an_import_skips_the_idempotency_keys_the_store_holds(backend: Any) -> None:
    rows = _rows(120)
    for n, row in enumerate(rows):
        row["idempotency_key"] = f"k{n}"
    assert _unloaded(backend, rows[:60]).imported == 60
    renamed = [{**row, "record": row["record"].replace(memory_id=f"other-{n}")} for n, row in enumerate(rows)]
    report = _unloaded(backend, renamed)  # the first 60 keys are stored, under other ids
    assert (report.imported, report.duplicates) == (60, 60)
    assert backend.get("default", ["other-3", "b-3", "other-70"]) != []
    assert [r.memory_id for r in backend.get("default", ["other-3", "b-3", "other-70"])] == ["b-3", "other-70"]


def test_a_failed_import_raises_a_typed_error_and_leaves_what_was_stored(backend: Any) -> None:
    import psycopg

    rows = _rows(120)
    assert _unloaded(backend, rows).imported == 120
    assert backend.build_vector_indexes(timeout=60)
    bad = _rows(80, 500)
    bad[70]["vector"] = np.ones(17, dtype=np.float32) / np.sqrt(17)  # another dimension than the model's
    with pytest.raises(polymem.DimensionMismatchError):
        backend.import_rows("default", bad, [], NOW)
    with pytest.raises(polymem.DimensionMismatchError):
        _unloaded(backend, bad)
    with psycopg.connect(backend.conninfo) as conn:
        assert conn.execute("SELECT count(*) FROM polymem_memories").fetchone() == (120,)
    query = _vectors(1, 5000)[0]
    assert _top10(backend, query, "u0") == _exact_top10(rows, query, "u0")
    assert _top10(backend, query, None) == _exact_top10(rows, query, None)
    assert backend.build_vector_indexes(timeout=60)
    assert len(_secondary(backend.conninfo)) == 5


def test_an_import_into_a_store_twice_its_size_keeps_its_vector_indexes(backend: Any) -> None:
    backend.plans.bulk_rows = 1000
    backend.import_rows("default", _rows(300, 10_000), [], NOW)  # not bulk: every index built with the rows
    before = _states(backend.conninfo)
    assert len(before) == 2 and all(before.values())
    backend.plans.bulk_rows = 50
    assert backend.import_rows("default", _rows(120), [], NOW).imported == 120  # 300 stored >= twice 120
    assert _states(backend.conninfo) == before
    assert len(_secondary(backend.conninfo)) == 5


def test_readers_are_not_blocked_while_a_large_import_loads(backend: Any) -> None:
    import threading

    import psycopg

    from polymem._storage import ListRecords

    backend.import_rows("default", _rows(1, 10_000), [], NOW)  # user u1's scope stamp now exists
    rows = _rows(120)
    with psycopg.connect(backend.conninfo) as holder:
        # The import's statement trigger stamps u1's scope: it waits here, its load not yet committed.
        holder.execute("SELECT 1 FROM polymem_scope_stamps WHERE user_id = 'u1' FOR UPDATE")
        loading = threading.Thread(target=backend.import_rows, args=("default", rows, [], NOW))
        loading.start()
        with psycopg.connect(backend.conninfo, autocommit=True) as reader:
            deadline = time.monotonic() + 30
            while not reader.execute("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                     "AND query LIKE 'COPY polymem_memories %%'").fetchone():
                assert time.monotonic() < deadline, "the import never waited on the stamp"
                time.sleep(0.05)
            reader.execute("SET lock_timeout = '2s'")
            assert reader.execute("SELECT count(*) FROM polymem_memories").fetchone() == (1,)
        holder.rollback()
        loading.join(30)
    assert len(backend.list(ListRecords("default", limit=1000))) == 121
