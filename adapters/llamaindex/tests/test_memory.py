"""Long-term memory in LlamaIndex: `PolymemMemoryBlock` for `Memory`, `PolymemMemory` for `ChatMemoryBuffer` users."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.storage.chat_store import SimpleChatStore

import polymem
from polymem_llamaindex import PolymemAsyncChatStore, PolymemChatStore, PolymemMemory, PolymemMemoryBlock


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


# -- PolymemMemoryBlock ------------------------------------------------------------------------


async def test_messages_flushed_from_short_term_memory_become_long_term_memories(lexical) -> None:
    block = PolymemMemoryBlock(lexical, user_id="ann", agent_id="li-agent")
    memory = Memory.from_defaults(
        session_id="s1", chat_store=PolymemAsyncChatStore(lexical, user_id="ann"), memory_blocks=[block],
        token_limit=60, token_flush_size=20, chat_history_token_ratio=0.5,
    )
    await memory.aput(user("I am allergic to peanuts."))
    await memory.aput(assistant("Noted, no peanuts."))
    for i in range(6):
        await memory.aput(user(f"Tell me about dish number {i} on the menu today please."))
        await memory.aput(assistant(f"Dish {i} is a vegetable curry with rice and herbs."))

    saved = lexical.list(user_id="ann")

    assert "I am allergic to peanuts." in [r.content for r in saved]
    assert {(r.agent_id, r.session_id) for r in saved} == {("li-agent", "s1")}


async def test_block_recalls_what_another_framework_taught_polymem(semantic) -> None:
    semantic.save("Ann is vegetarian and never eats meat.", user_id="ann", agent_id="langchain-agent", category="preference")
    semantic.save("Bob is vegetarian.", user_id="bob", agent_id="langchain-agent")
    memory = Memory.from_defaults(session_id="s", memory_blocks=[PolymemMemoryBlock(semantic, user_id="ann")])
    await memory.aput(user("Do I eat steak?"))

    prompt = await memory.aget()

    assert prompt[0].role.value == "system"
    assert "Ann is vegetarian and never eats meat." in prompt[0].content
    assert "Bob" not in prompt[0].content


async def test_block_adds_nothing_without_a_user_message(lexical) -> None:
    lexical.save("Ann likes tea.", user_id="ann")
    block = PolymemMemoryBlock(lexical, user_id="ann")

    assert await block.aget([assistant("Hello!")]) == ""


async def test_truncating_the_block_drops_the_weakest_memories_first() -> None:
    block = PolymemMemoryBlock(polymem.open("memory://", embedder=None), user_id="ann")

    kept = await block.atruncate("- best memory\n- middling memory\n- weakest memory", tokens_to_truncate=3)

    assert kept == "- best memory\n- middling memory"
    assert await block.atruncate("- only", tokens_to_truncate=100) is None


# -- PolymemMemory -----------------------------------------------------------------------------


@pytest.mark.parametrize("token_limit", [15, 40, 3000])
def test_without_long_term_memories_it_returns_what_chat_memory_buffer_returns(lexical, conversation, token_limit) -> None:
    ours = PolymemMemory.from_defaults(memory=lexical, chat_store_key="k", token_limit=token_limit, ingest=False)
    theirs = ChatMemoryBuffer.from_defaults(chat_store_key="k", token_limit=token_limit)
    for memory in (ours, theirs):
        memory.set(conversation[:2])
        for message in conversation[2:]:
            memory.put(message)

    assert ours.get() == theirs.get()
    assert ours.get_all() == theirs.get_all()


def test_relevant_long_term_memories_come_first_and_the_total_stays_under_the_token_limit(lexical, conversation) -> None:
    lexical.save("Ann's budget for hotels is 120 EUR per night.", user_id="ann", agent_id="autogen-agent")
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", token_limit=80)
    memory.set(conversation)

    messages = memory.get(input="which hotel budget?")

    assert messages[0].role.value == "system"
    assert "120 EUR per night" in messages[0].content
    assert memory._token_count_for_messages(messages) <= 80
    assert messages[1:] == conversation[-len(messages) + 1 :]


def test_user_messages_put_are_distilled_into_long_term_memory(lexical) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", agent_id="li", chat_store_key="k")

    memory.put(user("I prefer aisle seats."))
    memory.put(assistant("I love window seats."))

    assert [(r.content, r.agent_id, r.session_id) for r in lexical.list(user_id="ann")] == [
        ("I prefer aisle seats.", "li", "k")
    ]


def test_nothing_is_distilled_when_ingest_is_off(lexical) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", ingest=False)

    memory.put(user("I prefer aisle seats."))

    assert lexical.list(user_id="ann") == []


async def test_async_methods_behave_like_the_sync_ones(lexical, conversation) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", token_limit=3000)
    await memory.aset(conversation[:3])
    await memory.aput(user("I work in Lyon."))

    assert await memory.aget_all() == [*conversation[:3], user("I work in Lyon.")]
    assert await memory.aget(input="where do I work") == [*conversation[:3], user("I work in Lyon.")]
    await memory.areset()
    assert await memory.aget_all() == []


def test_round_trips_through_to_dict_keeping_only_the_store_url(lexical, conversation) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", token_limit=500, top_k=3)
    memory.set(conversation)

    data = memory.to_dict()
    restored = PolymemMemory.from_dict(data)

    assert data["chat_store"]["url"] == lexical.url
    assert (restored.memory, restored.top_k, restored.token_limit) == (lexical, 3, 500)
    assert restored.get() == memory.get()


def test_from_dict_in_another_process_reopens_the_store_by_url(lexical, conversation, tmp_path: Path) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k")
    memory.set(conversation)
    (tmp_path / "memory.json").write_text(memory.to_json())
    script = tmp_path / "reader.py"
    script.write_text(
        "import sys, pathlib\n"
        "from polymem_llamaindex import PolymemMemory\n"
        "memory = PolymemMemory.from_json(pathlib.Path(sys.argv[1]).read_text())\n"
        "print(len(memory.get_all()), memory.memory.url)\n"
    )

    env = {**os.environ, "POLYMEM_EMBEDDER": "none"}  # the store was lexical-only; skip loading a model

    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "memory.json")],
        capture_output=True, text=True, timeout=120, check=True, env=env,
    )

    assert out.stdout.split() == [str(len(conversation)), lexical.url]


def test_rejects_a_chat_store_that_is_not_polymem(lexical) -> None:
    with pytest.raises(TypeError, match="PolymemMemory keeps its messages in a PolymemChatStore"):
        PolymemMemory.from_defaults(chat_store=SimpleChatStore())


def test_accepts_a_polymem_chat_store_as_chat_memory_buffer_accepts_any(lexical) -> None:
    store = PolymemChatStore(lexical, user_id="ann")

    memory = PolymemMemory.from_defaults(chat_store=store, chat_history=[user("hi")], chat_store_key="k")

    assert memory.chat_store is store
    assert store.get_messages("k") == [user("hi")]


def test_a_user_message_just_ingested_is_not_repeated_as_a_long_term_memory(lexical) -> None:
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", token_limit=1000)

    memory.put(user("I prefer aisle seats."))
    messages = memory.get(input="which seats do I prefer?")

    assert [m.content for m in messages] == ["I prefer aisle seats."]


def test_a_memory_another_session_wrote_is_still_injected(lexical) -> None:
    lexical.save("Ann prefers aisle seats.", user_id="ann", session_id="earlier")
    memory = PolymemMemory.from_defaults(memory=lexical, user_id="ann", chat_store_key="k", token_limit=1000)

    memory.put(user("Book me a seat, I prefer aisle seats."))
    messages = memory.get()

    assert [m.role.value for m in messages] == ["system", "user"]
    assert "Ann prefers aisle seats." in messages[0].content


@pytest.mark.parametrize("given", [None, 42, ["a", "list"], user("which seats?")])
def test_get_tolerates_any_input_as_chat_memory_buffer_does(lexical, given) -> None:
    stock = ChatMemoryBuffer.from_defaults(chat_store=SimpleChatStore(), chat_store_key="k", token_limit=1000)
    ours = PolymemMemory.from_defaults(memory=lexical, chat_store_key="k", token_limit=1000, ingest=False, top_k=0)
    for buffer in (stock, ours):
        buffer.put(user("I prefer aisle seats."))

    assert ours.get(input=given) == stock.get(input=given)
