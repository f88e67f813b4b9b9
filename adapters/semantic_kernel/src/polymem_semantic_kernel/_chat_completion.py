"""`PolymemChatCompletion`: relevant memories injected into every chat completion request, agents included."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from pydantic import Field, PrivateAttr
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.contents.utils.author_role import AuthorRole

import polymem

from ._filters import DEFAULT_HEADER, _last_user_text
from ._plugin import HIT_TEMPLATE

MEMORY_METADATA_KEY = "polymem_memories"

_LEADING_ROLES = (AuthorRole.SYSTEM, AuthorRole.DEVELOPER)


class PolymemChatCompletion(ChatCompletionClientBase):
    """A chat completion service that puts relevant long-term memories in front of the model.

    Wrap the service an agent (or a kernel) calls:

        service = PolymemChatCompletion(OpenAIChatCompletion(...), store, user_id="alice")
        agent = ChatCompletionAgent(service=service, instructions="…")

    Before each request it recalls the memories relevant to the latest user
    message (`store.recall(query, user_id=…, top_k=…)`) and, when there are
    any, sends one system message listing them (numbered, best first) right
    after the leading system messages (the agent's instructions). The message
    goes into a copy of the chat history handed to the wrapped service, so it
    is never stored in the caller's history or in an agent thread; messages
    the wrapped service appends (tool calls and results of automatic function
    calling) are copied back into the caller's history, as Semantic Kernel's
    agents expect. Nothing is sent when nothing is relevant.

    This is the `ChatCompletionAgent` counterpart of `PolymemMemoryFilter`'s
    prompt-rendering injection (agents render no prompt); use one of them per
    kernel function call, not both. `min_relevance` is the core's recall
    threshold. `store` is a `polymem.Memory` or `polymem.AsyncMemory`.
    """

    inner_service: ChatCompletionClientBase = Field(exclude=True)
    _store: Any = PrivateAttr()
    _user_id: str = PrivateAttr()
    _agent_id: str | None = PrivateAttr(default=None)
    _top_k: int = PrivateAttr(default=5)
    _min_relevance: float | None = PrivateAttr(default=None)
    _header: str = PrivateAttr(default=DEFAULT_HEADER)

    def __init__(
        self,
        inner_service: ChatCompletionClientBase,
        store: Any,
        *,
        user_id: str,
        agent_id: str | None = None,
        top_k: int = 5,
        min_relevance: float | None = None,
        header: str = DEFAULT_HEADER,
        service_id: str | None = None,
    ) -> None:
        # this class's fields: the base's typed constructor knows only its own
        fields: dict[str, Any] = {"ai_model_id": inner_service.ai_model_id,
                                  "service_id": service_id or inner_service.service_id,
                                  "instruction_role": inner_service.instruction_role, "inner_service": inner_service}
        super().__init__(**fields)
        self._store = store.to_async()  # any store: its async form
        self._user_id = user_id
        self._agent_id = agent_id
        self._top_k = top_k
        self._min_relevance = min_relevance
        self._header = header

    @property
    def user_id(self) -> str:
        """Whose memories are injected."""
        return self._user_id

    def get_prompt_execution_settings_class(self) -> type[PromptExecutionSettings]:
        """The wrapped service's settings class."""
        return self.inner_service.get_prompt_execution_settings_class()

    def service_url(self) -> str | None:
        """The wrapped service's URL."""
        return self.inner_service.service_url()

    async def memory_message(self, chat_history: ChatHistory) -> ChatMessageContent | None:
        """The system message listing memories relevant to the latest user message; None if none are."""
        query = _last_user_text(chat_history)
        if not query or not query.strip():
            return None
        hits = await self._store.recall(query,
            user_id=self._user_id,
            agent_id=self._agent_id,
            top_k=self._top_k,
            min_relevance=self._min_relevance,
        )
        if not hits:
            return None
        return ChatMessageContent(
            role=AuthorRole.SYSTEM,
            content=polymem.render_memories(hits, header=self._header, template=HIT_TEMPLATE),
            metadata={MEMORY_METADATA_KEY: [hit.memory.memory_id for hit in hits]},
        )

    async def get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> list[ChatMessageContent]:
        """Inject the memories, then let the wrapped service answer (function calling included)."""
        request = await self._with_memories(chat_history)
        try:
            return await self.inner_service.get_chat_message_contents(request, settings, **kwargs)
        finally:
            _copy_back(request, chat_history)

    async def get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        """Inject the memories, then stream the wrapped service's answer (function calling included)."""
        request = await self._with_memories(chat_history)
        try:
            async for chunk in self.inner_service.get_streaming_chat_message_contents(request, settings, **kwargs):
                # Agents read tool messages from their history after every chunk.
                _copy_back(request, chat_history)
                yield chunk
        finally:
            _copy_back(request, chat_history)

    async def _with_memories(self, chat_history: ChatHistory) -> ChatHistory:
        message = await self.memory_message(chat_history)
        if message is None:
            return chat_history
        messages = list(chat_history.messages)
        at = 0
        while at < len(messages) and messages[at].role in _LEADING_ROLES:
            at += 1
        messages.insert(at, message)
        return _Request(messages=messages, caller_length=len(chat_history.messages))


class _Request(ChatHistory):
    """The chat history sent to the wrapped service: the caller's plus the memory message."""

    _copied: int = PrivateAttr(default=0)

    def __init__(self, *, messages: list[ChatMessageContent], caller_length: int) -> None:
        super().__init__(messages=messages)
        self._copied = caller_length + 1


def _copy_back(request: ChatHistory, chat_history: ChatHistory) -> None:
    """Append to the caller's history the messages the wrapped service added to the request."""
    if not isinstance(request, _Request):
        return
    for message in request.messages[request._copied :]:
        chat_history.add_message(message)
    request._copied = max(request._copied, len(request.messages))
