"""LlamaIndex `ChatMessage` <-> polymem `Message`: every conversion lives here.

The mapping, chosen so other frameworks read a LlamaIndex message naturally
and LlamaIndex gets back exactly what it wrote:

- `role` -> `role` (the `MessageRole` value);
- text blocks -> `content` (joined with "\\n", as `ChatMessage.content` does);
- `ToolCallBlock`s and OpenAI-shaped `additional_kwargs["tool_calls"]` -> `tool_calls`;
- `additional_kwargs["tool_call_id"]` / `["name"]` -> `tool_call_id` / `name`;
- every other block (image, audio, video, document, thinking, citation, cache
  point) -> one entry of `parts`: the block's JSON form plus a neutral `type`;
- the rest of `additional_kwargs`, and the block order when it is not the
  default (text, then parts, then tool calls), -> `metadata["llama_index"]`.

"Lossless" means: equal to what LlamaIndex's own `SimpleChatStore` gives back
after persisting (`ChatMessage.model_validate(msg.model_dump(mode="json"))`);
for JSON-native messages that is the message itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock

from polymem import Message, ToolCall

META_KEY = "llama_index"
"""The key of `Message.metadata` (and `ToolCall.metadata`) holding LlamaIndex-only fields."""

EMPTY_PART: dict[str, Any] = {"type": "empty"}
"""The part that stands for "no content" (an empty LlamaIndex message); it reads back as nothing."""

_ROLE_ALIASES = {"human": "user", "ai": "assistant"}
_ROLES = {role.value for role in MessageRole}


class UnsupportedContentError(ValueError):
    """A message part or role that has no LlamaIndex equivalent."""


def to_polymem(message: ChatMessage) -> Message:
    """Translate one LlamaIndex `ChatMessage` into a polymem `Message`."""
    data = message.model_dump(mode="json")
    kwargs: dict[str, Any] = dict(data.get("additional_kwargs") or {})
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    layout = ""
    for block in data.get("blocks") or ():
        kind = block["block_type"]
        if kind == "text":
            texts.append(block["text"])
            layout += "t"
        elif kind == "tool_call":
            calls.append(_call_from_block(block))
            layout += "c"
        else:
            parts.append({"type": kind, **block})
            layout += "p"
    calls.extend(_calls_from_kwargs(kwargs))
    tool_call_id = kwargs.pop("tool_call_id") if isinstance(kwargs.get("tool_call_id"), str) else None
    name = kwargs.pop("name") if isinstance(kwargs.get("name"), str) else None

    content = "\n".join(texts)
    if not content.strip() and not parts and not calls:
        parts.append(dict(EMPTY_PART))  # polymem refuses a message with nothing in it
    extra: dict[str, Any] = {}
    if kwargs:
        extra["additional_kwargs"] = kwargs
    if layout != _default_layout(content, len(parts), layout.count("c")):
        extra["layout"] = layout
        extra["texts"] = texts
    return Message(
        role=str(data["role"]),
        content=content,
        name=name,
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id,
        parts=tuple(parts),
        metadata={META_KEY: extra} if extra else {},
    )


def from_polymem(message: Message) -> ChatMessage:
    """Translate one polymem `Message` (from any framework) into a LlamaIndex `ChatMessage`."""
    extra: dict[str, Any] = dict(message.metadata.get(META_KEY) or {})
    kwargs: dict[str, Any] = dict(extra.get("additional_kwargs") or {})
    block_calls = []
    raw_calls = []
    for call in message.tool_calls:
        call_meta = call.metadata.get(META_KEY) or {}
        if "raw" in call_meta:
            raw_calls.append(call_meta["raw"])
        else:
            block_calls.append(_block_from_call(call))
    if raw_calls:
        kwargs["tool_calls"] = raw_calls
    if message.tool_call_id is not None:
        kwargs["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        kwargs["name"] = message.name
    parts = [_block_from_part(part) for part in message.parts if part != EMPTY_PART]

    layout = extra.get("layout")
    if layout is None:
        text_blocks = [{"block_type": "text", "text": message.content}] if message.content else []
        blocks = [*text_blocks, *parts, *block_calls]
    else:
        texts, part_it, call_it = iter(extra.get("texts") or ()), iter(parts), iter(block_calls)
        sources = {"t": lambda: {"block_type": "text", "text": next(texts)}, "p": lambda: next(part_it), "c": lambda: next(call_it)}
        blocks = [sources[kind]() for kind in layout]
    return ChatMessage.model_validate(
        {"role": _role(message.role), "additional_kwargs": kwargs, "blocks": blocks}
    )


def to_polymem_all(messages: Iterable[ChatMessage]) -> list[Message]:
    """`to_polymem` over a sequence, order kept."""
    return [to_polymem(message) for message in messages]


def from_polymem_all(messages: Iterable[Message]) -> list[ChatMessage]:
    """`from_polymem` over a sequence, order kept."""
    return [from_polymem(message) for message in messages]


def text_of(message: ChatMessage) -> str:
    """The text a LlamaIndex message carries (its text blocks), for queries and prompts."""
    return "\n".join(block.text for block in message.blocks if isinstance(block, TextBlock))


def _default_layout(content: str, n_parts: int, n_calls: int) -> str:
    return ("t" if content else "") + "p" * n_parts + "c" * n_calls


def _role(role: str) -> str:
    role = _ROLE_ALIASES.get(role, role)
    if role not in _ROLES:
        raise UnsupportedContentError(
            f"polymem message role {role!r} has no LlamaIndex MessageRole "
            f"(one of {sorted(_ROLES)})"
        )
    return role


def _call_from_block(block: dict[str, Any]) -> ToolCall:
    kwargs = block.get("tool_kwargs")
    meta: dict[str, Any] = {}
    if isinstance(kwargs, str):
        arguments = kwargs
        meta["kwargs_as_text"] = True
    else:
        arguments = json.dumps(kwargs if kwargs is not None else {}, ensure_ascii=False)
    if block.get("tool_call_id") is None:
        meta["no_id"] = True
    return ToolCall(
        id=block.get("tool_call_id") or "",
        name=block["tool_name"],
        arguments=arguments,
        metadata={META_KEY: meta} if meta else {},
    )


def _block_from_call(call: ToolCall) -> dict[str, Any]:
    meta = call.metadata.get(META_KEY) or {}
    kwargs: Any = call.arguments
    if not meta.get("kwargs_as_text"):
        try:
            kwargs = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            kwargs = call.arguments
    return {
        "block_type": "tool_call",
        "tool_call_id": None if meta.get("no_id") else call.id,
        "tool_name": call.name,
        "tool_kwargs": kwargs,
    }


def _calls_from_kwargs(kwargs: dict[str, Any]) -> list[ToolCall]:
    """Lift OpenAI-shaped `additional_kwargs["tool_calls"]` into polymem tool calls.

    Anything of another shape stays in `additional_kwargs`, untouched.
    """
    raw = kwargs.get("tool_calls")
    if not isinstance(raw, list) or not raw or not all(_is_openai_call(item) for item in raw):
        return []
    del kwargs["tool_calls"]
    calls = []
    for item in raw:
        arguments = item["function"].get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        calls.append(
            ToolCall(
                id=str(item.get("id") or ""),
                name=item["function"]["name"],
                arguments=arguments,
                metadata={META_KEY: {"raw": item}},
            )
        )
    return calls


def _is_openai_call(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("function"), dict)
        and isinstance(item["function"].get("name"), str)
    )


def _block_from_part(part: dict[str, Any]) -> dict[str, Any]:
    """A LlamaIndex block from a `parts` entry: ours verbatim, common foreign shapes mapped."""
    if "block_type" in part:
        return {key: value for key, value in part.items() if key != "type"}
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return {"block_type": "text", "text": part["text"]}
    if kind in ("image", "image_url"):
        url = part.get("url")
        if isinstance(part.get("image_url"), dict):
            url = part["image_url"].get("url")
        data = part.get("data") or part.get("base64")
        mimetype = part.get("mime_type") or part.get("mimetype")
        if url or data:
            block = ImageBlock(url=url, image=data.encode() if data else None, image_mimetype=mimetype)
            return block.model_dump(mode="json")
    raise UnsupportedContentError(
        f"polymem content part of type {kind!r} has no LlamaIndex block equivalent "
        f"(keys: {sorted(part)}); LlamaIndex accepts text, image, audio, video, document, "
        "thinking, citation and cache blocks"
    )


def keep_identity(stored: Iterable[Message], wanted: Iterable[Message]) -> list[Message]:
    """`wanted`, reusing the stored messages it starts with (same id, same transcript entry).

    LlamaIndex messages carry no id, so a `set_messages` of a history that
    begins with what is already stored would otherwise append it again.
    """
    result = list(wanted)
    for i, (old, new) in enumerate(zip(stored, result)):
        if not same_message(old, new):
            break
        result[i] = old
    return result


def same_message(a: Message, b: Message) -> bool:
    """Equal apart from identity (`message_id`) and time (`created_at`)."""
    return a.replace(message_id=b.message_id, created_at=b.created_at) == b
