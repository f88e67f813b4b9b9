"""Message and content conversion between AutoGen and polymem."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from autogen_core import FunctionCall, Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from PIL import Image as PILImage

import polymem
from polymem._render import age
from polymem_autogen import RecalledMemoriesMessage, from_polymem_messages, to_polymem_messages
from polymem_autogen._convert import content_to_save, record_to_content

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)


def image() -> Image:
    return Image.from_pil(PILImage.new("RGB", (4, 3), (200, 30, 10)))


def conversation() -> list[Any]:
    """Every AutoGen LLM message type, with the awkward values a lossy conversion drops."""
    return [
        SystemMessage(content="You are a travel agent."),
        UserMessage(content="Book me a flight to Oslo.", source="user"),
        UserMessage(content=["Here is my passport:", image(), "valid until 2030"], source="alice"),
        AssistantMessage(
            content=[
                FunctionCall(id="call_1", name="search_flights", arguments='{"to": "OSL"}'),
                FunctionCall(id="call_2", name="check_passport", arguments="{}"),
            ],
            thought="I need flights and a passport check.",
            source="planner",
        ),
        FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(content="SK4035 at 09:10", name="search_flights", call_id="call_1"),
                FunctionExecutionResult(content="", name="check_passport", call_id="call_2", is_error=True),
            ]
        ),
        AssistantMessage(content=[FunctionCall(id="", name="noop", arguments="{}")], source="planner"),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content="ok", name="", call_id="", is_error=False)]
        ),
        FunctionExecutionResultMessage(content=[]),
        AssistantMessage(content="SK4035 leaves at 09:10.", thought="Cheapest option.", source="planner"),
        AssistantMessage(content="", source="planner"),
        RecalledMemoriesMessage(content="Relevant memories:\n1. [fact, just now] Alice lives in Bergen."),
    ]


def dumped(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def test_every_llm_message_type_round_trips_exactly() -> None:
    original = conversation()
    assert dumped(from_polymem_messages(to_polymem_messages(original))) == dumped(original)


def test_round_trip_through_a_stored_session_is_exact(lexical: Any) -> None:
    original = conversation()
    ses = lexical.session("trip", user_id="alice", max_tokens=None)
    ses.add_messages(to_polymem_messages(original))
    assert dumped(from_polymem_messages(ses.messages())) == dumped(original)


def test_subclass_of_recalled_memories_survives_storage(lexical: Any) -> None:
    ses = lexical.session("s", user_id="alice", max_tokens=None)
    ses.add_messages(to_polymem_messages([RecalledMemoriesMessage(content="1. x"), SystemMessage(content="y")]))
    restored = from_polymem_messages(ses.messages())
    assert [type(m) for m in restored] == [RecalledMemoriesMessage, SystemMessage]


def test_function_results_become_one_tool_message_per_result() -> None:
    converted = to_polymem_messages(conversation()[4:5])
    assert [(m.role, m.tool_call_id, m.name, m.content) for m in converted] == [
        ("tool", "call_1", "search_flights", "SK4035 at 09:10"),
        ("tool", "call_2", "check_passport", ""),
    ]


def test_function_calls_become_tool_calls_with_the_thought_as_content() -> None:
    (converted,) = to_polymem_messages(conversation()[3:4])
    assert converted.role == "assistant"
    assert converted.name == "planner"
    assert converted.content == "I need flights and a passport check."
    assert [(c.id, c.name, c.arguments) for c in converted.tool_calls] == [
        ("call_1", "search_flights", '{"to": "OSL"}'),
        ("call_2", "check_passport", "{}"),
    ]


def test_multimodal_user_message_keeps_text_as_content_and_every_item_as_parts() -> None:
    (converted,) = to_polymem_messages(conversation()[2:3])
    assert converted.content == "Here is my passport:\nvalid until 2030"
    assert [p["type"] for p in converted.parts] == ["text", "image", "text"]
    assert converted.parts[1]["mime_type"] == "image/png"


def test_messages_from_other_frameworks_map_by_role() -> None:
    foreign = [
        polymem.Message(role="system", content="Be brief."),
        polymem.Message(role="user", content="Weather in Oslo and Bergen?"),
        polymem.Message(
            role="assistant",
            content="Checking both.",
            tool_calls=(polymem.ToolCall("a", "weather", '{"city": "Oslo"}'), polymem.ToolCall("b", "weather", "{}")),
        ),
        polymem.Message(role="tool", content="12 °C", tool_call_id="a", name="weather"),
        polymem.Message(role="tool", content="9 °C", tool_call_id="b", name="weather"),
        polymem.Message(role="critic", content="Too terse.", name="reviewer"),
    ]
    assert dumped(from_polymem_messages(foreign)) == dumped(
        [
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Oslo and Bergen?", source="user"),
            AssistantMessage(
                content=[
                    FunctionCall(id="a", name="weather", arguments='{"city": "Oslo"}'),
                    FunctionCall(id="b", name="weather", arguments="{}"),
                ],
                thought="Checking both.",
                source="assistant",
            ),
            FunctionExecutionResultMessage(
                content=[
                    FunctionExecutionResult(content="12 °C", name="weather", call_id="a"),
                    FunctionExecutionResult(content="9 °C", name="weather", call_id="b"),
                ]
            ),
            UserMessage(content="Too terse.", source="reviewer"),
        ]
    )


def test_foreign_image_part_as_data_uri_becomes_an_image() -> None:
    pic = image()
    message = polymem.Message(
        role="user",
        content="What is this?",
        parts=({"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": pic.data_uri}}),
    )
    (restored,) = from_polymem_messages([message])
    assert isinstance(restored.content, list)
    assert restored.content[0] == "What is this?"
    assert restored.content[1].to_base64() == pic.to_base64()


def test_text_content_is_saved_as_is_with_reserved_metadata_as_fields() -> None:
    text, kwargs = content_to_save(
        MemoryContent(
            content="Alice prefers window seats",
            mime_type=MemoryMimeType.TEXT,
            metadata={"category": "preference", "importance": 0.9, "entities": ["Alice"], "trip": "oslo"},
        )
    )
    assert text == "Alice prefers window seats"
    assert kwargs == {"category": "preference", "importance": 0.9, "entities": ["Alice"], "metadata": {"trip": "oslo"}}


def test_json_content_is_saved_as_compact_json_and_read_back_as_a_dict() -> None:
    text, kwargs = content_to_save(
        MemoryContent(content={"seat": "window", "meal": "veg"}, mime_type="application/json")
    )
    assert text == '{"seat":"window","meal":"veg"}'
    record = _record(text, kwargs["metadata"])
    restored = record_to_content(record)
    assert restored.content == {"seat": "window", "meal": "veg"}
    assert restored.mime_type == "application/json"


def test_markdown_and_other_text_types_keep_their_mime_type() -> None:
    for mime in (MemoryMimeType.MARKDOWN, "text/csv"):
        text, kwargs = content_to_save(MemoryContent(content="*a*,b", mime_type=mime))
        assert record_to_content(_record(text, kwargs["metadata"])).mime_type == (
            mime.value if isinstance(mime, MemoryMimeType) else mime
        )


@pytest.mark.parametrize(
    "content",
    [
        MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY),
        MemoryContent(content=Image.from_pil(PILImage.new("RGB", (1, 1))), mime_type=MemoryMimeType.IMAGE),
    ],
    ids=["bytes", "image"],
)
def test_binary_and_image_content_are_saved_as_a_text_stand_in_with_the_data_in_metadata(
    content: MemoryContent,
) -> None:
    text, kwargs = content_to_save(content)
    assert text.startswith("[") and kwargs["metadata"]["autogen_binary"]["base64"]


def test_invalid_json_text_is_refused() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        content_to_save(MemoryContent(content="{nope", mime_type=MemoryMimeType.JSON))


def test_age_reads_like_a_person_would_say_it() -> None:
    assert [
        age(NOW - delta, NOW)
        for delta in (
            timedelta(seconds=20),
            timedelta(minutes=5),
            timedelta(days=1),
            timedelta(days=45),
            timedelta(days=800),
        )
    ] == ["just now", "5 minutes ago", "1 day ago", "1 month ago", "2 years ago"]


def _record(content: str, metadata: dict[str, Any]) -> polymem.MemoryRecord:
    return polymem.MemoryRecord(
        memory_id="m1",
        content=content,
        category="fact",
        source="user_input",
        importance=0.6,
        user_id="alice",
        agent_id=None,
        session_id=None,
        namespace="default",
        created_at=NOW,
        updated_at=NOW,
        metadata=metadata,
    )
