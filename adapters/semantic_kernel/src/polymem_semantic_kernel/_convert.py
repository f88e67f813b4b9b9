"""All message conversion between Semantic Kernel and polymem, both ways.

A `ChatMessageContent` becomes a `polymem.Message` that other frameworks can
read (role, text `content`, `name`, `tool_calls`, `tool_call_id`, non-text
items as `parts`) and that restores exactly: the ordered item layout and the
Semantic Kernel-only fields live under one reserved metadata key,
`"semantic_kernel"`. The message's own metadata sits beside it, so tools that
know nothing of Semantic Kernel still see it.

Exactness covers what Semantic Kernel itself serialises: `inner_content` (the
raw provider response) is never kept, a numpy array in binary content comes
back as bytes, and metadata values that are not JSON come back in JSON form,
except Semantic Kernel's own pydantic models (such as `CompletionUsage`),
which are rebuilt as themselves.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python
from semantic_kernel.contents.binary_content import BinaryContent
from semantic_kernel.contents.chat_message_content import CMC_ITEM_TYPES, ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent
from semantic_kernel.contents.text_content import TextContent
from semantic_kernel.contents.utils.author_role import AuthorRole

import polymem

SK_KEY = "semantic_kernel"
"""The reserved `Message.metadata` key holding Semantic Kernel's own fields."""

FOREIGN_PARTS_KEY = "polymem_parts"
"""Where parts that Semantic Kernel cannot represent wait, so writing back keeps them."""

_MODEL_TAG = "$sk_model"
_MESSAGE_FIELDS = ("ai_model_id", "encoding", "finish_reason", "status")
_ITEMS: TypeAdapter[Any] = TypeAdapter(CMC_ITEM_TYPES)
_ROLES = {role.value for role in AuthorRole}


def to_polymem(message: ChatMessageContent) -> polymem.Message:
    """One Semantic Kernel message as a lossless polymem message."""
    layout: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    tool_calls: list[polymem.ToolCall] = []
    texts: list[str] = []
    results: list[FunctionResultContent] = []
    for item in message.items:
        if isinstance(item, TextContent):
            texts.append(item.text)
            layout.append(_dump_item(item))
        elif isinstance(item, FunctionCallContent):
            tool_calls.append(_tool_call(item))
            layout.append(_dump_item(item))
        elif isinstance(item, FunctionResultContent):
            results.append(item)
            layout.append(_dump_result(item))
        else:
            layout.append({"part": len(parts)})
            parts.append(_dump_item(item))
    if not texts and results:
        texts = [str(result.result) for result in results]
    own = {field: _plain(getattr(message, field)) for field in _MESSAGE_FIELDS}
    sk: dict[str, Any] = {key: value for key, value in own.items() if value is not None}
    sk["items"] = layout
    metadata = encode_metadata(message.metadata)
    parts.extend(metadata.pop(FOREIGN_PARTS_KEY, None) or ())
    metadata[SK_KEY] = sk
    return polymem.Message(
        role=_plain(message.role),
        content="\n".join(texts),
        name=message.name,
        tool_calls=tuple(tool_calls),
        tool_call_id=results[0].id if results else None,
        parts=tuple(parts),
        metadata=metadata,
    )


def from_polymem(message: polymem.Message) -> ChatMessageContent:
    """A polymem message as Semantic Kernel's; exact for messages `to_polymem` wrote.

    Messages written by other frameworks are read from the neutral fields:
    text, tool calls, the tool result a `tool_call_id` answers, and parts in
    Semantic Kernel's item form. Other parts are kept in metadata, and an
    unknown role reads as `user`.
    """
    metadata = dict(message.metadata)
    sk = metadata.pop(SK_KEY, None)
    metadata = decode_metadata(metadata)
    if isinstance(sk, dict) and isinstance(sk.get("items"), list):
        items = [_load_item(entry, message.parts) for entry in sk["items"]]
        own = {field: sk[field] for field in _MESSAGE_FIELDS if field in sk}
        return ChatMessageContent(
            role=AuthorRole(message.role), items=items, name=message.name, metadata=metadata, **own
        )
    return _from_neutral(message, metadata)


def to_polymem_all(messages: Iterable[ChatMessageContent]) -> list[polymem.Message]:
    """`to_polymem` over a sequence, order kept."""
    return [to_polymem(message) for message in messages]


def from_polymem_all(messages: Iterable[polymem.Message]) -> list[ChatMessageContent]:
    """`from_polymem` over a sequence, order kept."""
    return [from_polymem(message) for message in messages]


def encode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Message metadata in JSON form; Semantic Kernel models are tagged to come back as themselves."""
    return {key: _encode_value(value) for key, value in metadata.items()}


def decode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of `encode_metadata`."""
    return {key: _decode_value(value) for key, value in metadata.items()}


def _from_neutral(message: polymem.Message, metadata: dict[str, Any]) -> ChatMessageContent:
    items: list[Any] = []
    foreign: list[dict[str, Any]] = []
    role = message.role if message.role in _ROLES else AuthorRole.USER.value
    if message.tool_call_id is not None:
        name = message.name or ""
        items.append(FunctionResultContent(id=message.tool_call_id, name=name, result=message.content))
    elif message.content:
        items.append(TextContent(text=message.content))
    for call in message.tool_calls:
        items.append(FunctionCallContent(id=call.id, name=call.name, arguments=call.arguments))
    for part in message.parts:
        try:
            items.append(_ITEMS.validate_python(_undump_binary(part)))
        except (ValueError, TypeError, KeyError):
            foreign.append(dict(part))
    if foreign:
        metadata[FOREIGN_PARTS_KEY] = foreign
    return ChatMessageContent(role=AuthorRole(role), items=items, name=message.name, metadata=metadata)


def _tool_call(item: FunctionCallContent) -> polymem.ToolCall:
    arguments = item.arguments
    if arguments is None:
        text = "{}"
    elif isinstance(arguments, str):
        text = arguments
    else:
        text = json.dumps(to_jsonable_python(arguments, fallback=str), ensure_ascii=False)
    return polymem.ToolCall(id=item.id or "", name=item.name or item.function_name, arguments=text)


def _dump_item(item: Any) -> dict[str, Any]:
    if isinstance(item, BinaryContent):
        data = item.model_dump(mode="python", exclude={"data_uri"})
        data["uri"] = str(item.uri) if item.uri is not None else None
        if item._data_uri is not None:  # what `can_read` says; semantic-kernel 1.28 has no `can_read`
            raw = item.data if isinstance(item.data, bytes) else item.data.tobytes()
            data["data_base64"] = base64.b64encode(raw).decode("ascii")
            data["mime_type"] = item.mime_type
            data["data_format"] = item._data_uri.data_format if item._data_uri else None
        dumped: dict[str, Any] = to_jsonable_python(data, fallback=str)
        return dumped
    dumped = to_jsonable_python(item.model_dump(mode="python"), fallback=str)
    return dumped


def _dump_result(item: FunctionResultContent) -> dict[str, Any]:
    data = _dump_item(item)
    value = item.result
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        value = str(value)
    data["result"] = value
    return data


def _undump_binary(data: Mapping[str, Any]) -> dict[str, Any]:
    values = dict(data)
    encoded = values.pop("data_base64", None)
    if encoded is not None:
        values["data"] = base64.b64decode(encoded)
    return values


def _load_item(entry: Mapping[str, Any], parts: tuple[dict[str, Any], ...]) -> Any:
    data = parts[entry["part"]] if "part" in entry and len(entry) == 1 else entry
    return _ITEMS.validate_python(_undump_binary(data))


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def _encode_value(value: Any) -> Any:
    if isinstance(value, BaseModel) and type(value).__module__.startswith("semantic_kernel."):
        kind = f"{type(value).__module__}:{type(value).__qualname__}"
        return {_MODEL_TAG: kind, "data": to_jsonable_python(value, fallback=str)}
    return to_jsonable_python(value, fallback=str)


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {_MODEL_TAG, "data"}:
        module_name, _, qualname = str(value[_MODEL_TAG]).partition(":")
        # Only Semantic Kernel's own classes are rebuilt: stored text never picks what gets imported.
        if module_name.startswith("semantic_kernel."):
            try:
                model = getattr(importlib.import_module(module_name), qualname)
                return model.model_validate(value["data"])
            except (ImportError, AttributeError, ValueError):
                return value["data"]
        return value["data"]
    return value
