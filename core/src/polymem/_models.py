"""The plain types every part of polymem exchanges: records, hits, messages, reports."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ._errors import InvalidInput
from ._time import from_iso, to_iso

MemoryStatus = Literal["active", "archived", "blocked"]
STATUSES: tuple[str, ...] = ("active", "archived", "blocked")


def new_id() -> str:
    """A fresh UUID4 as text: the id of a memory, message or session entry."""
    # As str(uuid.uuid4()), in half its time: no UUID object per saved memory.
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _jsonable(value: Any, what: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)  # NaN and infinities are not JSON: refused, never stored
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be JSON-serialisable: {exc}") from exc
    except RecursionError:
        raise InvalidInput(f"{what} is nested too deeply") from None
    return value


@dataclass(frozen=True)
class MemoryRecord:
    """One long-term memory, exactly as stored (one version of it).

    `importance` is the base score in [0, 1]; the live score is computed at
    read time from it, the category's half-life and the access count.
    """

    memory_id: str
    content: str
    category: str
    source: str
    importance: float
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    namespace: str
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None = None
    access_count: int = 0
    expire_at: datetime | None = None
    embedding_model: str | None = None
    entities: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    status: str = "active"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with ISO-8601 times (the wire and snapshot form)."""
        # Built by hand: dataclasses.asdict deep-copies, and this runs once per stored version.
        return {
            "memory_id": self.memory_id, "content": self.content, "category": self.category, "source": self.source,
            "importance": self.importance, "user_id": self.user_id, "agent_id": self.agent_id,
            "session_id": self.session_id, "namespace": self.namespace, "created_at": to_iso(self.created_at),
            "updated_at": to_iso(self.updated_at), "last_accessed_at": to_iso(self.last_accessed_at),
            "access_count": self.access_count, "expire_at": to_iso(self.expire_at),
            "embedding_model": self.embedding_model, "entities": list(self.entities),
            "metadata": dict(self.metadata), "version": self.version, "status": self.status,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryRecord:
        """Inverse of `to_dict`; rejects naive or malformed timestamps."""
        values = dict(data)
        for key in ("created_at", "updated_at", "last_accessed_at", "expire_at"):
            values[key] = from_iso(values.get(key), key)
        values["entities"] = tuple(values.get("entities") or ())
        values["metadata"] = dict(values.get("metadata") or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise InvalidInput(f"unknown memory record fields: {sorted(unknown)}")
        return cls(**values)

    def replace(self, **changes: Any) -> MemoryRecord:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class RecallHit:
    """A recalled memory with its final score and the parts the score came from.

    `relevance` fuses `similarity` (cosine to the query, None in lexical mode or when the
    memory was not a vector candidate) and `text_rank` (BM25 of the full-text match
    normalised to [0, 1], None when it did not match), calibrated by how much of the query
    the memory covers; thresholds read it. `score` orders the hits:
    `relevance · ((1 - live_weight) + live_weight · live_score)`, where relevance is first
    raised by a more relevant memory written close by (`ScoringPolicy.context_weight`), and
    the product lowered when the memory misses the time the query asks for
    (`ScoringPolicy.time_weight`). With `recall(..., explain=True)`, `explanation` holds every
    part of the score as the ranking computed it (its JSON schema:
    `polymem.operations.ExplanationOut`).
    """

    memory: MemoryRecord
    score: float
    relevance: float
    similarity: float | None
    text_rank: float | None
    live_score: float
    explanation: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON form: the record's fields plus the score parts (and the explanation, if asked for)."""
        data = self.memory.to_dict()
        data.update(
            score=self.score,
            relevance=self.relevance,
            similarity=self.similarity,
            text_rank=self.text_rank,
            live_score=self.live_score,
        )
        if self.explanation is not None:
            data["explanation"] = self.explanation
        return data


def _nothing_withheld() -> dict[str, Any]:
    return {"count": 0, "by_reason": {}, "memories": []}


class RecallResult(list[RecallHit]):
    """The recalled hits (a list, best first) plus `withheld`: what the service's read guard kept back and why."""

    withheld: dict[str, Any]

    def __init__(self, hits: Iterable[RecallHit] = (), withheld: dict[str, Any] | None = None) -> None:
        super().__init__(hits)
        self.withheld = withheld if withheld is not None else _nothing_withheld()


class NearestResult(list[tuple[MemoryRecord, float]]):
    """Nearest neighbours as (record, cosine) pairs, best first, plus what the read guard kept back."""

    withheld: dict[str, Any]

    def __init__(self, pairs: Iterable[tuple[MemoryRecord, float]] = (),
                 withheld: dict[str, Any] | None = None) -> None:
        super().__init__(pairs)
        self.withheld = withheld if withheld is not None else _nothing_withheld()


@dataclass(frozen=True)
class ToolCall:
    """A model's request to call a tool. `arguments` is the JSON text the model produced."""

    id: str
    name: str
    arguments: str = "{}"
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "metadata": dict(self.metadata)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        args = data.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=args, metadata=dict(data.get("metadata") or {}))


@dataclass(frozen=True)
class Message:
    """One working-memory message, framework-neutral and lossless.

    `role` is `system`, `user`, `assistant`, `tool` or any custom role.
    `tool_call_id` links a tool result to the call it answers. `parts` holds
    non-text content blocks (images, files, ...) as JSON objects; `metadata`
    holds everything else a framework attached, so adapters can restore it.
    """

    role: str
    content: str
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    parts: tuple[dict[str, Any], ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    message_id: str = field(default_factory=new_id)
    created_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "content": self.content,
            "name": self.name,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_call_id": self.tool_call_id,
            "parts": [dict(part) for part in self.parts],
            "metadata": dict(self.metadata),
            "message_id": self.message_id,
            "created_at": to_iso(self.created_at),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=str(data["role"]),
            content=str(data.get("content") or ""),
            name=data.get("name"),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            parts=tuple(dict(p) for p in data.get("parts") or ()),
            metadata=dict(data.get("metadata") or {}),
            message_id=str(data.get("message_id") or new_id()),
            created_at=from_iso(data.get("created_at"), "created_at"),
        )

    def replace(self, **changes: Any) -> Message:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class MemoryDraft:
    """What an extractor proposes to remember; saved through `Memory.save`.

    `valid_from`/`valid_to` (timezone-aware): when the fact began and stopped holding in the
    world, where the conversation says ("I switched to black on March 1st"); saved as the
    memory's validity (see `save`)."""

    content: str
    category: str = "fact"
    source: str = "user_input"
    importance: float | None = None
    entities: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True)
class SessionInfo:
    """A working-memory session's bookkeeping."""

    session_id: str
    user_id: str | None
    agent_id: str | None
    namespace: str
    summary: str | None
    created_at: datetime
    updated_at: datetime
    expire_at: datetime | None
    message_count: int
    window_count: int


@dataclass
class ConsolidationReport:
    """What one `consolidate()` run changed, by memory id."""

    expired: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    merged: dict[str, list[str]] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)
    sessions_expired: int = 0

    @property
    def changed(self) -> int:
        """How many memories this run changed."""
        return (
            len(self.expired)
            + len(self.archived)
            + sum(len(v) for v in self.merged.values())
            + len(self.superseded)
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ImportReport:
    """What an import did: counts, and why each skipped item was skipped."""

    imported: int = 0
    duplicates: int = 0
    reembedded: int = 0
    sessions: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Validate user metadata: a JSON object with string keys."""
    if metadata is None or metadata == {}:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise InvalidInput("metadata must be a dict with string keys")
    return dict(_jsonable(metadata, "metadata"))
