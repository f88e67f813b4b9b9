"""semantic-kernel's (legacy) TextMemoryPlugin tests with `PolymemMemoryStore` in place of `VolatileMemoryStore`."""

from __future__ import annotations

from pathlib import Path

import pytest

from polymem_semantic_kernel import PolymemMemoryStore

EXPECTED_FAILURES: dict[str, str] = {
    "test_can_save": "reads VolatileMemoryStore's private dict (memory._storage._store)",
    "test_can_save_through_function": "reads VolatileMemoryStore's private dict (memory._storage._store)",
}


@pytest.fixture(autouse=True)
def store_is_polymem(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`VolatileMemoryStore()` in the test module is a `PolymemMemoryStore` on an SQLite file of its own."""

    def volatile_memory_store() -> PolymemMemoryStore:
        return PolymemMemoryStore(f"sqlite:///{tmp_path / 'memory.db'}")

    monkeypatch.setattr(request.module, "VolatileMemoryStore", volatile_memory_store)
