"""A scripted chat client on the framework's own `BaseChatClient` (agent-framework-core ships no fake client).

It is built like the framework's test client (`MockBaseChatClient` in
microsoft/agent-framework `python/packages/core/tests/core/conftest.py`):
the framework's function-invocation and middleware layers over
`BaseChatClient`, answering each request with the next scripted response and
recording the messages every request carried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)


class ScriptedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Answers with the scripted replies in order: a string is a text reply, a `Message` is sent as is."""

    def __init__(self, *replies: str | Message) -> None:
        super().__init__(middleware=[])
        self.replies: list[str | Message] = list(replies)
        self.requests: list[list[Message]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse]:
        if stream:
            raise NotImplementedError("the scripted client answers whole responses only")
        self.requests.append(list(messages))

        async def respond() -> ChatResponse:
            reply = self.replies.pop(0) if self.replies else "(no more scripted replies)"
            return ChatResponse(messages=[reply if isinstance(reply, Message) else Message("assistant", [reply])])

        return respond()

    def prompt_texts(self, request: int = -1) -> list[str]:
        """The texts of the messages the model received in one request (default: the last)."""
        return [m.text for m in self.requests[request]]


def call(name: str, call_id: str, **arguments: Any) -> Message:
    """An assistant message calling a tool."""
    return Message("assistant", [Content.from_function_call(call_id=call_id, name=name, arguments=arguments)])
