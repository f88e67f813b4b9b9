"""The swap: the classic memories with `chat_memory=PolymemChatMessageHistory(...)` as their default.

The test modules build memories at import (in `parametrize`), before any fixture runs, so the
histories live in one polymem store on an SQLite file in a temporary directory of this test run;
each memory gets a new session.
"""

from __future__ import annotations

import atexit
import tempfile
import uuid
from pathlib import Path

from langchain_classic.memory import buffer, buffer_window, summary, summary_buffer
from langchain_core.chat_history import BaseChatMessageHistory
from pydantic import Field

import polymem
from polymem_langchain import PolymemChatMessageHistory

_directory = tempfile.TemporaryDirectory(prefix="polymem-peer-")
_store = polymem.open(f"sqlite:///{Path(_directory.name) / 'histories.db'}", embedder=None)
atexit.register(_directory.cleanup)
atexit.register(_store.close)  # runs first: atexit calls in reverse order


def polymem_history() -> PolymemChatMessageHistory:
    """A new polymem session as a LangChain chat history."""
    return PolymemChatMessageHistory(_store, uuid.uuid4().hex, user_id="peer")


class ConversationBufferMemory(buffer.ConversationBufferMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationBufferWindowMemory(buffer_window.ConversationBufferWindowMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationSummaryMemory(summary.ConversationSummaryMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)


class ConversationSummaryBufferMemory(summary_buffer.ConversationSummaryBufferMemory):
    chat_memory: BaseChatMessageHistory = Field(default_factory=polymem_history)
