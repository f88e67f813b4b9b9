"""Persisted framework messages (plain JSON, no framework imported) → `polymem.Message`.

Each function reads one framework's own JSON form of a message and writes the
`Message` that framework's polymem adapter writes for it: the neutral fields
other frameworks read (role, text, name, tool calls, tool call id, parts) plus
the framework-only fields under the adapter's metadata key (`"langchain"`,
`"llama_index"`, `"autogen"`, `"semantic_kernel"`, `"agent_framework"`), so the
adapter reads an imported message back as the message that was persisted.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from .._models import Message, ToolCall


class UnsupportedMessage(ValueError):
    """A persisted entry that is not a message of the format (skipped, with this reason)."""


def _args_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, ensure_ascii=False)


# -- LangChain (`messages_to_dict`: {"type": ..., "data": {...}}) --------------------------------

_LC_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function",
             "HumanMessageChunk": "user", "AIMessageChunk": "assistant", "SystemMessageChunk": "system",
             "ToolMessageChunk": "tool", "FunctionMessageChunk": "function"}
_LC_NEUTRAL = frozenset({"content", "name", "tool_calls", "tool_call_id", "type", "role"})


def from_langchain(entry: Mapping[str, Any]) -> Message:
    """One entry of LangChain's `messages_to_dict` output."""
    kind = entry.get("type")
    data = entry.get("data")
    if not isinstance(kind, str) or not isinstance(data, Mapping):
        raise UnsupportedMessage("not a LangChain message dict ({'type': ..., 'data': {...}})")
    if kind not in _LC_ROLES and kind not in ("chat", "ChatMessageChunk"):
        raise UnsupportedMessage(f"unknown LangChain message type {kind!r}")
    content = data.get("content", "")
    extra: dict[str, Any] = {"type": kind}
    for key, value in data.items():
        if key not in _LC_NEUTRAL and value not in (None, {}, []):
            extra[key] = value
    parts: list[dict[str, Any]] = []
    if isinstance(content, list):
        texts: list[str] = []
        layout: list[Any] = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
                layout.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
                layout.append(dict(block))
            else:
                layout.append({"$part": len(parts)})
                parts.append(dict(block) if isinstance(block, Mapping) else {"type": "unknown", "value": block})
        text = "".join(texts)
        extra["content_layout"] = layout
    else:
        text = str(content)
    calls: tuple[ToolCall, ...] = ()
    if kind in ("ai", "AIMessageChunk"):
        calls = tuple(
            ToolCall(id=call.get("id") or "", name=str(call["name"]), arguments=_args_text(call.get("args")),
                     metadata={} if call.get("id") is not None else {"langchain_id": None})
            for call in data.get("tool_calls") or ())
    role = str(data.get("role", "user")) if kind in ("chat", "ChatMessageChunk") else _LC_ROLES[kind]
    return Message(role=role, content=text, name=data.get("name"), tool_calls=calls,
                   tool_call_id=data.get("tool_call_id") if kind in ("tool", "ToolMessageChunk") else None,
                   parts=tuple(parts), metadata={"langchain": extra})


# -- LlamaIndex (`ChatMessage.model_dump(mode="json")`) --------------------------------------------

def from_llamaindex(data: Mapping[str, Any]) -> Message:
    """One LlamaIndex `ChatMessage` in its JSON form (as `SimpleChatStore.persist` writes it)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("role"), str):
        raise UnsupportedMessage("not a LlamaIndex ChatMessage (no role)")
    kwargs: dict[str, Any] = dict(data.get("additional_kwargs") or {})
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    layout = ""
    blocks = data.get("blocks")
    if blocks is None and data.get("content") is not None:  # older LlamaIndex: a plain `content`
        blocks = [{"block_type": "text", "text": str(data["content"])}]
    for block in blocks or ():
        kind = block.get("block_type")
        if kind == "text":
            texts.append(block.get("text", ""))
            layout += "t"
        elif kind == "tool_call":
            tool_kwargs = block.get("tool_kwargs")
            meta: dict[str, Any] = {}
            if isinstance(tool_kwargs, str):
                meta["kwargs_as_text"] = True
            if block.get("tool_call_id") is None:
                meta["no_id"] = True
            calls.append(ToolCall(id=block.get("tool_call_id") or "", name=str(block["tool_name"]),
                                  arguments=_args_text(tool_kwargs), metadata={"llama_index": meta} if meta else {}))
            layout += "c"
        else:
            parts.append({"type": kind, **block})
            layout += "p"
    raw = kwargs.get("tool_calls")
    if isinstance(raw, list) and raw and all(
            isinstance(i, dict) and isinstance(i.get("function"), dict) and isinstance(i["function"].get("name"), str)
            for i in raw):
        del kwargs["tool_calls"]
        calls.extend(ToolCall(id=str(i.get("id") or ""), name=i["function"]["name"],
                              arguments=_args_text(i["function"].get("arguments")),
                              metadata={"llama_index": {"raw": i}}) for i in raw)
    tool_call_id = kwargs.pop("tool_call_id") if isinstance(kwargs.get("tool_call_id"), str) else None
    name = kwargs.pop("name") if isinstance(kwargs.get("name"), str) else None
    content = "\n".join(texts)
    if not content.strip() and not parts and not calls:
        parts.append({"type": "empty"})
    extra: dict[str, Any] = {}
    if kwargs:
        extra["additional_kwargs"] = kwargs
    default = ("t" if content else "") + "p" * len(parts) + "c" * layout.count("c")
    if layout != default:
        extra["layout"] = layout
        extra["texts"] = texts
    return Message(role=str(data["role"]), content=content, name=name, tool_calls=tuple(calls),
                   tool_call_id=tool_call_id, parts=tuple(parts), metadata={"llama_index": extra} if extra else {})


# -- AutoGen (LLM messages of a saved `model_context` / agent state) ------------------------------

def _autogen(role: str, content: str, fields: dict[str, Any], **kwargs: Any) -> Message:
    if not content.strip() and not kwargs.get("tool_calls") and not kwargs.get("parts"):
        kwargs["parts"] = ({"type": "text", "text": content},)
    return Message(role=role, content=content, metadata={"autogen": fields}, **kwargs)


def from_autogen(data: Mapping[str, Any]) -> list[Message]:
    """One AutoGen LLM message dict (`SystemMessage`, `UserMessage`, ...); a tool message may give several."""
    kind = data.get("type") if isinstance(data, Mapping) else None
    content = data.get("content") if isinstance(data, Mapping) else None
    if kind == "SystemMessage":
        return [_autogen("system", str(content or ""), {"type": kind})]
    if kind == "UserMessage":
        fields: dict[str, Any] = {"type": kind, "source": data.get("source")}
        if isinstance(content, str):
            return [_autogen("user", content, fields, name=data.get("source"))]
        items = list(content or ())
        fields.update(content_type="parts", items=len(items))
        parts = tuple({"type": "text", "text": i} if isinstance(i, str) else
                      {"type": "image", "mime_type": "image/png", "data": (i or {}).get("data")} for i in items)
        text = "\n".join(i for i in items if isinstance(i, str))
        return [_autogen("user", text, fields, name=data.get("source"), parts=parts)]
    if kind == "AssistantMessage":
        fields = {"type": kind, "source": data.get("source"), "thought": data.get("thought")}
        if isinstance(content, str):
            return [_autogen("assistant", content, fields, name=data.get("source"))]
        fields["content_type"] = "function_calls"
        calls = tuple(ToolCall(id=str(c.get("id", "")), name=str(c.get("name", "")), arguments=_args_text(c.get("arguments")))
                      for c in content or ())
        return [_autogen("assistant", data.get("thought") or "", fields, name=data.get("source"), tool_calls=calls)]
    if kind == "FunctionExecutionResultMessage":
        group = str(uuid.uuid4())
        results = list(content or ())
        if not results:
            return [_autogen("tool", "", {"type": kind, "group": group, "size": 0})]
        return [_autogen("tool", str(r.get("content", "")), {"type": kind, "group": group, "size": len(results),
                                                             "name": r.get("name"), "is_error": r.get("is_error")},
                         name=r.get("name"), tool_call_id=r.get("call_id"))
                for r in results]
    raise UnsupportedMessage(f"not an AutoGen LLM message (type {kind!r})")


# -- Semantic Kernel (`ChatHistory.serialize()`: ChatMessageContent dicts) -------------------------

_SK_FIELDS = ("ai_model_id", "encoding", "finish_reason", "status")


def from_semantic_kernel(data: Mapping[str, Any]) -> Message:
    """One serialised Semantic Kernel `ChatMessageContent`."""
    if not isinstance(data, Mapping) or not isinstance(data.get("role"), str):
        raise UnsupportedMessage("not a Semantic Kernel ChatMessageContent (no role)")
    items = data.get("items")
    if items is None and data.get("content") is not None:
        items = [{"content_type": "text", "text": str(data["content"])}]
    layout: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    texts: list[str] = []
    results: list[Mapping[str, Any]] = []
    for item in items or ():
        kind = item.get("content_type")
        if kind == "text":
            texts.append(str(item.get("text", "")))
            layout.append(dict(item))
        elif kind == "function_call":
            name = item.get("name") or "-".join(x for x in (item.get("plugin_name"), item.get("function_name")) if x)
            calls.append(ToolCall(id=item.get("id") or "", name=str(name), arguments=_args_text(item.get("arguments"))))
            layout.append(dict(item))
        elif kind == "function_result":
            results.append(item)
            layout.append(dict(item))
        else:
            layout.append({"part": len(parts)})
            parts.append(dict(item))
    if not texts and results:
        texts = [str(r.get("result")) for r in results]
    sk: dict[str, Any] = {k: data[k] for k in _SK_FIELDS if data.get(k) is not None}
    sk["items"] = layout
    metadata = dict(data.get("metadata") or {})
    metadata["semantic_kernel"] = sk
    return Message(role=str(data["role"]), content="\n".join(texts), name=data.get("name"), tool_calls=tuple(calls),
                   tool_call_id=results[0].get("id") if results else None, parts=tuple(parts), metadata=metadata)


# -- Microsoft Agent Framework (`Message.to_dict()`: `AgentSession.to_dict()`, `FileHistoryProvider`) -

AGENT_FRAMEWORK_PART = "$part"
"""In `metadata["agent_framework"]["contents"]`, a content stored as `parts[i]` is `{"$part": i}`."""
FOREIGN_PARTS_KEY = "polymem_parts"
"""Parts another framework wrote wait under this key of an Agent Framework message's `additional_properties`."""


def from_agent_framework(data: Mapping[str, Any]) -> Message:
    """One Agent Framework `Message.to_dict()` (what its session and file history providers persist).

    Text contents give the text, function calls the tool calls, the first function result the
    `tool_call_id` (its result is the text when there is no text), and every other content (data,
    URIs, usage, errors, hosted files, …) a part. The ordered contents are kept under
    `metadata["agent_framework"]` (with `message_id`), `additional_properties` beside it.
    This is also how `polymem_agent_framework` writes a message, so both read back alike.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("role"), str) or data.get("type", "message") != "message":
        raise UnsupportedMessage("not an Agent Framework message (no role)")
    layout: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Mapping[str, Any]] = []
    for content in data.get("contents") or ():
        kind = content.get("type")
        if kind == "text":
            texts.append(str(content.get("text") or ""))
            layout.append(dict(content))
        elif kind == "function_call":
            calls.append(ToolCall(id=str(content.get("call_id") or ""), name=str(content.get("name") or ""),
                                  arguments=_args_text(content.get("arguments"))))
            layout.append(dict(content))
        elif kind == "function_result":
            results.append(content)
            layout.append(dict(content))
        else:
            layout.append({AGENT_FRAMEWORK_PART: len(parts)})
            parts.append(dict(content))
    if not texts and results:
        texts = [_result_text(result.get("result")) for result in results]
    metadata = dict(data.get("additional_properties") or {})
    parts.extend(metadata.pop(FOREIGN_PARTS_KEY, None) or ())
    own: dict[str, Any] = {"contents": layout}
    if data.get("message_id") is not None:
        own["message_id"] = data["message_id"]
    metadata["agent_framework"] = own
    call_id = results[0].get("call_id") if results else None
    return Message(role=data["role"], content="\n".join(texts), name=data.get("author_name"), tool_calls=tuple(calls),
                   tool_call_id=str(call_id) if call_id else None, parts=tuple(parts), metadata=metadata)


def _result_text(result: Any) -> str:
    if result is None:
        return ""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
