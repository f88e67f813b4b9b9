"""Every translation between LangChain objects and polymem's plain types.

A LangChain message becomes a `polymem.Message` whose neutral fields (role,
text, name, tool calls, tool call id, non-text parts) are what other
frameworks read; whatever only LangChain knows (message type, id,
`additional_kwargs`, `response_metadata`, `usage_metadata`, ...) rides along
in `Message.metadata["langchain"]`, so `to_langchain(to_polymem(m)) == m`.
Messages written by other frameworks carry no such key and are mapped by role.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)

from polymem import InvalidFilterError, MemoryRecord, Message, RecallHit, ToolCall

LC_KEY = "langchain"
"""The `Message.metadata` key under which LangChain-only fields are kept."""

_ROLE_OF_TYPE = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "function",
    "FunctionMessageChunk": "function",
    "remove": "remove",
}
_AI_TYPES = frozenset({"ai", "AIMessageChunk"})
_TOOL_TYPES = frozenset({"tool", "ToolMessageChunk"})
_CHAT_TYPES = frozenset({"chat", "ChatMessageChunk"})
# Fields carried by polymem's own Message fields, never copied into metadata.
_NEUTRAL_FIELDS = frozenset({"content", "name", "tool_calls", "tool_call_id", "type", "role"})
_TEXT_BLOCK_TYPES = frozenset({"text"})


def _default_of(message: BaseMessage, field: str) -> Any:
    info = type(message).model_fields[field]
    return info.get_default(call_default_factory=True)


def _split_content(content: str | list[Any]) -> tuple[str, tuple[dict[str, Any], ...], list[Any] | None]:
    """Text for polymem's `content`, non-text blocks for `parts`, and the layout to rebuild the list."""
    if isinstance(content, str):
        return content, (), None
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    layout: list[Any] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            layout.append(block)
        elif isinstance(block, Mapping) and block.get("type") in _TEXT_BLOCK_TYPES:
            texts.append(str(block.get("text", "")))
            layout.append(dict(block))
        else:
            layout.append({"$part": len(parts)})
            parts.append(dict(block))
    return "".join(texts), tuple(parts), layout


def _join_content(text: str, parts: Sequence[Mapping[str, Any]], layout: Any) -> str | list[Any]:
    if isinstance(layout, dict):  # an empty string content, carried by a text part
        return str(parts[layout["$text"]].get("text", ""))
    if layout is not None:
        return [dict(parts[b["$part"]]) if isinstance(b, dict) and "$part" in b else b for b in layout]
    if parts:
        blocks: list[Any] = [{"type": "text", "text": text}] if text else []
        return blocks + [dict(p) for p in parts]
    return text


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def to_polymem(message: BaseMessage) -> Message:
    """Translate one LangChain message into a lossless `polymem.Message`."""
    text, parts, layout = _split_content(message.content)
    extra: dict[str, Any] = {"type": message.type}
    for field in type(message).model_fields:
        if field in _NEUTRAL_FIELDS:
            continue
        value = getattr(message, field)
        if value != _default_of(message, field):
            extra[field] = value
    if "artifact" in extra and not _jsonable(extra["artifact"]):
        raise TypeError(
            "polymem stores ToolMessage.artifact as JSON; "
            f"{type(extra['artifact']).__name__} is not JSON-serialisable"
        )
    if layout is not None:
        extra["content_layout"] = layout
    tool_calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage):  # AIMessageChunk too
        tool_calls = tuple(
            ToolCall(
                id=call["id"] or "",
                name=call["name"],
                arguments=json.dumps(call["args"], ensure_ascii=False),
                metadata={} if call["id"] is not None else {"langchain_id": None},
            )
            for call in message.tool_calls
        )
    if not text.strip() and not tool_calls and not parts:
        # polymem refuses a message with nothing in it; LangChain allows one. An empty
        # text part carries it, and the layout says how the content really looked.
        parts = ({"type": "text", "text": text},)
        extra["content_layout"] = layout if layout is not None else {"$text": 0}
    role = message.role if isinstance(message, ChatMessage) else _ROLE_OF_TYPE.get(message.type, message.type)
    return Message(
        role=role,
        content=text,
        name=message.name,
        tool_calls=tool_calls,
        tool_call_id=getattr(message, "tool_call_id", None) if message.type in _TOOL_TYPES else None,
        parts=parts,
        metadata={LC_KEY: extra},
    )


def _lc_tool_calls(message: Message) -> list[dict[str, Any]]:
    return [
        {
            "name": call.name,
            "args": json.loads(call.arguments or "{}"),
            "id": None if "langchain_id" in call.metadata else call.id,
            "type": "tool_call",
        }
        for call in message.tool_calls
    ]


def to_langchain(message: Message) -> BaseMessage:
    """Translate a `polymem.Message` (from any framework) into a LangChain message."""
    extra = message.metadata.get(LC_KEY)
    if isinstance(extra, dict) and "type" in extra:
        data = {k: v for k, v in extra.items() if k not in ("type", "content_layout")}
        data["content"] = _join_content(message.content, message.parts, extra.get("content_layout"))
        if message.name is not None:
            data["name"] = message.name
        kind = extra["type"]
        if kind in _AI_TYPES:
            data["tool_calls"] = _lc_tool_calls(message)
        elif kind in _TOOL_TYPES:
            data["tool_call_id"] = message.tool_call_id
        elif kind in _CHAT_TYPES:
            data["role"] = message.role
        return messages_from_dict([{"type": kind, "data": data}])[0]
    return _foreign_to_langchain(message)


def _foreign_to_langchain(message: Message) -> BaseMessage:
    """A message some other framework wrote: mapped by role, keyed by polymem's id."""
    content = _join_content(message.content, message.parts, None)
    common: dict[str, Any] = {"content": content, "id": message.message_id}
    if message.name is not None:
        common["name"] = message.name
    if message.role == "user":
        return HumanMessage(**common)
    if message.role == "assistant":
        return AIMessage(**common, tool_calls=_lc_tool_calls(message))
    if message.role == "system":
        return SystemMessage(**common)
    if message.role == "tool":
        return ToolMessage(**common, tool_call_id=message.tool_call_id or "")
    if message.role == "function" and message.name is not None:
        return FunctionMessage(**common)
    return ChatMessage(**common, role=message.role)


def to_polymem_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """`to_polymem` over a sequence."""
    return [to_polymem(m) for m in messages]


def to_langchain_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    """`to_langchain` over a sequence."""
    return [to_langchain(m) for m in messages]


# -- documents and filters ------------------------------------------------------------------

DOC_ID_KEY = "doc_id"
"""Under `metadata["langchain"]` of a memory: the id a LangChain user gave its document."""


def document_metadata(record: MemoryRecord) -> dict[str, Any]:
    """A memory's metadata as its document showed it (without polymem's LangChain bookkeeping)."""
    return {k: v for k, v in record.metadata.items() if k != LC_KEY}


def document_id(record: MemoryRecord) -> str:
    """The id LangChain sees: the one the user gave, else polymem's memory id."""
    extra = record.metadata.get(LC_KEY)
    doc_id = extra.get(DOC_ID_KEY) if isinstance(extra, dict) else None
    return doc_id if isinstance(doc_id, str) else record.memory_id


def memory_metadata(metadata: Mapping[str, Any] | None, doc_id: str | None) -> dict[str, Any]:
    """The metadata polymem stores for a document (its own, plus the user's id if any)."""
    out = dict(metadata or {})
    if LC_KEY in out:
        raise ValueError(f"document metadata key {LC_KEY!r} is reserved by polymem-langchain")
    if doc_id is not None:
        out[LC_KEY] = {DOC_ID_KEY: doc_id}
    return out


def record_to_document(record: MemoryRecord) -> Document:
    """A memory as a vector store document: its text, its own metadata, its LangChain id."""
    return Document(page_content=record.content, metadata=document_metadata(record), id=document_id(record))


def hit_to_document(hit: RecallHit) -> Document:
    """A recalled memory as a retriever document: polymem's fields and scores in `metadata`."""
    record = hit.memory
    metadata: dict[str, Any] = {
        "memory_id": record.memory_id,
        "category": record.category,
        "source": record.source,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "session_id": record.session_id,
        "importance": record.importance,
        "entities": list(record.entities),
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "score": hit.score,
        "relevance": hit.relevance,
        "similarity": hit.similarity,
        "live_score": hit.live_score,
        "metadata": document_metadata(record),
    }
    return Document(page_content=record.content, metadata=metadata, id=record.memory_id)


def metadata_filter(filter: Mapping[str, Any] | None, root: str = "metadata") -> dict[str, Any] | None:
    """A LangChain metadata filter (`{"topic": "x", "year": {"$gte": 2020}}`) as a polymem filter.

    Keys name document metadata; nested dicts without operators match nested
    keys. Boolean combinators (`$and`, `$or`, `$not`) are not supported.
    """
    if not filter:
        return None
    if not isinstance(filter, Mapping):
        raise InvalidFilterError(f"a metadata filter must be a dict, got {type(filter).__name__}")
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Mapping[str, Any]) -> None:
        for key, condition in value.items():
            if not isinstance(key, str) or key.startswith("$"):
                raise InvalidFilterError(f"unsupported filter operator {key!r} at {prefix!r}; "
                                         "give a dict of metadata keys (boolean combinators are not supported)")
            path = f"{prefix}.{key}"
            if isinstance(condition, Mapping) and condition and not any(str(k).startswith("$") for k in condition):
                walk(path, condition)
            else:  # a scalar, a list (equal to the whole list) or {operator: value}
                out[path] = list(condition) if isinstance(condition, tuple) else condition

    walk(root, filter)
    return out


__all__ = [
    "LC_KEY",
    "document_id",
    "document_metadata",
    "hit_to_document",
    "memory_metadata",
    "metadata_filter",
    "record_to_document",
    "to_langchain",
    "to_langchain_messages",
    "to_polymem",
    "to_polymem_messages",
]
