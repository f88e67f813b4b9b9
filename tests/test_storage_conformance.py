"""The storage-level conformance suite over the embedded stores (memory://, SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from polymem import _storage as storage
from polymem._backend import RecordStore, SessionStore
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


# Methods a store has that are not storage operations: the batch runner, closing, and the sessions'
# half of an import that spans split stores (the transport calls it after the records' half).
NOT_OPERATIONS = {"apply", "close", "import_sessions"}


@pytest.mark.parametrize("contract", [RecordStore, SessionStore], ids=lambda c: c.__name__)
def test_every_storage_method_is_reached_through_one_typed_operation_of_its_owner(contract: type) -> None:
    operations = [c for c in vars(storage).values()
                  if isinstance(c, type) and issubclass(c, storage.StorageOp) and c is not storage.StorageOp]
    by_method = {op.method: op for op in operations}
    assert len(by_method) == len(operations)  # one operation per method
    methods = {name for name, value in vars(contract).items() if callable(value) and not name.startswith("_")}
    assert methods - NOT_OPERATIONS <= by_method.keys()
    assert all(by_method[name].sessions == (contract is SessionStore) for name in methods - NOT_OPERATIONS)
