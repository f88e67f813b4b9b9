"""polymem's `Extractor`, `Summarizer`, `Reranker` and `QueryRewriter`, answered by an AutoGen `ChatCompletionClient`.

The prompts, the parsing and the error rule are polymem's (`ChatExtractor`, `ChatSummarizer`,
`ChatReranker`, `ChatQueryRewriter`); this module only asks the model client.
"""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core.models import ChatCompletionClient, SystemMessage, UserMessage

import polymem


class _Chat(polymem.AsyncChatModel):
    """polymem's `ChatModel` on an AutoGen model client (async; run to completion from sync code)."""

    def __init__(self, model_client: ChatCompletionClient) -> None:
        super().__init__()
        self.model_client = model_client

    async def acomplete(self, system: str, prompt: str) -> str:
        result = await self.model_client.create(
            [SystemMessage(content=system), UserMessage(content=prompt, source="polymem")]
        )
        if not isinstance(result.content, str):
            raise polymem.ModelAnswerError("the model answered with function calls, not text")
        return result.content


class ChatCompletionExtractor(polymem.ChatExtractor):
    """A polymem `Extractor` that asks an AutoGen model client what to remember.

    Pass it to `polymem.open(..., extractor=...)`; `mem.ingest(...)` and
    `PolymemMemory.capture(...)` then distil conversations into long-term
    memories, dated where the conversation says. The model answers with a JSON
    list; items that are not usable (no content, a category not in `categories`)
    are skipped with a warning, and an answer that is not JSON at all raises
    `polymem.ModelAnswerError` (a `polymem.PolymemError`): nothing is written.
    """

    def __init__(
        self,
        model_client: ChatCompletionClient,
        *,
        categories: Sequence[str] = ("fact", "preference", "event", "task"),
        prompt: str = polymem.ChatExtractor.SYSTEM,
    ) -> None:
        super().__init__(_Chat(model_client), categories=categories, system=prompt)
        self.model_client = model_client
        self.prompt = prompt


class ChatCompletionSummarizer(polymem.ChatSummarizer):
    """A polymem `Summarizer` backed by an AutoGen model client.

    Pass it to `polymem.open(..., summarizer=...)` and open sessions with
    `overflow="summarize"`. polymem checks that the summary keeps every number
    and unit of what it replaces and falls back to the raw text if not (or if
    the model returns no text).
    """

    def __init__(self, model_client: ChatCompletionClient, *, prompt: str = polymem.ChatSummarizer.SYSTEM) -> None:
        super().__init__(_Chat(model_client), system=prompt)
        self.model_client = model_client
        self.prompt = prompt


class ChatCompletionReranker(polymem.ChatReranker):
    """polymem's `Reranker` on an AutoGen model client, which rates each candidate 0–10 (the
    prompt and the parsing are polymem's): `polymem.open(url, reranker=ChatCompletionReranker(client))`."""

    def __init__(self, model_client: ChatCompletionClient, *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(model_client), system=system)


class ChatCompletionQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on an AutoGen model client:
    `polymem.open(url, query_rewriter=ChatCompletionQueryRewriter(client))`."""

    def __init__(self, model_client: ChatCompletionClient, *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(model_client), system=system)
