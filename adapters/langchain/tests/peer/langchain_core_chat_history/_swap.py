"""The swap: `InMemoryChatMessageHistory(messages=...)` builds polymem's `PolymemChatMessageHistory`.

Each history is a new polymem session (seeded with `messages`) in the running test's polymem store
(`conftest.py` opens one per test, on each backend).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from langchain_core.messages import BaseMessage

import polymem
from polymem_langchain import PolymemChatMessageHistory

_stores: list[polymem.Memory] = []


@contextmanager
def store_in(mem: polymem.Memory) -> Iterator[None]:
    """The histories built inside live in `mem`."""
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
