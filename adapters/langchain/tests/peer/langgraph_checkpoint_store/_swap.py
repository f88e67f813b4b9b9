"""The swap: `InMemoryStore(index=...)` builds polymem's `PolymemStore` on a real SQLite file.

The embeddings of `index` become the polymem store's embedder and its `fields` the item text paths,
as a user moving from `InMemoryStore` to `PolymemStore` would write it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from langgraph.store.base import IndexConfig
from langgraph.store.base.embed import ensure_embeddings

import polymem
from polymem_langchain import LangChainEmbedder, PolymemStore

_files: list[tuple[Path, ExitStack]] = []


@contextmanager
def stores_in(directory: Path) -> Iterator[None]:
    """Open every store a test builds on a new SQLite file in `directory`; close them after."""
    with ExitStack() as opened:
        _files.append((directory, opened))
        try:
            yield
        finally:
            _files.pop()


class InMemoryStore(PolymemStore):
    """`PolymemStore` built the way the test builds `InMemoryStore`."""

    def __init__(self, *, index: IndexConfig | None = None) -> None:
        directory, opened = _files[-1]
        embedder = LangChainEmbedder(ensure_embeddings(index["embed"])) if index else None
        path = directory / f"store-{len(list(directory.glob('store-*.db')))}.db"
        mem = opened.enter_context(polymem.open(f"sqlite:///{path}", embedder=embedder))
        super().__init__(mem, user_id="peer", fields=index.get("fields") if index else None)
