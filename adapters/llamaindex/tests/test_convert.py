"""Message translation: LlamaIndex `ChatMessage` <-> polymem `Message`, lossless both ways."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import (
    AudioBlock,
    CacheControl,
    CachePoint,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)

import polymem
from polymem_llamaindex import UnsupportedContentError, from_polymem, to_polymem

PNG = b"\x89PNG\r\n\x1a\nfake image bytes"

MESSAGES = {
    "plain text": ChatMessage(role="user", content="I live in Lyon."),
    "system": ChatMessage(role="system", content="Be brief."),
    "empty blocks": ChatMessage(role="assistant"),
    "empty text": ChatMessage(role="assistant", content=""),
    "whitespace text": ChatMessage(role="assistant", content="  "),
    "two text blocks": ChatMessage(role="user", blocks=[TextBlock(text="a"), TextBlock(text="b")]),
    "image bytes and url": ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="What is in these?"),
            ImageBlock(image=PNG, image_mimetype="image/png"),
            ImageBlock(url="https://example.org/cat.png", detail="low"),
        ],
    ),
    "blocks out of default order": ChatMessage(
        role="user", blocks=[ImageBlock(url="https://example.org/a.png"), TextBlock(text="caption")]
    ),
    "audio and document": ChatMessage(
        role="user",
        blocks=[AudioBlock(audio=b"RIFFfake", format="wav"), DocumentBlock(data=b"%PDF-1.4 fake", title="t.pdf")],
    ),
    "thinking and cache point": ChatMessage(
        role="assistant",
        blocks=[
            ThinkingBlock(content="The user wants Lyon.", num_tokens=5),
            TextBlock(text="Lyon it is."),
            CachePoint(cache_control=CacheControl(type="ephemeral")),
        ],
    ),
    "tool call block": ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="search", tool_kwargs={"city": "Lyon", "nights": 3})],
    ),
    "tool call block with text kwargs and no id": ChatMessage(
        role="assistant", blocks=[ToolCallBlock(tool_name="search", tool_kwargs='{"city": "Ly')]
    ),
    "openai tool calls in additional_kwargs": ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
            ]
        },
    ),
    "tool result": ChatMessage(role="tool", content="3", additional_kwargs={"tool_call_id": "call_1", "name": "add"}),
    "other additional_kwargs": ChatMessage(
        role="assistant", content="ok", additional_kwargs={"session_id": "s1", "usage": {"tokens": [1, 2]}}
    ),
    "unicode": ChatMessage(role="user", content="我喜欢喝茶 — naïve café ☕"),
}


@pytest.mark.parametrize("message", list(MESSAGES.values()), ids=list(MESSAGES))
def test_every_message_kind_round_trips_exactly(message: ChatMessage) -> None:
    assert from_polymem(to_polymem(message)) == message


@pytest.mark.parametrize("message", list(MESSAGES.values()), ids=list(MESSAGES))
def test_every_message_kind_round_trips_through_an_sqlite_session(message: ChatMessage, lexical: polymem.Memory) -> None:
    lexical.session("s", user_id="ann", max_tokens=None).add_messages([to_polymem(message)])

    stored = lexical.session("s", user_id="ann", max_tokens=None).messages()

    assert [from_polymem(m) for m in stored] == [message]


def test_bytes_in_additional_kwargs_come_back_as_simple_chat_store_persists_them() -> None:
    message = ChatMessage(role="user", content="x", additional_kwargs={"raw": b"\x00\x01"})

    assert from_polymem(to_polymem(message)) == ChatMessage.model_validate(message.model_dump(mode="json"))


def test_plain_text_needs_no_llamaindex_metadata() -> None:
    converted = to_polymem(ChatMessage(role="user", content="I live in Lyon."))

    assert (converted.role, converted.content, converted.metadata, converted.parts) == (
        "user",
        "I live in Lyon.",
        {},
        (),
    )


def test_tool_call_blocks_become_polymem_tool_calls_other_frameworks_can_read() -> None:
    converted = to_polymem(MESSAGES["tool call block"])

    assert [(c.id, c.name, c.arguments) for c in converted.tool_calls] == [
        ("c1", "search", '{"city": "Lyon", "nights": 3}')
    ]


def test_openai_shaped_tool_calls_in_additional_kwargs_become_polymem_tool_calls() -> None:
    converted = to_polymem(MESSAGES["openai tool calls in additional_kwargs"])

    assert [(c.id, c.name, c.arguments) for c in converted.tool_calls] == [("call_1", "add", '{"a": 1, "b": 2}')]
    assert "tool_calls" not in converted.metadata.get("llama_index", {}).get("additional_kwargs", {})


def test_tool_result_links_to_its_call_through_tool_call_id_and_name() -> None:
    converted = to_polymem(MESSAGES["tool result"])

    assert (converted.role, converted.tool_call_id, converted.name, converted.content) == ("tool", "call_1", "add", "3")


def test_non_text_blocks_become_typed_parts() -> None:
    converted = to_polymem(MESSAGES["image bytes and url"])

    assert converted.content == "What is in these?"
    assert [part["type"] for part in converted.parts] == ["image", "image"]
    assert converted.parts[1]["url"] == "https://example.org/cat.png"


def test_message_written_by_another_framework_reads_as_native_llamaindex_message() -> None:
    foreign = polymem.Message(
        role="assistant",
        content="Checking the weather.",
        tool_calls=(polymem.ToolCall(id="t1", name="weather", arguments='{"city": "Oslo"}'),),
        parts=({"type": "image_url", "image_url": {"url": "https://example.org/map.png"}},),
    )

    message = from_polymem(foreign)

    assert message.role.value == "assistant"
    assert message.content == "Checking the weather."
    assert [type(b).__name__ for b in message.blocks] == ["TextBlock", "ImageBlock", "ToolCallBlock"]
    assert message.blocks[2].tool_kwargs == {"city": "Oslo"}
    assert str(message.blocks[1].url) == "https://example.org/map.png"


def test_role_aliases_of_other_frameworks_map_to_llamaindex_roles() -> None:
    assert from_polymem(polymem.Message(role="human", content="hi")).role.value == "user"
    assert from_polymem(polymem.Message(role="ai", content="hello")).role.value == "assistant"


def test_role_without_llamaindex_equivalent_is_refused_with_a_clear_error() -> None:
    with pytest.raises(UnsupportedContentError, match="role 'critic' has no LlamaIndex MessageRole"):
        from_polymem(polymem.Message(role="critic", content="too long"))


def test_part_without_llamaindex_equivalent_is_refused_with_a_clear_error() -> None:
    foreign = polymem.Message(role="user", content="see attached", parts=({"type": "hologram", "id": 7},))

    with pytest.raises(UnsupportedContentError, match="part of type 'hologram'"):
        from_polymem(foreign)


def test_unsupported_content_error_is_a_value_error() -> None:
    assert issubclass(UnsupportedContentError, ValueError)
