"""Rerank and query rewriting by a LlamaIndex LLM, seen through the memory a LlamaIndex agent reads."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

import polymem
from polymem_llamaindex import LlamaIndexQueryRewriter, LlamaIndexReranker, PolymemMemory

OSLO = ["Ann's flight to Oslo leaves at 07:40.", "Ann's hotel in Oslo is near the station."]


def answering(text: str, asked: list[list[ChatMessage]]) -> MockFunctionCallingLLM:
    """LlamaIndex's mock LLM, scripted to answer `text` and to record what it was asked."""

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        asked.append(list(messages))
        return ChatMessage(role="assistant", content=text)

    return MockFunctionCallingLLM(response_generator=respond)


def _injected(mem: polymem.Memory, question: str) -> list[str]:
    memory = PolymemMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="ann-chat", token_limit=2000)
    memory.put(ChatMessage(role="user", content=question))
    lines = (memory.get()[0].content or "").splitlines()
    return [line[2:] for line in lines if line.startswith("- ")]


def test_the_memory_an_agent_reads_comes_in_the_llms_reranked_order(db_url: str) -> None:
    question = "When do I get to Oslo?"
    with polymem.open(db_url, embedder=None) as plain:
        for text in OSLO:
            plain.save(text, user_id="ann")
        first_stage = [h.memory.content for h in plain.recall(question, user_id="ann")]
    asked: list[list[ChatMessage]] = []
    with polymem.open(db_url, embedder=None, reranker=LlamaIndexReranker(answering("[2, 9]", asked))) as mem:
        injected = _injected(mem, question)
    assert len(first_stage) == 2 and first_stage[0] != OSLO[0]  # the hybrid search alone puts the hotel first
    assert injected[0] == OSLO[0]
    assert asked[0][0].role == "system" and asked[0][0].content == polymem.ChatReranker.SYSTEM


def test_variants_from_the_llm_find_what_the_question_words_miss(db_url: str) -> None:
    asked: list[list[ChatMessage]] = []
    rewriter = LlamaIndexQueryRewriter(answering('["Ann flight departure time"]', asked))
    with polymem.open(db_url, embedder=None, query_rewriter=rewriter) as mem:
        mem.save(OSLO[0], user_id="ann")
        assert _injected(mem, "When must I be at the airport?") == [OSLO[0]]
        assert mem.recall("When must I be at the airport?", user_id="ann", rewrite=0) == []


async def test_an_async_store_awaits_the_llm(db_url: str) -> None:
    asked: list[list[ChatMessage]] = []
    async with polymem.open_async(db_url, embedder=None,
                                  reranker=LlamaIndexReranker(answering("[1, 10]", asked))) as mem:
        for text in OSLO:
            await mem.save(text, user_id="ann")
        hits = await mem.recall("Oslo", user_id="ann", explain=True)
    assert [h.explanation["rerank"]["relevance"] for h in hits if h.explanation] == [1.0, 0.1]
