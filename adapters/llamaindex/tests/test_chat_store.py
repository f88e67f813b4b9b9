"""`PolymemChatStore`: a `BaseChatStore` that behaves like `SimpleChatStore`, kept in polymem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore

import polymem
from polymem_llamaindex import PolymemChatStore


def _operations(store, conversation):  # the same calls on any BaseChatStore; every result, copied
    # (SimpleChatStore hands out its live lists)
    a, b, c, *rest = conversation
    results = [
        store.get_messages("k1"),
        store.delete_messages("missing"),
        store.delete_message("missing", 0),
        store.delete_last_message("missing"),
    ]
    store.set_messages("k1", [a, b])
    store.add_message("k1", c)
    store.add_message("k1", rest[0], idx=1)
    results.append(list(store.get_messages("k1")))
    results.append(store.delete_message("k1", 1))
    results.append(store.delete_message("k1", 99))
    results.append(store.delete_last_message("k1"))
    results.append(list(store.get_messages("k1")))
    store.add_message("k2", rest[1])
    results.append(sorted(store.get_keys()))
    results.append(store.delete_messages("k1"))
    results.append(list(store.get_messages("k1")))
    results.append(sorted(store.get_keys()))
    store.set_messages("k2", [])
    results.append(list(store.get_messages("k2")))
    return results


async def _async_operations(store, conversation):
    a, b, c, *rest = conversation
    results = [await store.aget_messages("k1"), await store.adelete_messages("missing")]
    await store.aset_messages("k1", [a, b])
    await store.async_add_message("k1", c)
    results.append(list(await store.aget_messages("k1")))
    results.append(await store.adelete_message("k1", 0))
    results.append(await store.adelete_last_message("k1"))
    results.append(list(await store.aget_messages("k1")))
    await store.async_add_message("k2", rest[0])
    results.append(sorted(await store.aget_keys()))
    results.append(await store.adelete_messages("k2"))
    results.append(sorted(await store.aget_keys()))
    return results


def test_every_method_answers_as_simple_chat_store_does(lexical, conversation) -> None:
    assert _operations(PolymemChatStore(lexical), conversation) == _operations(SimpleChatStore(), conversation)


async def test_every_async_method_answers_as_simple_chat_store_does(lexical, conversation) -> None:
    expected = await _async_operations(SimpleChatStore(), conversation)

    assert await _async_operations(PolymemChatStore(lexical), conversation) == expected


async def test_an_async_polymem_store_serves_sync_and_async_methods_alike(alexical, conversation) -> None:
    store = PolymemChatStore(alexical)

    assert await _async_operations(store, conversation) == await _async_operations(SimpleChatStore(), conversation)
    for key in store.get_keys():
        store.delete_messages(key)
    assert _operations(store, conversation) == _operations(SimpleChatStore(), conversation)


@pytest.mark.parametrize("token_limit", [20, 45, 80, 3000])
def test_chat_memory_buffer_gets_the_same_window_as_with_simple_chat_store(lexical, conversation, token_limit) -> None:
    ours = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(lexical), chat_store_key="u", token_limit=token_limit)
    theirs = ChatMemoryBuffer.from_defaults(chat_store=SimpleChatStore(), chat_store_key="u", token_limit=token_limit)
    for message in conversation:
        ours.put(message)
        theirs.put(message)

    assert ours.get() == theirs.get()
    assert ours.get_all() == theirs.get_all() == conversation


async def test_chat_memory_buffer_async_calls_match_simple_chat_store(lexical, conversation) -> None:
    ours = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(lexical), chat_store_key="u", token_limit=60)
    theirs = ChatMemoryBuffer.from_defaults(chat_store=SimpleChatStore(), chat_store_key="u", token_limit=60)
    for memory in (ours, theirs):
        await memory.aset(conversation[:3])
        for message in conversation[3:]:
            await memory.aput(message)

    assert await ours.aget() == await theirs.aget()
    await ours.areset()
    assert await ours.aget_all() == []


def test_the_whole_conversation_stays_in_polymem_while_the_buffer_returns_a_window(lexical, conversation) -> None:
    buffer = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(lexical, user_id="ann"), chat_store_key="trip", token_limit=20)
    for message in conversation:
        buffer.put(message)

    transcript = lexical.session("trip", user_id="ann").transcript()

    assert len(buffer.get()) < len(conversation)
    assert [(m.role, m.content) for m in transcript] == [(m.role.value, m.content or "") for m in conversation]


def test_setting_the_same_history_again_does_not_duplicate_the_transcript(lexical, conversation) -> None:
    store = PolymemChatStore(lexical)
    store.set_messages("k", conversation[:4])
    store.set_messages("k", conversation[:6])

    assert store.get_messages("k") == conversation[:6]
    assert len(lexical.session("k", user_id=None).transcript()) == 6


def test_deleting_a_message_forgets_it_from_the_transcript_too(lexical, conversation) -> None:
    store = PolymemChatStore(lexical)
    store.set_messages("k", conversation[:3])

    store.delete_message("k", 1)

    assert [m.content for m in lexical.session("k", user_id=None).transcript()] == [
        conversation[0].content,
        conversation[2].content,
    ]


def test_keys_are_the_sessions_of_the_user(lexical) -> None:
    PolymemChatStore(lexical, user_id="ann").add_message("ann-1", ChatMessage(role="user", content="hi"))
    PolymemChatStore(lexical, user_id="bob").add_message("bob-1", ChatMessage(role="user", content="hi"))

    assert PolymemChatStore(lexical, user_id="ann").get_keys() == ["ann-1"]
    assert sorted(PolymemChatStore(lexical).get_keys()) == ["ann-1", "bob-1"]


def test_sessions_carry_user_and_agent(lexical) -> None:
    PolymemChatStore(lexical, user_id="ann", agent_id="li-agent").add_message("s", ChatMessage(role="user", content="hi"))

    (info,) = lexical.sessions()

    assert (info.session_id, info.user_id, info.agent_id) == ("s", "ann", "li-agent")


def test_messages_survive_closing_and_reopening_the_file(db_url, conversation) -> None:
    with polymem.open(db_url, embedder=None) as mem:
        PolymemChatStore(mem).set_messages("k", conversation)

    with polymem.open(db_url, embedder=None) as mem:
        assert PolymemChatStore(mem).get_messages("k") == conversation


def test_serialises_to_a_descriptor_and_back_to_the_same_store(lexical, conversation) -> None:
    store = PolymemChatStore(lexical, user_id="ann")
    store.set_messages("k", conversation)

    data = store.to_dict()
    again = PolymemChatStore.from_dict(data)

    assert data == {"url": lexical.url, "namespace": "default", "user_id": "ann", "agent_id": None, "class_name": "PolymemChatStore"}
    assert again.memory is lexical
    assert again.get_messages("k") == conversation


def test_a_chat_memory_buffer_on_it_round_trips_through_to_dict(lexical, conversation) -> None:
    buffer = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(lexical), chat_store_key="k", token_limit=50)
    buffer.set(conversation)

    restored = ChatMemoryBuffer.from_dict(buffer.to_dict())

    assert isinstance(restored.chat_store, PolymemChatStore)
    assert restored.get() == buffer.get()


def test_rejects_something_that_is_not_a_polymem_store() -> None:
    with pytest.raises(TypeError, match="expected a polymem.Memory"):
        PolymemChatStore(SimpleChatStore())


def test_a_second_process_sees_what_the_first_wrote(db_url, lexical, conversation, tmp_path: Path) -> None:
    PolymemChatStore(lexical, user_id="ann").set_messages("shared", conversation)
    script = tmp_path / "reader.py"
    script.write_text(
        "import sys, polymem\n"
        "from polymem_llamaindex import PolymemChatStore\n"
        "mem = polymem.open(sys.argv[1], embedder=None)\n"
        "store = PolymemChatStore(mem, user_id='ann')\n"
        "msgs = store.get_messages('shared')\n"
        "store.add_message('shared', msgs[-1].model_copy(update={'blocks': []}))\n"
        "print(store.get_keys(), len(msgs), msgs[4].blocks[0].tool_name)\n"
    )

    out = subprocess.run([sys.executable, str(script), db_url], capture_output=True, text=True, timeout=60, check=True)

    assert out.stdout.split() == ["['shared']", str(len(conversation)), "search_hotels"]
    assert len(PolymemChatStore(lexical).get_messages("shared")) == len(conversation) + 1


def test_persist_and_from_persist_path_round_trip_as_simple_chat_store_does(lexical, conversation, tmp_path: Path) -> None:
    path = str(tmp_path / "saved" / "chat_store.json")
    stock, ours = SimpleChatStore(), PolymemChatStore(lexical, user_id="ann")
    for store in (stock, ours):
        store.set_messages("k1", conversation[:2])
        store.set_messages("k2", conversation[2:3])
        store.persist(path)
        again = type(store).from_persist_path(path)
        assert sorted(again.get_keys()) == ["k1", "k2"]
        assert [again.get_messages(k) for k in ("k1", "k2")] == [conversation[:2], conversation[2:3]]


def test_a_persisted_in_memory_store_comes_back_in_a_new_process(conversation, tmp_path: Path) -> None:
    path = tmp_path / "chat_store.json"
    PolymemChatStore(polymem.open("memory://persisted", embedder=None)).set_messages("k1", conversation[:2])
    PolymemChatStore(polymem.open("memory://persisted", embedder=None)).persist(str(path))
    code = ("import sys; from polymem_llamaindex import PolymemChatStore; "
            "print([m.content for m in PolymemChatStore.from_persist_path(sys.argv[1]).get_messages('k1')])")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == repr([m.content for m in conversation[:2]])


def test_a_simple_chat_store_file_is_imported_into_the_store_given(lexical, conversation, tmp_path: Path) -> None:
    path = str(tmp_path / "chat_store.json")
    stock = SimpleChatStore()
    stock.set_messages("k1", conversation[:2])
    stock.persist(path)

    store = PolymemChatStore.from_persist_path(path, memory=lexical)

    assert store.get_messages("k1") == conversation[:2]
    assert PolymemChatStore(lexical).get_messages("k1") == conversation[:2]
