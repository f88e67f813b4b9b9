"""Rerank and query rewriting by a LangChain chat model, seen through a LangChain retriever."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel

import polymem
from polymem_langchain import ChatModelQueryRewriter, ChatModelReranker, PolymemRetriever

PETS = ["Ann has a dog named Rex", "Ann's pet fish is called Bubbles", "pet insurance is costly"]


def _store(db_url: str, **plugins: object) -> polymem.Memory:
    mem = polymem.open(db_url, embedder=None, **plugins)  # type: ignore[arg-type]
    for text in PETS:
        mem.save(text, user_id="ann")
    return mem


def test_a_retriever_returns_the_chat_models_reranked_order(db_url: str) -> None:
    with _store(db_url) as plain:
        first_stage = [h.memory.content for h in plain.recall("pet", user_id="ann")]
    # The model rates the two candidates in the order recall found them: the second is what matters.
    llm = FakeListChatModel(responses=["```json\n[2, 9]\n```"])
    with _store(db_url, reranker=ChatModelReranker(llm)) as mem:
        docs = PolymemRetriever(store=mem, user_id="ann").invoke("pet")
    assert [d.page_content for d in docs] == [first_stage[1], first_stage[0]]


async def test_an_async_retriever_awaits_the_chat_model(db_url: str) -> None:
    llm = FakeListChatModel(responses=['["dog"]'])
    mem = polymem.open_async(db_url, embedder=None, query_rewriter=ChatModelQueryRewriter(llm))
    async with mem:
        for text in PETS:
            await mem.save(text, user_id="ann")
        docs = await PolymemRetriever(store=mem, user_id="ann").ainvoke("pet")
    assert "Ann has a dog named Rex" in [d.page_content for d in docs]


def test_a_chat_model_that_does_not_answer_with_ratings_leaves_recalls_order(db_url: str) -> None:
    llm = FakeListChatModel(responses=["They all look relevant to me!"])
    with _store(db_url, reranker=ChatModelReranker(llm)) as mem:
        reranked = [h.memory.content for h in mem.recall("pet", user_id="ann")]
        plain = [h.memory.content for h in mem.recall("pet", user_id="ann", rerank=False)]
    assert reranked == plain
