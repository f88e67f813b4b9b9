"""polymem's `Extractor`, `Summarizer`, `Reranker` and `QueryRewriter`, answered by an AutoGen `ChatCompletionClient`."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from autogen_core.models import ChatCompletionClient, SystemMessage, UserMessage

import polymem

log = logging.getLogger("polymem_autogen")
T = TypeVar("T")

EXTRACT_PROMPT = """You maintain the long-term memory of an assistant.
Read the conversation and list what is worth remembering about the user across
conversations: stable facts, preferences, notable events, open tasks. Skip
greetings, small talk and anything only relevant to this turn. Write each memory
as one short self-contained sentence in the third person ("The user ...").
Answer with JSON only: a list of objects with the keys
"content" (string), "category" (one of: {categories}),
"source" ("user_input" if the user said it, "inference" if you concluded it),
"importance" (number from 0 to 1) and "entities" (list of names).
Answer [] when nothing is worth remembering."""

SUMMARY_PROMPT = """Summarise the conversation below into a running summary for an assistant.
Keep every number, amount, date and unit exactly as written, every name and every
decision or open question. Be concise; write plain prose, no preamble."""


def _transcript(messages: Sequence[polymem.Message]) -> str:
    lines = []
    for m in messages:
        who = f"{m.role} ({m.name})" if m.name else m.role
        text = m.content
        if m.tool_calls:
            text = (text + " " if text else "") + " ".join(f"[calls {c.name}({c.arguments})]" for c in m.tool_calls)
        lines.append(f"{who}: {text}")
    return "\n".join(lines)


def _json_payload(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    body = fenced.group(1) if fenced else text
    start = min((i for i in (body.find("["), body.find("{")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON found")
    return json.JSONDecoder().raw_decode(body[start:])[0]


def _json_mode(client: ChatCompletionClient) -> bool | None:
    return True if client.model_info.get("json_output") else None


class ChatCompletionExtractor:
    """A polymem `Extractor` that asks an AutoGen model client what to remember.

    Pass it to `polymem.open(..., extractor=...)`; `mem.ingest(...)` and
    `PolymemMemory.capture(...)` then distil conversations into long-term
    memories. The model answers with a JSON list; items that are not usable
    (no content, unknown category) are skipped with a warning, and an answer
    that is not JSON at all raises `polymem.PolymemError`.
    """

    def __init__(
        self,
        model_client: ChatCompletionClient,
        *,
        categories: Sequence[str] = ("fact", "preference", "event", "task"),
        prompt: str = EXTRACT_PROMPT,
    ) -> None:
        self.model_client = model_client
        self.categories = tuple(categories)
        self.prompt = prompt
        self._loop = polymem.LoopThread("polymem-autogen-extractor")

    async def aextract(self, messages: Sequence[polymem.Message]) -> list[polymem.MemoryDraft]:
        """The async form of `extract` (for callers already in an event loop)."""
        if not messages:
            return []
        result = await self.model_client.create(
            [
                SystemMessage(content=self.prompt.format(categories=", ".join(self.categories))),
                UserMessage(content=_transcript(messages), source="polymem"),
            ],
            json_output=_json_mode(self.model_client),
        )
        if not isinstance(result.content, str):
            raise polymem.PolymemError("the extractor model answered with function calls, not JSON")
        try:
            payload = _json_payload(result.content)
        except ValueError as exc:
            raise polymem.PolymemError(
                f"the extractor model did not answer with JSON: {result.content[:200]!r}"
            ) from exc
        if isinstance(payload, dict):
            payload = payload.get("memories", [payload])
        drafts = []
        for item in payload if isinstance(payload, list) else []:
            draft = self._draft(item)
            if draft is not None:
                drafts.append(draft)
        return drafts

    def _draft(self, item: Any) -> polymem.MemoryDraft | None:
        if isinstance(item, str):
            item = {"content": item}
        content = str(item.get("content", "")).strip() if isinstance(item, dict) else ""
        if not content:
            log.warning("extractor: skipped an item without content: %r", item)
            return None
        category = str(item.get("category") or "fact")
        if category not in self.categories:
            log.warning("extractor: skipped %r: category %r is not one of %s", content, category, self.categories)
            return None
        source = item.get("source") if item.get("source") in ("user_input", "inference") else "inference"
        importance = item.get("importance")
        if not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            importance = None
        entities = tuple(str(e) for e in item.get("entities") or () if e)
        return polymem.MemoryDraft(
            content=content, category=category, source=source, importance=importance, entities=entities
        )

    def extract(self, messages: Sequence[polymem.Message]) -> list[polymem.MemoryDraft]:
        """Distil `messages` into memory drafts (polymem's `Extractor` protocol)."""
        return self._loop.run(lambda: self.aextract(messages))


class ChatCompletionSummarizer:
    """A polymem `Summarizer` backed by an AutoGen model client.

    Pass it to `polymem.open(..., summarizer=...)` and open sessions with
    `overflow="summarize"`. polymem checks that the summary keeps every number
    and unit of what it replaces and falls back to the raw text if not.
    """

    def __init__(self, model_client: ChatCompletionClient, *, prompt: str = SUMMARY_PROMPT) -> None:
        self.model_client = model_client
        self.prompt = prompt
        self._loop = polymem.LoopThread("polymem-autogen-summarizer")

    async def asummarize(self, previous_summary: str | None, messages: Sequence[polymem.Message]) -> str:
        """The async form of `summarize`."""
        text = _transcript(messages)
        if previous_summary:
            text = f"Summary so far:\n{previous_summary}\n\nNew messages:\n{text}"
        result = await self.model_client.create(
            [SystemMessage(content=self.prompt), UserMessage(content=text, source="polymem")]
        )
        if not isinstance(result.content, str) or not result.content.strip():
            raise polymem.PolymemError("the summarizer model returned no text")
        return result.content.strip()

    def summarize(self, previous_summary: str | None, messages: Sequence[polymem.Message]) -> str:
        """Fold `messages` into `previous_summary` (polymem's `Summarizer` protocol)."""
        return self._loop.run(lambda: self.asummarize(previous_summary, messages))


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
            raise polymem.PolymemError("the model answered with function calls, not text")
        return result.content


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
