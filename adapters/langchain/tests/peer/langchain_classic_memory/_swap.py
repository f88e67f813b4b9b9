"""The swap: the classic memories with `chat_memory=PolymemChatMessageHistory(...)` as their default.

Each memory gets a new session of the running test's polymem store (`conftest.py` opens one per test, on
each backend). The memories the test modules build at import (in `parametrize`), before any test runs,
get a placeholder that refuses use; `conftest.py` gives them a session of the test's store instead.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_classic.memory import buffer, buffer_window, summary, summary_buffer
from langchain_core.chat_history import BaseChatMessageHistory
from pydantic import Field

from polymem.testing.backends import running_store
from polymem_langchain import PolymemChatMessageHistory


class Unbound(BaseChatMessageHistory):
    """The history of a memory built at import, outside any test: the test's fixture replaces it."""

    @property
    def messages(self) -> Any:  # type: ignore[override]
        raise RuntimeError("a memory built at import got no polymem session (see conftest.py)")

    def add_message(self, message: Any) -> None:
        raise RuntimeError("a memory built at import got no polymem session (see conftest.py)")

    def clear(self) -> None:
        raise RuntimeError("a memory built at import got no polymem session (see conftest.py)")


def polymem_history() -> BaseChatMessageHistory:
    """A new polymem session of the running test's store, as a LangChain chat history."""
    store = running_store()
    if store is None:
        return Unbound()
    return PolymemChatMessageHistory(store, uuid.uuid4().hex, user_id="peer")


class ConversationBufferMemory(buffer.ConversationBufferMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationBufferWindowMemory(buffer_window.ConversationBufferWindowMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationSummaryMemory(summary.ConversationSummaryMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationSummaryBufferMemory(summary_buffer.ConversationSummaryBufferMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)
