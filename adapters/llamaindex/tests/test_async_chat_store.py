"""`PolymemAsyncChatStore`: the `AsyncDBChatStore` behind LlamaIndex's `Memory`, kept in polymem."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

from polymem_llamaindex import PolymemAsyncChatStore

ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED


@pytest.fixture(params=["sync store", "async store"])
def store(request, lexical, alexical) -> PolymemAsyncChatStore:
    """The chat store over a sync `polymem.Memory` and over a `polymem.AsyncMemory`."""
    return PolymemAsyncChatStore(lexical if request.param == "sync store" else alexical, user_id="ann")


def _texts(messages):
    return [m.content for m in messages]


def _numbered(n):
    return [ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"m{i}") for i in range(n)]


async def test_archiving_moves_the_oldest_active_messages_out_of_the_window(store) -> None:
    await store.add_messages("k", _numbered(5))

    archived = await store.archive_oldest_messages("k", 2)

    assert _texts(archived) == ["m0", "m1"]
    assert _texts(await store.get_messages("k")) == ["m2", "m3", "m4"]
    assert _texts(await store.get_messages("k", status=ARCHIVED)) == ["m0", "m1"]
    assert _texts(await store.get_messages("k", status=None)) == ["m0", "m1", "m2", "m3", "m4"]


async def test_counts_follow_status(store) -> None:
    await store.add_messages("k", _numbered(5))
    await store.archive_oldest_messages("k", 2)

    counts = [await store.count_messages("k", status=s) for s in (ACTIVE, ARCHIVED, None)]

    assert counts == [3, 2, 5]
    assert await store.count_messages("unknown") == 0


async def test_limit_and_offset_page_through_messages_of_a_status(store) -> None:
    await store.add_messages("k", _numbered(6))

    page = await store.get_messages("k", status=None, offset=2, limit=3)

    assert _texts(page) == ["m2", "m3", "m4"]


async def test_a_message_can_be_added_straight_to_the_archive(store) -> None:
    await store.add_message("k", ChatMessage(role="user", content="live"))
    await store.add_message("k", ChatMessage(role="user", content="old"), status=ARCHIVED)

    assert _texts(await store.get_messages("k")) == ["live"]
    assert _texts(await store.get_messages("k", status=ARCHIVED)) == ["old"]


async def test_deleting_the_oldest_forgets_them_entirely(store) -> None:
    await store.add_messages("k", _numbered(4))

    deleted = await store.delete_oldest_messages("k", 3)

    assert _texts(deleted) == ["m0", "m1", "m2"]
    assert _texts(await store.get_messages("k", status=None)) == ["m3"]


async def test_deleting_by_status_keeps_the_other_status(store) -> None:
    await store.add_messages("k", _numbered(4))
    await store.archive_oldest_messages("k", 1)

    await store.delete_messages("k", status=ACTIVE)

    assert _texts(await store.get_messages("k", status=None)) == ["m0"]
    assert _texts(await store.get_messages("k", status=ARCHIVED)) == ["m0"]


async def test_deleting_without_status_forgets_the_key(store) -> None:
    await store.add_messages("k", _numbered(2))

    await store.delete_messages("k")

    assert await store.get_keys() == []


async def test_delete_message_takes_an_index_into_the_active_messages(store) -> None:
    await store.add_messages("k", _numbered(3))

    deleted = await store.delete_message("k", 1)

    assert deleted.content == "m1"
    assert _texts(await store.get_messages("k", status=None)) == ["m0", "m2"]
    assert await store.delete_message("k", 7) is None


async def test_setting_active_messages_keeps_the_archive(store) -> None:
    await store.add_messages("k", _numbered(3))
    await store.archive_oldest_messages("k", 1)

    await store.set_messages("k", [ChatMessage(role="user", content="fresh")])

    assert _texts(await store.get_messages("k")) == ["fresh"]
    assert "m0" in _texts(await store.get_messages("k", status=ARCHIVED))


async def test_setting_archived_messages_replaces_the_session_as_sqlalchemy_does(store) -> None:
    await store.add_messages("k", _numbered(3))

    await store.set_messages("k", [ChatMessage(role="user", content="old")], status=ARCHIVED)

    assert _texts(await store.get_messages("k", status=None)) == ["old"]
    assert await store.get_messages("k") == []


async def test_keys_are_the_sessions_of_the_user(store) -> None:
    await store.add_message("a", ChatMessage(role="user", content="x"))
    await store.add_message("b", ChatMessage(role="user", content="y"))

    assert sorted(await store.get_keys()) == ["a", "b"]


async def test_memory_keeps_the_same_short_term_window_as_with_sqlalchemy(lexical, conversation) -> None:
    settings = dict(session_id="trip", token_limit=120, token_flush_size=30, chat_history_token_ratio=0.5)
    ours = Memory.from_defaults(chat_store=PolymemAsyncChatStore(lexical, user_id="ann"), **settings)
    theirs = Memory.from_defaults(chat_store=SQLAlchemyChatStore(table_name="t"), **settings)
    for message in conversation:
        await ours.aput(message)
        await theirs.aput(message)

    assert await ours.aget() == await theirs.aget()
    assert await ours.aget_all(status=ARCHIVED) == await theirs.aget_all(status=ARCHIVED) != []
    assert await ours.aget_all() == conversation


def test_memory_sync_methods_work_on_it(lexical, conversation) -> None:
    memory = Memory.from_defaults(session_id="s", chat_store=PolymemAsyncChatStore(lexical), chat_history=conversation[:2])
    memory.put(conversation[2])

    assert memory.get() == conversation[:3]
    memory.reset()
    assert memory.get_all() == []
