"""The storage-level conformance suite over the embedded stores (memory://, SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from polymem._memory import make_backend
from polymem.testing import RecordStoreConformance, SessionStoreConformance


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    store = make_backend("memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/storage.db")
    yield store
    store.close()


class TestRecords(RecordStoreConformance):
    @pytest.fixture
    def records(self, backend: Any) -> Any:
        return backend


class TestSessions(SessionStoreConformance):
    @pytest.fixture
    def sessions(self, backend: Any) -> Any:
        return backend
