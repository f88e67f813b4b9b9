"""The swap: `InMemoryChatMessageHistory(messages=...)` builds polymem's `PolymemChatMessageHistory`.

Each history is a new polymem session (seeded with `messages`) in one polymem store on an SQLite
file in the test's tmp_path.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from langchain_core.messages import BaseMessage

import polymem
from polymem_langchain import PolymemChatMessageHistory

_stores: list[polymem.Memory] = []


@contextmanager
def store_in(directory: Path) -> Iterator[None]:
    """The histories a test builds live in one polymem store on an SQLite file in `directory`."""
    with polymem.open(f"sqlite:///{directory / 'histories.db'}", embedder=None) as mem:
        _stores.append(mem)
        try:
            yield
        finally:
            _stores.pop()


class InMemoryChatMessageHistory(PolymemChatMessageHistory):
    """`PolymemChatMessageHistory` built the way the test builds `InMemoryChatMessageHistory`."""

    def __init__(self, messages: Sequence[BaseMessage] | None = None) -> None:
        super().__init__(_stores[-1], uuid.uuid4().hex, user_id="peer")
        if messages:
            self.add_messages(messages)
