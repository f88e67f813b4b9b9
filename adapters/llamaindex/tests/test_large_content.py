"""Large messages go through LlamaIndex's memories into polymem whole (the stock stores take any size)."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory

from polymem_llamaindex import PolymemAsyncChatStore, PolymemChatStore

LONG_ANSWER = ("The quarterly report, section after section. " * 230)[:10_000]
ONE_MB = ("A 1 MB tool result, line after line. " * 28_400)[:1_000_000]


@pytest.mark.parametrize("content", [LONG_ANSWER, ONE_MB], ids=["10k characters", "1 MB"])
def test_chat_memory_buffer_on_polymem_keeps_a_long_message_whole(lexical, content: str) -> None:
    buffer = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(lexical), chat_store_key="k",
                                            token_limit=10_000_000)
    message = ChatMessage(role="assistant", content=content)

    buffer.put(message)

    assert buffer.get_all() == [message]
    assert PolymemChatStore(lexical).get_messages("k") == [message]


@pytest.mark.parametrize("content", [LONG_ANSWER, ONE_MB], ids=["10k characters", "1 MB"])
async def test_memory_on_polymem_keeps_a_long_message_whole(alexical, content: str) -> None:
    memory = Memory.from_defaults(session_id="s", chat_store=PolymemAsyncChatStore(alexical),
                                  token_limit=10_000_000)
    message = ChatMessage(role="tool", content=content, additional_kwargs={"tool_call_id": "c1"})

    await memory.aput(message)

    assert [m.content for m in await memory.aget_all()] == [content]
