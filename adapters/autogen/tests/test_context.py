"""PolymemChatCompletionContext: an AutoGen model context kept in polymem working memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from autogen_core import FunctionCall
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)

from polymem_autogen import PolymemChatCompletionContext, RecalledMemoriesMessage

pytestmark = pytest.mark.asyncio


def turn(i: int) -> list[Any]:
    return [
        UserMessage(content=f"question {i}", source="user"),
        AssistantMessage(content=f"answer {i}", source="agent"),
    ]


def dumped(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


async def test_messages_added_are_returned_in_order(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    for message in turn(1) + turn(2):
        await context.add_message(message)
    assert dumped(await context.get_messages()) == dumped(turn(1) + turn(2))


async def test_a_new_context_on_the_same_session_continues_the_conversation(db_url: str) -> None:
    first = PolymemChatCompletionContext(db_url, session_id="s", user_id="alice")
    for message in turn(1):
        await first.add_message(message)
    await first.close()
    second = PolymemChatCompletionContext(db_url, session_id="s", user_id="alice")
    try:
        assert dumped(await second.get_messages()) == dumped(turn(1))
    finally:
        await second.close()


async def test_the_session_is_readable_as_plain_polymem_messages(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    for message in turn(1):
        await context.add_message(message)
    stored = lexical.session("s", user_id="alice").messages()
    assert [(m.role, m.name, m.content) for m in stored] == [
        ("user", "user", "question 1"),
        ("assistant", "agent", "answer 1"),
    ]


async def test_only_the_latest_recalled_memories_are_returned(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    await context.add_message(turn(1)[0])
    await context.add_message(RecalledMemoriesMessage(content="1. old recall"))
    await context.add_message(turn(1)[1])
    await context.add_message(turn(2)[0])
    await context.add_message(RecalledMemoriesMessage(content="1. new recall"))
    contents = [m.content for m in await context.get_messages()]
    assert contents == ["question 1", "answer 1", "question 2", "1. new recall"]
    assert len(lexical.session("s", user_id="alice").transcript()) == 5


async def test_tool_results_whose_call_left_the_window_are_not_returned(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice", max_tokens=40, keep_last=2)
    await context.add_message(UserMessage(content="weather please " * 10, source="user"))
    await context.add_message(
        AssistantMessage(content=[FunctionCall(id="c1", name="weather", arguments="{}")], source="agent")
    )
    await context.add_message(
        FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="sunny", name="weather", call_id="c1")])
    )
    await context.add_message(AssistantMessage(content="It is sunny.", source="agent"))
    messages = await context.get_messages()
    assert not isinstance(messages[0], FunctionExecutionResultMessage)
    assert messages[-1].content == "It is sunny."


async def test_a_summarized_window_starts_with_the_summary_as_a_system_message(lexical: Any) -> None:
    context = PolymemChatCompletionContext(
        lexical, session_id="s", user_id="alice", max_tokens=30, overflow="summarize", keep_last=2
    )
    for i in range(1, 5):
        for message in turn(i):
            await context.add_message(message)
    messages = await context.get_messages()
    assert isinstance(messages[0], SystemMessage) and "question 1" in messages[0].content
    assert dumped(messages[-2:]) == dumped(turn(4))


async def test_clear_empties_the_window_but_keeps_the_transcript(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    for message in turn(1):
        await context.add_message(message)
    await context.clear()
    assert await context.get_messages() == []
    assert len(lexical.session("s", user_id="alice").transcript()) == 2


async def test_initial_messages_seed_a_new_session_once(db_url: str) -> None:
    seed = [SystemMessage(content="You plan trips.")]
    for _ in range(2):
        context = PolymemChatCompletionContext(db_url, session_id="s", user_id="alice", initial_messages=seed)
        await context.add_message(turn(1)[0])
        messages = await context.get_messages()
        await context.close()
    assert dumped(messages) == dumped(seed + [turn(1)[0], turn(1)[0]])


async def test_save_and_load_state_restore_the_window(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="a", user_id="alice")
    for message in turn(1):
        await context.add_message(message)
    state = json.loads(json.dumps(await context.save_state()))
    other = PolymemChatCompletionContext(lexical, session_id="b", user_id="alice")
    await other.add_message(turn(9)[0])
    await other.load_state(state)
    assert dumped(await other.get_messages()) == dumped(turn(1))


async def test_component_config_round_trip_reopens_the_session(db_url: str, lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice", agent_id="planner", max_tokens=500)
    for message in turn(1):
        await context.add_message(message)
    dumped_config = json.loads(context.dump_component().model_dump_json())
    assert dumped_config["provider"] == "polymem_autogen.PolymemChatCompletionContext"
    loaded = ChatCompletionContext.load_component(dumped_config)
    try:
        assert isinstance(loaded, PolymemChatCompletionContext)
        assert dumped(await loaded.get_messages()) == dumped(turn(1))
    finally:
        await loaded.close()
