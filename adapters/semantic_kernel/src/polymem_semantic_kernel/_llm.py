"""An extractor, a summarizer, a reranker and a query rewriter backed by a Semantic Kernel chat completion service.

The prompts, the parsing and the error rule are polymem's (`ChatExtractor`, `ChatSummarizer`,
`ChatReranker`, `ChatQueryRewriter`); this module only asks the service.
"""

from __future__ import annotations

from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory

import polymem


class _Chat(polymem.AsyncChatModel):
    """polymem's `ChatModel` on a chat completion service (async; sync calls run on one private loop)."""

    def __init__(self, service: ChatCompletionClientBase, settings: PromptExecutionSettings | None = None) -> None:
        super().__init__()
        self._service = service
        self._settings = settings or PromptExecutionSettings()

    async def acomplete(self, system: str, prompt: str) -> str:
        history = ChatHistory(system_message=system)
        history.add_user_message(prompt)
        reply = await self._service.get_chat_message_content(history, self._settings)
        return "" if reply is None else str(reply.content).strip()


class SemanticKernelReranker(polymem.ChatReranker):
    """polymem's `Reranker` on a chat completion service, which rates each candidate 0–10
    (the prompt and the parsing are polymem's).

        store = polymem.open(url, reranker=SemanticKernelReranker(service))
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        system: str = polymem.ChatReranker.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=system)


class SemanticKernelQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on a chat completion service.

        store = polymem.open(url, query_rewriter=SemanticKernelQueryRewriter(service))
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        system: str = polymem.ChatQueryRewriter.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=system)


class SemanticKernelSummarizer(polymem.ChatSummarizer):
    """polymem's `Summarizer` protocol on a chat completion service (polymem's `ChatSummarizer`).

        store = polymem.open(url, summarizer=SemanticKernelSummarizer(service))

    polymem checks every summary and keeps the raw text when a number or unit
    was lost, so a weak model cannot silently drop facts.
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        instructions: str = polymem.ChatSummarizer.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=instructions)


class SemanticKernelExtractor(polymem.ChatExtractor):
    """polymem's `Extractor` protocol on a chat completion service (polymem's `ChatExtractor`).

        store = polymem.open(url, extractor=SemanticKernelExtractor(service))

    The model answers with a JSON array of memories, dated where the conversation
    says; elements that are not objects with text content are skipped, unknown
    sources read as `inference`, and a reply that is not JSON raises
    `polymem.ModelAnswerError`: nothing is written (a session being ended keeps its messages).
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        instructions: str = polymem.ChatExtractor.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=instructions)
