"""Tokens isolate tenants: nothing crosses a namespace or a user scope without a grant.

Every endpoint, every verb: a token of namespace B (or of user bob) cannot
read, update, delete, export or recall what A (or ann) wrote.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

import polymem
from polymem import NotFoundError, PermissionDeniedError

ANN_SECRET = "Ann's locker code is 4512"


@pytest.fixture
def world(deploy: Any) -> Any:
    d = deploy()
    a_token = d.token("acme", ("read", "write", "admin"))
    b_token = d.token("globex", ("read", "write", "admin"))
    ann_token = d.token("acme", ("read", "write"), users=["ann"])
    return d, d.client(token=a_token), d.client(token=b_token), d.client(token=ann_token)


async def _seed(a: Any) -> tuple[Any, Any]:
    ann = await a.save(ANN_SECRET, user_id="ann")
    bob = await a.save("Bob's locker code is 9981", user_id="bob")
    await a.session("s-ann", user_id="ann").add("user", "my locker code is 4512")
    await a.session("s-bob", user_id="bob").add("user", "my locker code is 9981")
    return ann, bob


# -- across namespaces ----------------------------------------------------------------------
async def test_another_namespace_cannot_get_or_trace_history(world: Any) -> None:
    _, a, b, _ = world
    ann, _ = await _seed(a)
    assert await b.get(ann.memory_id) is None
    assert await b.history(ann.memory_id) == []


async def test_another_namespace_cannot_update_or_delete(world: Any) -> None:
    _, a, b, _ = world
    ann, _ = await _seed(a)
    with pytest.raises(NotFoundError):
        await b.update(ann.memory_id, content="Ann's locker code is 0000")
    assert await b.delete(ann.memory_id) is False
    assert (await a.get(ann.memory_id)).content == ANN_SECRET


async def test_another_namespace_cannot_recall_list_or_export(world: Any) -> None:
    _, a, b, _ = world
    await _seed(a)
    assert list(await b.recall("locker code", user_id="ann")) == []
    assert list(await b.recall("locker code", user_id=None)) == []
    assert await b.list() == []
    buffer = io.BytesIO()
    assert await b.export_snapshot(buffer) == 0
    assert b"4512" not in buffer.getvalue()


async def test_another_namespace_cannot_see_or_read_sessions(world: Any) -> None:
    _, a, b, _ = world
    await _seed(a)
    assert await b.sessions() == []
    ses = b.session("s-ann", user_id="ann")
    assert await ses.messages() == [] and await ses.transcript() == [] and await ses.info() is None


async def test_a_namespace_without_a_grant_is_refused(world: Any) -> None:
    d, a, _, _ = world
    await _seed(a)
    b_in_acme = d.client(token=d.token("globex"), namespace="acme")
    for call in (lambda: b_in_acme.get("x"), lambda: b_in_acme.recall("locker", user_id="ann"),
                 lambda: b_in_acme.save("hi", user_id="ann"), lambda: b_in_acme.list()):
        with pytest.raises(PermissionDeniedError):
            await call()


async def test_sharing_a_namespace_is_an_explicit_grant(world: Any) -> None:
    d, a, _, _ = world
    ann, _ = await _seed(a)
    token = d.token("globex")
    token_id = token[3:15]
    d.service.tokens.grant(token_id, "acme", ["read"], users=["ann"])
    shared = d.client(token=token, namespace="acme")
    assert (await shared.get(ann.memory_id)).content == ANN_SECRET
    with pytest.raises(PermissionDeniedError):
        await shared.save("I like red", user_id="ann")  # read-only grant
    assert await shared.get((await a.list(user_id="bob"))[0].memory_id) is None


# -- across users of one namespace ----------------------------------------------------------
async def test_a_user_scoped_token_cannot_get_update_or_delete_another_users_memory(world: Any) -> None:
    _, a, _, ann_only = world
    _, bob = await _seed(a)
    assert await ann_only.get(bob.memory_id) is None
    assert await ann_only.history(bob.memory_id) == []
    with pytest.raises(NotFoundError):
        await ann_only.update(bob.memory_id, content="Bob's locker code is 0000")
    assert await ann_only.delete(bob.memory_id) is False
    assert (await a.get(bob.memory_id)).content == "Bob's locker code is 9981"


@pytest.mark.parametrize("user", ["bob", "mallory"])
async def test_a_body_naming_another_user_is_refused(world: Any, user: str) -> None:
    _, a, _, ann_only = world
    await _seed(a)
    refused = [
        lambda: ann_only.save("I like red", user_id=user),
        lambda: ann_only.recall("locker", user_id=user),
        lambda: ann_only.list(user_id=user),
        lambda: ann_only.ingest([polymem.Message("user", "My name is Bob.")], user_id=user),
        lambda: ann_only.export_snapshot(io.BytesIO(), user_id=user),
        lambda: ann_only.sessions(user_id=user),
        lambda: ann_only.session("s-new", user_id=user).add("user", "hi"),
        lambda: ann_only.recall("locker", user_id=None, filter={"user_id": user}),
        lambda: ann_only.list(filter={"user_id": {"$in": ["ann", user]}}),
    ]
    for call in refused:
        with pytest.raises(PermissionDeniedError):
            await call()


async def test_a_user_scoped_token_recalls_lists_and_exports_only_its_user(world: Any) -> None:
    _, a, _, ann_only = world
    await _seed(a)
    assert [h.memory.user_id for h in await ann_only.recall("locker code", user_id=None)] == ["ann"]
    assert [r.user_id for r in await ann_only.list()] == ["ann"]
    buffer = io.BytesIO()
    assert await ann_only.export_snapshot(buffer) == 1
    assert b"9981" not in buffer.getvalue()


async def test_a_user_scoped_token_cannot_touch_another_users_session(world: Any) -> None:
    _, a, _, ann_only = world
    await _seed(a)
    assert [s.session_id for s in await ann_only.sessions()] == ["s-ann"]
    bob_session = ann_only.session("s-bob", user_id="ann")  # right user in the body, someone else's session
    for call in (bob_session.messages, bob_session.transcript, bob_session.info, bob_session.clear,
                 bob_session.delete, lambda: bob_session.add("user", "hi"), lambda: bob_session.end()):
        with pytest.raises(PermissionDeniedError):
            await call()
    assert len(await a.session("s-bob", user_id="bob").transcript()) == 1


async def test_namespace_wide_operations_need_an_unscoped_admin(world: Any) -> None:
    _, a, _, ann_only = world
    await _seed(a)
    for call in (ann_only.consolidate, ann_only.reembed, ann_only.stats,
                 lambda: ann_only.import_snapshot(io.BytesIO(b"")), lambda: ann_only.block_source("tool_result")):
        with pytest.raises(PermissionDeniedError):
            await call()


async def test_an_idempotency_key_cannot_fetch_another_users_memory(world: Any) -> None:
    _, a, _, ann_only = world
    bob = await a.save("Bob's locker code is 9981", user_id="bob", idempotency_key="k-1")
    mine = await ann_only.save("anything", user_id="ann", idempotency_key="k-1")
    assert mine.user_id == "ann" and mine.content == "anything" and mine.memory_id != bob.memory_id


async def test_another_users_idempotency_key_answers_as_an_unused_key_and_touches_nothing(world: Any) -> None:
    _, a, _, ann_only = world
    bob = await a.save("Bob's locker code is 9981", user_id="bob", idempotency_key="k-1")
    unused = await ann_only.save("anything", user_id="ann", idempotency_key="k-unused")
    taken = await ann_only.save("anything else", user_id="ann", idempotency_key="k-1")
    assert (taken.user_id, taken.version, taken.status) == (unused.user_id, unused.version, unused.status)
    assert await a.get(bob.memory_id) == bob  # last_accessed_at not refreshed


async def test_an_agent_bound_token_writes_only_as_its_agent(deploy: Any) -> None:
    d = deploy()
    lc = d.client(token=d.token("acme", agent_id="langchain"))
    assert (await lc.save("I like blue", user_id="ann")).agent_id == "langchain"
    with pytest.raises(PermissionDeniedError):
        await lc.save("I like red", user_id="ann", agent_id="autogen")
