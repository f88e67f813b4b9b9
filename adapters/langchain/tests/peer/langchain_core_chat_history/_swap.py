"""The swap: `InMemoryChatMessageHistory(messages=...)` builds polymem's `PolymemChatMessageHistory`.

Each history is a new polymem session (seeded with `messages`) in the running test's polymem store
(`conftest.py` opens one per test, on each backend, and makes it `running_store()`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from polymem.testing.backends import running_store
from polymem_langchain import PolymemChatMessageHistory


class InMemoryChatMessageHistory(PolymemChatMessageHistory):
    """`PolymemChatMessageHistory` built the way the test builds `InMemoryChatMessageHistory`."""

    def __init__(self, messages: Sequence[BaseMessage] | None = None) -> None:
        store = running_store()
        if store is None:
            raise RuntimeError("a history built outside a test got no polymem store (see conftest.py)")
        super().__init__(store, uuid.uuid4().hex, user_id="peer")
        if messages:
            self.add_messages(messages)
