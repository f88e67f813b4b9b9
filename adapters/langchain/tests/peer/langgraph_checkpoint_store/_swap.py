"""The swap: `InMemoryStore(index=...)` builds polymem's `PolymemStore` on a new, empty store.

The stores live on the running test's backend (`conftest.py`). The embeddings of `index` become the
polymem store's embedder and its `fields` the item text paths, as a user moving from `InMemoryStore` to
`PolymemStore` would write it.
"""

from __future__ import annotations

from langgraph.store.base import IndexConfig
from langgraph.store.base.embed import ensure_embeddings

from polymem.testing.backends import Backend
from polymem_langchain import LangChainEmbedder, PolymemStore

BACKEND: list[Backend] = []  # the running test's backend (set by conftest.py)


class InMemoryStore(PolymemStore):
    """`PolymemStore` built the way the test builds `InMemoryStore`."""

    def __init__(self, *, index: IndexConfig | None = None) -> None:
        embedder = LangChainEmbedder(ensure_embeddings(index["embed"])) if index else None
        mem = BACKEND[-1].open(None, embedder=embedder)
        super().__init__(mem, user_id="peer", fields=index.get("fields") if index else None)
