"""Message conversion: exact for Agent Framework's own messages, neutral fields for everyone else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_framework import Content, Message

import polymem
from polymem_agent_framework import from_polymem, from_polymem_all, to_polymem, to_polymem_all

MESSAGES = [
    Message("system", ["You are terse."]),
    Message("user", ["Hi", Content.from_uri(uri="https://example.com/cat.png", media_type="image/png")],
            author_name="alice", message_id="m-1", additional_properties={"channel": "web", "n": [1, 2]}),
    Message("assistant", [Content.from_text("Let me check.", annotations=[{"type": "citation", "title": "doc"}]),
                          Content.from_function_call(call_id="c1", name="lookup", arguments={"q": "oslo", "k": 3}),
                          Content.from_function_call(call_id="c2", name="clock", arguments='{"tz": "UTC"}')]),
    Message("tool", [Content.from_function_result(call_id="c1", result={"temp": 21, "unit": "C"})]),
    Message("tool", [Content.from_function_result(call_id="c2", result="12:00")]),
    Message("assistant", [Content.from_text_reasoning(text="thinking"), Content.from_text("Done."),
                          Content.from_data(data=b"\x00\xffbinary", media_type="application/octet-stream"),
                          Content.from_usage(usage_details={"input_token_count": 10, "output_token_count": 3}),
                          Content.from_error(message="partial", error_code="E1"),
                          Content.from_hosted_file(file_id="file-1")]),
    Message("critic", ["A custom role."]),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.role)
def test_agent_framework_messages_round_trip_exactly(message: Message) -> None:
    assert from_polymem(to_polymem(message)).to_dict() == message.to_dict()


def test_messages_round_trip_exactly_through_a_real_sqlite_session(lexical: Any) -> None:
    session = lexical.session("s", user_id="u", max_tokens=None)
    session.add_messages(to_polymem_all(MESSAGES))
    assert [m.to_dict() for m in from_polymem_all(session.transcript())] == [m.to_dict() for m in MESSAGES]


def test_neutral_fields_are_what_other_frameworks_read() -> None:
    user, assistant, result, text_result = (to_polymem(m) for m in MESSAGES[1:5])
    assert (user.role, user.content, user.name) == ("user", "Hi", "alice")
    assert user.parts == ({"type": "uri", "uri": "https://example.com/cat.png", "media_type": "image/png",
                           "additional_properties": {}},)
    assert user.metadata["channel"] == "web"
    assert assistant.content == "Let me check."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in assistant.tool_calls] == [
        ("c1", "lookup", {"q": "oslo", "k": 3}), ("c2", "clock", {"tz": "UTC"})]
    assert (result.role, result.tool_call_id, json.loads(result.content)) == ("tool", "c1", {"temp": 21, "unit": "C"})
    assert text_result.content == "12:00"


def test_a_message_another_framework_wrote_is_read_from_the_neutral_fields_and_written_back_unchanged() -> None:
    foreign = [
        polymem.Message(role="user", content="Look", name="ann", parts=({"type": "image_url", "url": "x"},),
                        metadata={"langchain": {"type": "human"}}),
        polymem.Message(role="assistant", content="",
                        tool_calls=(polymem.ToolCall(id="t1", name="search", arguments='{"q": 1}'),)),
        polymem.Message(role="tool", content="found", tool_call_id="t1", name="search"),
    ]
    read = from_polymem_all(foreign)
    assert [(m.role, m.author_name, [c.type for c in m.contents]) for m in read] == [
        ("user", "ann", ["text"]), ("assistant", None, ["function_call"]), ("tool", "search", ["function_result"])]
    assert read[2].contents[0].result == "found"
    back = to_polymem_all(read)
    assert [(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.parts) for m in back] == [
        (m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.parts) for m in foreign]
    assert back[0].metadata["langchain"] == {"type": "human"}


def test_additional_properties_that_are_not_json_are_kept_in_json_form() -> None:
    from datetime import datetime, timezone

    at = datetime(2026, 5, 3, 9, 10, tzinfo=timezone.utc)
    stored = to_polymem(Message("user", ["hi"], additional_properties={"at": at}))
    assert from_polymem(stored).additional_properties == {"at": "2026-05-03T09:10:00Z"}
