"""Message conversion: Semantic Kernel ↔ polymem, exact both ways, readable by other frameworks."""

from __future__ import annotations

import pytest
from semantic_kernel.connectors.ai.completion_usage import CompletionUsage
from semantic_kernel.contents import (
    AnnotationContent,
    AudioContent,
    ChatMessageContent,
    FileReferenceContent,
    FunctionCallContent,
    FunctionResultContent,
    ImageContent,
    TextContent,
)
from semantic_kernel.contents.binary_content import BinaryContent
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.contents.utils.finish_reason import FinishReason
from semantic_kernel.contents.utils.status import Status

try:
    from semantic_kernel.contents import ReasoningContent
except ImportError:  # semantic-kernel 1.28 has no reasoning items
    ReasoningContent = None

import polymem
from polymem_semantic_kernel import from_polymem, to_polymem


def through_store(store: polymem.Memory, message: ChatMessageContent) -> ChatMessageContent:
    """Write one message to a real session and read it back."""
    session = store.session("s", user_id="u", max_tokens=None)
    session.add_messages([to_polymem(message)])
    return from_polymem(session.messages()[-1])


def rich_assistant_message() -> ChatMessageContent:
    return ChatMessageContent(
        role=AuthorRole.ASSISTANT,
        name="planner",
        ai_model_id="gpt-x",
        finish_reason=FinishReason.TOOL_CALLS,
        status=Status.COMPLETED,
        metadata={"usage": CompletionUsage(prompt_tokens=12, completion_tokens=7), "trace": {"id": [1, 2]}},
        items=[
            TextContent(text="Let me check.", metadata={"logprob": -0.5}, encoding="utf-8"),
            FunctionCallContent(id="call_1", function_name="weather", plugin_name="tools", arguments={"city": "Oslo"}),
            FunctionCallContent(id="call_2", name="tools-time", arguments='{"tz": "CET"}', index=1),
            ImageContent(data=b"\x89PNG\r\n\x1a\n", mime_type="image/png", data_format="base64"),
            ImageContent(uri="https://example.org/cat.png"),
            AudioContent(data=b"RIFF....WAVE", mime_type="audio/wav", data_format="base64"),
            BinaryContent(data=b"\x00\x01\xff", mime_type="application/octet-stream", data_format="base64"),
            FileReferenceContent(file_id="file-9"),
            AnnotationContent(file_id="file-9", quote="page 3", start_index=4, end_index=9),
            TextContent(text="Second text item."),
            *([ReasoningContent(text="the user wants the weather")] if ReasoningContent else []),
        ],
    )


def test_every_item_type_round_trips_exactly_through_a_sqlite_session(store):
    message = rich_assistant_message()
    restored = through_store(store, message)
    assert restored == message
    assert [type(i) for i in restored.items] == [type(i) for i in message.items]
    assert restored.items[3].data == b"\x89PNG\r\n\x1a\n"
    assert restored.items[6].data == b"\x00\x01\xff"


def test_binary_data_that_is_not_utf8_round_trips_byte_for_byte_without_a_data_format(store):
    # Semantic Kernel itself cannot serialise or compare such an item; polymem keeps its bytes.
    raw = bytes(range(256))
    message = ChatMessageContent(role=AuthorRole.USER, items=[BinaryContent(data=raw, mime_type="application/x-raw")])
    restored = through_store(store, message).items[0]
    assert (type(restored), restored.data, restored.mime_type) == (BinaryContent, raw, "application/x-raw")


def test_message_level_fields_round_trip(store):
    restored = through_store(store, rich_assistant_message())
    assert (restored.name, restored.ai_model_id, restored.finish_reason, restored.status) == (
        "planner",
        "gpt-x",
        FinishReason.TOOL_CALLS,
        Status.COMPLETED,
    )


def test_semantic_kernel_models_in_metadata_come_back_as_themselves(store):
    restored = through_store(store, rich_assistant_message())
    assert restored.metadata["usage"] == CompletionUsage(prompt_tokens=12, completion_tokens=7)
    assert restored.metadata["trace"] == {"id": [1, 2]}


def test_function_result_with_structured_value_round_trips(store):
    result = FunctionResultContent(
        id="call_1", function_name="weather", plugin_name="tools", result={"temp_c": -3.5, "sky": ["snow"]}
    )
    message = ChatMessageContent(role=AuthorRole.TOOL, items=[result])
    restored = through_store(store, message)
    assert restored.items[0].result == {"temp_c": -3.5, "sky": ["snow"]}
    assert restored.items[0].id == "call_1"
    assert restored.items[0].name == "tools-weather"


def test_neutral_fields_carry_text_tool_calls_and_tool_call_id_for_other_frameworks():
    polymem_message = to_polymem(rich_assistant_message())
    assert polymem_message.role == "assistant"
    assert polymem_message.content == "Let me check.\nSecond text item."
    assert [(c.id, c.name, c.arguments) for c in polymem_message.tool_calls] == [
        ("call_1", "tools-weather", '{"city": "Oslo"}'),
        ("call_2", "tools-time", '{"tz": "CET"}'),
    ]
    tool = to_polymem(
        ChatMessageContent(
            role=AuthorRole.TOOL, items=[FunctionResultContent(id="call_1", name="tools-weather", result="-3 C")]
        )
    )
    assert (tool.role, tool.content, tool.tool_call_id) == ("tool", "-3 C", "call_1")


def test_non_text_items_are_parts_and_message_metadata_stays_visible():
    polymem_message = to_polymem(rich_assistant_message())
    assert [p["content_type"] for p in polymem_message.parts] == [
        "image",
        "image",
        "audio",
        "binary",
        "file_reference",
        "annotation",
        *(["reasoning"] if ReasoningContent else []),
    ]
    assert polymem_message.metadata["trace"] == {"id": [1, 2]}


@pytest.mark.parametrize("role", ["system", "user", "assistant", "developer"])
def test_plain_text_messages_of_every_role_round_trip(store, role):
    message = ChatMessageContent(role=AuthorRole(role), content=f"a {role} says hi")
    assert through_store(store, message) == message


def test_messages_written_by_other_frameworks_read_as_semantic_kernel_messages():
    call = polymem.ToolCall(id="c7", name="search", arguments='{"q": "tea"}')
    assistant = from_polymem(polymem.Message(role="assistant", content="Searching.", tool_calls=(call,)))
    tool = from_polymem(polymem.Message(role="tool", content="green tea", name="search", tool_call_id="c7"))
    assert assistant.content == "Searching."
    assert [(i.id, i.name, i.arguments) for i in assistant.items if isinstance(i, FunctionCallContent)] == [
        ("c7", "search", '{"q": "tea"}')
    ]
    assert (tool.role, tool.items[0].id, tool.items[0].result) == (AuthorRole.TOOL, "c7", "green tea")


def test_parts_semantic_kernel_cannot_represent_survive_a_round_trip_in_metadata():
    foreign = {"type": "image_url", "image_url": {"url": "https://example.org/x.png"}}
    read = from_polymem(polymem.Message(role="user", content="look", parts=(foreign,)))
    assert read.content == "look"
    assert to_polymem(read).parts == (foreign,)


def test_a_running_summary_reads_as_a_system_message():
    summary = polymem.Message(role="system", content="Earlier: budget 40 EUR.", metadata={"polymem_summary": True})
    read = from_polymem(summary)
    assert (read.role, read.content, read.metadata) == (AuthorRole.SYSTEM, "Earlier: budget 40 EUR.", {"polymem_summary": True})


def test_stored_metadata_never_chooses_a_module_outside_semantic_kernel_to_import():
    hostile = {"$sk_model": "os:system", "data": "echo pwned"}
    read = from_polymem(polymem.Message(role="user", content="hi", metadata={"x": hostile}))
    assert read.metadata["x"] == "echo pwned"
