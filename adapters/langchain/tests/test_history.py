"""PolymemChatMessageHistory: a LangChain chat history in a polymem working-memory session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

import polymem
from polymem_langchain import PolymemChatMessageHistory


def _chain(replies: list[str]):  # noqa: ANN202 - a LangChain runnable
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")])
    return prompt | GenericFakeChatModel(messages=iter(replies))


def test_added_messages_read_back_in_order(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s1", user_id="ann")
    history.add_user_message("My dog is called Rex.")
    history.add_ai_message("Nice name!")
    history.add_messages([HumanMessage("Remember it."), AIMessage("Will do.")])
    assert [(m.type, m.content) for m in history.messages] == [
        ("human", "My dog is called Rex."), ("ai", "Nice name!"), ("human", "Remember it."), ("ai", "Will do.")]


def test_sessions_are_separate(mem: polymem.Memory) -> None:
    PolymemChatMessageHistory(mem, "a", user_id="ann").add_messages([HumanMessage("in a")])
    assert PolymemChatMessageHistory(mem, "b", user_id="ann").messages == []


def test_clear_empties_the_window_but_the_transcript_keeps_everything(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    history.add_messages([HumanMessage("one"), AIMessage("two")])
    history.clear()
    history.add_messages([HumanMessage("three")])
    assert [m.content for m in history.messages] == ["three"]
    assert [m.content for m in history.transcript()] == ["one", "two", "three"]


def test_popping_from_messages_takes_the_turn_out_of_the_stored_window(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    history.add_messages([HumanMessage(str(n)) for n in range(5)])
    window = history.messages
    assert window.pop(0).content == "0"
    del window[0]
    window.remove(HumanMessage("4"))
    assert [m.content for m in window] == ["2", "3"]
    assert [m.content for m in history.messages] == ["2", "3"]
    assert [m.content for m in history.transcript()] == ["0", "1", "2", "3", "4"]


def test_appending_to_messages_stores_the_message(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    window = history.messages
    window.append(HumanMessage("a"))
    window += [AIMessage("b")]
    assert [m.content for m in history.messages] == ["a", "b"]


def test_assigning_messages_rewrites_the_window(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    history.add_messages([HumanMessage("a"), AIMessage("b")])
    history.messages = [SystemMessage("summary of a and b"), HumanMessage("c")]
    assert [m.content for m in history.messages] == ["summary of a and b", "c"]
    assert [m.content for m in history.transcript()][:2] == ["a", "b"]


def test_a_token_bounded_window_is_polymems_decision(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann", max_tokens=30, keep_last=1)
    history.add_messages([HumanMessage(f"message number {n} with some words in it") for n in range(6)])
    window = [m.content for m in history.messages]
    assert 0 < len(window) < 6 and window[-1].startswith("message number 5")
    assert len(history.transcript()) == 6


async def test_async_methods_on_a_sync_store(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
    assert [m.content for m in await history.aget_messages()] == ["hi", "hello"]
    await history.aclear()
    assert await history.aget_messages() == []


async def test_async_store_is_awaited_natively_and_sync_reads_see_the_same_session(
        amem: polymem.AsyncMemory) -> None:
    history = PolymemChatMessageHistory(amem, "s", user_id="ann")
    assert isinstance(history.session, polymem.AsyncSession)
    await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
    assert [m.content for m in history.messages] == ["hi", "hello"]
    window = await history.aget_messages()
    window.pop(0)
    assert [m.content for m in await history.aget_messages()] == ["hello"]
    assert [m.content for m in await history.atranscript()] == ["hi", "hello"]


def test_runnable_with_message_history_remembers_across_invocations(mem: polymem.Memory) -> None:
    chain = RunnableWithMessageHistory(
        _chain(["Hello Ann!", "You are Ann."]),
        lambda session_id: PolymemChatMessageHistory(mem, session_id, user_id="ann"),
        input_messages_key="question", history_messages_key="history",
    )
    config = {"configurable": {"session_id": "chat-1"}}
    chain.invoke({"question": "I am Ann."}, config=config)
    answer = chain.invoke({"question": "Who am I?"}, config=config)
    assert answer.content == "You are Ann."
    stored = PolymemChatMessageHistory(mem, "chat-1", user_id="ann").messages
    assert [(m.type, m.content) for m in stored] == [
        ("human", "I am Ann."), ("ai", "Hello Ann!"), ("human", "Who am I?"), ("ai", "You are Ann.")]
    assert stored[-1] == answer  # the model's reply, id and metadata included


async def test_runnable_with_message_history_async_over_an_async_store(amem: polymem.AsyncMemory) -> None:
    seen: list[list[str]] = []
    model = GenericFakeChatModel(messages=iter(["first", "second"]))
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")])

    def record(value):  # noqa: ANN001, ANN202 - what the model is shown
        seen.append([m.content for m in value.to_messages()])
        return value

    chain = RunnableWithMessageHistory(
        prompt | record | model,
        lambda session_id: PolymemChatMessageHistory(amem, session_id, user_id="ann"),
        input_messages_key="question", history_messages_key="history",
    )
    config = {"configurable": {"session_id": "chat-2"}}
    await chain.ainvoke({"question": "q1"}, config=config)
    await chain.ainvoke({"question": "q2"}, config=config)
    assert seen == [["q1"], ["q1", "first", "q2"]]


def test_sorting_messages_rewrites_the_stored_window_in_that_order(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    history.add_messages([HumanMessage("bb"), AIMessage("a"), HumanMessage("ccc")])
    window = history.messages
    window.sort(key=lambda m: len(m.content))
    assert [m.content for m in window] == ["a", "bb", "ccc"]
    assert [m.content for m in history.messages] == ["a", "bb", "ccc"]
    window.sort(key=lambda m: m.content, reverse=True)
    assert [m.content for m in history.messages] == ["ccc", "bb", "a"]


def test_the_model_reply_is_stored_exactly_as_returned(mem: polymem.Memory) -> None:
    reply = AIMessage("ok", usage_metadata={"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
                      response_metadata={"model_name": "fake"}, id="run-42")
    chain = RunnableWithMessageHistory(
        _chain([reply]), lambda sid: PolymemChatMessageHistory(mem, sid, user_id="ann"),
        input_messages_key="question", history_messages_key="history")
    chain.invoke({"question": "q"}, config={"configurable": {"session_id": "s"}})
    stored = PolymemChatMessageHistory(mem, "s", user_id="ann").messages[-1]
    assert (stored.usage_metadata, stored.response_metadata["model_name"], stored.id) == (
        reply.usage_metadata, "fake", "run-42")


def test_behaves_like_the_in_memory_history_on_the_same_calls(mem: polymem.Memory) -> None:
    ours = PolymemChatMessageHistory(mem, "s", user_id="ann")
    theirs = InMemoryChatMessageHistory()
    for history in (ours, theirs):
        history.add_user_message("a")
        history.add_ai_message("b")
        history.add_messages([HumanMessage("c")])
        history.messages.pop(0)
    assert list(ours.messages) == theirs.messages
    assert str(ours) == str(theirs)


def test_a_second_process_sees_what_the_first_wrote(db_url: str) -> None:
    with polymem.open(db_url, embedder=None) as store:
        PolymemChatMessageHistory(store, "shared", user_id="ann").add_messages(
            [HumanMessage("from process one", id="p1"), AIMessage("ack", tool_calls=[
                {"name": "note", "args": {"x": 1}, "id": "t1"}])])
    script = textwrap.dedent(f"""
        import polymem
        from langchain_core.messages import AIMessage, HumanMessage
        from polymem_langchain import PolymemChatMessageHistory
        history = PolymemChatMessageHistory(polymem.open({db_url!r}, embedder=None), "shared", user_id="ann")
        assert list(history.messages) == [HumanMessage("from process one", id="p1"), AIMessage("ack", tool_calls=[
            {{"name": "note", "args": {{"x": 1}}, "id": "t1"}}])], history.messages
        history.add_messages([HumanMessage("from process two")])
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with polymem.open(db_url, embedder=None) as store:
        assert [m.content for m in PolymemChatMessageHistory(store, "shared", user_id="ann").messages] == [
            "from process one", "ack", "from process two"]


def test_a_store_of_the_wrong_kind_is_refused() -> None:
    with pytest.raises(TypeError, match="polymem store"):
        PolymemChatMessageHistory({}, "s", user_id="ann")  # type: ignore[arg-type]
