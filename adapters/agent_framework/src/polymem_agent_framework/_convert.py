"""All message conversion between Agent Framework and polymem, both ways.

An Agent Framework `Message` becomes a `polymem.Message` that other
frameworks read (role, text `content`, `author_name` as `name`, function calls
as `tool_calls`, the call a function result answers as `tool_call_id`, every
other content — data, URIs, usage, errors, hosted files… — as `parts` in the
framework's own dict form) and that restores exactly: the ordered contents
live under one reserved metadata key, `"agent_framework"`, in the form
`Message.to_dict()` gives them. The message's `additional_properties` sit
beside that key, so tools that know nothing of Agent Framework still see them.

Exactness is the framework's own serialisation: `raw_representation` (the
provider's raw object) is never kept, as `Message.to_dict()` does not keep it,
and additional properties that are not JSON come back in JSON form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from agent_framework import Content, Message
from pydantic_core import to_jsonable_python

import polymem
from polymem.importers._messages import AGENT_FRAMEWORK_PART, FOREIGN_PARTS_KEY, from_agent_framework

AF_KEY = "agent_framework"
"""The reserved `polymem.Message.metadata` key holding Agent Framework's own fields."""

RECALL_HEADER = "Relevant memories (most relevant first; category, age):"
"""The first line of the message `PolymemContextProvider` adds before a run."""


def to_polymem(message: Message) -> polymem.Message:
    """One Agent Framework message as a lossless polymem message (what `polymem import` writes for it too)."""
    return from_agent_framework({**message.to_dict(), "additional_properties": _plain(message.additional_properties)})


def from_polymem(message: polymem.Message) -> Message:
    """A polymem message as Agent Framework's; exact for messages `to_polymem` wrote.

    Messages written by other frameworks are read from the neutral fields: the
    text, each tool call as a function call, a `tool_call_id` as the function
    result of that call. Their parts and metadata are kept in
    `additional_properties`, so writing the message back loses nothing.
    """
    metadata = dict(message.metadata)
    own = metadata.pop(AF_KEY, None)
    if isinstance(own, dict) and isinstance(own.get("contents"), list):
        used: set[int] = set()
        contents = []
        for entry in own["contents"]:
            if isinstance(entry, dict) and set(entry) == {AGENT_FRAMEWORK_PART}:
                used.add(entry[AGENT_FRAMEWORK_PART])
                entry = message.parts[entry[AGENT_FRAMEWORK_PART]]
            contents.append(Content.from_dict(entry))
        foreign = [dict(part) for index, part in enumerate(message.parts) if index not in used]
        if foreign:
            metadata[FOREIGN_PARTS_KEY] = foreign
        return Message(message.role, contents, author_name=message.name, message_id=own.get("message_id"),
                       additional_properties=metadata)
    return _from_neutral(message, metadata)


def to_polymem_all(messages: Iterable[Message]) -> list[polymem.Message]:
    """`to_polymem` over a sequence, order kept."""
    return [to_polymem(message) for message in messages]


def from_polymem_all(messages: Iterable[polymem.Message]) -> list[Message]:
    """`from_polymem` over a sequence, order kept."""
    return [from_polymem(message) for message in messages]


def recall_text(hits: Iterable[polymem.RecallHit], now: datetime) -> str:
    """Recalled memories as prompt text, best first, each with its category and age ("" for none)."""
    return polymem.render_memories(hits, header=RECALL_HEADER, template="{rank}. [{category}, {age}] {content}",
                                   now=now)


def _from_neutral(message: polymem.Message, metadata: dict[str, Any]) -> Message:
    contents: list[Content] = []
    if message.tool_call_id is not None:
        contents.append(Content.from_function_result(call_id=message.tool_call_id, result=message.content))
    elif message.content:
        contents.append(Content.from_text(message.content))
    contents.extend(Content.from_function_call(call_id=call.id, name=call.name, arguments=call.arguments)
                    for call in message.tool_calls)
    if message.parts:
        metadata[FOREIGN_PARTS_KEY] = [dict(part) for part in message.parts]
    return Message(message.role, contents, author_name=message.name, additional_properties=metadata)


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: to_jsonable_python(value, fallback=str) for key, value in values.items()}
