"""polymem's extraction, summary, rerank and query-rewriting protocols, answered by a LangChain chat model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, get_buffer_string
from langchain_core.utils.json import parse_json_markdown

import polymem
from polymem import MemoryDraft, Message

from ._convert import to_langchain_messages

EXTRACT_PROMPT = """\
You distil a conversation into long-term memories about the user.
Return only JSON: {"memories": [{"content": "...", "category": "fact|preference|event|task",
"importance": 0.0-1.0, "entities": ["..."], "source": "user_input|inference"}]}.
Each content is one short, self-contained statement in the third person. Keep every number and
unit exactly. Use "source": "inference" for what you concluded rather than what the user said.
Return {"memories": []} when nothing is worth remembering."""

SUMMARY_PROMPT = """\
Progressively summarize the lines of conversation provided, adding onto the previous summary and
returning a new summary. Keep every number and unit exactly as written. Return only the summary."""

_DRAFT_FIELDS = ("content", "category", "source", "importance", "entities", "metadata")


def _transcript(messages: Sequence[Message]) -> str:
    return get_buffer_string(to_langchain_messages(messages))


def _text(reply: Any) -> str:
    if isinstance(reply, BaseMessage):
        return reply.text
    return str(reply)


class ChatModelExtractor:
    """A polymem `Extractor` that asks a LangChain model which memories a conversation holds.

    The model answers in JSON (code fences allowed); the drafts it proposes
    are saved by the core, which applies its write filter and scoring.
    """

    def __init__(self, llm: BaseLanguageModel[Any], *, prompt: str = EXTRACT_PROMPT) -> None:
        self.llm = llm
        self.prompt = prompt

    def _request(self, messages: Sequence[Message]) -> list[BaseMessage]:
        return [SystemMessage(self.prompt), HumanMessage(_transcript(messages))]

    def extract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        """Drafts for the memories the model found in `messages`."""
        return parse_drafts(_text(self.llm.invoke(self._request(messages))))

    async def aextract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        """Async `extract`."""
        return parse_drafts(_text(await self.llm.ainvoke(self._request(messages))))


class ChatModelSummarizer:
    """A polymem `Summarizer` backed by a LangChain model.

    polymem checks the result and keeps the raw text when a number or unit
    of what the summary replaces went missing.
    """

    def __init__(self, llm: BaseLanguageModel[Any], *, prompt: str = SUMMARY_PROMPT) -> None:
        self.llm = llm
        self.prompt = prompt

    def _request(self, previous_summary: str | None, messages: Sequence[Message]) -> list[BaseMessage]:
        body = f"Current summary:\n{previous_summary or ''}\n\nNew lines of conversation:\n{_transcript(messages)}"
        return [SystemMessage(self.prompt), HumanMessage(body)]

    def summarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        """The new running summary."""
        return _text(self.llm.invoke(self._request(previous_summary, messages))).strip()

    async def asummarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        """Async `summarize`."""
        return _text(await self.llm.ainvoke(self._request(previous_summary, messages))).strip()


class _Chat:
    """polymem's `ChatModel` on a LangChain model: a system and a user message in, the reply's text out."""

    def __init__(self, llm: BaseLanguageModel[Any]) -> None:
        self.llm = llm

    def complete(self, system: str, prompt: str) -> str:
        return _text(self.llm.invoke([SystemMessage(system), HumanMessage(prompt)]))

    async def acomplete(self, system: str, prompt: str) -> str:
        return _text(await self.llm.ainvoke([SystemMessage(system), HumanMessage(prompt)]))


class ChatModelReranker(polymem.ChatReranker):
    """polymem's `Reranker` on a LangChain chat model, which rates each candidate 0–10
    (the prompt and the parsing are polymem's): `polymem.open(url, reranker=ChatModelReranker(llm))`."""

    def __init__(self, llm: BaseLanguageModel[Any], *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


class ChatModelQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on a LangChain chat model:
    `polymem.open(url, query_rewriter=ChatModelQueryRewriter(llm))`."""

    def __init__(self, llm: BaseLanguageModel[Any], *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


def parse_drafts(text: str) -> list[MemoryDraft]:
    """Parse a model's JSON answer into drafts; raises `ValueError` on anything but the documented shape."""
    try:
        data = parse_json_markdown(text)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ValueError(f"the extraction model did not answer in JSON: {text[:200]!r}") from exc
    items = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f'the extraction model must answer {{"memories": [...]}}, got {text[:200]!r}')
    drafts = []
    for item in items:
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict) or not str(item.get("content") or "").strip():
            continue
        fields = {k: item[k] for k in _DRAFT_FIELDS if item.get(k) is not None}
        fields["content"] = str(fields["content"]).strip()
        if "entities" in fields:
            fields["entities"] = tuple(str(e) for e in fields["entities"])
        if "importance" in fields:
            fields["importance"] = float(fields["importance"])
        drafts.append(MemoryDraft(**fields))
    return drafts
