"""PostgreSQL specifics: migrations, scoped recall with HNSW present, concurrency, and exact
snapshot migration between SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

import polymem
from polymem._backend import SearchRequest
from polymem._engine import DEFAULT_MAX_CONTENT_CHARS
from polymem._memory import _engine
from polymem._storage import Insert, Update
from polymem.testing import FakeClock, HashEmbedder


def pg_memory(url: str, embedder: Any = None, clock: Any = None, namespace: str = "default") -> polymem.Memory:
    from polymem._postgres import PostgresBackend

    eng = _engine(namespace, embedder, clock, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS)
    return polymem.Memory(PostgresBackend(url), eng)  # type: ignore[arg-type]


# -- migrations ------------------------------------------------------------------------------------
def test_migrations_are_ordered_recorded_and_idempotent(pg_server: str) -> None:
    import psycopg

    from polymem._postgres import MIGRATIONS, migrate, schema_version
    from polymem.testing.backends import with_database

    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bare WITH (FORCE)")
        conn.execute("CREATE DATABASE bare")
    url = with_database(pg_server, "bare")
    assert schema_version(url) == 0
    results: list[list[int]] = []
    threads = [threading.Thread(target=lambda: results.append(migrate(url))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results, key=len) == [[], [], list(range(1, len(MIGRATIONS) + 1))]  # applied exactly once
    assert schema_version(url) == len(MIGRATIONS)
    assert migrate(url) == []
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version FROM polymem_schema_migrations ORDER BY version").fetchall()
    assert [r[0] for r in rows] == list(range(1, len(MIGRATIONS) + 1))


def test_polymem_import_does_not_import_drivers() -> None:
    code = "import sys, polymem; print(any(m.split('.')[0] in ('psycopg', 'psycopg_pool', 'redis') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


# -- recall scoped to one user with HNSW present ---------------------------------------------------------
def test_scoped_recall_returns_the_full_exact_top_k_with_hnsw_present(pg_url: str) -> None:
    import psycopg

    from polymem._postgres import PostgresBackend, index_name
    from polymem._text import content_hash, terms

    rng = np.random.default_rng(7)
    dim, users, per_user = 32, 40, 60
    centres = rng.normal(size=(8, dim)).astype(np.float32)
    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows, vectors = [], {}
    for u in range(users):
        for i in range(per_user):
            v = centres[(u + i) % 8] + 0.3 * rng.normal(size=dim).astype(np.float32)
            v /= np.linalg.norm(v)
            rec = polymem.MemoryRecord(memory_id=f"{u}-{i}", content=f"memory {i} of user {u}", user_id=f"u{u}",
                                       created_at=now, updated_at=now, embedding_model="m", namespace="default",
                                       category="fact", source="import", importance=0.5, agent_id=None, session_id=None)
            vectors[rec.memory_id] = (rec.user_id, v)
            rows.append({"record": rec, "versions": [rec.to_dict()], "vector": v, "idempotency_key": None,
                         "content_hash": content_hash(rec.content), "terms": terms(rec.content)})
    assert backend.import_rows("default", rows, [], now).imported == users * per_user
    with psycopg.connect(backend.conninfo) as conn:
        conn.execute("ANALYZE polymem_memories")
        assert conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (index_name("m"),)).fetchone()
    try:
        for u in range(0, users, 4):
            q = rng.normal(size=dim).astype(np.float32)
            q /= np.linalg.norm(q)
            req = SearchRequest("default", f"u{u}", None, None, None, q, "m", (), now, 10)
            got = [c.id for c in backend.search(req)]
            mine = [(mid, float(v @ q)) for mid, (uid, v) in vectors.items() if uid == f"u{u}"]
            exact = [mid for mid, _ in sorted(mine, key=lambda x: -x[1])[:10]]
            assert len(got) == 10 and set(got) == set(exact)
        # Every user: HNSW with iterative scan, close to exact.
        q = rng.normal(size=dim).astype(np.float32)
        q /= np.linalg.norm(q)
        req = SearchRequest("default", None, None, None, None, q, "m", (), now, 10)
        got = {c.id for c in backend.search(req)}
        exact = {mid for mid, _ in sorted(((m, float(v @ q)) for m, (_, v) in vectors.items()), key=lambda x: -x[1])[:10]}
        assert len(got) == 10 and len(got & exact) >= 8
    finally:
        backend.close()


def _explain_vector_part(backend: Any, request: SearchRequest) -> str:
    """The plan PostgreSQL picks for the search statement the backend sends."""
    plan = backend.plans.search(request)
    q = plan.send(None)
    with backend._pool.connection() as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + q.sql, q.params).fetchall())


@pytest.mark.parametrize("dim", [576, 640])
def test_scoped_recall_reads_the_covering_index_and_falls_back_exactly(pg_url: str, dim: int) -> None:
    """Up to 576 dimensions a model gets a covering btree (scope → id, expiry, vector) that a
    scoped recall reads alone; keys too long for a btree entry (4-byte characters at the bound
    included) and larger models store fine and take the heap path, exact as well."""
    import psycopg

    from polymem._postgres import PostgresBackend, scan_index_name, scan_key_chars
    from polymem._text import content_hash, terms

    rng = np.random.default_rng(dim)
    chars = scan_key_chars(dim)
    assert (chars is not None) == (dim <= 576)
    at_bound = "\U0001F600" * ((chars or 64) - len("default"))  # the widest characters, up to the bound
    users = ["u1", at_bound, at_bound + "x"]
    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows, vectors = [], {}
    for u, user in enumerate(users):
        for i in range(120):
            v = rng.normal(size=dim).astype(np.float32)
            v /= np.linalg.norm(v)
            rec = polymem.MemoryRecord(memory_id=f"{u}-{i}", content=f"note {i}", user_id=user, created_at=now,
                                       updated_at=now, embedding_model="wide", namespace="default", category="fact",
                                       source="import", importance=0.5, agent_id=None, session_id=None)
            vectors[rec.memory_id] = (user, v)
            rows.append({"record": rec, "versions": [rec.to_dict()], "vector": v, "idempotency_key": None,
                         "content_hash": content_hash(rec.content), "terms": terms(rec.content)})
    try:
        assert backend.import_rows("default", rows, [], now).imported == len(rows)
        with psycopg.connect(backend.conninfo, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE polymem_memories")
            present = conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                                   (scan_index_name("wide"),)).fetchone() is not None
        assert present == (chars is not None)
        for user in users:
            q = rng.normal(size=dim).astype(np.float32)
            q /= np.linalg.norm(q)
            req = SearchRequest("default", user, None, None, None, q, "wide", (), now, 10)
            got = [c.id for c in backend.search(req)]
            mine = sorted(((mid, float(v @ q)) for mid, (uid, v) in vectors.items() if uid == user),
                          key=lambda x: -x[1])
            assert len(got) == 10 and set(got) == {mid for mid, _ in mine[:10]}
            covered = chars is not None and len("default") + len(user) <= chars
            assert ("Index Only Scan using " + scan_index_name("wide") in _explain_vector_part(backend, req)) == covered
    finally:
        backend.close()


def test_save_many_treats_duplicates_within_a_batch_like_saves_one_by_one(new_database: Any) -> None:
    """One batch, looked up in two statements: the same outcome as saving item by item: a key
    decides alone, without one the oldest active copy in scope wins, a keyed one of the batch
    included."""
    from polymem import MemoryDraft

    clocks = [FakeClock(), FakeClock()]
    embedder = HashEmbedder()
    batched, single = (pg_memory(new_database(), embedder, clock) for clock in clocks)
    texts = ["p", "x", "x", "y", "z", "y", "x", "w", "  X "]
    keys = [None, None, None, "k1", "k1", None, "k2", None, None]
    try:
        outcomes = []
        for mem, clock in zip((batched, single), clocks):
            mem.save("p", user_id="ann")
            mem.save("w", user_id="ann", agent_id="bot")  # another scope: not a duplicate of "w"
            clock.advance(hours=1)
            if mem is batched:
                saved = mem.save_many([MemoryDraft(t) for t in texts], user_id="ann", idempotency_keys=keys)
            else:
                saved = [mem.save(t, user_id="ann", idempotency_key=k) for t, k in zip(texts, keys)]
            ids = [r.memory_id for r in saved]
            outcomes.append(([ids.index(i) for i in ids], [r.content for r in saved],
                             [r.last_accessed_at for r in saved],
                             sorted((r.content, str(r.last_accessed_at)) for r in mem.list(user_id="ann", limit=100))))
        assert outcomes[0][0] == [0, 1, 1, 3, 3, 3, 6, 7, 1]
        assert outcomes[0] == outcomes[1]
    finally:
        batched.close()
        single.close()


def test_save_many_takes_a_batch_larger_than_the_servers_lock_table(pg_url: str) -> None:
    """The duplicate checks take a bounded number of advisory locks, whatever the batch size (one a
    memory ran a batch three times the lock table out of shared memory)."""
    import psycopg

    with psycopg.connect(pg_url) as conn:
        lock_slots = int(conn.execute(
            "SELECT current_setting('max_locks_per_transaction')::int * (current_setting('max_connections')::int "
            "+ current_setting('max_prepared_transactions')::int)").fetchone()[0])
    mem = pg_memory(pg_url)
    try:
        saved = mem.save_many([polymem.MemoryDraft(f"memory number {i}") for i in range(3 * lock_slots)],
                              user_id="u")
        assert len({r.memory_id for r in saved}) == 3 * lock_slots
        assert mem.stats()["memories"] == 3 * lock_slots
    finally:
        mem.close()


def test_import_keeps_the_first_of_duplicates_within_a_batch(pg_url: str) -> None:
    from polymem._postgres import PostgresBackend

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = _rows(6)
    again = _rows(1)[0]
    again["record"] = again["record"].replace(content="a later copy of b-0")
    keyed = [dict(r, idempotency_key="k") for r in _rows(2, 10)]
    try:
        report = backend.import_rows("default", rows + [again] + keyed, [], now)
        assert (report.imported, report.duplicates) == (7, 2)
        assert backend.get("default", ["b-0"])[0].content == "bulk memory 0"
        assert [r.memory_id for r in backend.get("default", ["b-10", "b-11"])] == ["b-10"]
        assert len(backend.history("default", ["b-0"], None)["b-0"]) == 1
    finally:
        backend.close()


def _wait_cached(backend: Any, key: tuple[str, str, str], dim: int = 32) -> Any:
    """The scope's copy, asking again while it is missing: a miss starts a load only when no other
    load is under way (on a busy machine another scope's load may still run)."""
    import time

    namespace, user, model = key
    again = SearchRequest(namespace, user, None, None, None, np.ones(dim, dtype=np.float32),
                          model, (), datetime.now(timezone.utc), 1)
    deadline = time.monotonic() + 60
    while (entry := backend.vector_cache.get(key)) is None:
        assert time.monotonic() < deadline, "the scope's vectors were never copied"
        time.sleep(0.05)
        if backend.vector_cache.get(key) is None and not backend.vector_cache.loading:
            backend.search(again)
    return entry


def test_vector_cache_answers_like_sql_and_never_serves_a_stale_copy(new_database: Any) -> None:
    """A recall scoped to one user ranks a copy of the user's vectors in process; the statement
    that fetches the candidates reads the scope's stamp, so any write to the scope, from this
    instance or another one, sends that recall to SQL: results always equal the SQL path's."""
    from datetime import timedelta

    from polymem._backend import NewRecord
    from polymem._postgres import PostgresBackend, cacheable
    from polymem._text import content_hash, terms

    url = new_database()
    backend, other = PostgresBackend(url), PostgresBackend(url + "&vector_cache_mb=0")
    backend.vector_cache.COOL = 0.0  # copy again right after a write (the default waits 5 s)
    rng = np.random.default_rng(11)
    dim = 32
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rows = []
    for u in range(3):
        for i in range(300 if u < 2 else 20):  # u2: too few memories for a copy to pay
            v = rng.normal(size=dim).astype(np.float32)
            expire = None if i % 5 else now + timedelta(days=1 + i % 3)  # some expire between the queries
            rec = polymem.MemoryRecord(memory_id=f"{u}-{i}", content=f"note {i} about tea {i % 7}", user_id=f"u{u}",
                                       created_at=now, updated_at=now, embedding_model="m", namespace="default",
                                       category="fact", source="import", importance=0.5, agent_id=None,
                                       session_id=None, expire_at=expire)
            rows.append({"record": rec, "versions": [rec.to_dict()], "vector": v, "idempotency_key": None,
                         "content_hash": content_hash(rec.content), "terms": terms(rec.content)})
    assert backend.import_rows("default", rows, [], now).imported == 620
    q = rng.normal(size=dim).astype(np.float32)

    def request(user: str, when: datetime, text: bool = True) -> SearchRequest:
        return SearchRequest("default", user, None, None, None, q, "m", tuple(terms("tea 3")) if text else (),
                             when, 20)

    def same(req: SearchRequest) -> list[tuple[Any, ...]]:
        got = [(c.id, c.similarity, c.text_rank) for c in backend.search(req)]
        assert got
        assert got == [(c.id, c.similarity, c.text_rank) for c in backend._call(backend.plans.search, req)]
        return got

    try:
        key = cacheable(request("u0", now))
        assert key is not None
        same(request("u0", now))  # a miss: SQL, and a copy made off the read path
        entry = _wait_cached(backend, key)
        later = now + timedelta(days=2)  # some rows expired since the copy was made
        for when in (now, later):
            for text in (True, False):
                assert len(same(request("u0", when, text))) >= 20
        assert backend.vector_cache.get(key) is entry
        # Recall bookkeeping changes no watched column: the copy stays good.
        backend.reinforce("default", [(c.id, 0.1) for c in backend.search(request("u0", now))], now)
        backend.flush()
        same(request("u0", now))
        assert backend.vector_cache.get(key) is entry

        def top() -> str:
            return max(same(request("u0", now, False)), key=lambda c: c[1])[0]  # type: ignore[no-any-return]

        target = q / np.linalg.norm(q)
        rec = polymem.MemoryRecord(memory_id="new", content="new note", user_id="u0", created_at=now,
                                   updated_at=now, embedding_model="m", namespace="default", category="fact",
                                   source="api", importance=0.5, agent_id=None, session_id=None)
        imp = polymem.MemoryRecord(memory_id="imp", content="imported note", user_id="u0", created_at=now,
                                   updated_at=now, embedding_model="m", namespace="default", category="fact",
                                   source="import", importance=0.5, agent_id=None, session_id=None)
        imported = {"record": imp, "versions": [imp.to_dict()], "vector": target, "idempotency_key": None,
                    "content_hash": content_hash(imp.content), "terms": terms(imp.content)}
        writes: list[tuple[Any, Any]] = [
            (lambda: other.insert(Insert([NewRecord(rec, target, content_hash(rec.content), None,
                                             tuple(terms(rec.content)))], now)), lambda old, new: new == "new"),
            (lambda: other.delete("default", "new"), lambda old, new: new != "new"),
            (lambda: other.update(Update("default", top(), {"status": "archived"}, None, now)),
             lambda old, new: new != old),
            (lambda: other.update(Update("default", top(), {"expire_at": now - timedelta(days=1)}, None, now)),
             lambda old, new: new != old),
            (lambda: other.set_vectors("default", [("0-7", target)], "m"), lambda old, new: new == "0-7"),
            (lambda: backend.update(Update("default", "0-7", {"status": "archived"}, None, now)),
             lambda old, new: new != "0-7"),
            # An import (another statement: INSERT ... SELECT from a COPY), a content edit with its new
            # vector (as consolidation and `update` write it), archived again.
            (lambda: other.import_rows("default", [imported], [], now), lambda old, new: new == "imp"),
            (lambda: other.update(Update("default", "imp", {"content": "imp moved"}, None, now, -target, "m",
                                  content_hash("imp moved"), tuple(terms("imp moved")))),
             lambda old, new: new != "imp"),
            (lambda: other.update(Update("default", "0-9", {"content": "closest now"}, None, now, target, "m",
                                  content_hash("closest now"), tuple(terms("closest now")))),
             lambda old, new: new == "0-9"),
            (lambda: other.update(Update("default", "0-9", {"status": "archived"}, None, now)),
             lambda old, new: new != "0-9"),
        ]
        for write, expected in writes:
            copy = _wait_cached(backend, key)
            before = top()  # from the copy
            assert backend.vector_cache.get(key) is copy
            write()
            after = top()  # the copy is found stale by the statement that would have used it
            assert expected(before, after), (before, after)
            assert backend.vector_cache.get(key) is not copy
        # The other users were never touched by those writes.
        same(request("u1", now))
        _wait_cached(backend, ("default", "u1", "m"))
        same(request("u1", now))
        same(request("u2", now))
        backend._load.shutdown(wait=True)  # every copy made or given up
        backend._load = None
        assert backend.vector_cache.get(("default", "u2", "m")) is None and ("default", "u2", "m") in backend.vector_cache.skip
        other.search(request("u1", now))
        other.search(request("u1", now))
        assert other.vector_cache.entries == {} and not other.vector_cache.loading  # vector_cache_mb=0: off
    finally:
        backend.close()
        other.close()


def _new_record(memory_id: str, user: str, vector: np.ndarray, *, model: str = "bulk", status: str = "active") -> Any:
    from polymem._backend import NewRecord
    from polymem._text import content_hash, terms

    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rec = polymem.MemoryRecord(memory_id=memory_id, content=f"saved {memory_id}", user_id=user, created_at=now,
                               updated_at=now, embedding_model=model, namespace="default", category="fact",
                               source="api", importance=0.5, agent_id=None, session_id=None, status=status)
    return NewRecord(rec, vector, content_hash(rec.content), None, tuple(terms(rec.content)))


def _cached_scope(backend: Any) -> tuple[SearchRequest, tuple[str, str, str], np.ndarray, Any]:
    """900 rows in three users, and the process's copy of u1's vectors: the request that made it,
    its key, the direction of its query (as a unit vector) and the copy."""
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    backend.import_rows("default", _rows(900), [], now)
    q = np.random.default_rng(5).normal(size=16).astype(np.float32)
    req = SearchRequest("default", "u1", None, None, None, q, "bulk", (), now, 10)
    key = ("default", "u1", "bulk")
    backend.search(req)
    return req, key, q / np.linalg.norm(q), _wait_cached(backend, key, 16)


def test_a_save_in_this_process_brings_its_copy_of_the_scope_up_to_date(pg_url: str) -> None:
    """An agent that saves and then recalls keeps recalling from the copy: the insert holds the
    scope's stamp, so the copy as of the stamp before it plus the insert's rows is the scope after it."""
    from polymem._postgres import PostgresBackend

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        req, key, target, copy = _cached_scope(backend)
        # One batch: two memories closer than any, an archived one, and one of another user.
        backend.insert(Insert([_new_record("near", "u1", target), _new_record("gone", "u1", target, status="archived"),
                        _new_record("theirs", "u2", target), _new_record("near-again", "u1", target)], now))
        grown = backend.vector_cache.get(key)
        assert grown is not None and grown is not copy and grown.stamp != copy.stamp
        assert len(grown.ids) == len(copy.ids) + 2  # "near" and "near-again": u1's active rows
        assert len(copy.ids) == 300  # the copy a search may still be reading is unchanged
        found = backend.search(req)
        assert backend.vector_cache.get(key) is grown  # answered from the copy, not found stale
        assert [(c.id, c.similarity) for c in found] == [
            (c.id, c.similarity) for c in backend._call(backend.plans.search, req)]
        assert max(found, key=lambda c: c.similarity or -1).id in {"near", "near-again"}
        backend.insert(Insert([_new_record(f"more-{i}", "u1", -target) for i in range(3)], now))
        assert backend.vector_cache.get(key).full is grown.full  # room to spare: no copy of the scope
    finally:
        backend.close()


def test_a_copy_does_not_catch_up_past_a_write_of_another_instance(pg_url: str) -> None:
    from polymem._postgres import PostgresBackend

    backend, other = PostgresBackend(pg_url), PostgresBackend(pg_url + "&vector_cache_mb=0")
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        req, key, target, copy = _cached_scope(backend)
        other.insert(Insert([_new_record("elsewhere", "u1", target)], now))
        backend.insert(Insert([_new_record("here", "u1", -target)], now))
        assert backend.vector_cache.get(key) is copy  # not grown: its stamp was not the one before the insert
        found = backend.search(req)
        assert max(found, key=lambda c: c.similarity or -1).id == "elsewhere"
        assert backend.vector_cache.get(key) is None  # found stale
    finally:
        backend.close()
        other.close()


def test_a_copy_grown_past_the_budget_makes_room() -> None:
    from polymem._postgres import ScopeVectors, ScopeWrites, VectorCache

    def copy(rows: int, stamp: int) -> ScopeVectors:
        return ScopeVectors(stamp, np.arange(rows, dtype=np.int64), np.zeros((rows, 8), np.int8),
                            np.ones(rows, np.float32), np.zeros(rows, np.float32), np.ones(rows, np.float32),
                            np.full(rows, np.inf))

    cache = VectorCache(copy(1000, 1).nbytes * 2)
    for user, used in (("a", 1.0), ("b", 2.0)):
        cache.put(("ns", user, "m"), copy(1000, 1))
        cache.entries[("ns", user, "m")].used = used
    writes = ScopeWrites(frozenset({("ns", "b")}), {("ns", "b"): 1}, {("ns", "b"): 2},
                         [("ns", "b", "m", 5000, np.ones(8, np.float32), np.inf)])
    cache.catch_up(writes)
    grown = cache.get(("ns", "b", "m"))
    assert grown is not None and grown.stamp == 2 and int(grown.ids[-1]) == 5000
    assert cache.get(("ns", "a", "m")) is None  # the least recently used copy made room
    assert cache.used_bytes == grown.nbytes <= cache.max_bytes


def test_async_save_brings_its_copy_up_to_date(pg_url: str) -> None:
    import asyncio

    from polymem._postgres_async import AsyncPostgresBackend

    async def main() -> None:
        backend = AsyncPostgresBackend(pg_url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        try:
            await backend.import_rows("default", _rows(900), [], now)
            q = np.random.default_rng(5).normal(size=16).astype(np.float32)
            req = SearchRequest("default", "u1", None, None, None, q, "bulk", (), now, 10)
            await backend.search(req)
            await backend.aflush()
            copy = backend.vector_cache.get(("default", "u1", "bulk"))
            assert copy is not None
            await backend.insert(Insert([_new_record("near", "u1", q / np.linalg.norm(q))], now))
            grown = backend.vector_cache.get(("default", "u1", "bulk"))
            assert grown is not None and len(grown.ids) == len(copy.ids) + 1
            found = await backend.search(req)
            assert max(found, key=lambda c: c.similarity or -1).id == "near" and backend.vector_cache.get(("default", "u1", "bulk")) is grown
        finally:
            await backend.aclose()

    asyncio.run(main())


def test_vector_cache_stays_within_its_budget() -> None:
    """Copies never hold more than the budget; one load at a time; a copy that found no room, or a
    scope too small or too big, is not loaded again at once (no reload on every recall)."""
    from polymem._postgres import ScopeVectors, VectorCache

    def copy(rows: int, dim: int = 8) -> ScopeVectors:
        return ScopeVectors(1, np.zeros(rows, np.int64), np.zeros((rows, dim), np.int8), np.zeros(rows, np.float32),
                            np.zeros(rows, np.float32), np.zeros(rows, np.float32), np.zeros(rows))

    one = copy(1000).nbytes
    cache = VectorCache(int(one * 2.5))
    a, b, c = ("ns", "a", "m"), ("ns", "b", "m"), ("ns", "c", "m")
    assert cache.claim(a) and not cache.claim(b)  # one load at a time
    cache.put(a, copy(1000))
    assert cache.claim(b)
    cache.put(b, copy(1000))
    assert cache.claim(c)
    cache.put(c, copy(1000))  # no room: both copies are in use
    assert cache.get(c) is None and cache.used_bytes == 2 * one <= cache.max_bytes
    assert not cache.claim(c)  # not loaded again on the next recall
    for e in cache.entries.values():
        e.used -= cache.IDLE + 1  # both idle now: the next copy may take the room of the older
    cache.skip.clear()
    assert cache.claim(c)
    cache.put(c, copy(1000))
    assert cache.get(c) is not None and len(cache.entries) == 2 and cache.used_bytes == 2 * one
    assert sum(e.nbytes for e in cache.entries.values()) == cache.used_bytes
    cache.drop(c, 1)
    assert cache.used_bytes == one and not cache.claim(c)  # stale: SQL for a while
    assert cache.claim(("ns", "big", "m"))
    cache.put(("ns", "big", "m"), copy(3000))  # larger than the whole budget
    assert cache.used_bytes == one and not cache.claim(("ns", "big", "m"))
    assert not VectorCache(0).claim(a)


def test_async_vector_cache_answers_like_sql(pg_url: str) -> None:
    import asyncio

    from polymem._postgres_async import AsyncPostgresBackend

    async def main() -> None:
        backend = AsyncPostgresBackend(pg_url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        try:
            assert (await backend.import_rows("default", _rows(900, dim=16), [], now)).imported == 900
            q = np.random.default_rng(5).normal(size=16).astype(np.float32)
            req = SearchRequest("default", "u1", None, None, None, q, "bulk", ("bulk",), now, 15)

            async def both() -> list[Any]:
                got = [(c.id, c.similarity, c.text_rank) for c in await backend.search(req)]
                assert got == [(c.id, c.similarity, c.text_rank) for c in await backend._call(backend.plans.search, req)]
                return got

            await both()
            await backend.aflush()  # the copy is made by a task
            copy = backend.vector_cache.get(("default", "u1", "bulk"))
            assert copy is not None
            first = await both()
            await backend.delete("default", max(first, key=lambda c: c[1])[0])
            assert (await both()) != first
            assert backend.vector_cache.get(("default", "u1", "bulk")) is not copy
        finally:
            await backend.aclose()

    asyncio.run(main())


def test_models_never_mix(pg_url: str) -> None:
    mem = pg_memory(pg_url, HashEmbedder())
    try:
        mem.save("I like blue", user_id="ann")
        other = pg_memory(pg_url, polymem.testing.local_embedder())
        try:
            [hit] = other.recall("blue", user_id="ann")
            assert hit.similarity is None  # found by its text; another model's vector is never compared
            assert other.reembed() == 1
            assert other.recall("blue", user_id="ann")[0].similarity is not None
        finally:
            other.close()
    finally:
        mem.close()


class HalfHashEmbedder(HashEmbedder):
    """HashEmbedder's model id with half its dimensions (a misconfigured process)."""

    def __init__(self) -> None:
        super().__init__()
        self.dimension = 32

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [vector[:32] for vector in super().embed(texts)]


def test_vectors_of_a_model_id_with_another_dimension_are_refused_at_write(pg_url: str) -> None:
    mem = pg_memory(pg_url, HashEmbedder())
    try:
        mem.save("I like blue", user_id="ann")
        other = pg_memory(pg_url, HalfHashEmbedder())
        try:
            with pytest.raises(polymem.DimensionMismatchError):
                other.save("I like red", user_id="ann")
        finally:
            other.close()
        assert [h.memory.content for h in mem.recall("blue", user_id="ann")] == ["I like blue"]
    finally:
        mem.close()


# -- concurrency ------------------------------------------------------------------------------------------
def _threads(n: int, target: Any) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_compare_and_set_updates_lose_nothing(pg_url: str) -> None:
    stores = [pg_memory(pg_url) for _ in range(4)]
    try:
        rec = stores[0].save("counter", user_id="ann", metadata={"n": 0})

        def bump(i: int) -> None:
            mem = stores[i]
            for _ in range(10):
                while True:
                    cur = mem.get(rec.memory_id)
                    try:
                        mem.update(rec.memory_id, metadata={"n": cur.metadata["n"] + 1}, expected_version=cur.version)
                        break
                    except polymem.VersionConflictError:
                        continue

        _threads(4, bump)
        final = stores[0].get(rec.memory_id)
        assert final.metadata["n"] == 40 and final.version == 41
        assert [v.version for v in stores[0].history(rec.memory_id)] == list(range(1, 42))
    finally:
        for s in stores:
            s.close()


def test_concurrent_unconditional_updates_get_distinct_versions(pg_url: str) -> None:
    stores = [pg_memory(pg_url) for _ in range(4)]
    try:
        rec = stores[0].save("start", user_id="ann")
        _threads(4, lambda i: [stores[i].update(rec.memory_id, content=f"writer {i} step {k}") for k in range(5)])
        history = stores[0].history(rec.memory_id)
        assert [v.version for v in history] == list(range(1, 22))
        assert len({v.content for v in history}) == 21
    finally:
        for s in stores:
            s.close()


def test_concurrent_recalls_count_every_access(pg_url: str) -> None:
    clock = FakeClock()
    stores = [pg_memory(pg_url, clock=clock) for _ in range(4)]
    try:
        rec = stores[0].save("I like blue", user_id="ann")
        _threads(4, lambda i: [stores[i].recall("blue", user_id="ann") for _ in range(10)])
        for s in stores:
            s.flush()
        after = stores[0].get(rec.memory_id)
        assert after.access_count == 40
        assert after.importance == 1.0  # 0.6 + 40 * 0.1, capped
    finally:
        for s in stores:
            s.close()


_SAVER = textwrap.dedent("""
    import sys
    import polymem
    from polymem._engine import DEFAULT_MAX_CONTENT_CHARS
    from polymem._memory import _engine
    from polymem._postgres import PostgresBackend
    mem = polymem.Memory(PostgresBackend(sys.argv[1]), _engine("default", None, None, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS))
    for i in range(25):
        mem.save(f"fact number {i}", user_id="ann")
        mem.save(f"keyed {i} from {sys.argv[2]}", user_id="ann", idempotency_key=f"k{i}")
    mem.close()
""")


def test_idempotent_saves_from_several_processes_never_duplicate(pg_url: str) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _SAVER, pg_url, str(n)]) for n in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    mem = pg_memory(pg_url)
    try:
        contents = [r.content for r in mem.list(user_id="ann", limit=1000)]
        assert len(contents) == 50
        assert sorted(c for c in contents if c.startswith("fact")) == sorted(f"fact number {i}" for i in range(25))
    finally:
        mem.close()


def test_concurrent_consolidations_merge_each_duplicate_once(pg_url: str) -> None:
    stores = [pg_memory(pg_url) for _ in range(3)]
    try:
        keepers = []
        for i in range(6):
            keepers.append(stores[0].save(f"I like colour {i}", user_id="ann", category="preference"))
            for dup in range(3):
                stores[0].save(f"I like colour {i}" + "." * (dup + 1), user_id="ann", category="preference")
        _threads(3, lambda i: stores[i].consolidate())
        active = stores[0].list(user_id="ann", limit=1000)
        assert sorted(r.memory_id for r in active) == sorted(k.memory_id for k in keepers)
        for keeper in active:
            merged = keeper.metadata["merged_from"]
            assert len(merged) == 3 and len(set(merged)) == 3
        archived = stores[0].list(user_id="ann", status="archived", limit=1000)
        assert len(archived) == 18 and all(r.version == 2 for r in archived)
    finally:
        for s in stores:
            s.close()


# -- migration between backends --------------------------------------------------------------------------
def _records(snapshot: bytes) -> list[Any]:
    lines = [json.loads(line) for line in snapshot.splitlines()]
    return [{k: v for k, v in line.items() if k != "created_at"} for line in lines]


def test_snapshot_round_trip_sqlite_to_postgres_and_back_is_exact(pg_url: str, tmp_path: Any) -> None:
    clock = FakeClock()
    embedder = HashEmbedder()
    eng = lambda: _engine("default", embedder, clock, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS)  # noqa: E731
    sqlite = polymem.Memory(polymem._memory.make_backend(f"sqlite:///{tmp_path}/a.db"), eng())
    pg = pg_memory(pg_url, embedder, clock)
    back = polymem.Memory(polymem._memory.make_backend(f"sqlite:///{tmp_path}/b.db"), eng())
    try:
        recs = [sqlite.save(f"Fact {i}: I like colour {c} 我喜欢蓝色", user_id=u, category="preference",
                            metadata={"i": i, "f": 0.1 + 0.2, "nested": {"a": [1, None, True]}}, entities=[c],
                            idempotency_key=f"key-{i}")
                for i, (u, c) in enumerate([("ann", "blue"), ("ann", "red"), ("bob", "green")])]
        clock.advance(hours=1)
        sqlite.update(recs[0].memory_id, content="Fact: I like black now")
        sqlite.recall("colour", user_id="ann")
        sqlite.flush()
        ses = sqlite.session("s1", user_id="ann", max_tokens=None)
        first = ses.add("user", "hello 你好", metadata={"x": [1, 2]})
        ses.add("assistant", "hi", tool_calls=[{"id": "c1", "name": "f", "arguments": "{}"}])
        ses.evict([first.message_id])
        original = io.BytesIO()
        sqlite.export_snapshot(original)
        original.seek(0)
        assert pg.import_snapshot(original).imported == 3
        via_pg = io.BytesIO()
        pg.export_snapshot(via_pg)
        assert _records(via_pg.getvalue()) == _records(original.getvalue())
        via_pg.seek(0)
        assert back.import_snapshot(via_pg).imported == 3
        again = io.BytesIO()
        back.export_snapshot(again)
        assert _records(again.getvalue()) == _records(original.getvalue())
        for rec in sqlite.list(limit=100):
            assert pg.get(rec.memory_id) == rec and pg.history(rec.memory_id) == sqlite.history(rec.memory_id)
        assert [h.memory.memory_id for h in pg.recall("colour red", user_id="ann")] == \
            [h.memory.memory_id for h in back.recall("colour red", user_id="ann")]
    finally:
        for m in (sqlite, pg, back):
            m.close()


def _rows(n: int, start: int = 0, dim: int = 16) -> list[dict[str, Any]]:
    from polymem._text import content_hash, terms

    rng = np.random.default_rng(start)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    out = []
    for i in range(start, start + n):
        v = rng.normal(size=dim).astype(np.float32)
        rec = polymem.MemoryRecord(memory_id=f"b-{i}", content=f"bulk memory {i}", user_id=f"u{i % 3}",
                                   created_at=now, updated_at=now, embedding_model="bulk", namespace="default",
                                   category="fact", source="import", importance=0.5, agent_id=None, session_id=None)
        out.append({"record": rec, "versions": [rec.to_dict()], "vector": v / np.linalg.norm(v),
                    "idempotency_key": None, "content_hash": content_hash(rec.content), "terms": terms(rec.content)})
    return out


def test_bulk_loads_build_the_hnsw_index_once_after_the_load(pg_url: str) -> None:
    import psycopg

    from polymem._postgres import PostgresBackend, index_name

    backend = PostgresBackend(pg_url)
    backend.plans.bulk_rows = 50  # an import this large loads without the index, built after it
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def has_index() -> bool:
        with psycopg.connect(backend.conninfo) as conn:
            return conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                                (index_name("bulk"),)).fetchone() is not None

    try:
        assert backend.import_rows("default", _rows(10), [], now).imported == 10 and has_index()
        report = backend.import_rows("default", _rows(60, 10) + _rows(5), [], now)
        assert (report.imported, report.duplicates) == (60, 5)
        assert backend.build_vector_indexes(timeout=60) and has_index()
        batches = [_rows(40, 100), _rows(40, 140), _rows(3)]
        report = backend.bulk_import("default", batches, now)
        assert (report.imported, report.duplicates) == (80, 3)
        assert backend.build_vector_indexes(timeout=60) and has_index()
        assert backend.stats("default")["memories"] == 150
        hits = backend.search(SearchRequest("default", None, None, None, None, batches[0][20]["vector"], "bulk",
                                            (), now, 5))
        assert "b-120" in {c.id for c in hits}
    finally:
        backend.close()


def test_a_bulk_import_leaves_the_full_text_index_taking_each_write_at_once(pg_url: str) -> None:
    """Into a store holding more rows than it loads (which keeps its full-text index: see
    test_pg_index_build), the load gathers full-text entries in GIN's pending list; afterwards none
    are left there and the index is back to taking writes one by one, whether or not the vector
    indexes are built."""
    import psycopg

    from polymem._postgres import PostgresBackend

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        backend.import_rows("default", _rows(200, 1000), [], now)
        for build_index, start in ((False, 0), (True, 100)):
            backend.bulk_import("default", [_rows(40, start), _rows(40, start + 40)], now, build_index=build_index)
            with psycopg.connect(backend.conninfo, autocommit=True) as conn:
                options = conn.execute(
                    "SELECT reloptions FROM pg_class WHERE relname = 'polymem_memories_tsv'").fetchone()[0]
                assert "fastupdate=off" in options
                assert conn.execute("SELECT gin_clean_pending_list('polymem_memories_tsv'::regclass)").fetchone()[0] == 0
        assert backend.stats("default")["memories"] == 360
    finally:
        backend.close()


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_bonuses_of_recalls_in_quick_succession_are_written_together_and_each_counted(pg_url: str, driver: str) -> None:
    import asyncio

    from polymem._postgres import PostgresBackend
    from polymem._postgres_async import AsyncPostgresBackend

    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    writes: list[int] = []

    def counting(plans: Any) -> None:
        write = plans.reinforce_batch

        def reinforce_batch(batch: Any) -> Any:
            writes.append(len(batch))
            return write(batch)

        plans.reinforce_batch = reinforce_batch

    async def run_async() -> list[polymem.MemoryRecord]:
        backend = AsyncPostgresBackend(pg_url)
        try:
            await backend.import_rows("default", _rows(3), [], now)
            counting(backend.plans)
            for _ in range(20):
                await backend.reinforce("default", [("b-0", 0.01), ("b-1", 0.01)], now)
            await backend.aflush()
            return await backend.get("default", ["b-0", "b-1"])
        finally:
            await backend.aclose()

    def run_sync() -> list[polymem.MemoryRecord]:
        backend = PostgresBackend(pg_url)
        try:
            backend.import_rows("default", _rows(3), [], now)
            counting(backend.plans)
            for _ in range(20):
                backend.reinforce("default", [("b-0", 0.01), ("b-1", 0.01)], now)
            backend.flush()
            return backend.get("default", ["b-0", "b-1"])
        finally:
            backend.close()

    records = asyncio.run(run_async()) if driver == "async" else run_sync()
    assert sorted(r.access_count for r in records) == [20, 20]
    assert sum(writes) == 20 and len(writes) <= 2  # not one transaction per recall


def test_recall_bookkeeping_updates_rows_in_place(pg_url: str) -> None:
    """Reinforcement touches no indexed column and pages keep 20% free: the row version stays
    on its page (a HOT update), so no index (HNSW, GIN) is written on the read path's behalf."""
    import psycopg

    from polymem._postgres import PostgresBackend

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        backend.import_rows("default", _rows(300), [], now)

        def pages() -> dict[str, str]:
            with psycopg.connect(backend.conninfo) as conn:
                return {r[0]: r[1] for r in conn.execute(
                    "SELECT memory_id, (ctid::text::point)[0]::text FROM polymem_memories").fetchall()}

        before = pages()
        ids = [f"b-{i}" for i in range(0, 300, 7)]
        backend.reinforce("default", [(i, 0.05) for i in ids], now)
        backend.flush()
        after = pages()
        assert all(after[i] == before[i] for i in ids)
        with psycopg.connect(backend.conninfo) as conn:
            options = conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'polymem_memories'").fetchone()[0]
            assert "fillfactor=80" in options
    finally:
        backend.close()


def test_the_full_text_index_takes_each_write_at_once(pg_url: str) -> None:
    """No GIN pending list: a full-text query never reads, entry by entry, what a batch of saves
    left unmerged."""
    import psycopg

    mem = pg_memory(pg_url)
    try:
        mem.save_many([polymem.MemoryDraft(f"note {i} about green tea") for i in range(300)], user_id="u")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            options = conn.execute("SELECT reloptions FROM pg_class WHERE relname = 'polymem_memories_tsv'").fetchone()[0]
            assert "fastupdate=off" in options
            assert conn.execute("SELECT gin_clean_pending_list('polymem_memories_tsv'::regclass)").fetchone()[0] == 0
        assert len(mem.recall("green tea", user_id="u", top_k=5)) == 5
    finally:
        mem.close()


def test_a_batch_that_grows_the_table_by_a_tenth_brings_the_planner_statistics_up_to_date(new_database: Any) -> None:
    import psycopg

    from polymem._postgres import ANALYZE_ROWS

    url = new_database()

    def planned_rows() -> float:
        with psycopg.connect(url) as conn:
            return float(conn.execute(
                "SELECT reltuples FROM pg_class WHERE relname = 'polymem_memories'").fetchone()[0])

    mem = pg_memory(url)
    try:
        mem.save_many([polymem.MemoryDraft(f"small batch {i}") for i in range(10)], user_id="u")
        assert planned_rows() < 0  # never analyzed: a small batch leaves it to autovacuum
        mem.save_many([polymem.MemoryDraft(f"large batch {i}") for i in range(ANALYZE_ROWS)], user_id="u")
        assert planned_rows() == ANALYZE_ROWS + 10
        mem.save_many([polymem.MemoryDraft(f"another small batch {i}") for i in range(ANALYZE_ROWS // 20)],
                      user_id="u")
        assert planned_rows() == ANALYZE_ROWS + 10
    finally:
        mem.close()


def test_terms_most_memories_hold_are_left_out_of_the_full_text_search_beside_a_vector_search(pg_url: str) -> None:
    """The planner's statistics (ANALYZE after a large batch) tell which terms are common; the
    full-text statement then matches only the others, as on SQLite (`selective_terms`)."""
    from polymem._backend import COMMON_TERM_DOCS
    from polymem._postgres import search_statements

    mem = pg_memory(pg_url, HashEmbedder())
    try:
        mem.save_many([polymem.MemoryDraft(f"green tea note {i}") for i in range(COMMON_TERM_DOCS + 200)],
                      user_id="u")
        hits = mem.recall("green tea 17", user_id="u", top_k=3)
        assert hits[0].memory.content == "green tea note 17"
        backend: Any = mem.backend
        assert {"green", "tea"} <= backend.plans.term_statistics.common.keys()
        request = SearchRequest("default", "u", None, None, None, np.ones(64, dtype=np.float32),
                                HashEmbedder().model_id, ("green", "tea", "17"), datetime.now(timezone.utc), 10)
        statements, _, _ = search_statements(backend.plans, backend.vector_cache, request)
        ranked = statements[-1].params[1]
        assert "17" in ranked and "green" not in ranked and "tea" not in ranked
    finally:
        mem.close()


def test_term_statistics_count_only_the_lexemes_more_memories_hold_than_the_limit() -> None:
    from polymem._backend import COMMON_TERM_DOCS
    from polymem._postgres import TermStatistics

    statistics = TermStatistics()
    assert statistics.due()
    statistics.update((["tea", "kyoto"], [0.5, 0.0001, 0.0001, 0.5, 0.0], 4 * COMMON_TERM_DOCS))
    assert statistics.common == {"tea": 2 * COMMON_TERM_DOCS}
    assert statistics.rows == 4 * COMMON_TERM_DOCS
    assert statistics.documents(["tea", "kyoto", "unseen"]) == {"tea": 2 * COMMON_TERM_DOCS, "kyoto": 1, "unseen": 1}
    assert not statistics.due()
    statistics.update((None, None, -1))  # never analyzed
    assert statistics.common == {} and statistics.rows == 0


def test_the_scope_lexeme_does_not_rank_a_short_memory_first(pg_url: str) -> None:
    """The twin of SQLite's scope column outside BM25: the scope lexeme selects a user's rows
    but adds nothing to their rank, so a one-word memory, whose only term sits right next to the
    scope lexeme, does not outrank a longer one matching more of the query."""
    from polymem._postgres import PostgresBackend
    from polymem._text import terms

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        with polymem.open(pg_url, embedder=None) as mem:
            short = mem.save("Jazz", user_id="u").memory_id
            # Ranked with the scope lexeme (before format 2): 0.042 for this one, 0.050 for "Jazz".
            long = mem.save("After a long week at work the user went out for the evening with friends to hear "
                            "some live jazz concerts", user_id="u").memory_id
            mem.save("Jazz concerts", user_id="someone else")
        req = SearchRequest("default", "u", None, None, None, None, None, tuple(terms("jazz concerts")), now, 10)
        ranks = {c.memory_id: c.text_rank for c in backend.search(req)}
        assert set(ranks) == {short, long}  # the scope still selects: the other user's memory is not found
        assert ranks[long] == 1.0 and ranks[short] is not None and 0 < ranks[short] < ranks[long]
    finally:
        backend.close()


def test_full_text_built_by_another_analyzer_is_rebuilt_by_migrate(pg_url: str) -> None:
    import psycopg

    from polymem._postgres import TSV_FORMAT, migrate, namespace_lexeme, scope_lexeme
    from polymem._text import analyzer_id

    with polymem.open(pg_url, embedder=None) as mem:
        memory_id = mem.save("The user was inspired by jazz concerts", user_id="u").memory_id
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE polymem_meta SET value = 'light-stemmer' WHERE key = 'analyzer'")
        conn.execute("UPDATE polymem_memories SET tsv = 'stale'::tsvector")
    migrate(pg_url)
    with polymem.open(pg_url, embedder=None) as mem:
        assert [hit.memory.memory_id for hit in mem.recall("inspiration", user_id="u")] == [memory_id]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM polymem_meta WHERE key = 'analyzer'").fetchone()[0] == analyzer_id("english")
        assert conn.execute("SELECT value FROM polymem_meta WHERE key = 'tsv_format'").fetchone()[0] == TSV_FORMAT
        assert [w for w in conn.execute("SELECT tsv::text FROM polymem_memories").fetchone()[0].split()
                if w.endswith("A")] == [f"'{namespace_lexeme('default')}':1A", f"'{scope_lexeme('default', 'u')}':2A"]


def test_the_full_text_rebuild_is_set_based_and_leaves_every_row_searchable(pg_url: str) -> None:
    """migrate rebuilds the tsv with one UPDATE from a staging table, the indexes dropped and built
    again: afterwards every row holds the tsv its content gives (rows written while the rebuild
    staged the others included), every index is back and valid, the scope stamps are untouched
    (a cached copy of vectors stays good) and their trigger is on again."""
    import psycopg

    from polymem._backend import NewRecord
    from polymem._postgres import PostgresBackend, _schema, scope_lexeme, tsvector_literal
    from polymem._text import content_hash, terms

    backend = PostgresBackend(pg_url)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    try:
        assert backend.import_rows("default", _rows(900, dim=16), [], now).imported == 900
    finally:
        backend.close()
    indexes = "SELECT c.relname, pg_get_indexdef(x.indexrelid), x.indisvalid FROM pg_index x JOIN pg_class c " \
              "ON c.oid = x.indexrelid WHERE x.indrelid = 'polymem_memories'::regclass ORDER BY 1"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        before = conn.execute(indexes).fetchall()
        stamps = conn.execute("SELECT * FROM polymem_scope_stamps ORDER BY 1, 2").fetchall()
        assert any("hnsw" in d for _, d, _ in before) and any("gin" in d for _, d, _ in before)
        conn.execute("UPDATE polymem_meta SET value = '1' WHERE key = 'tsv_format'")
        conn.execute("UPDATE polymem_memories SET tsv = 'stale'::tsvector")
        stamps_stale = conn.execute("SELECT * FROM polymem_scope_stamps ORDER BY 1, 2").fetchall()
        assert stamps_stale == stamps  # the tsv is not watched

    # While the first rows are staged, another connection edits one of them and adds a row.
    extra = polymem.MemoryRecord(memory_id="late", content="written during the rebuild", user_id="u1",
                                 created_at=now, updated_at=now, embedding_model=None, namespace="default",
                                 category="fact", source="api", importance=0.5, agent_id=None, session_id=None)
    real_rebuild = _schema.rebuild_tsv

    def rebuild_with_writes(language: str) -> Any:
        plan = real_rebuild(language)
        send = None
        while True:
            try:
                q = plan.send(send)
            except StopIteration as stop:
                return stop.value
            if "LOCK TABLE" in str(q.sql):
                writer = PostgresBackend(pg_url, auto_migrate=False)
                try:
                    writer.update(Update("default", "b-5", {"content": "edited meanwhile"}, None, now, None, None,
                                  content_hash("edited meanwhile"), tuple(terms("edited meanwhile"))))
                    writer.insert(Insert([NewRecord(extra, None, content_hash(extra.content), None,
                                             tuple(terms(extra.content)))], now))
                finally:
                    writer.close()
            send = yield q

    _schema._REBUILD_BATCH, batch = 250, _schema._REBUILD_BATCH
    _schema.rebuild_tsv = rebuild_with_writes  # type: ignore[assignment]
    try:
        _schema.migrate(pg_url)
    finally:
        _schema.rebuild_tsv = real_rebuild
        _schema._REBUILD_BATCH = batch
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(indexes).fetchall() == before  # same names, same definitions, all valid
        assert conn.execute("SELECT value FROM polymem_meta WHERE key = 'tsv_format'").fetchone()[0] == "2"
        assert conn.execute("SELECT tgenabled FROM pg_trigger WHERE tgname = 'polymem_stamp_update'").fetchone()[0] == "O"
        rows = conn.execute("SELECT memory_id, namespace, user_id, content, tsv::text FROM polymem_memories").fetchall()
        assert len(rows) == 901
        for memory_id, namespace, user_id, content, tsv in rows:
            expected = conn.execute("SELECT %s::tsvector::text",
                                    (tsvector_literal(namespace, user_id, terms(content)),)).fetchone()[0]
            assert tsv == expected, memory_id
        # the edit and the late row got theirs; the stamps moved only for those two writes' scopes
        assert conn.execute("SELECT count(*) FROM polymem_memories WHERE tsv @@ %s::tsquery",
                            (f"'{scope_lexeme('default', 'u2')}' & 'edit'",)).fetchone()[0] == 1
        after = dict(((n, u), s) for n, u, s in conn.execute("SELECT * FROM polymem_scope_stamps").fetchall())
        assert after[("default", "u0")] == dict(((n, u), s) for n, u, s in stamps)[("default", "u0")]
    backend = PostgresBackend(pg_url)
    try:
        for i in (0, 1, 2, 450, 899):
            req = SearchRequest("default", f"u{i % 3}", None, None, None, None, None, tuple(terms(f"memory {i}")),
                                now, 5)
            assert f"b-{i}" in {c.memory_id for c in backend.search(req)}
        req = SearchRequest("default", "u1", None, None, None, None, None, tuple(terms("rebuild")), now, 5)
        assert [c.memory_id for c in backend.search(req)] == ["late"]
        q = np.random.default_rng(3).normal(size=16).astype(np.float32)
        every = backend.search(SearchRequest("default", None, None, None, None, q, "bulk", (), now, 10))
        assert len(every) == 10  # HNSW over every user works again
        with psycopg.connect(pg_url, autocommit=True) as conn:
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM polymem_memories m WHERE m.embedding_model = 'bulk' "
                "ORDER BY (m.vector::vector(16)) <=> %s::vector(16) LIMIT 10", (str(q.tolist()),)).fetchall())
            assert "polymem_hnsw_" in plan
    finally:
        backend.close()


def test_a_cached_copy_whose_rows_are_too_close_to_tell_apart_leaves_the_search_to_sql() -> None:
    """The int8 copy only shortlists what it can prove holds the best rows; near-ties, or a
    zero query, go to SQL (None), and a copy that can tell sends the best rows to be measured."""
    from polymem._postgres import MAX_SHORTLIST, ScopeVectors, cached_statement
    from polymem._scan import quantize

    dim, rows = 32, MAX_SHORTLIST + 1_000
    rng = np.random.default_rng(5)
    q = rng.normal(size=dim).astype(np.float32)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def copy(vectors: np.ndarray) -> ScopeVectors:
        norms = np.linalg.norm(vectors, axis=1)
        codes, scales, lost = quantize(vectors / norms[:, None])
        return ScopeVectors(1, np.arange(rows, dtype=np.int64), codes, scales, lost, np.ones(rows, np.float32),
                            np.full(rows, np.inf))

    request = SearchRequest("default", "u", None, None, None, q, "m", (), now, 10)
    close = q + rng.normal(0, 1e-4, size=(rows, dim)).astype(np.float32)
    assert cached_statement(request, copy(close)) is None
    zero = SearchRequest("default", "u", None, None, None, np.zeros(dim, np.float32), "m", (), now, 10)
    spread = rng.normal(size=(rows, dim)).astype(np.float32)
    assert cached_statement(zero, copy(spread)) is None
    statement = cached_statement(request, copy(spread))
    assert statement is not None
    sent = set(next(p for p in statement.params if isinstance(p, list)))
    best = np.argsort(-(spread @ q) / np.linalg.norm(spread, axis=1))[:10]
    assert set(best.tolist()) <= sent


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_session_end_is_one_transaction_when_its_delete_fails(pg_url: str, driver: str) -> None:
    """The memories extracted by `end()` and the session's delete commit together, or not at all."""
    import asyncio

    import psycopg

    facts = ["My name is Ann Lee.", "I live in Leeds."]
    with polymem.open(pg_url, embedder=None) as mem:
        session = mem.session("chat", user_id="ann")
        for fact in facts:
            session.add("user", fact)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$ "
                     "LANGUAGE plpgsql")
        conn.execute("CREATE TRIGGER refuse BEFORE DELETE ON polymem_sessions FOR EACH ROW EXECUTE FUNCTION refuse()")

    async def end_async() -> None:
        async with polymem.open_async(pg_url, embedder=None) as amem:
            await amem.session("chat", user_id="ann").end()

    with pytest.raises(Exception, match="injected"):
        if driver == "sync":
            with polymem.open(pg_url, embedder=None) as mem:
                mem.session("chat", user_id="ann").end()
        else:
            asyncio.run(end_async())
    with polymem.open(pg_url, embedder=None) as mem:
        assert mem.list(user_id="ann") == []
        assert [s.session_id for s in mem.sessions(user_id="ann")] == ["chat"]


def test_a_german_store_stems_german_and_keeps_its_language(pg_url: str) -> None:
    import psycopg

    from polymem._text import analyzer_id

    with polymem.open(pg_url, embedder=None) as mem:  # English: "häusern" stays whole
        houses = mem.save("Die Kinder spielten in den Häusern", user_id="u").memory_id
        assert mem.recall("Haus", user_id="u") == []
    with polymem.open(pg_url, embedder=None, language="german") as mem:  # re-indexed in German
        assert [h.memory.memory_id for h in mem.recall("Wo spielt das Kind?", user_id="u")] == [houses]
    with polymem.open(pg_url, embedder=None) as mem:  # the store remembers its language
        assert mem.backend.language == "german"  # type: ignore[attr-defined]
        assert [h.memory.memory_id for h in mem.recall("Haus", user_id="u")] == [houses]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM polymem_meta WHERE key = 'analyzer'").fetchone()[0] == \
            analyzer_id("german")


def test_the_memories_declaring_a_validity_are_found_through_their_partial_indexes(pg_url: str) -> None:
    """A recall `valid_at` reads the memories whose metadata declares `valid_from` or `valid_to` in
    their version of that time: PostgreSQL finds them through two partial indexes holding only those,
    not by reading the scope (the planner's own choice, on a table of 3,000 memories)."""
    import psycopg

    clock = FakeClock()
    mem = polymem.open(pg_url, embedder=None, clock=clock, scoring=polymem.ScoringPolicy(reinforce=False))
    start = clock.now
    mem.save_many([polymem.MemoryDraft(f"note {i} about the garden") for i in range(3000)], user_id="ann")
    mem.save("I live in Paris", user_id="ann", valid_from=start - timedelta(days=300),
             valid_to=start + timedelta(days=60))
    mem.save("I live in Berlin", user_id="ann", valid_from=start + timedelta(days=60))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE polymem_memories")
    hits = mem.recall("Where do I live?", user_id="ann", valid_at=start + timedelta(days=20))
    assert [h.memory.content for h in hits] == ["I live in Paris"]
    mem.close()  # (a connection's index statistics are flushed by the time it ends)
    scans: dict[str, int] = {}
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _ in range(50):
            scans = dict(conn.execute("SELECT indexrelname, idx_scan FROM pg_stat_user_indexes "
                                      "WHERE indexrelname LIKE 'polymem_memories_valid_%'").fetchall())
            if len(scans) == 2 and all(scans.values()):
                break
            time.sleep(0.1)
            conn.execute("SELECT pg_stat_clear_snapshot()")
    assert set(scans) == {"polymem_memories_valid_from", "polymem_memories_valid_to"}
    assert all(scans.values()), scans
