"""`render_memories`: recalled memories as text for a prompt, the one renderer every adapter uses."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ._models import MemoryRecord, RecallHit
from ._time import utc_now

__all__ = ["age", "render_memories"]

_UNITS = (("year", 365 * 86400), ("month", 30 * 86400), ("week", 7 * 86400), ("day", 86400),
          ("hour", 3600), ("minute", 60))


def age(created_at: datetime, now: datetime) -> str:
    """A short human age: "just now", "5 minutes ago", "3 days ago"."""
    seconds = max(0.0, (now - created_at).total_seconds())
    for unit, size in _UNITS:
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def _fields(rank: int, item: RecallHit | MemoryRecord, now: datetime) -> dict[str, Any]:
    hit = item if isinstance(item, RecallHit) else None
    record = item.memory if isinstance(item, RecallHit) else item
    return {
        "rank": rank, "content": record.content, "memory_id": record.memory_id, "category": record.category,
        "source": record.source, "importance": record.importance, "user_id": record.user_id,
        "agent_id": record.agent_id, "created_at": record.created_at, "age": age(record.created_at, now),
        "score": hit.score if hit else None, "relevance": hit.relevance if hit else None,
        "similarity": hit.similarity if hit else None, "live_score": hit.live_score if hit else None,
    }


def render_memories(hits: Iterable[RecallHit | MemoryRecord], *, template: str = "- {content}",
                    header: str | None = None, empty: str = "", now: datetime | None = None) -> str:
    """Recalled memories as prompt text: `header` (if any), then one line per memory in the order given.

    `template` is a `str.format` template over the fields `rank` (from 1), `content`,
    `memory_id`, `category`, `source`, `importance`, `user_id`, `agent_id`,
    `created_at`, `age` ("3 days ago", against `now`, default the current time) and the
    scores of a `RecallHit`: `score`, `relevance`, `similarity`, `live_score` (None for
    a plain `MemoryRecord`). With no memories the result is `empty` (no header).

    >>> from polymem import open
    >>> mem = open("memory://", embedder=None)
    >>> _ = mem.save("Ann is allergic to peanuts.", user_id="ann")
    >>> print(render_memories(mem.recall("peanuts", user_id="ann"), header="Known about the user:"))
    Known about the user:
    - Ann is allergic to peanuts.
    >>> render_memories(mem.recall("peanuts", user_id="ann"), template="{rank}. [{category}, {age}] {content}")
    '1. [fact, just now] Ann is allergic to peanuts.'
    """
    at = now if now is not None else utc_now()
    lines = [template.format_map(_fields(rank, item, at)) for rank, item in enumerate(hits, start=1)]
    if not lines:
        return empty
    body = "\n".join(lines)
    return f"{header}\n{body}" if header else body
