"""Defaults that need no model: a rule-based extractor and an extractive summarizer.

LLM-backed ones implement the same Protocols (`Extractor`, `Summarizer`); the
adapters ship ones built on each framework's chat model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

from ._dates import read_validity
from ._models import MemoryDraft, Message

_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_SELF = re.compile(r"^\s*(i|i'm|i am|i've|my|me|we|our|we're|mine|call me)\b|^\s*(我|我们|我的)", re.IGNORECASE)
_PREFERENCE = re.compile(
    r"\b(like|likes|love|loves|prefer|prefers|favou?rite|hate|hates|dislike|dislikes|enjoy|enjoys|can't stand|"
    r"allergic|vegetarian|vegan)\b|喜欢|讨厌|爱|偏好|最爱|不喜欢", re.IGNORECASE)
_TASK = re.compile(r"\b(remind me|todo|to-do|need to|have to|must|deadline|don't forget|schedule)\b|提醒|需要|必须",
                   re.IGNORECASE)
_EVENT = re.compile(
    r"\b(yesterday|today|tomorrow|last (week|month|year)|next (week|month|year)|on (monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|\d{4}-\d{2}-\d{2}|went|visited|met|attended|born)\b|昨天|今天|明天|去了",
    re.IGNORECASE)
_FACT = re.compile(r"\b(my name is|i am|i'm|i live|i work|i was born|call me|my \w+ is)\b|我叫|我是|我住|我在",
                   re.IGNORECASE)
_QUESTION = re.compile(r"\?\s*$|？\s*$|^\s*(what|who|where|when|why|how|can you|could you|would you|do you|is there|"
                       r"are there|please)\b", re.IGNORECASE)
_GREETING = re.compile(r"^\s*(hi|hello|hey|thanks|thank you|ok|okay|bye|good (morning|evening|night))\b[\s!.]*$",
                       re.IGNORECASE)


def classify(sentence: str) -> str | None:
    """The category of a self-statement, or None when it is not worth remembering."""
    if _QUESTION.search(sentence) or _GREETING.match(sentence):
        return None
    if _PREFERENCE.search(sentence):
        return "preference"
    if _TASK.search(sentence):
        return "task"
    if _EVENT.search(sentence):
        return "event"
    if _FACT.search(sentence) or _SELF.match(sentence):
        return "fact"
    return None


class RuleExtractor:
    """Keeps what users say about themselves: facts, preferences, tasks, events.

    Only user messages are read (what an assistant said is not evidence);
    questions and greetings are skipped; each kept sentence is stored as said.
    A sentence that dates itself ("I switched to black on March 1st", "since 2024-05-01",
    "yesterday", "last week", "in June", "until April") gives its memory `valid_from` (or
    `valid_to`), read relative to the message's `created_at` (else now), in English.
    """

    def extract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        drafts: list[MemoryDraft] = []
        seen: set[str] = set()
        for message in messages:
            if message.role != "user":
                continue
            said_at = message.created_at or datetime.now(timezone.utc)
            for match in _SENTENCE.finditer(message.content):
                sentence = match.group(0).strip()
                if len(sentence) < 3 or sentence.casefold() in seen:
                    continue
                category = classify(sentence)
                if category is None:
                    continue
                seen.add(sentence.casefold())
                valid_from, valid_to = read_validity(sentence, said_at)
                drafts.append(MemoryDraft(content=sentence, category=category, source="user_input",
                                          metadata={"extracted_from": message.message_id},
                                          valid_from=valid_from, valid_to=valid_to))
        return drafts


class ExtractiveSummarizer:
    """A summary with no model: the earlier summary plus, per replaced message, its
    sentences that carry facts (numbers, self-statements), else its first sentence."""

    def __init__(self, max_chars_per_message: int = 400) -> None:
        self.max_chars = max_chars_per_message

    def summarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        lines = [previous_summary] if previous_summary else []
        for message in messages:
            sentences = [s.group(0).strip() for s in _SENTENCE.finditer(message.content) if s.group(0).strip()]
            if not sentences:
                continue
            keep = [s for s in sentences if re.search(r"\d", s) or classify(s)] or sentences[:1]
            text = " ".join(keep)
            if len(text) > self.max_chars:
                text = text[: self.max_chars].rsplit(" ", 1)[0] + "…"
            lines.append(f"{message.role}: {text}")
        return "\n".join(lines)
