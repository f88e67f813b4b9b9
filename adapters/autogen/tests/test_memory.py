"""PolymemMemory as an AutoGen Memory: add, query, update_context, clear, close, component config."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from autogen_core import Image
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import AssistantMessage, SystemMessage, UserMessage
from PIL import Image as PILImage

import polymem
from polymem_autogen import PolymemMemory, RecalledMemoriesMessage

pytestmark = pytest.mark.asyncio


def text(content: str, **metadata: Any) -> MemoryContent:
    return MemoryContent(content=content, mime_type=MemoryMimeType.TEXT, metadata=metadata or None)


async def test_add_saves_a_long_term_memory_in_the_memory_scope(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", agent_id="planner", session_id="s1")
    await memory.add(text("Alice prefers window seats", category="preference"))
    (record,) = lexical.list(user_id="alice")
    assert (record.content, record.category, record.agent_id, record.session_id, record.source) == (
        "Alice prefers window seats",
        "preference",
        "planner",
        "s1",
        "user_input",
    )


async def test_query_returns_contents_best_first_with_score_and_memory_id(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    for fact in ("Alice flies to Oslo in May", "Alice likes Oslo in winter and Oslo in spring", "Bob likes Rome"):
        await memory.add(text(fact))
    result = await memory.query("Oslo")
    assert {r.content for r in result.results[:2]} == {
        "Alice flies to Oslo in May",
        "Alice likes Oslo in winter and Oslo in spring",
    }
    scores = [r.metadata["score"] for r in result.results]
    assert scores == sorted(scores, reverse=True)
    assert all(lexical.get(r.metadata["memory_id"]) is not None for r in result.results)


async def test_query_returns_every_memory_up_to_top_k_as_list_memory_does_matches_first(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", top_k=3)
    for fact in ("Alice flies to Oslo", "Alice owns a cat", "Alice reads novels", "Alice swims"):
        await memory.add(text(fact))
    results = (await memory.query("Oslo")).results
    assert len(results) == 3 and results[0].content == "Alice flies to Oslo"
    assert len((await memory.query("Oslo", top_k=10)).results) == 4


async def test_query_keeps_a_relevance_cut_when_asked_for_one(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    await memory.add(text("Alice flies to Oslo"))
    await memory.add(text("Alice owns a cat"))
    assert [r.content for r in (await memory.query("Oslo", min_relevance=0.1)).results] == ["Alice flies to Oslo"]


async def test_query_only_sees_the_memory_user(lexical: Any) -> None:
    await PolymemMemory(lexical, user_id="bob").add(text("Bob flies to Oslo"))
    assert (await PolymemMemory(lexical, user_id="alice").query("Oslo")).results == []


async def test_json_content_comes_back_from_query_as_a_dict(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    await memory.add(MemoryContent(content={"seat": "window", "airline": "SAS"}, mime_type=MemoryMimeType.JSON))
    (found,) = (await memory.query("window seat SAS")).results
    assert found.content == {"seat": "window", "airline": "SAS"}
    assert found.mime_type == "application/json"


async def test_image_and_bytes_come_back_from_query_as_they_were_added(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    image = Image.from_pil(PILImage.new("RGB", (2, 3), color=(200, 10, 10)))
    await memory.add(MemoryContent(content=image, mime_type=MemoryMimeType.IMAGE, metadata={"caption": "red"}))
    await memory.add(MemoryContent(content=b"\x89PNG\x00\xff", mime_type="image/png"))
    await memory.add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY))
    found = {r.mime_type: r for r in (await memory.query("anything", top_k=10)).results}
    assert isinstance(found["image/*"].content, Image)
    assert found["image/*"].content.to_base64() == image.to_base64()
    assert found["image/*"].metadata["caption"] == "red"
    assert found["image/png"].content == b"\x89PNG\x00\xff"
    assert found["application/octet-stream"].content == b"\x00\x01"


async def test_update_context_adds_one_system_message_listing_memories_with_category_and_age(semantic: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice")
    await memory.add(text("Alice is allergic to peanuts", category="fact"))
    await memory.add(text("Alice prefers vegetarian food", category="preference"))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="What should I cook for Alice tonight?", source="user"))

    result = await memory.update_context(context)

    messages = await context.get_messages()
    assert len(messages) == 2 and isinstance(messages[1], RecalledMemoriesMessage)
    listed = messages[1].content.splitlines()[1:]
    assert {re.sub(r"^\d+\. ", "", line) for line in listed} == {
        "[fact, just now] Alice is allergic to peanuts",
        "[preference, just now] Alice prefers vegetarian food",
    }
    assert [r.content for r in result.memories.results] == [re.sub(r"^\d+\. \[.*?\] ", "", line) for line in listed]


async def test_update_context_adds_nothing_when_nothing_is_relevant(semantic: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice")
    await memory.add(text("Alice is allergic to peanuts"))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="How do I configure the TLS certificate of nginx?", source="user"))
    result = await memory.update_context(context)
    assert result.memories.results == []
    assert len(await context.get_messages()) == 1


async def test_update_context_on_an_empty_context_adds_the_newest_memories(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", top_k=2)
    for fact in ("Alice is allergic to peanuts", "Alice lives in Oslo", "Alice owns a cat"):
        await memory.add(text(fact))
    context = UnboundedChatCompletionContext()
    result = await memory.update_context(context)
    assert [r.content for r in result.memories.results] == ["Alice owns a cat", "Alice lives in Oslo"]
    (message,) = await context.get_messages()
    assert isinstance(message, RecalledMemoriesMessage)
    assert message.content.splitlines()[0] == "Memories (newest first; category, age):"


async def test_update_context_with_nothing_relevant_adds_nothing(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    await memory.add(text("Alice is allergic to peanuts"))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="What is the weather in Rome?", source="user"))
    assert (await memory.update_context(context)).memories.results == []
    assert len(await context.get_messages()) == 1


async def test_update_context_queries_with_the_recent_messages_not_only_the_last(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", query_messages=2)
    await memory.add(text("Alice is allergic to peanuts"))
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content="Any peanuts in the satay?", source="user"))
    await context.add_message(AssistantMessage(content="Yes, a lot.", source="chef"))
    assert [r.content for r in (await memory.update_context(context)).memories.results] == [
        "Alice is allergic to peanuts"
    ]


async def test_update_context_ignores_system_messages_when_querying(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice")
    await memory.add(text("Alice is allergic to peanuts"))
    context = UnboundedChatCompletionContext()
    await context.add_message(SystemMessage(content="peanuts peanuts peanuts"))
    await context.add_message(UserMessage(content="What is the weather in Rome?", source="user"))
    assert (await memory.update_context(context)).memories.results == []


async def test_clear_deletes_the_memory_scope_and_nothing_else(lexical: Any) -> None:
    alice, bob = PolymemMemory(lexical, user_id="alice"), PolymemMemory(lexical, user_id="bob")
    for i in range(120):
        await alice.add(text(f"Alice fact number {i}"))
    await bob.add(text("Bob likes Rome"))
    await alice.clear()
    assert lexical.list(user_id="alice") == []
    assert [r.content for r in lexical.list(user_id="bob")] == ["Bob likes Rome"]


async def test_close_leaves_a_store_passed_in_open(lexical: Any) -> None:
    await PolymemMemory(lexical, user_id="alice").close()
    assert lexical.list(user_id="alice") == []


async def test_close_closes_a_store_the_memory_opened(db_url: str) -> None:
    memory = PolymemMemory(db_url, user_id="alice")
    await memory.close()
    with pytest.raises(polymem.StoreClosedError):
        memory.store.list(user_id="alice")


async def test_component_config_round_trip_reopens_the_same_store_and_scope(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", agent_id="planner", session_id="s1", top_k=3, name="trips")
    await memory.add(text("Alice flies to Oslo in May"))
    dumped = json.loads(memory.dump_component().model_dump_json())
    assert dumped["provider"] == "polymem_autogen.PolymemMemory"
    assert dumped["config"]["url"] == lexical.url

    loaded = Memory.load_component(dumped)
    try:
        assert isinstance(loaded, PolymemMemory)
        assert loaded.dump_component() == memory.dump_component()
        assert [r.content for r in (await loaded.query("Oslo")).results] == ["Alice flies to Oslo in May"]
    finally:
        await loaded.close()


async def test_an_async_store_is_awaited_natively(db_url: str) -> None:
    store = polymem.open_async(db_url, embedder=None)
    try:
        memory = PolymemMemory(store, user_id="alice")
        await memory.add(text("Alice flies to Oslo in May"))
        assert [r.content for r in (await memory.query("Oslo")).results] == ["Alice flies to Oslo in May"]
        assert memory.dump_component().config["async_store"] is True
    finally:
        await store.close()
