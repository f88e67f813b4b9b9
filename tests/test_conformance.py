"""The conformance suite over the embedded backends (in-memory, SQLite file) × (sync, async)."""

from typing import Any

import pytest

from polymem.testing import MemoryConformance


class TestEmbeddedStores(MemoryConformance):
    @pytest.fixture
    def open_store(self, any_store: Any) -> Any:
        return any_store
