"""PolymemStore: LangGraph's BaseStore over polymem long-term memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, create_react_agent
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp, SearchOp

import polymem
from polymem.testing import FakeClock
from polymem_langchain import PolymemStore


@pytest.fixture
def store(mem: polymem.Memory) -> PolymemStore:
    return PolymemStore(mem, user_id="ann")


def test_put_then_get_returns_the_item(store: PolymemStore) -> None:
    store.put(("memories", "ann"), "food", {"content": "Ann is vegetarian", "confidence": 0.9})
    item = store.get(("memories", "ann"), "food")
    assert (item.namespace, item.key, item.value) == (
        ("memories", "ann"), "food", {"content": "Ann is vegetarian", "confidence": 0.9})
    assert item.created_at.tzinfo is not None and item.created_at == item.updated_at
    assert store.get(("memories", "ann"), "other") is None
    assert store.get(("memories",), "food") is None


def test_putting_the_same_key_updates_the_memory_and_keeps_its_history(store: PolymemStore,
                                                                       mem: polymem.Memory) -> None:
    store.put(("prefs",), "color", {"content": "likes blue"})
    first = store.get(("prefs",), "color")
    store.put(("prefs",), "color", {"content": "switched to black"})
    item = store.get(("prefs",), "color")
    assert item.value == {"content": "switched to black"} and item.created_at == first.created_at
    [record] = mem.list(user_id="ann")
    assert [v.content for v in mem.history(record.memory_id)] == ["likes blue", "switched to black"]


def test_delete_removes_the_item(store: PolymemStore, mem: polymem.Memory) -> None:
    store.put(("prefs",), "color", {"content": "likes blue"})
    store.delete(("prefs",), "color")
    assert store.get(("prefs",), "color") is None and mem.list(user_id="ann") == []


def test_items_are_ordinary_polymem_memories(store: PolymemStore, mem: polymem.Memory) -> None:
    store.put(("memories",), "k", {"content": "Ann climbs on Saturdays", "tags": ["sport"]})
    store.put(("memories",), "j", {"weight_kg": 61})
    assert [h.memory.content for h in mem.recall("climbs", user_id="ann")] == ["Ann climbs on Saturdays"]
    assert {r.content for r in mem.list(user_id="ann")} == {"Ann climbs on Saturdays", '{"weight_kg": 61}'}
    assert mem.list(user_id="ann")[0].source == "inference"


def test_fields_choose_the_text_polymem_indexes(mem: polymem.Memory) -> None:
    store = PolymemStore(mem, user_id="ann", fields=["title", "notes[*]"])
    store.put(("docs",), "a", {"title": "Trip", "notes": ["pack boots", "book train"], "n": 2})
    store.put(("docs",), "b", {"title": "Other", "body": "x"}, index=["body"])
    assert sorted(r.content for r in mem.list(user_id="ann")) == ["Trip\npack boots\nbook train", "x"]


def test_search_scopes_by_namespace_prefix_newest_first(store: PolymemStore) -> None:
    store.put(("docs", "a"), "1", {"content": "first"})
    store.put(("docs", "b"), "2", {"content": "second"})
    store.put(("notes",), "3", {"content": "third"})
    assert [i.key for i in store.search(("docs",))] == ["2", "1"]
    assert [i.key for i in store.search(("docs", "a"))] == ["1"]
    assert [i.key for i in store.search(())] == ["3", "2", "1"]
    assert [i.key for i in store.search((), limit=1, offset=1)] == ["2"]
    assert all(i.score is None for i in store.search(()))


def test_search_filters_follow_langgraphs_rules(store: PolymemStore) -> None:
    store.put(("p",), "a", {"content": "apple", "kind": "fruit", "price": 1.5, "meta": {"origin": "FR"}})
    store.put(("p",), "b", {"content": "banana", "kind": "fruit", "price": 0.5, "meta": {"origin": "CI"}})
    store.put(("p",), "c", {"content": "carrot", "kind": "vegetable", "price": 0.8})
    keys = lambda **f: sorted(i.key for i in store.search(("p",), filter=f))  # noqa: E731
    assert keys(kind="fruit") == ["a", "b"]
    assert keys(price={"$gt": 0.6}) == ["a", "c"]
    assert keys(price={"$gte": 0.5, "$lt": 1.0}) == ["b", "c"]
    assert keys(kind={"$ne": "fruit"}) == ["c"]
    assert keys(meta={"origin": "FR"}) == ["a"]
    assert keys(kind="fruit", price={"$lte": 0.5}) == ["b"]


def test_search_with_a_query_ranks_by_relevance_with_scores(smem: polymem.Memory) -> None:
    store = PolymemStore(smem, user_id="ann")
    store.put(("memories",), "1", {"content": "Ann is allergic to shellfish"})
    store.put(("memories",), "2", {"content": "Ann's favourite film is Amélie"})
    store.put(("other",), "3", {"content": "Ann cannot eat shrimp or crab"})
    results = store.search(("memories",), query="seafood allergy")
    assert results[0].key == "1" and "3" not in {r.key for r in results}
    assert all(r.score is not None and 0 < r.score <= 1 for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_a_query_with_a_filter_loses_no_filter_match(store: PolymemStore) -> None:
    store.put(("things",), "apple", {"text": "a red apple", "color": "red"})
    store.put(("things",), "car", {"text": "a red car", "color": "red"})
    store.put(("things",), "sky", {"text": "a blue sky", "color": "blue"})
    found = store.search(("things",), query="apple", filter={"color": "red"})
    assert [item.key for item in found] == ["apple", "car"]


def test_a_store_without_a_model_returns_every_item_for_a_query(store: PolymemStore) -> None:
    for key in ("tea", "coffee", "bread"):
        store.put(("food",), key, {"text": f"I like {key}"})
    assert {item.key for item in store.search(("food",), query="tea")} == {"tea", "coffee", "bread"}
    assert store.search(("food",), query="tea")[0].key == "tea"


def test_an_item_put_with_index_false_is_not_searched_but_fills_the_last_places(store: PolymemStore) -> None:
    store.put(("notes",), "found", {"text": "the blue notebook"})
    store.put(("notes",), "hidden", {"text": "the blue notebook, hidden"}, index=False)
    assert [(i.key, i.score is None) for i in store.search(("notes",), query="blue")] == [
        ("found", False), ("hidden", True)]
    assert [i.key for i in store.search(("notes",), query="blue", limit=1)] == ["found"]


def test_a_batch_with_a_bad_operation_applies_none_of_it(store: PolymemStore) -> None:
    with pytest.raises(polymem.InvalidFilterError):
        store.batch([PutOp(("ok",), "key", {"text": "kept out"}), SearchOp(("ok",), filter={"a'b": 1})])
    assert store.get(("ok",), "key") is None


def test_list_namespaces_with_prefix_suffix_wildcards_and_depth(store: PolymemStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]:
        store.put(ns, "k", {"content": "/".join(ns)})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


@pytest.mark.parametrize("namespace", [(), ("langgraph", "x"), ("a.b",), ("",)])
def test_invalid_namespaces_are_refused_as_langgraph_does(store: PolymemStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"content": "x"})


def test_ttl_expires_items_in_minutes(db_url: str) -> None:
    clock = FakeClock()
    with polymem.open(db_url, embedder=None, clock=clock) as mem:
        store = PolymemStore(mem, user_id="ann")
        assert store.supports_ttl
        store.put(("s",), "short", {"content": "short lived"}, ttl=5)
        store.put(("s",), "long", {"content": "long lived"})
        clock.advance(minutes=6)
        assert store.get(("s",), "short") is None
        assert [i.key for i in store.search(("s",))] == ["long"]
        assert store.list_namespaces() == [("s",)]
        store.put(("s",), "short", {"content": "written again"})
        assert store.get(("s",), "short").value == {"content": "written again"}


def test_default_ttl_from_the_ttl_config(db_url: str) -> None:
    clock = FakeClock()
    with polymem.open(db_url, embedder=None, clock=clock) as mem:
        store = PolymemStore(mem, user_id="ann", ttl={"default_ttl": 1.0})
        store.put(("s",), "k", {"content": "ephemeral"})
        clock.advance(minutes=2)
        assert store.get(("s",), "k") is None


def test_users_have_separate_stores(mem: polymem.Memory) -> None:
    PolymemStore(mem, user_id="ann").put(("m",), "k", {"content": "Ann's secret"})
    bob = PolymemStore(mem, user_id="bob")
    assert bob.get(("m",), "k") is None and bob.search(()) == [] and bob.list_namespaces() == []


def test_the_same_value_under_two_keys_stays_two_items(store: PolymemStore) -> None:
    store.put(("a",), "k1", {"content": "same text"})
    store.put(("b",), "k2", {"content": "same text"})
    assert store.get(("a",), "k1") is not None and store.get(("b",), "k2") is not None


async def test_async_operations_over_an_async_store(amem: polymem.AsyncMemory) -> None:
    store = PolymemStore(amem, user_id="ann")
    await store.aput(("m",), "k", {"content": "async item"})
    assert (await store.aget(("m",), "k")).value == {"content": "async item"}
    assert [i.key for i in await store.asearch(("m",), query="async item")] == ["k"]
    assert await store.alist_namespaces() == [("m",)]
    await store.adelete(("m",), "k")
    assert await store.aget(("m",), "k") is None


def test_a_graph_compiled_with_the_store_reads_and_writes_it(mem: polymem.Memory) -> None:
    def remember(state: MessagesState, runtime: Runtime) -> dict[str, Any]:
        text = state["messages"][-1].content
        runtime.store.put(("memories", "ann"), str(len(text)), {"content": text})
        known = [i.value["content"] for i in runtime.store.search(("memories", "ann"))]
        return {"messages": [AIMessage(f"I know {len(known)} things")]}

    graph = StateGraph(MessagesState).add_node(remember).add_edge(START, "remember")
    app = graph.compile(store=PolymemStore(mem, user_id="ann"))
    app.invoke({"messages": [HumanMessage("I like tea")]})
    result = app.invoke({"messages": [HumanMessage("I live in Lyon")]})
    assert result["messages"][-1].content == "I know 2 things"
    assert {r.content for r in mem.list(user_id="ann")} == {"I like tea", "I live in Lyon"}


class ToolCallingFake(GenericFakeChatModel):
    """LangChain's generic fake chat model, accepting tools as a real one would."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


@tool
def save_memory(content: str, key: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Remember something about the user."""
    store.put(("memories",), key, {"content": content})
    return "saved"


@tool
def search_memory(query: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Look up what is known about the user."""
    return "; ".join(i.value["content"] for i in store.search(("memories",), query=query)) or "nothing"


def _agent_model(*replies: AIMessage) -> ToolCallingFake:
    return ToolCallingFake(messages=iter(replies))


def test_a_langgraph_agent_with_tools_gets_long_term_memory(smem: polymem.Memory) -> None:
    store = PolymemStore(smem, user_id="ann")
    writer = create_react_agent(_agent_model(
        AIMessage("", tool_calls=[{"name": "save_memory", "id": "c1",
                                   "args": {"content": "Ann's daughter is called Lea", "key": "family"}}]),
        AIMessage("I'll remember that.")), [save_memory, search_memory], store=store)
    writer.invoke({"messages": [HumanMessage("My daughter is Lea.")]})
    reader = create_react_agent(_agent_model(
        AIMessage("", tool_calls=[{"name": "search_memory", "id": "c2", "args": {"query": "daughter's name"}}]),
        AIMessage("Your daughter is Lea.")), [save_memory, search_memory], store=store)
    result = reader.invoke({"messages": [HumanMessage("What's my daughter's name?")]})
    tool_reply = next(m for m in result["messages"] if m.type == "tool")
    assert tool_reply.content == "Ann's daughter is called Lea"
    assert [h.memory.content for h in smem.recall("Lea", user_id="ann")] == ["Ann's daughter is called Lea"]


async def test_a_langgraph_agent_runs_async_over_an_async_store(db_url: str) -> None:
    async with polymem.open_async(db_url, embedder=None) as amem:
        agent = create_react_agent(_agent_model(
            AIMessage("", tool_calls=[{"name": "save_memory", "id": "c1",
                                       "args": {"content": "Ann drinks oat milk", "key": "milk"}}]),
            AIMessage("Saved.")), [save_memory], store=PolymemStore(amem, user_id="ann"))
        await agent.ainvoke({"messages": [HumanMessage("I drink oat milk")]})
        assert [r.content for r in await amem.list(user_id="ann")] == ["Ann drinks oat milk"]


def test_a_second_process_sees_the_items(db_url: str) -> None:
    with polymem.open(db_url, embedder=None) as mem:
        PolymemStore(mem, user_id="ann").put(("m", "ann"), "k", {"content": "from one", "n": 1})
    script = textwrap.dedent(f"""
        import polymem
        from polymem_langchain import PolymemStore
        store = PolymemStore(polymem.open({db_url!r}, embedder=None), user_id="ann")
        assert store.get(("m", "ann"), "k").value == {{"content": "from one", "n": 1}}
        store.put(("m", "ann"), "k2", {{"content": "from two"}})
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with polymem.open(db_url, embedder=None) as mem:
        assert [i.key for i in PolymemStore(mem, user_id="ann").search(("m",))] == ["k2", "k"]
