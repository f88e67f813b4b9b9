"""polymem's `Extractor`, `Summarizer`, `Reranker` and `QueryRewriter`, answered by an Agent Framework chat client.

The prompts, the parsing and the error rule are polymem's (`ChatExtractor`, `ChatSummarizer`,
`ChatReranker`, `ChatQueryRewriter`); this module only asks the chat client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_framework import Message, SupportsChatGetResponse

import polymem


class _Chat(polymem.AsyncChatModel):
    """polymem's `ChatModel` on an Agent Framework chat client (async; run to completion from sync code)."""

    def __init__(self, client: SupportsChatGetResponse[Any]) -> None:
        super().__init__()
        self.client = client

    async def acomplete(self, system: str, prompt: str) -> str:
        response = await self.client.get_response([Message("system", [system]), Message("user", [prompt])])
        return response.text.strip()


class ChatClientExtractor(polymem.ChatExtractor):
    """A polymem `Extractor` that asks an Agent Framework chat client what to remember.

    Pass it to `polymem.open(..., extractor=...)`; `PolymemContextProvider`
    (`remember="extract"`) and `mem.ingest(...)` then distil conversations with
    the model, dated where the conversation says. Items without content or with a
    category not in `categories` are skipped with a warning; an answer with no JSON
    list of memories raises `polymem.ModelAnswerError` (a `polymem.PolymemError`).
    """

    def __init__(self, client: SupportsChatGetResponse[Any], *,
                 categories: Sequence[str] = ("fact", "preference", "event", "task"),
                 prompt: str = polymem.ChatExtractor.SYSTEM) -> None:
        super().__init__(_Chat(client), categories=categories, system=prompt)
        self.client = client
        self.prompt = prompt


class ChatClientSummarizer(polymem.ChatSummarizer):
    """A polymem `Summarizer` answered by an Agent Framework chat client.

    Pass it to `polymem.open(..., summarizer=...)` and give sessions
    `overflow="summarize"` (e.g. `PolymemHistoryProvider(..., max_tokens=2000,
    overflow="summarize")`). polymem checks that the summary keeps every number
    and unit of what it replaces and falls back to the raw text if not.
    """

    def __init__(self, client: SupportsChatGetResponse[Any], *, prompt: str = polymem.ChatSummarizer.SYSTEM) -> None:
        super().__init__(_Chat(client), system=prompt)
        self.client = client
        self.prompt = prompt


class ChatClientReranker(polymem.ChatReranker):
    """polymem's `Reranker` on an Agent Framework chat client, which rates each candidate 0–10
    (the prompt and the parsing are polymem's): `polymem.open(url, reranker=ChatClientReranker(client))`."""

    def __init__(self, client: SupportsChatGetResponse[Any], *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(client), system=system)


class ChatClientQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on an Agent Framework chat client:
    `polymem.open(url, query_rewriter=ChatClientQueryRewriter(client))`."""

    def __init__(self, client: SupportsChatGetResponse[Any], *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(client), system=system)
