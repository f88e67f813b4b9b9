"""A scripted chat completion service: Semantic Kernel's own extension point, no network.

Each model call takes the next step of a script. A step is a reply text, a
`ChatMessageContent`, a `call(...)` (the model asks for tools), a list of messages
(the service's whole answer as is: none at all, or several, streamed one chunk per
message) or a function of the chat history returning one of those (a step that
writes to the history it is given stands for a service that does, as Semantic
Kernel's own function-calling loop does). Every call records what the model
would have seen: the chat history and the functions advertised to it.
"""


import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, PrivateAttr
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.embedding_generator_base import EmbeddingGeneratorBase
from semantic_kernel.connectors.ai.function_choice_type import FunctionChoiceType
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.contents.utils.finish_reason import FinishReason

Answer = str | ChatMessageContent | list[ChatMessageContent]
Step = Answer | Callable[[ChatHistory], Answer]


def call(*calls: tuple[str, dict[str, Any]], call_ids: Sequence[str] | None = None) -> ChatMessageContent:
    """An assistant message asking for tools, e.g. `call(("memory-save", {"content": "..."}))`."""
    items = []
    for n, (name, arguments) in enumerate(calls):
        call_id = call_ids[n] if call_ids else f"call_{n}_{name}"
        items.append(FunctionCallContent(id=call_id, name=name, arguments=json.dumps(arguments)))
    return ChatMessageContent(
        role=AuthorRole.ASSISTANT, items=items, finish_reason=FinishReason.TOOL_CALLS, ai_model_id="scripted"
    )


class ScriptedChatCompletion(ChatCompletionClientBase):
    """Answers from a script, in order; raises when the script runs out."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    script: list[Any] = Field(default_factory=list)
    _seen: list[ChatHistory] = PrivateAttr(default_factory=list)
    _advertised: list[list[str]] = PrivateAttr(default_factory=list)

    def __init__(self, script: Sequence[Step] = (), *, ai_model_id: str = "scripted", **kwargs: Any) -> None:
        super().__init__(ai_model_id=ai_model_id, script=list(script), **kwargs)

    @property
    def seen(self) -> list[ChatHistory]:
        """A copy of the chat history of every model call, in order."""
        return self._seen

    @property
    def advertised(self) -> list[list[str]]:
        """The fully qualified names of the functions offered on each configuration."""
        return self._advertised

    def get_prompt_execution_settings_class(self) -> type[PromptExecutionSettings]:
        return PromptExecutionSettings

    def _update_function_choice_settings_callback(self) -> Callable[..., None]:
        def update(configuration: Any, settings: Any, choice_type: FunctionChoiceType) -> None:
            functions = configuration.available_functions or []
            self._advertised.append([f.fully_qualified_name for f in functions])

        return update

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        self._seen.append(ChatHistory(messages=[m.model_copy(deep=True) for m in chat_history.messages]))
        if not self.script:
            raise AssertionError("the scripted model was called more often than scripted")
        step = self.script.pop(0)
        if callable(step):
            step = step(chat_history)
        if isinstance(step, str):
            step = ChatMessageContent(
                role=AuthorRole.ASSISTANT, content=step, ai_model_id="scripted", finish_reason=FinishReason.STOP
            )
        return list(step) if isinstance(step, list) else [step]

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, function_invoke_attempt: int = 0
    ) -> Any:
        for message in await self._inner_get_chat_message_contents(chat_history, settings):
            yield [
                message
                if isinstance(message, StreamingChatMessageContent)
                else StreamingChatMessageContent(
                    role=message.role,
                    items=message.items,
                    choice_index=0,
                    ai_model_id=message.ai_model_id,
                    finish_reason=message.finish_reason,
                )
            ]


class LocalEmbeddingService(EmbeddingGeneratorBase):
    """A Semantic Kernel embedding service on a local polymem embedder (MiniLM): offline, real vectors."""

    embedder: Any = Field(exclude=True)
    calls: int = 0

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        super().__init__(ai_model_id=f"local:{embedder.model_id}", embedder=embedder, **kwargs)

    async def generate_embeddings(self, texts: list[str], settings: Any = None, **kwargs: Any) -> np.ndarray:
        self.calls += 1
        return np.asarray(self.embedder.embed(texts), dtype=float)
