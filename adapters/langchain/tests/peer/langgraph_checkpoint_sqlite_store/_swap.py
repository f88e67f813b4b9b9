"""The swap: `SqliteStore.from_conn_string(conn, index=...)` yields polymem's `PolymemStore` on that store.

Each connection string names a polymem store of the running test's backend (`conftest.py`): the same
string, the same store; `":memory:"` a new, empty one each time (on the sqlite backend, polymem's
in-memory SQLite store). The embeddings of `index` become the
polymem store's embedder and its `text_fields` the item text paths, as a user moving from `SqliteStore`
to `PolymemStore` would write it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import TTLConfig
from langgraph.store.base.embed import ensure_embeddings

from polymem.testing.backends import Backend, StoreURL
from polymem_langchain import LangChainEmbedder, PolymemStore

BACKEND: list[Backend] = []  # the running test's backend (set by conftest.py)


class SqliteStore(PolymemStore):
    """`PolymemStore` opened the way the test opens `SqliteStore`."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: dict[str, Any] | None = None,
                         ttl: TTLConfig | None = None) -> Iterator[SqliteStore]:
        embedder = LangChainEmbedder(ensure_embeddings(index["embed"])) if index else None
        backend = BACKEND[-1]
        if conn_string == ":memory:":
            where = StoreURL("memory://") if backend.name == "sqlite" else backend.store()
        else:
            where = backend.store(conn_string)
        with where.open(embedder=embedder) as mem:
            yield cls(mem, user_id="peer", fields=index.get("text_fields") if index else None, ttl=ttl)

    def setup(self) -> None:
        """Nothing to do: polymem migrates its store when it opens it."""
