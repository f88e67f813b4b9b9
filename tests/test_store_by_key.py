"""Key-value use of a store (`put`, `get_by_key`), `distinct` values, and `render_memories`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import polymem
from polymem.testing import FakeClock

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def mem(clock: FakeClock) -> polymem.Memory:
    return polymem.open("memory://", embedder=None, clock=clock)


def test_put_saves_a_memory_that_get_by_key_finds(mem: polymem.Memory) -> None:
    saved = mem.put("prefs:ann", "Ann drinks tea", user_id="ann", metadata={"kind": "drink"})
    assert mem.get_by_key("prefs:ann") == saved
    assert saved.content == "Ann drinks tea" and saved.version == 1


def test_get_by_key_of_an_unknown_key_is_none(mem: polymem.Memory) -> None:
    assert mem.get_by_key("nobody") is None


def test_put_on_an_existing_key_writes_a_new_version_of_the_same_memory(mem: polymem.Memory) -> None:
    first = mem.put("prefs:ann", "Ann drinks tea", user_id="ann", metadata={"kind": "drink"})
    second = mem.put("prefs:ann", "Ann drinks coffee", user_id="ann")
    assert second.memory_id == first.memory_id and second.version == 2
    assert second.metadata == {"kind": "drink"}  # left None: kept, as update does
    assert [v.content for v in mem.history(first.memory_id)] == ["Ann drinks tea", "Ann drinks coffee"]


def test_get_by_key_finds_a_memory_saved_with_that_idempotency_key(mem: polymem.Memory) -> None:
    saved = mem.save("Ann lives in Lyon", user_id="ann", idempotency_key="home:ann")
    assert mem.get_by_key("home:ann") == saved


def test_put_replaces_an_expired_memory_with_a_new_one(mem: polymem.Memory, clock: FakeClock) -> None:
    old = mem.put("otp:ann", "code 1234", user_id="ann", expire_at=T0 + timedelta(minutes=5))
    clock.advance(minutes=10)
    new = mem.put("otp:ann", "code 9876", user_id="ann")
    assert new.memory_id != old.memory_id and new.version == 1
    assert mem.get(old.memory_id) is None


def test_put_replaces_an_archived_memory_with_a_new_one(mem: polymem.Memory) -> None:
    old = mem.put("note:ann", "first note", user_id="ann")
    mem.set_status(old.memory_id, "archived")
    new = mem.put("note:ann", "second note", user_id="ann")
    assert new.memory_id != old.memory_id and new.status == "active"


def test_put_refuses_a_key_of_another_users_memory(mem: polymem.Memory) -> None:
    mem.put("shared-key", "Bob's note", user_id="bob")
    with pytest.raises(polymem.InvalidInput):
        mem.put("shared-key", "Ann's note", user_id="ann")


def test_distinct_lists_each_metadata_value_once_newest_first(mem: polymem.Memory) -> None:
    for i, topic in enumerate(["a", "b", "a", "c"]):
        mem.save(f"note {i}", user_id="ann", metadata={"topic": topic})
    mem.save("no topic", user_id="ann")
    assert mem.distinct("metadata.topic", user_id="ann") == ["c", "a", "b"]


def test_distinct_keeps_list_values_whole(mem: polymem.Memory) -> None:
    mem.save("x", user_id="ann", metadata={"path": ["users", "ann"]})
    mem.save("y", user_id="ann", metadata={"path": ["users", "ann"]})
    assert mem.distinct("metadata.path", user_id="ann") == [["users", "ann"]]


def test_distinct_leaves_out_expired_memories(mem: polymem.Memory, clock: FakeClock) -> None:
    mem.save("soon gone", user_id="ann", metadata={"topic": "old"}, expire_at=T0 + timedelta(minutes=1))
    mem.save("stays", user_id="ann", metadata={"topic": "new"})
    clock.advance(minutes=2)
    assert mem.distinct("metadata.topic", user_id="ann") == ["new"]


def test_distinct_refuses_an_unknown_record_field(mem: polymem.Memory) -> None:
    with pytest.raises(polymem.InvalidInput):
        mem.distinct("content")


async def test_async_store_puts_and_gets_by_key() -> None:
    amem = polymem.open_async("memory://", embedder=None)
    saved = await amem.put("k", "Ann drinks tea", user_id="ann", metadata={"topic": "drink"})
    assert await amem.get_by_key("k") == saved
    assert await amem.distinct("metadata.topic") == ["drink"]
    await amem.close()


def test_render_memories_lists_hits_under_a_header(mem: polymem.Memory) -> None:
    mem.save("Ann is allergic to peanuts", user_id="ann")
    hits = mem.recall("peanuts", user_id="ann")
    assert polymem.render_memories(hits, header="Known:") == "Known:\n- Ann is allergic to peanuts"


def test_render_memories_fills_the_template_fields(mem: polymem.Memory, clock: FakeClock) -> None:
    rec = mem.save("Ann lives in Lyon", user_id="ann", category="fact")
    clock.advance(days=3)
    hits = mem.recall("Lyon", user_id="ann")
    text = polymem.render_memories(hits, template="{rank}. [{memory_id}] {content} ({category}, {age})",
                                   now=mem.now())
    assert text == f"1. [{rec.memory_id}] Ann lives in Lyon (fact, 3 days ago)"


def test_render_memories_of_nothing_is_the_empty_text() -> None:
    assert polymem.render_memories([], header="Known:") == ""
    assert polymem.render_memories([], empty="No relevant memories found.") == "No relevant memories found."
