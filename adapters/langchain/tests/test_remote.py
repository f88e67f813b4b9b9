"""The same classes over a remote store: polymem's HTTP client against the real service."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langchain_classic.memory import ConversationSummaryBufferMemory
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage

import polymem
from polymem.client import AsyncHttpMemory, open_http_async
from polymem_langchain import PolymemChatMessageHistory, PolymemRetriever, PolymemStore, PolymemVectorStore

from .test_convert import EVERY_KIND


def test_chat_history_round_trips_every_message_kind_over_http(remote: Any) -> None:
    history = PolymemChatMessageHistory(remote, "s", user_id="ann")
    history.add_messages(EVERY_KIND)
    assert list(PolymemChatMessageHistory(remote, "s", user_id="ann").messages) == EVERY_KIND


def test_summary_buffer_pruning_evicts_over_http(remote: Any) -> None:
    memory = ConversationSummaryBufferMemory(
        llm=FakeListLLM(responses=["summary"] * 5, custom_get_token_ids=lambda t: [1 for _ in t.split()]),
        max_token_limit=12, chat_memory=PolymemChatMessageHistory(remote, "s", user_id="ann"))
    for n in range(3):
        memory.save_context({"input": f"question number {n} here"}, {"output": f"answer number {n} here"})
    history = PolymemChatMessageHistory(remote, "s", user_id="ann")
    assert len(history.messages) < 6 and len(history.transcript()) == 6


def test_langgraph_store_and_retrieval_over_http(remote: Any) -> None:
    store = PolymemStore(remote, user_id="ann")
    store.put(("memories",), "city", {"content": "Ann lives in Lyon", "since": 2021})
    assert store.get(("memories",), "city").value == {"content": "Ann lives in Lyon", "since": 2021}
    assert [i.key for i in store.search(("memories",), filter={"since": {"$gte": 2020}})] == ["city"]
    assert [d.page_content for d in PolymemRetriever(store=remote, user_id="ann").invoke("Lyon")] == [
        "Ann lives in Lyon"]
    vectorstore = PolymemVectorStore(remote, user_id="ann")
    vectorstore.add_texts(["Ann drives a blue car"], metadatas=[{"kind": "car"}], ids=["car"])
    assert vectorstore.get_by_ids(["car"])[0].metadata == {"kind": "car"}


async def test_async_client_is_awaited_natively_and_has_a_sync_twin(service: Any) -> None:
    client = open_http_async(service.url, service.token)
    try:
        history = PolymemChatMessageHistory(client, "s", user_id="ann")
        assert isinstance(history.session, polymem.client.AsyncHttpSession)
        await history.aadd_messages([HumanMessage("over http"), AIMessage("yes")])
        assert [m.content for m in await history.aget_messages()] == ["over http", "yes"]
        assert [m.content for m in history.messages] == ["over http", "yes"]  # the sync twin, same service
        store = PolymemStore(client, user_id="ann")
        await store.aput(("m",), "k", {"content": "async remote item"})
        assert (await store.aget(("m",), "k")).value == {"content": "async remote item"}
    finally:
        await client.close()


async def test_an_async_client_without_a_sync_twin_says_to_use_the_async_methods(service: Any) -> None:
    client = AsyncHttpMemory(service.url, service.token, transport=httpx.AsyncHTTPTransport())
    try:
        history = PolymemChatMessageHistory(client, "s", user_id="ann")
        await history.aadd_messages([HumanMessage("async only")])
        assert [m.content for m in await history.aget_messages()] == ["async only"]
        with pytest.raises(TypeError, match="async methods"):
            history.messages  # noqa: B018
    finally:
        await client.close()
