"""semantic-kernel's (legacy) TextMemoryPlugin tests with `PolymemMemoryStore` in place of `VolatileMemoryStore`,
on each backend."""

from __future__ import annotations

import pytest

from polymem.testing.backends import Backend, backend_fixture
from polymem_semantic_kernel import PolymemMemoryStore

# PolymemMemoryStore opens its store from a URL and keeps records only: the redis backend (records in
# PostgreSQL, sessions in Redis) would repeat the postgres run, so the suite runs on these two.
backend = backend_fixture("sqlite", "postgres")

EXPECTED_FAILURES: dict[str, str] = {
    "test_can_save": "reads VolatileMemoryStore's private dict (memory._storage._store)",
    "test_can_save_through_function": "reads VolatileMemoryStore's private dict (memory._storage._store)",
}


@pytest.fixture(autouse=True)
def store_is_polymem(request: pytest.FixtureRequest, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """`VolatileMemoryStore()` in the test module is a `PolymemMemoryStore` on the test's store, on each backend."""

    def volatile_memory_store() -> PolymemMemoryStore:
        return PolymemMemoryStore(backend.store("main").url)

    monkeypatch.setattr(request.module, "VolatileMemoryStore", volatile_memory_store)
