"""polymem's `Extractor`, `Summarizer`, `Reranker` and `QueryRewriter`, answered by an Agent Framework chat client."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from agent_framework import Message, SupportsChatGetResponse

import polymem

log = logging.getLogger("polymem_agent_framework")
T = TypeVar("T")

EXTRACT_PROMPT = (
    "You maintain the long-term memory of an assistant. Read the conversation and list what is worth "
    "remembering about the user across conversations: stable facts, preferences, notable events, open tasks. "
    "Skip greetings, small talk and anything only relevant to this turn. Write each memory as one short "
    'self-contained sentence in the third person. Answer with a JSON array only, each element {{"content": '
    'string, "category": one of {categories}, "source": "user_input" if the user said it, otherwise '
    '"inference", "importance": number from 0 to 1, "entities": [names]}}. Answer [] if nothing is worth keeping.'
)

SUMMARY_PROMPT = (
    "You maintain the running summary of a conversation. Merge the previous summary and the new messages into "
    "one concise summary in plain prose. Keep every number, unit, name, date and decision exactly as written. "
    "Answer with the summary only."
)


def _transcript(messages: Sequence[polymem.Message]) -> str:
    lines = []
    for m in messages:
        text = m.content + "".join(f" [calls {c.name}({c.arguments})]" for c in m.tool_calls)
        lines.append(f"{m.role} ({m.name}): {text}" if m.name else f"{m.role}: {text}")
    return "\n".join(lines)


async def _ask(client: SupportsChatGetResponse[Any], instructions: str, text: str) -> str:
    response = await client.get_response([Message("system", [instructions]), Message("user", [text])])
    return response.text.strip()


class ChatClientExtractor:
    """A polymem `Extractor` that asks an Agent Framework chat client what to remember.

    Pass it to `polymem.open(..., extractor=...)`; `PolymemContextProvider`
    (`remember="extract"`) and `mem.ingest(...)` then distil conversations with
    the model. Items without content or with an unknown category are skipped
    with a warning; an answer that is not a JSON array raises `polymem.PolymemError`.
    """

    def __init__(self, client: SupportsChatGetResponse[Any], *,
                 categories: Sequence[str] = ("fact", "preference", "event", "task"),
                 prompt: str = EXTRACT_PROMPT) -> None:
        self.client = client
        self.categories = tuple(categories)
        self.prompt = prompt
        self._loop = polymem.LoopThread("polymem-agent-framework-extractor")

    async def aextract(self, messages: Sequence[polymem.Message]) -> list[polymem.MemoryDraft]:
        """The async form of `extract` (what an `AsyncMemory` calls)."""
        if not messages:
            return []
        answer = await _ask(self.client, self.prompt.format(categories=", ".join(self.categories)),
                            _transcript(messages))
        try:  # the first JSON array in the answer: models wrap it in prose or a code fence
            items, _ = json.JSONDecoder().raw_decode(answer[answer.index("["):])
        except ValueError as exc:
            raise polymem.PolymemError(f"the extractor model did not answer with a JSON array: {answer[:200]!r}") from exc
        return [draft for item in items if (draft := self._draft(item)) is not None]

    def extract(self, messages: Sequence[polymem.Message]) -> list[polymem.MemoryDraft]:
        """Distil `messages` into memory drafts (polymem's `Extractor` protocol)."""
        return self._loop.run(lambda: self.aextract(messages))

    def _draft(self, item: Any) -> polymem.MemoryDraft | None:
        content = str(item.get("content") or "").strip() if isinstance(item, dict) else ""
        category = str(item.get("category") or "fact") if isinstance(item, dict) else ""
        if not content or category not in self.categories:
            log.warning("extractor: skipped %r (no content, or a category not in %s)", item, self.categories)
            return None
        importance = item.get("importance")
        return polymem.MemoryDraft(
            content=content,
            category=category,
            source=item["source"] if item.get("source") in ("user_input", "inference") else "inference",
            importance=importance if isinstance(importance, (int, float)) and 0 <= importance <= 1 else None,
            entities=tuple(str(e) for e in item.get("entities") or () if e),
        )


class ChatClientSummarizer:
    """A polymem `Summarizer` answered by an Agent Framework chat client.

    Pass it to `polymem.open(..., summarizer=...)` and give sessions
    `overflow="summarize"` (e.g. `PolymemHistoryProvider(..., max_tokens=2000,
    overflow="summarize")`). polymem checks that the summary keeps every number
    and unit of what it replaces and falls back to the raw text if not.
    """

    def __init__(self, client: SupportsChatGetResponse[Any], *, prompt: str = SUMMARY_PROMPT) -> None:
        self.client = client
        self.prompt = prompt
        self._loop = polymem.LoopThread("polymem-agent-framework-summarizer")

    async def asummarize(self, previous_summary: str | None, messages: Sequence[polymem.Message]) -> str:
        """The async form of `summarize`."""
        text = _transcript(messages)
        if previous_summary:
            text = f"Summary so far:\n{previous_summary}\n\nNew messages:\n{text}"
        summary = await _ask(self.client, self.prompt, text)
        if not summary:
            raise polymem.PolymemError("the summarizer model returned no text")
        return summary

    def summarize(self, previous_summary: str | None, messages: Sequence[polymem.Message]) -> str:
        """Fold `messages` into `previous_summary` (polymem's `Summarizer` protocol)."""
        return self._loop.run(lambda: self.asummarize(previous_summary, messages))


class _Chat(polymem.AsyncChatModel):
    """polymem's `ChatModel` on an Agent Framework chat client (async; run to completion from sync code)."""

    def __init__(self, client: SupportsChatGetResponse[Any]) -> None:
        super().__init__()
        self.client = client

    async def acomplete(self, system: str, prompt: str) -> str:
        return await _ask(self.client, system, prompt)


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
