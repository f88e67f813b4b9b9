"""`put`, `get_by_key` and `distinct` over HTTP: the same results, the same scope checks."""

from __future__ import annotations

from typing import Any

import pytest

from polymem import PermissionDeniedError


async def test_put_and_get_by_key_round_trip_over_http(deploy: Any) -> None:
    mem = deploy().client()
    first = await mem.put("prefs:ann", "Ann drinks tea", user_id="ann", metadata={"kind": "drink"})
    second = await mem.put("prefs:ann", "Ann drinks coffee", user_id="ann")
    assert second.memory_id == first.memory_id and second.version == 2
    assert await mem.get_by_key("prefs:ann") == second


async def test_get_by_key_of_an_unknown_key_is_none_over_http(deploy: Any) -> None:
    assert await deploy().client().get_by_key("nobody") is None


def test_sync_client_puts_and_gets_by_key(deploy: Any) -> None:
    mem = deploy().client("asgi-sync")
    saved = mem.put("k", "Ann drinks tea", user_id="ann")
    assert mem.get_by_key("k") == saved


async def test_distinct_over_http_lists_metadata_values(deploy: Any) -> None:
    mem = deploy().client()
    for topic in ("a", "b", "a"):
        await mem.save(f"note on {topic} {id(topic)}", user_id="ann", metadata={"topic": topic})
    assert sorted(await mem.distinct("metadata.topic", user_id="ann")) == ["a", "b"]


async def test_get_by_key_hides_another_users_memory(deploy: Any) -> None:
    d = deploy()
    await d.client().put("bob-key", "Bob's locker code is 9981", user_id="bob")
    ann = d.client(token=d.token(users=["ann"]))
    assert await ann.get_by_key("bob-key") is None


async def test_put_refuses_a_key_of_a_memory_outside_the_tokens_scope(deploy: Any) -> None:
    d = deploy()
    await d.client().put("bob-key", "Bob's locker code is 9981", user_id="bob")
    ann = d.client(token=d.token(users=["ann"]))
    with pytest.raises(PermissionDeniedError):
        await ann.put("bob-key", "overwritten", user_id="ann")


async def test_distinct_stays_in_the_tokens_scope(deploy: Any) -> None:
    d = deploy()
    admin = d.client()
    await admin.save("Ann's note", user_id="ann", metadata={"topic": "ann-topic"})
    await admin.save("Bob's note", user_id="bob", metadata={"topic": "bob-topic"})
    ann = d.client(token=d.token(users=["ann"]))
    assert await ann.distinct("metadata.topic") == ["ann-topic"]


async def test_put_is_audited(deploy: Any) -> None:
    d = deploy()
    rec = await d.client().put("k", "Ann drinks tea", user_id="ann")
    actions = [e["action"] for e in d.service.audit.entries(memory_id=rec.memory_id)]
    assert actions == ["put"]


def test_a_sync_http_store_closes_after_its_async_form_ran_on_a_finished_loop(deploy: Any) -> None:
    import asyncio

    mem = deploy().client("loopback-sync")
    asyncio.run(mem.to_async().put("k", "Ann drinks tea", user_id="ann"))  # that loop is gone afterwards
    mem.close()
    assert mem.closed
