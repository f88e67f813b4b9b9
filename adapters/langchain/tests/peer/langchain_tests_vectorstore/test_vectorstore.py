"""langchain-tests' `VectorStoreIntegrationTests` over `PolymemVectorStore` (see SOURCE.md).

The published test class is subclassed, as `langchain_tests/unit_tests/test_in_memory_vectorstore.py`
does for `InMemoryVectorStore`: the fixture builds polymem's store on an SQLite file in tmp_path,
with the suite's embeddings as its embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

import polymem
from polymem_langchain import LangChainEmbedder, PolymemVectorStore


class TestPolymemVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[PolymemVectorStore]:  # type: ignore[override]
        embedder = LangChainEmbedder(self.get_embeddings())
        with polymem.open(f"sqlite:///{tmp_path / 'vectors.db'}", embedder=embedder) as mem:
            yield PolymemVectorStore(mem, user_id="peer")
