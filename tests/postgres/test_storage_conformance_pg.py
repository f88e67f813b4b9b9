"""The storage-level conformance suite over PostgreSQL (sync and async) and Redis sessions (sync and async)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from polymem.testing import RecordStoreConformance, SessionStoreConformance, call


@pytest.fixture(params=["sync", "async"])
def postgres(request: pytest.FixtureRequest, pg_url: str) -> Iterator[Any]:
    from polymem._postgres import AsyncPostgresBackend, PostgresBackend

    store: Any = PostgresBackend(pg_url) if request.param == "sync" else AsyncPostgresBackend(pg_url)
    yield store
    if request.param == "sync":
        store.close()
    else:
        call(store.aclose())


@pytest.fixture(params=["sync", "async"])
def redis_sessions(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Any]:
    from polymem._redis import AsyncRedisWorkingMemory, RedisWorkingMemory

    url = redis_url
    store: Any = RedisWorkingMemory(url) if request.param == "sync" else AsyncRedisWorkingMemory(url)
    yield store
    store.close()


class TestPostgresRecords(RecordStoreConformance):
    @pytest.fixture
    def records(self, postgres: Any) -> Any:
        return postgres


class TestPostgresSessions(SessionStoreConformance):
    @pytest.fixture
    def sessions(self, postgres: Any) -> Any:
        return postgres


class TestRedisSessions(SessionStoreConformance):
    @pytest.fixture
    def sessions(self, redis_sessions: Any) -> Any:
        return redis_sessions
