"""Working memory in Redis (native TTL, shared by instances) as the session store of a local transport,
and the consolidation locks (Redis `SET NX PX` + watchdog; PostgreSQL advisory lock)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

import polymem
from polymem._engine import DEFAULT_MAX_CONTENT_CHARS
from polymem._memory import _engine
from polymem.testing import FakeClock, MemoryConformance, call


def open_composite(long_term: str, redis_url: str, driver: str, clock: Any, embedder: Any,
                   namespace: str = "default") -> Any:
    """Records in `long_term`, sessions in Redis: one local transport over the two stores."""
    from polymem._local import LocalTransport
    from polymem._redis import AsyncRedisWorkingMemory, RedisWorkingMemory

    eng = _engine(namespace, embedder, clock, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS)
    if driver == "sync":
        records = polymem._memory.make_backend(long_term)
        return polymem.Memory(LocalTransport(records, eng, RedisWorkingMemory(redis_url)))
    from polymem._postgres_async import AsyncPostgresBackend

    return polymem.AsyncMemory(LocalTransport(AsyncPostgresBackend(long_term), eng, AsyncRedisWorkingMemory(redis_url)))


@pytest.fixture(params=["sync", "async"])
def composite_store(request: pytest.FixtureRequest, new_database: Any, redis_server: str) -> Any:
    import redis

    urls: dict[bool, tuple[str, str]] = {}
    base = int(request.node.nodeid.__hash__() % 1000)

    def factory(clock: Any, embedder: Any, fresh: bool = False, namespace: str = "default") -> Any:
        if fresh not in urls:
            db = 1 + (base * 2 + int(fresh)) % 15  # a separate Redis database per store
            rurl = redis_server.rsplit("/", 1)[0] + f"/{db}"
            redis.Redis.from_url(rurl).flushdb()
            urls[fresh] = (new_database(), rurl)
        pg, rurl = urls[fresh]
        return open_composite(pg, rurl, request.param, clock, embedder, namespace)

    return factory


class TestPostgresWithRedisSessions(MemoryConformance):
    """The suite with sessions in Redis. Tests that never touch working memory already run on
    PostgreSQL in test_pg_conformance; POLYMEM_FULL_COMPOSITE=1 runs them here too (they pass)."""

    @pytest.fixture
    def open_store(self, composite_store: Any) -> Any:
        return composite_store


_WORKING = re.compile(r"session|window|summary|evict|forget|replace|ending|snapshot")
if not os.environ.get("POLYMEM_FULL_COMPOSITE"):
    for _name in dir(MemoryConformance):
        if _name.startswith("test_") and not _WORKING.search(_name):
            setattr(TestPostgresWithRedisSessions, _name, None)  # not collected


def test_sessions_live_in_redis_and_expire_natively(pg_url: str, redis_url: str) -> None:
    import redis

    mem = open_composite(pg_url, redis_url, "sync", None, None)
    other = open_composite(pg_url, redis_url, "sync", None, None)  # a second service instance
    try:
        ses = mem.session("s1", user_id="ann", ttl=timedelta(seconds=1))
        ses.add("user", "hello")
        assert [m.content for m in other.session("s1", user_id="ann").messages()] == ["hello"]
        client = redis.Redis.from_url(redis_url)
        keys = client.keys("polymem:s:*")
        assert len(keys) >= 3 and all(0 < client.pttl(k) <= 1000 for k in keys)  # meta, msgs, ids (+ out)
        time.sleep(1.3)
        assert client.keys("polymem:s:*") == []  # Redis dropped them itself
        assert other.sessions() == []
        assert mem.session("s1", user_id="ann").messages() == []
    finally:
        mem.close()
        other.close()


# -- the consolidation lock ------------------------------------------------------------------------
_HOLDER = textwrap.dedent("""
    import sys, time
    kind, url = sys.argv[1], sys.argv[2]
    if kind == "redis":
        from polymem._redis import RedisWorkingMemory
        lock = RedisWorkingMemory(url).consolidation_lock("default", ttl=1.0)
    else:
        from polymem._postgres import PostgresBackend
        lock = PostgresBackend(url).consolidation_lock("default")
    with lock:
        print("held", flush=True)
        time.sleep(600)
""")


def _lock_for(kind: str, url: str) -> Any:
    if kind == "redis":
        from polymem._redis import RedisWorkingMemory

        wm = RedisWorkingMemory(url)
        return lambda timeout=None: wm.consolidation_lock("default", timeout=timeout, ttl=1.0)
    from polymem._postgres import PostgresBackend

    backend = PostgresBackend(url)
    return lambda timeout=None: backend.consolidation_lock("default", timeout=timeout)


@pytest.fixture(params=["redis", "postgres"])
def lock_target(request: pytest.FixtureRequest, redis_url: str, pg_url: str) -> tuple[str, str]:
    return request.param, redis_url if request.param == "redis" else pg_url


def test_a_killed_consolidator_never_blocks_the_next(lock_target: tuple[str, str]) -> None:
    kind, url = lock_target
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, kind, url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        take = _lock_for(kind, url)
        with pytest.raises(polymem.PolymemError), take(timeout=0.3):  # held: a second one cannot enter
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        started = time.monotonic()
        with take(timeout=10):
            waited = time.monotonic() - started
        assert waited < 3  # the dead holder's lock expired (Redis TTL) or was dropped (PostgreSQL)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_two_consolidators_never_run_at_once(lock_target: tuple[str, str]) -> None:
    kind, url = lock_target
    take = _lock_for(kind, url)
    inside = 0
    overlaps: list[int] = []
    runs: list[int] = []
    guard = threading.Lock()

    def worker(n: int) -> None:
        nonlocal inside
        for _ in range(3):
            with take(timeout=60):
                with guard:
                    inside += 1
                    overlaps.append(inside)
                time.sleep(0.4 if kind == "redis" else 0.05)  # longer than a third of the TTL: renewed
                with guard:
                    inside -= 1
                    runs.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(runs) == 12 and max(overlaps) == 1


def test_redis_lock_is_renewed_while_its_holder_works(redis_url: str) -> None:
    from polymem._redis import RedisWorkingMemory

    wm = RedisWorkingMemory(redis_url)
    with wm.consolidation_lock("default", ttl=0.5) as held:
        time.sleep(1.5)  # three TTLs: only renewal keeps it
        assert not held.lost.is_set()
        with pytest.raises(polymem.PolymemError), wm.consolidation_lock("default", timeout=0.2, ttl=0.5):
            pass
    with wm.consolidation_lock("default", timeout=1, ttl=0.5):
        pass


def test_consolidate_waits_for_another_instances_lock(pg_url: str) -> None:
    """`Memory.consolidate()` takes `backend.consolidation_lock(namespace)`: while another
    instance holds it, consolidation waits; once released, it runs."""
    from polymem._postgres import PostgresBackend

    clock = FakeClock()
    eng = _engine("default", None, clock, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS)
    mem = polymem.Memory(PostgresBackend(pg_url), eng)  # type: ignore[arg-type]
    other = PostgresBackend(pg_url)
    try:
        a = mem.save("I like blue", user_id="ann", category="preference")
        mem.save("I like blue.", user_id="ann", category="preference")
        reports: list[Any] = []
        with other.consolidation_lock("default"):
            worker = threading.Thread(target=lambda: reports.append(call(mem.consolidate())))
            worker.start()
            time.sleep(1.0)
            assert reports == []  # waiting for the lock
        worker.join(timeout=30)
        assert list(reports[0].merged) == [a.memory_id]
    finally:
        mem.close()
        other.close()
