"""Extraction and summary by a chat model: the prompts, the parsing and the error rule, written once.

A framework adapter only turns its chat model into a `ChatModel` (`complete(system, prompt)
-> str`, and `acomplete` where the model is async), as for `ChatReranker`; every framework's
model then extracts and summarizes alike.

The error rule: a reply that holds no JSON list of memories (nor `{"memories": [...]}`)
raises `ModelAnswerError`, never "nothing extracted". Extraction runs before anything is
written, so the store is unchanged; and ending a session with `consolidate=True` saves what
was extracted and deletes the session in one step, so a bad reply leaves the session and
its messages in place to end again, where "nothing extracted" would delete them unread.
Within a readable reply, an unusable item (no content, a category not offered) is skipped
with a warning and a bad `importance` or date is dropped, never the memory.

>>> class Model:  # a chat model that finds one memory, dated
...     def complete(self, system: str, prompt: str) -> str:
...         return '[{"content": "Ann likes black", "category": "preference", "valid_from": "2026-03-01"}]'
>>> (draft,) = ChatExtractor(Model()).extract([Message("user", "I switched to black on March 1st")])
>>> draft.content, draft.valid_from.isoformat()
('Ann likes black', '2026-03-01T00:00:00+00:00')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from ._errors import ModelAnswerError
from ._models import MemoryDraft, Message
from ._rerank import ChatModel, _acomplete, _json_in

log = logging.getLogger("polymem")

CATEGORIES = ("fact", "preference", "event", "task")
SOURCES = ("user_input", "inference")

EXTRACT_SYSTEM = """You maintain the long-term memory of an assistant.
Read the conversation and list what is worth remembering about the user across
conversations: stable facts, preferences, notable events, open tasks. Skip greetings,
small talk and anything only relevant to this turn. Write each memory as one short,
self-contained sentence in the third person, keeping every number and unit exactly.
Answer with JSON only: a list of objects with the keys
"content" (string), "category" (one of: {categories}),
"source" ("user_input" if the user said it, "inference" if you concluded it),
"importance" (number from 0 to 1), "entities" (list of names),
and, when the conversation says when the memory began or stops being true,
"valid_from" / "valid_to" (ISO-8601 dates, YYYY-MM-DD, read relative to the time of the
message that says it: "on March 1st" said in 2026 is "2026-03-01", "yesterday" the day before).
Answer [] when nothing is worth remembering."""

SUMMARY_SYSTEM = """You maintain the running summary of a conversation for an assistant.
Merge the summary so far and the new messages into one concise summary in plain prose.
Keep every number, unit, amount, date, name and decision exactly as written; drop only
small talk. Answer with the summary only, no preamble."""


def transcript(messages: Sequence[Message]) -> str:
    """The messages as lines `[time] role (name): text [calls f(args)]` (time and name where known)."""
    lines = []
    for m in messages:
        who = f"{m.role} ({m.name})" if m.name else m.role
        text = m.content + "".join(f" [calls {c.name}({c.arguments})]" for c in m.tool_calls)
        when = f"[{_stamp(m.created_at)}] " if m.created_at is not None else ""
        lines.append(f"{when}{who}: {text.strip()}")
    return "\n".join(lines)


def extract_prompt(messages: Sequence[Message], now: datetime | None = None) -> str:
    """The user prompt asking for the memories in `messages`: when it was said, then the transcript.

    "Now" is the last message's time, else `now`, else the current time (UTC)."""
    said = next((m.created_at for m in reversed(messages) if m.created_at is not None), None)
    said = said or now or datetime.now(timezone.utc)
    return (f"The conversation took place up to {_stamp(said)} (UTC); read dates relative to it.\n\n"
            f"Conversation:\n{transcript(messages)}")


def summary_prompt(previous_summary: str | None, messages: Sequence[Message]) -> str:
    """The user prompt asking to fold `messages` into `previous_summary`."""
    new = f"New messages:\n{transcript(messages)}"
    return f"Summary so far:\n{previous_summary}\n\n{new}" if previous_summary else new


def parse_drafts(reply: str, *, categories: Sequence[str] = CATEGORIES, source: str | None = None) -> list[MemoryDraft]:
    """The memory drafts in a model's reply: a JSON list of memories or `{"memories": [...]}`,
    code fences and words around it allowed; an item may be a bare string (a fact).

    `source` given: every draft's source; else the item's `user_input`/`inference`, anything
    else read as `inference`. Raises `ModelAnswerError` when the reply holds no such JSON."""
    try:
        payload = _json_in(reply)
    except ValueError:
        raise ModelAnswerError(f"the extraction model did not answer with JSON: {reply[:200]!r}") from None
    if isinstance(payload, dict):
        payload = payload.get("memories", [payload] if "content" in payload else None)
    if not isinstance(payload, list):
        raise ModelAnswerError(f'the extraction model must answer a JSON list of memories (or {{"memories": [...]}}), '
                               f"got {reply[:200]!r}")
    return [draft for item in payload if (draft := _draft(item, tuple(categories), source)) is not None]


def _draft(item: Any, categories: tuple[str, ...], source: str | None) -> MemoryDraft | None:
    if isinstance(item, str):
        item = {"content": item}
    content = item.get("content") if isinstance(item, dict) else None
    if not isinstance(content, str) or not content.strip():
        log.warning("extractor: skipped an item without content: %.200r", item)
        return None
    category = item.get("category") or categories[0]
    if category not in categories:
        log.warning("extractor: skipped %.200r: category %r is not one of %s", content, category, categories)
        return None
    importance = item.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
        importance = None
    entities = item.get("entities")
    return MemoryDraft(
        content=" ".join(content.split()), category=str(category),
        source=source or (item["source"] if item.get("source") in SOURCES else "inference"),
        importance=None if importance is None else float(importance),
        entities=tuple(str(e) for e in entities if e) if isinstance(entities, list) else (),
        valid_from=_when(item.get("valid_from"), content), valid_to=_when(item.get("valid_to"), content))


def _when(value: Any, content: str) -> datetime | None:
    """An ISO-8601 date or time from the model (UTC unless it says otherwise), else None."""
    if value is None or value == "":
        return None
    try:
        when = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        log.warning("extractor: ignored the date %.50r of %.200r (not ISO-8601)", value, content)
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M") if when.tzinfo else when.strftime("%Y-%m-%d %H:%M")


class ChatExtractor:
    """An `Extractor` that asks a chat model which memories a conversation holds (prompt: `SYSTEM`).

    Give it to `polymem.open(..., extractor=...)`; each adapter builds one on its framework's
    model (`polymem_langchain.ChatModelExtractor(llm)`, …). The model answers JSON, memories
    with a category among `categories` and, where the conversation dates them, `valid_from`/
    `valid_to`; a reply with no such JSON raises `ModelAnswerError` (see the module's error rule).
    `source`, where given, tags every memory (else the model's `user_input`/`inference`)."""

    SYSTEM = EXTRACT_SYSTEM

    def __init__(self, chat: ChatModel, *, categories: Sequence[str] = CATEGORIES, system: str = EXTRACT_SYSTEM,
                 source: str | None = None) -> None:
        self.chat = chat
        self.categories = tuple(categories)
        self.system = system
        self.source = source

    def _system(self) -> str:
        return self.system.replace("{categories}", ", ".join(self.categories))

    def extract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        """The drafts the model found in `messages` (polymem's `Extractor` protocol)."""
        if not messages:
            return []
        reply = self.chat.complete(self._system(), extract_prompt(messages))
        return parse_drafts(reply, categories=self.categories, source=self.source)

    async def aextract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        """Async `extract` (what an `AsyncMemory` awaits)."""
        if not messages:
            return []
        reply = await _acomplete(self.chat, self._system(), extract_prompt(messages))
        return parse_drafts(reply, categories=self.categories, source=self.source)


class ChatSummarizer:
    """A `Summarizer` that asks a chat model to fold a window's overflow into the running summary.

    Give it to `polymem.open(..., summarizer=...)` and open sessions with `overflow="summarize"`.
    The reply's text is the summary; polymem checks it keeps every number and unit of what it
    replaces, and keeps the raw text when not (an empty reply too)."""

    SYSTEM = SUMMARY_SYSTEM

    def __init__(self, chat: ChatModel, *, system: str = SUMMARY_SYSTEM) -> None:
        self.chat = chat
        self.system = system

    def summarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        """The new running summary (polymem's `Summarizer` protocol)."""
        return self.chat.complete(self.system, summary_prompt(previous_summary, messages)).strip()

    async def asummarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        """Async `summarize`."""
        return (await _acomplete(self.chat, self.system, summary_prompt(previous_summary, messages))).strip()
