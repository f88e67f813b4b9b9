"""langchain-tests' `VectorStoreIntegrationTests` over `PolymemVectorStore` (see SOURCE.md).

The published test class is subclassed, as `langchain_tests/unit_tests/test_in_memory_vectorstore.py`
does for `InMemoryVectorStore`: the fixture builds polymem's store on each backend (`backend`, from
polymem.testing.backends), with the suite's embeddings as its embedder.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

from polymem.testing.backends import Backend
from polymem_langchain import LangChainEmbedder, PolymemVectorStore


class TestPolymemVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, backend: Backend) -> Iterator[PolymemVectorStore]:  # type: ignore[override]
        embedder = LangChainEmbedder(self.get_embeddings())
        yield PolymemVectorStore(backend.open(embedder=embedder), user_id="peer")
