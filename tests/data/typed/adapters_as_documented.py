"""A user's module: each adapter's classes built as its README builds them."""
from __future__ import annotations

from typing import Any

import polymem
from polymem_agent_framework import PolymemContextProvider, PolymemHistoryProvider
from polymem_autogen import PolymemChatCompletionContext
from polymem_autogen import PolymemMemory as AutoGenMemory
from polymem_langchain import PolymemChatMessageHistory, PolymemRetriever, PolymemStore, PolymemVectorStore
from polymem_langchain import PolymemMemory as LangChainMemory
from polymem_llamaindex import PolymemAsyncChatStore, PolymemChatStore, PolymemMemoryBlock
from polymem_llamaindex import PolymemMemory as LlamaIndexMemory
from polymem_semantic_kernel import (
    PolymemChatCompletion,
    PolymemChatHistoryAgentThread,
    PolymemMemoryFilter,
    PolymemMemoryStore,
    PolymemPlugin,
)


def build(mem: polymem.Memory, amem: polymem.AsyncMemory, chat_service: Any) -> list[object]:
    return [
        PolymemChatMessageHistory(mem, "ann-chat", user_id="ann"),
        PolymemStore(mem, user_id="ann"),
        PolymemVectorStore(mem, user_id="ann"),
        PolymemRetriever(store=mem, user_id="ann"),
        LangChainMemory(store=mem, user_id="ann"),
        AutoGenMemory(mem, user_id="alice", agent_id="chef"),
        PolymemChatCompletionContext(mem, session_id="alice-trip", user_id="alice"),
        LlamaIndexMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="ann-chat", token_limit=3000),
        PolymemChatStore(mem, user_id="ann"),
        PolymemAsyncChatStore(amem, user_id="ann"),
        PolymemMemoryBlock(mem, user_id="ann"),
        PolymemPlugin(mem, user_id="ann"),
        PolymemChatCompletion(chat_service, mem, user_id="ann", top_k=5),
        PolymemChatHistoryAgentThread(mem, user_id="ann", thread_id="support-42", consolidate_on_delete=True),
        PolymemMemoryFilter(mem, user_id="ann"),
        PolymemMemoryStore(),
        PolymemHistoryProvider(mem, user_id="alice"),
        PolymemContextProvider(mem, user_id="alice"),
        PolymemHistoryProvider("sqlite:///memory.db", user_id="alice"),
    ]
