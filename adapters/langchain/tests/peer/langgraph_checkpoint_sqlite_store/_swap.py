"""The swap: `SqliteStore.from_conn_string(conn, index=...)` yields polymem's `PolymemStore` on that SQLite file.

`":memory:"` becomes polymem's in-memory SQLite store; the embeddings of `index` become the polymem
store's embedder and its `text_fields` the item text paths, as a user moving from `SqliteStore` to
`PolymemStore` would write it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import TTLConfig
from langgraph.store.base.embed import ensure_embeddings

import polymem
from polymem_langchain import LangChainEmbedder, PolymemStore


class SqliteStore(PolymemStore):
    """`PolymemStore` opened the way the test opens `SqliteStore`."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: dict[str, Any] | None = None,
                         ttl: TTLConfig | None = None) -> Iterator[SqliteStore]:
        embedder = LangChainEmbedder(ensure_embeddings(index["embed"])) if index else None
        url = "memory://" if conn_string == ":memory:" else f"sqlite:///{conn_string}"
        with polymem.open(url, embedder=embedder) as mem:
            yield cls(mem, user_id="peer", fields=index.get("text_fields") if index else None, ttl=ttl)

    def setup(self) -> None:
        """Nothing to do: polymem migrates its store when it opens it."""
