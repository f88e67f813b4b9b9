"""Every LangChain message type survives polymem unchanged; other frameworks' messages map by role."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

import polymem
from polymem_langchain import PolymemChatMessageHistory, to_langchain, to_polymem

EVERY_KIND: list[BaseMessage] = [
    HumanMessage("hi", id="h-1", name="ann", additional_kwargs={"lang": "en"}),
    HumanMessage(["look: ", {"type": "text", "text": "this", "cache_control": {"type": "ephemeral"}},
                  {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
    AIMessage(
        "",
        id="run-1",
        tool_calls=[{"name": "weather", "args": {"city": "Lyon", "days": 3, "units": ["C", 1.5]}, "id": "call_1"},
                    {"name": "clock", "args": {}, "id": None}],
        invalid_tool_calls=[{"name": "bad", "args": "{oops", "id": "call_2", "error": "not JSON",
                             "type": "invalid_tool_call"}],
        usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19,
                        "input_token_details": {"cache_read": 4}},
        response_metadata={"model_name": "fake-1", "finish_reason": "tool_calls"},
        additional_kwargs={"refusal": None},
    ),
    AIMessage("It is 21 °C in Lyon.", name="assistant-7", response_metadata={"logprobs": None}),
    ToolMessage("21", tool_call_id="call_1", name="weather", artifact={"raw": [21, "C"]}, status="error"),
    SystemMessage("You are terse.", id="sys"),
    ChatMessage("Looks fine to me.", role="critic"),
    ChatMessage("Same role as a human, but a ChatMessage.", role="user"),
    FunctionMessage('{"ok": true}', name="legacy_fn"),
    AIMessageChunk("partial", id="chunk-1"),
    HumanMessage(""),
    AIMessage([]),
]


@pytest.mark.parametrize("message", EVERY_KIND, ids=lambda m: f"{type(m).__name__}")
def test_message_round_trips_through_the_polymem_message_dict(message: BaseMessage) -> None:
    wire = json.loads(json.dumps(to_polymem(message).to_dict()))
    back = to_langchain(polymem.Message.from_dict(wire))
    assert type(back) is type(message)
    assert back == message


def test_every_message_kind_round_trips_through_an_sqlite_session(mem: polymem.Memory) -> None:
    history = PolymemChatMessageHistory(mem, "s", user_id="ann")
    history.add_messages(EVERY_KIND)
    again = PolymemChatMessageHistory(polymem.open(mem.url, embedder=None), "s", user_id="ann").messages
    assert [type(m) for m in again] == [type(m) for m in EVERY_KIND]
    assert list(again) == EVERY_KIND


def test_neutral_fields_are_what_other_frameworks_read() -> None:
    message = to_polymem(EVERY_KIND[2])
    assert message.role == "assistant"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("call_1", "weather", {"city": "Lyon", "days": 3, "units": ["C", 1.5]}), ("", "clock", {})]
    tool = to_polymem(EVERY_KIND[4])
    assert (tool.role, tool.content, tool.tool_call_id, tool.name) == ("tool", "21", "call_1", "weather")
    multimodal = to_polymem(EVERY_KIND[1])
    assert multimodal.content == "look: this"
    assert multimodal.parts == ({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},)


def test_messages_written_by_other_frameworks_map_by_role() -> None:
    call = polymem.ToolCall(id="c1", name="search", arguments='{"q": "x"}')
    written = [
        polymem.Message(role="user", content="hello", name="ann", message_id="m1"),
        polymem.Message(role="assistant", content="", tool_calls=(call,), message_id="m2"),
        polymem.Message(role="tool", content="found", tool_call_id="c1", message_id="m3"),
        polymem.Message(role="system", content="be brief", message_id="m4"),
        polymem.Message(role="planner", content="step 1", message_id="m5"),
        polymem.Message(role="user", content="see", parts=({"type": "image", "url": "u"},), message_id="m6"),
    ]
    assert [to_langchain(m) for m in written] == [
        HumanMessage("hello", name="ann", id="m1"),
        AIMessage("", id="m2", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}]),
        ToolMessage("found", tool_call_id="c1", id="m3"),
        SystemMessage("be brief", id="m4"),
        ChatMessage("step 1", role="planner", id="m5"),
        HumanMessage([{"type": "text", "text": "see"}, {"type": "image", "url": "u"}], id="m6"),
    ]


def test_an_artifact_that_is_not_json_is_refused_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="artifact"):
        to_polymem(ToolMessage("x", tool_call_id="c", artifact=object()))
