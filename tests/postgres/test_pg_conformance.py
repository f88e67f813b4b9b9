"""The core conformance suite over PostgreSQL, sync (`PostgresBackend`) and natively async
(`AsyncPostgresBackend`)."""

from __future__ import annotations

from typing import Any

import pytest

import polymem
from polymem._engine import DEFAULT_MAX_CONTENT_CHARS
from polymem._memory import _engine
from polymem.testing import MemoryConformance


def open_pg(url: str, driver: str, clock: Any, embedder: Any, **engine: Any) -> Any:
    """A store over PostgreSQL, built directly (the `postgresql` scheme is wired by the lead)."""
    eng = _engine(engine.get("namespace", "default"), embedder, clock, None, None, None, None, None, DEFAULT_MAX_CONTENT_CHARS)
    if driver == "sync":
        from polymem._postgres import PostgresBackend

        return polymem.Memory(PostgresBackend(url), eng)
    from polymem._postgres_async import AsyncPostgresBackend

    return polymem.AsyncMemory(AsyncPostgresBackend(url), eng)


@pytest.fixture(params=["sync", "async"])
def pg_store(request: pytest.FixtureRequest, new_database: Any) -> Any:
    urls: dict[bool, str] = {}

    def factory(clock: Any, embedder: Any, fresh: bool = False, namespace: str = "default") -> Any:
        if fresh not in urls:
            urls[fresh] = new_database()
        return open_pg(urls[fresh], request.param, clock, embedder, namespace=namespace)

    return factory


class TestPostgres(MemoryConformance):
    @pytest.fixture
    def open_store(self, pg_store: Any) -> Any:
        return pg_store
