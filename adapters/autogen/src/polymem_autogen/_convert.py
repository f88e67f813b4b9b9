"""Every translation between AutoGen and polymem, in one place.

AutoGen's LLM messages (`SystemMessage`, `UserMessage`, `AssistantMessage`,
`FunctionExecutionResultMessage`) become polymem `Message` objects and come
back *exactly*: whatever polymem has no field for (the `source`, the
`thought`, `is_error`, whether content was a list) travels in
`Message.metadata["autogen"]`. Messages written by other frameworks (no
`"autogen"` metadata) are mapped by role.

A `FunctionExecutionResultMessage` holding n results becomes n `tool`
messages sharing a group id (one tool result per message is what every other
framework expects); consecutive tool messages are regrouped on the way back.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from autogen_core import FunctionCall, Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

import polymem

META = "autogen"
"""The `Message.metadata` key under which AutoGen-only fields travel."""

RECALL_HEADER = "Relevant memories (most relevant first; category, age):"
NEWEST_HEADER = "Memories (newest first; category, age):"


class RecalledMemoriesMessage(SystemMessage):
    """The system message `PolymemMemory.update_context` adds: recalled memories.

    A plain `SystemMessage` to AutoGen and to every model client; the subclass
    only lets `PolymemChatCompletionContext` recognise it, so that a session
    keeps the latest recall instead of piling up one per turn.
    """


# --------------------------------------------------------------------------- LLM messages


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "image", "mime_type": "image/png", "data": image.to_base64()}


def _part_to_content(part: Mapping[str, Any]) -> str | Image | None:
    """One polymem content part as an AutoGen content item (None: not representable)."""
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "image":
        data = part.get("data") or part.get("base64")
        if isinstance(data, str):
            return Image.from_base64(data)
        url = part.get("url")
        if isinstance(url, str) and url.startswith("data:image/"):
            return Image.from_uri(url)
        return None
    if kind == "image_url":
        url = part.get("image_url", {}).get("url") if isinstance(part.get("image_url"), dict) else part.get("url")
        if isinstance(url, str) and url.startswith("data:image/"):
            return Image.from_uri(url)
    return None


def _meta(message: polymem.Message) -> dict[str, Any]:
    value = message.metadata.get(META)
    return dict(value) if isinstance(value, dict) else {}


def _with_meta(base: Mapping[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(base or {})
    metadata[META] = fields
    return metadata


def _message(role: str, content: str, **kwargs: Any) -> polymem.Message:
    """A polymem message; blank content gets an empty text part, as polymem refuses blank messages."""
    if not content.strip() and not kwargs.get("tool_calls") and not kwargs.get("parts"):
        kwargs["parts"] = ({"type": "text", "text": content},)
    return polymem.Message(role=role, content=content, **kwargs)


def llm_to_polymem(message: LLMMessage) -> list[polymem.Message]:
    """One AutoGen LLM message as polymem messages (several for a multi-result tool message)."""
    if isinstance(message, SystemMessage):
        fields: dict[str, Any] = {"type": "SystemMessage"}
        if isinstance(message, RecalledMemoriesMessage):
            fields["recalled_memories"] = True
        return [_message("system", message.content, metadata=_with_meta(None, fields))]
    if isinstance(message, UserMessage):
        fields = {"type": "UserMessage", "source": message.source}
        if isinstance(message.content, str):
            return [_message("user", message.content, name=message.source, metadata=_with_meta(None, fields))]
        fields["content_type"] = "parts"
        fields["items"] = len(message.content)
        parts = tuple(
            {"type": "text", "text": item} if isinstance(item, str) else _image_part(item) for item in message.content
        )
        text = "\n".join(item for item in message.content if isinstance(item, str))
        return [_message("user", text, name=message.source, parts=parts, metadata=_with_meta(None, fields))]
    if isinstance(message, AssistantMessage):
        fields = {"type": "AssistantMessage", "source": message.source, "thought": message.thought}
        if isinstance(message.content, str):
            return [_message("assistant", message.content, name=message.source, metadata=_with_meta(None, fields))]
        fields["content_type"] = "function_calls"
        calls = tuple(polymem.ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in message.content)
        # The thought is the text that came with the calls: other frameworks read it as content.
        return [
            _message(
                "assistant",
                message.thought or "",
                name=message.source,
                tool_calls=calls,
                metadata=_with_meta(None, fields),
            )
        ]
    if isinstance(message, FunctionExecutionResultMessage):
        group = str(uuid.uuid4())
        size = len(message.content)
        if size == 0:
            fields = {"type": "FunctionExecutionResultMessage", "group": group, "size": 0}
            return [_message("tool", "", metadata=_with_meta(None, fields))]
        return [
            _message(
                "tool",
                result.content,
                name=result.name,
                tool_call_id=result.call_id,
                metadata=_with_meta(
                    None,
                    {
                        "type": "FunctionExecutionResultMessage",
                        "group": group,
                        "size": size,
                        "name": result.name,
                        "is_error": result.is_error,
                    },
                ),
            )
            for result in message.content
        ]
    raise TypeError(f"not an AutoGen LLM message: {type(message).__name__}")


def to_polymem_messages(messages: Iterable[LLMMessage]) -> list[polymem.Message]:
    """AutoGen LLM messages → polymem messages, in order; exact inverse of `from_polymem_messages`."""
    out: list[polymem.Message] = []
    for message in messages:
        out.extend(llm_to_polymem(message))
    return out


def _tool_result(message: polymem.Message) -> FunctionExecutionResult:
    meta = _meta(message)
    return FunctionExecutionResult(
        content=message.content,
        name=meta.get("name", message.name or ""),
        call_id=message.tool_call_id or "",
        is_error=meta.get("is_error"),
    )


def _user(message: polymem.Message, meta: dict[str, Any]) -> UserMessage:
    source = meta.get("source", message.name or message.role)
    if meta.get("content_type") == "parts" or message.parts:
        items = [_part_to_content(part) for part in message.parts]
        content = [item for item in items if item is not None][: meta.get("items", len(items))]
        if meta.get("content_type") == "parts" or any(isinstance(i, Image) for i in content):
            return UserMessage(content=content, source=source)
    return UserMessage(content=message.content, source=source)


def _assistant(message: polymem.Message, meta: dict[str, Any]) -> AssistantMessage:
    source = meta.get("source", message.name or "assistant")
    if message.tool_calls or meta.get("content_type") == "function_calls":
        calls = [FunctionCall(id=c.id, arguments=c.arguments, name=c.name) for c in message.tool_calls]
        thought = meta.get("thought", message.content or None)
        return AssistantMessage(content=calls, thought=thought, source=source)
    return AssistantMessage(content=message.content, thought=meta.get("thought"), source=source)


def from_polymem_messages(messages: Iterable[polymem.Message]) -> list[LLMMessage]:
    """polymem messages → AutoGen LLM messages, in order.

    Consecutive `tool` messages become one `FunctionExecutionResultMessage`
    (split where the AutoGen group id changes). Roles AutoGen has no type for
    become `UserMessage`s whose source is the message's name or role.
    """
    out: list[LLMMessage] = []
    pending: list[polymem.Message] = []

    def flush() -> None:
        if pending:
            results = [_tool_result(m) for m in pending if _meta(m).get("size") != 0]
            out.append(FunctionExecutionResultMessage(content=results))
            pending.clear()

    for message in messages:
        meta = _meta(message)
        if message.role == "tool":
            if pending and _meta(pending[-1]).get("group") != meta.get("group"):
                flush()
            pending.append(message)
            continue
        flush()
        if message.role == "system":
            cls = RecalledMemoriesMessage if meta.get("recalled_memories") else SystemMessage
            out.append(cls(content=message.content))
        elif message.role == "assistant":
            out.append(_assistant(message, meta))
        else:
            out.append(_user(message, meta))
    flush()
    return out


def is_recalled_memories(message: polymem.Message) -> bool:
    """Whether a stored message is a `RecalledMemoriesMessage`."""
    return message.role == "system" and bool(_meta(message).get("recalled_memories"))


def drop_orphan_results(messages: list[LLMMessage]) -> list[LLMMessage]:
    """Drop tool results at the head of a window whose calls fell out of it (models reject them)."""
    start = 0
    while start < len(messages) and isinstance(messages[start], FunctionExecutionResultMessage):
        start += 1
    return messages[start:]


def message_text(message: LLMMessage) -> str:
    """The text of an LLM message, for a recall query (function calls and images contribute nothing)."""
    if isinstance(message, FunctionExecutionResultMessage):
        return "\n".join(r.content for r in message.content)
    if isinstance(message, AssistantMessage):
        return message.content if isinstance(message.content, str) else (message.thought or "")
    if isinstance(message.content, str):
        return message.content
    return "\n".join(item for item in message.content if isinstance(item, str))


# --------------------------------------------------------------------------- AgentChat run messages


def task_messages_to_polymem(messages: Iterable[Any], *, user_source: str = "user") -> list[polymem.Message]:
    """The messages of an AgentChat run (`TaskResult.messages`) as a polymem transcript.

    Chat messages become `user` messages when their source is `user_source`,
    else `assistant` messages named after the agent; tool call requests and
    results become assistant tool calls and `tool` messages. Other events
    (memory queries, streaming chunks, thoughts, speaker selection) are not
    conversation and are skipped: writing a recall back would feed it to itself.
    """
    from autogen_agentchat.messages import (
        BaseChatMessage,
        MultiModalMessage,
        ToolCallExecutionEvent,
        ToolCallRequestEvent,
    )

    out: list[polymem.Message] = []
    for msg in messages:
        created = getattr(msg, "created_at", None)  # AgentChat >= 0.5 stamps messages (in UTC)
        if isinstance(created, datetime) and created.tzinfo is None:
            created = created.replace(tzinfo=timezone.utc)
        base: dict[str, Any] = {"type": msg.type, "source": msg.source}
        if getattr(msg, "id", None):
            base["id"] = msg.id
        if getattr(msg, "metadata", None):
            base["metadata"] = dict(msg.metadata)
        if isinstance(msg, ToolCallRequestEvent):
            llm: list[polymem.Message] = llm_to_polymem(AssistantMessage(content=msg.content, source=msg.source))
        elif isinstance(msg, ToolCallExecutionEvent):
            llm = llm_to_polymem(FunctionExecutionResultMessage(content=msg.content))
        elif isinstance(msg, BaseChatMessage):
            role = "user" if msg.source == user_source else "assistant"
            if isinstance(msg, MultiModalMessage):
                model_msg = msg.to_model_message()
                llm = [llm_to_polymem(model_msg)[0].replace(role=role)]
            else:
                llm = [_message(role, msg.to_model_text(), name=msg.source)]
            target = getattr(msg, "target", None)  # HandoffMessage
            if target:
                base["target"] = target
        else:
            continue
        for item in llm:
            fields = {**_meta(item), "chat": base}
            out.append(
                item.replace(
                    metadata=_with_meta(item.metadata, fields),
                    created_at=created if isinstance(created, datetime) else None,
                )
            )
    return out


# --------------------------------------------------------------------------- memory contents

_RESERVED = ("category", "source", "importance", "entities")
BINARY_KEY = "autogen_binary"
"""The metadata key holding image and bytes content: `{"kind": "image" | "bytes", "base64": ...}`."""


def mime_of(content: MemoryContent) -> str:
    mime = content.mime_type
    return mime.value if isinstance(mime, MemoryMimeType) else str(mime)


def _binary(value: Image | bytes | bytearray, mime: str) -> tuple[str, dict[str, Any]]:
    """Image or bytes content as a text stand-in (what polymem searches) and its lossless metadata."""
    if isinstance(value, Image):
        return f"[image, {mime}]", {"kind": "image", "base64": value.to_base64()}
    data = bytes(value)
    return f"[binary content, {mime}, {len(data)} bytes]", {"kind": "bytes", "base64": base64.b64encode(data).decode()}


def content_to_save(content: MemoryContent) -> tuple[str, dict[str, Any]]:
    """A `MemoryContent` as the text and keywords of `polymem.Memory.save`.

    Text and markdown are stored as they are; JSON (a dict, or a string that
    parses) as compact JSON text; any other MIME type whose content is a
    string is stored as text with its MIME type in metadata. Images and bytes
    are stored whole, base64 under `metadata["autogen_binary"]`, with a short
    text stand-in as the memory's content. The metadata keys `category`,
    `source`, `importance` and `entities` set those fields.
    """
    mime = mime_of(content)
    value = content.content
    metadata = dict(content.metadata or {})
    if isinstance(value, (Image, bytes, bytearray)):
        text, metadata[BINARY_KEY] = _binary(value, mime)
    elif mime == MemoryMimeType.JSON.value:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise polymem.InvalidInput(f"application/json content is not valid JSON: {exc}") from exc
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    elif isinstance(value, dict):
        raise polymem.InvalidInput(f"dict content needs mime_type application/json, got {mime!r}")
    else:
        text = str(value)
    kwargs: dict[str, Any] = {key: metadata.pop(key) for key in _RESERVED if key in metadata}
    if "entities" in kwargs:
        kwargs["entities"] = list(kwargs["entities"])
    if mime != MemoryMimeType.TEXT.value:
        metadata["mime_type"] = mime
    kwargs["metadata"] = metadata
    return text, kwargs


def record_to_content(record: polymem.MemoryRecord, **scores: Any) -> MemoryContent:
    """A stored memory as AutoGen `MemoryContent`; polymem's fields and scores go in metadata."""
    metadata = dict(record.metadata)
    mime = str(metadata.pop("mime_type", MemoryMimeType.TEXT.value))
    binary = metadata.pop(BINARY_KEY, None)
    content: Any = record.content
    if isinstance(binary, dict):
        data = str(binary.get("base64", ""))
        content = Image.from_base64(data) if binary.get("kind") == "image" else base64.b64decode(data)
    elif mime == MemoryMimeType.JSON.value:
        try:
            content = json.loads(record.content)
        except ValueError:
            mime = MemoryMimeType.TEXT.value
    metadata.update(
        memory_id=record.memory_id,
        category=record.category,
        source=record.source,
        importance=record.importance,
        created_at=record.created_at.isoformat(),
        **{key: value for key, value in scores.items() if value is not None},
    )
    return MemoryContent(content=content, mime_type=mime, metadata=metadata)


def to_content(found: polymem.RecallHit | polymem.MemoryRecord) -> MemoryContent:
    """A recall hit (with `score`, `relevance`, `similarity` in metadata) or a record as `MemoryContent`."""
    if isinstance(found, polymem.MemoryRecord):
        return record_to_content(found)
    return record_to_content(
        found.memory,
        score=found.score,
        relevance=found.relevance,
        similarity=found.similarity,
        text_rank=found.text_rank,
        live_score=found.live_score,
    )


def recall_message(
    found: Sequence[polymem.RecallHit | polymem.MemoryRecord], now: datetime, *, header: str = RECALL_HEADER
) -> RecalledMemoriesMessage:
    """The system message listing memories in the order given, each with its category and age."""
    return RecalledMemoriesMessage(content=polymem.render_memories(
        found, header=header, template="{rank}. [{category}, {age}] {content}", now=now))
