"""The memory logic, written once as plans.

Each public operation is a generator that yields `Op`s (a backend call, an
embedding, or a plug-in call) and returns the result. `Memory` drives a plan
synchronously, `AsyncMemory` awaits each op (in a worker thread, or natively
for an async backend): the same behaviour by construction (see httpx's
`Auth.auth_flow`).
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from . import _plan
from ._backend import Candidate, NewRecord, SearchRequest, bm25_idf, bm25_ranks, bm25_scores, selective_terms
from ._consolidation import CONSOLIDATION_PAGE, CONSOLIDATION_STEPS, ScopeIndex, Slots
from ._dates import asks_when, read_date, read_period
from ._embedders import as_matrix
from ._errors import (
    ContentRejectedError,
    ContentTooLargeError,
    EmptyContentError,
    InvalidFilterError,
    InvalidInput,
    NotFoundError,
    ReadOnlyStoreError,
    SessionOwnerError,
    SourceBlockedError,
    VersionConflictError,
)
from ._guard import (
    FLAG_KEYS,
    Classifier,
    ReadGuard,
    Verdict,
    WritePolicy,
    clean_metadata,
    conversation_text,
    flag_metadata,
    withheld_summary,
)
from ._models import (
    STATUSES,
    ConsolidationReport,
    MemoryDraft,
    MemoryRecord,
    Message,
    NearestResult,
    RecallHit,
    RecallResult,
    SessionInfo,
    ToolCall,
    check_metadata,
    new_id,
)
from ._protocols import ContradictionJudge, Embedder, Extractor, QueryRewriter, Reranker, Summarizer, TokenCounter
from ._scoring import ScoringPolicy
from ._storage import (
    ActivePage,
    ActiveUsers,
    Batch,
    BlockedSources,
    BlockSource,
    CountForeignVectors,
    DeleteRecord,
    DocumentFrequencies,
    GetByKeys,
    GetRecords,
    Insert,
    KeepVersionVectors,
    ListRecords,
    PendingReembed,
    PurgeRecord,
    ReadVectors,
    RecordHistory,
    RecordsAsOf,
    Reinforce,
    Search,
    SessionAppend,
    SessionDelete,
    SessionEvict,
    SessionForget,
    SessionLookup,
    SessionMessages,
    SessionSetSummary,
    SessionsExpired,
    SessionTouch,
    SetVectors,
    StorageOp,
    Update,
    WrittenSince,
)
from ._text import (
    DEFAULT_LANGUAGE,
    content_hash,
    held_terms,
    is_broad,
    named_terms,
    numbers_with_units,
    query_terms,
    terms,
    word_frequencies,
)
from ._time import Clock, from_iso, require_aware

log = logging.getLogger("polymem")


@dataclass(frozen=True)
class Op:
    """A step of a plan that is not storage: `target` is "embed" or "call"."""

    target: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    func: Callable[..., Any] | None = None


Step = Op | StorageOp | Batch
"""A step of a plan: an `Op`, or a typed storage operation, or a batch of them (one transaction)."""

Plan = _plan.Plan[Step, Any]


_MISSING = object()
_DISTINCT_FIELDS = ("category", "source", "user_id", "agent_id", "session_id", "status", "importance", "entities",
                    "embedding_model", "metadata")


def _field_value(record: MemoryRecord, path: tuple[str, ...]) -> Any:
    """A record field or metadata path as a JSON value (`_MISSING` when absent)."""
    value: Any = getattr(record, path[0])
    if isinstance(value, tuple):
        value = list(value)
    for key in path[1:]:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return _MISSING if value is None else value


def _call(func: Callable[..., Any], *args: Any) -> Op:
    return Op("call", getattr(func, "__qualname__", "call"), args, func=func)


MAX_TOP_K = 1000
CANDIDATES = 100
RERANK_TOP = 20
"""The candidates a reranker sees by default: its cost per recall is bounded by `rerank_top`."""
CONTEXT_POOL = 30
"""The hits a recall weighs in context (see `Engine._in_context`) at least, whatever its top_k."""
MAX_REWRITES = 5
"""The most query variants a recall searches (each costs one search)."""
DEFAULT_REWRITES = 2
"""The variants a store with a query rewriter searches unless a recall says otherwise."""
# A recall `as_of` searches past up to this many memories written since (see `_past_candidates`).
MAX_SEARCHED_PAST = 5000
# A past list (`_past_newest`) reads every memory as old as the last one it needs, up to this many
# (memories imported in one batch share their time); more, and it reads the whole scope.
MAX_TIED = 20_000
LAZY_EMBED_BATCH = 64
"""Memories without a vector a recall embeds at most (its latency stays bounded: ~0.2 s on torch)."""
DEFAULT_MAX_CONTENT_CHARS = 4_000_000
"""The largest memory, message or query a store takes by default (about 4 MB of text); above it,
`ContentTooLargeError`. `open(max_content_chars=…)` changes it; the HTTP service also limits the
size of a request body (`polymem serve --max-body-bytes`)."""
EMBED_HEAD_CHARS = 8000
"""What of a text is embedded: its first 8,000 characters (more than all-MiniLM-L6-v2's window of
256 word pieces, within an HTTP model's); the full-text index holds all of it. Measured on long
memories by bench/bench_long_memories.py: one vector of the head finds a fact at the start as
well as a vector per chunk does, and a mean of chunk vectors finds less wherever the fact is."""


def embed_op(texts: Sequence[str]) -> Op:
    """The step embedding `texts` (each cut to its first `EMBED_HEAD_CHARS` characters)."""
    return Op("embed", "embed", ([t[:EMBED_HEAD_CHARS] for t in texts],))
_CHANGE_MARKERS = re.compile(
    r"\b(now|switched|switch|changed|change|no longer|not anymore|anymore|any more|instead|actually|moved|"
    r"these days|nowadays|started|stopped)\b|现在|改成|改为|换成|不再",
    re.IGNORECASE,
)
_SLOT = re.compile(r"\b(?:my|the user's|user's)\s+((?:favou?rite\s+)?[\w ]{2,30}?)\s+(?:is|are)\s+(?:now\s+)?(.+)",
                   re.IGNORECASE)


class RuleContradictionJudge:
    """Default contradiction rule (no LLM): a newer statement in the same scope that
    is related to the older one and says it changed ("now", "switched", "no longer"…),
    or that gives another value to the same slot ("my favourite colour is …")."""

    def __init__(self, min_similarity: float = 0.55, marker_similarity: float = 0.3) -> None:
        self.min_similarity = min_similarity
        self.marker_similarity = marker_similarity

    def supersedes(self, older: MemoryRecord, newer: MemoryRecord, similarity: float) -> bool:
        old_slot, new_slot = _SLOT.search(older.content), _SLOT.search(newer.content)
        if old_slot and new_slot and old_slot.group(1).casefold() == new_slot.group(1).casefold():
            return old_slot.group(2).strip(" .").casefold() != new_slot.group(2).strip(" .").casefold()
        if _CHANGE_MARKERS.search(newer.content):
            return similarity >= self.marker_similarity
        return False

    def slot(self, record: MemoryRecord) -> str | None:
        """The slot a statement fills ("favourite colour"), if any."""
        found = _SLOT.search(record.content)
        return found.group(1).casefold() if found else None

    def similarity_floor(self, newer: MemoryRecord) -> float | None:
        return self.marker_similarity if _CHANGE_MARKERS.search(newer.content) else None


@dataclass
class SessionSpec:
    """The settings of one working-memory session handle."""

    session_id: str
    user_id: str | None
    agent_id: str | None
    max_tokens: int | None
    ttl: timedelta | None
    overflow: str
    keep_last: int


class Engine:
    """Configuration plus the plans of every operation."""

    def __init__(
        self,
        *,
        namespace: str,
        embedder: Embedder | None,
        clock: Clock,
        scoring: ScoringPolicy,
        extractor: Extractor,
        summarizer: Summarizer | None,
        token_counter: TokenCounter,
        judge: ContradictionJudge,
        max_content_chars: int,
        classifier: Classifier | None = None,
        write_policy: WritePolicy | None = None,
        reranker: Reranker | None = None,
        query_rewriter: QueryRewriter | None = None,
    ) -> None:
        if not namespace or not isinstance(namespace, str):
            raise InvalidInput("namespace must be a non-empty string")
        if isinstance(max_content_chars, bool) or not isinstance(max_content_chars, int) or max_content_chars < 1:
            raise InvalidInput(f"max_content_chars must be a positive integer, got {max_content_chars!r}")
        self.namespace = namespace
        self.embedder = embedder
        self.clock = clock
        self.scoring = scoring
        self.extractor = extractor
        self.summarizer = summarizer
        self.token_counter = token_counter
        self.judge = judge
        self.max_content_chars = max_content_chars
        self.language = DEFAULT_LANGUAGE  # of the full text: the transport sets its record store's
        self._told_foreign = False
        self.classifier = classifier
        # kept with each memory the write filter screened (`RuleClassifier.fingerprint`; None: a
        # classifier without one, whose verdicts are not kept)
        self.screened_by: str | None = getattr(classifier, "fingerprint", None)
        self.write_policy = write_policy or WritePolicy()
        self.guard = ReadGuard(classifier)
        if reranker is not None and not callable(getattr(reranker, "rerank", None)):
            raise InvalidInput(f"reranker must be a polymem.Reranker (a rerank(query, texts) method), got {reranker!r}")
        if query_rewriter is not None and not callable(getattr(query_rewriter, "rewrite", None)):
            raise InvalidInput("query_rewriter must be a polymem.QueryRewriter (a rewrite(query, count) method), "
                               f"got {query_rewriter!r}")
        self.reranker = reranker
        self.query_rewriter = query_rewriter

    # -- validation ---------------------------------------------------------------------------
    def _content(self, content: Any, what: str = "content") -> str:
        if not isinstance(content, str):
            raise InvalidInput(f"{what} must be a string, got {type(content).__name__}")
        if not content.strip():
            raise EmptyContentError(f"{what} is empty")
        if "\x00" in content:  # PostgreSQL text cannot hold it; refuse it everywhere alike
            raise InvalidInput(f"{what} contains a NUL character")
        _encodable(content, what)
        if len(content) > self.max_content_chars:
            raise ContentTooLargeError(
                f"{what} has {len(content)} characters; the limit is {self.max_content_chars} "
                "(split it, or open the store with a larger max_content_chars)")
        return content

    @staticmethod
    def _importance(value: Any) -> float:
        # NaN fails the range check too (every comparison with NaN is false)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            raise InvalidInput(f"importance must be a number in [0, 1], got {value!r}")
        return float(value)

    @staticmethod
    def _label(value: Any, what: str, optional: bool = False) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{what} must be a non-empty string, got {value!r}")
        if "\x00" in value:
            raise InvalidInput(f"{what} contains a NUL character")
        _encodable(value, what)
        return value

    def _scope(self, user_id: Any, agent_id: Any, category: Any) -> None:
        """A read's scope: each part None or a label (`recall(user_id=123)` is a mistake, not 'nobody')."""
        self._label(user_id, "user_id", optional=True)
        self._label(agent_id, "agent_id", optional=True)
        self._label(category, "category", optional=True)

    # -- long-term memory ---------------------------------------------------------------------
    def _draft_to_new(self, draft: MemoryDraft, *, user_id: str | None, agent_id: str | None,
                      session_id: str | None, expire_at: datetime | None, idempotency_key: str | None,
                      now: datetime) -> NewRecord:
        content = self._content(draft.content)
        self._label(user_id, "user_id", optional=True)
        self._label(agent_id, "agent_id", optional=True)
        self._label(session_id, "session_id", optional=True)
        self._label(draft.category, "category")
        self._label(draft.source, "source")
        importance = self.scoring.base_score(draft.source) if draft.importance is None else self._importance(draft.importance)
        entities = tuple(draft.entities or ())
        if not all(isinstance(e, str) for e in entities):
            raise InvalidInput("entities must be strings")
        if expire_at is not None:
            expire_at = require_aware(expire_at, "expire_at")
        if idempotency_key is not None:
            self._label(idempotency_key, "idempotency_key")
        record = MemoryRecord(
            memory_id=new_id(), content=content, category=draft.category, source=draft.source,
            importance=importance, user_id=user_id, agent_id=agent_id, session_id=session_id,
            namespace=self.namespace, created_at=now, updated_at=now, expire_at=expire_at,
            embedding_model=self.embedder.model_id if self.embedder else None, entities=entities,
            metadata=clean_metadata(check_metadata(_with_validity(draft.metadata, draft.valid_from, draft.valid_to))),
        )
        return NewRecord(record, None, content_hash(content), idempotency_key, tuple(terms(content, language=self.language)))

    def save(self, content: str, *, user_id: str | None, agent_id: str | None = None, session_id: str | None = None,
             category: str = "fact", source: str = "user_input", importance: float | None = None,
             entities: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
             expire_at: datetime | None = None, idempotency_key: str | None = None,
             vector: Sequence[float] | None = None, valid_from: datetime | None = None,
             valid_to: datetime | None = None) -> Plan:
        draft = MemoryDraft(content=content, category=category, source=source, importance=importance,
                            entities=_strings(entities, "entities"), metadata=metadata if metadata is not None else {},
                            valid_from=valid_from, valid_to=valid_to)
        records = yield from self._save_drafts([draft], user_id=user_id, agent_id=agent_id, session_id=session_id,
                                               expire_at=expire_at, idempotency_keys=[idempotency_key],
                                               vectors=None if vector is None else [vector])
        return records[0]

    def save_many(self, drafts: Sequence[MemoryDraft], *, user_id: str | None, agent_id: str | None = None,
                  session_id: str | None = None, vectors: Sequence[Sequence[float]] | None = None,
                  idempotency_keys: Sequence[str | None] | None = None, valid_from: datetime | None = None,
                  valid_to: datetime | None = None) -> Plan:
        drafts = _sequence(drafts, "drafts")
        if not all(isinstance(d, MemoryDraft) for d in drafts):
            raise InvalidInput("drafts must be polymem MemoryDraft values")
        if valid_from is not None or valid_to is not None:  # the batch's validity, over each draft's own
            drafts = [replace(d, valid_from=valid_from or d.valid_from, valid_to=valid_to or d.valid_to)
                      for d in drafts]
        keys = _sequence(idempotency_keys, "idempotency_keys") if idempotency_keys is not None else [None] * len(drafts)
        if vectors is not None and (not hasattr(vectors, "__len__") or len(vectors) != len(drafts)):
            raise InvalidInput("give one vector per memory")
        if len(keys) != len(drafts):
            raise InvalidInput("give one idempotency key (or None) per memory")
        return (yield from self._save_drafts(list(drafts), user_id=user_id, agent_id=agent_id, session_id=session_id,
                                             expire_at=None, idempotency_keys=keys, vectors=vectors))

    def _save_drafts(self, drafts: builtins.list[MemoryDraft], *, user_id: str | None, agent_id: str | None,
                     session_id: str | None, expire_at: datetime | None, idempotency_keys: Sequence[str | None],
                     vectors: Sequence[Sequence[float]] | None) -> Plan:
        insert = yield from self._insert_of(drafts, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                            expire_at=expire_at, idempotency_keys=idempotency_keys, vectors=vectors)
        if insert is None:
            return []
        results = yield insert
        return [record for record, _ in results]

    def _insert_of(self, drafts: builtins.list[MemoryDraft], *, user_id: str | None, agent_id: str | None,
                   session_id: str | None, expire_at: datetime | None, idempotency_keys: Sequence[str | None],
                   vectors: Sequence[Sequence[float]] | None, context: Verdict | None = None) -> Plan:
        """The `Insert` that saves these drafts (embedded, validated, screened), or None for no drafts.

        `context` (extraction): the verdict on the whole conversation the drafts come from; a
        refused or blocked draft is then left out instead of failing the batch."""
        if not drafts:
            return None
        now = self.clock()
        items = [self._draft_to_new(d, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                    expire_at=expire_at, idempotency_key=k, now=now)
                 for d, k in zip(drafts, idempotency_keys)]
        if vectors is not None and len(vectors) != len(items):
            raise InvalidInput("give one vector per memory")
        foreign: set[str] = set()
        for key in dict.fromkeys(i.idempotency_key for i in items if i.idempotency_key is not None):
            holder = yield GetByKeys(self.namespace, [key])
            if holder and holder[0].user_id != user_id:
                foreign.add(key)
        if foreign:  # another user's key is unused for this user: saved without it, that memory untouched
            items = [dataclasses.replace(i, idempotency_key=None) if i.idempotency_key in foreign else i
                     for i in items]
        screened = yield from self._screen(items, extracted=context is not None, context=context)
        kept = [n for n, _ in screened]
        items = [item for _, item in screened]
        if not items:
            return None
        if vectors is not None:
            vectors = [vectors[n] for n in kept]
            if self.embedder is None:
                raise InvalidInput("vectors were given but the store has no embedder (lexical-only mode)")
            matrix = as_matrix(vectors, self.embedder.dimension)
        elif self.embedder is not None:
            raw = yield embed_op([i.record.content for i in items])
            matrix = as_matrix(raw, self.embedder.dimension)
        else:
            matrix = None
        if matrix is not None:
            items = [dataclasses.replace(i, vector=matrix[n]) for n, i in enumerate(items)]
        return Insert(items, now)

    # -- the write filter and the read guard ---------------------------------------------------
    def _screen(self, items: builtins.list[NewRecord], *, extracted: bool = False,
                context: Verdict | None = None) -> Plan:
        """The write filter over new records: (index, record as stored) for each one kept.

        A blocked source's write raises SourceBlockedError; a flagged one becomes what the policy
        for its source says (ContentRejectedError for "refuse"); extracted memories (`extracted`)
        are left out instead, and also take the verdict on their whole conversation (`context`)."""
        blocked = yield from self._blocked()
        kept: builtins.list[tuple[int, NewRecord]] = []
        for n, item in enumerate(items):
            record = item.record
            try:
                verdict = self._check_write(record.content, record.source, blocked)
            except (SourceBlockedError, ContentRejectedError):
                if extracted:
                    continue
                raise
            if verdict is not None and self.screened_by is not None:
                item = dataclasses.replace(item, screened=self.screened_by)
            if (verdict is None or not verdict.flagged) and context is not None and context.flagged:
                verdict = context
                if self.write_policy.action(record.source) == "refuse":
                    continue
            if verdict is not None and verdict.flagged:
                action = self.write_policy.action(record.source)
                record = record.replace(metadata=flag_metadata(record.metadata, verdict, action),
                                        status="blocked" if action == "quarantine" else record.status)
                item = dataclasses.replace(item, record=record)
            kept.append((n, item))
        return kept

    def _check_write(self, content: str, source: str, blocked: Any) -> Verdict | None:
        """The filter's verdict on one write (None: no classifier); raises if it is refused."""
        if source in blocked:
            raise SourceBlockedError(f"source {source!r} is quarantined in namespace {self.namespace!r}; "
                                     "its writes are refused")
        if self.classifier is None:
            return None
        verdict = self.classifier.classify(content, source=source)
        if verdict.flagged and self.write_policy.action(source) == "refuse":
            raise ContentRejectedError(
                f"the write filter flagged this content as an instruction to the agent ({', '.join(verdict.reasons)}); "
                f"the policy for source {source!r} refuses it")
        return verdict

    def _screen_update(self, memory_id: str, changes: dict[str, Any]) -> Plan:
        """The write filter on an update: new content is screened as its memory's source wrote it;
        the filter's own metadata keys stay as stored (only `release` clears them)."""
        found = yield GetRecords(self.namespace, [memory_id])
        if not found:
            raise NotFoundError(f"no memory {memory_id!r}")
        current: MemoryRecord = found[0]
        if "metadata" in changes:
            changes["metadata"] = clean_metadata(changes["metadata"], keep_from=current.metadata)
        if "content" in changes:
            verdict = self._check_write(changes["content"], current.source, (yield from self._blocked()))
            if verdict is not None and verdict.flagged:
                action = self.write_policy.action(current.source)
                changes["metadata"] = flag_metadata(changes.get("metadata", current.metadata), verdict, action)
                if action == "quarantine":
                    changes["status"] = "blocked"

    def _blocked(self) -> Plan:
        return (yield BlockedSources(self.namespace))

    def _visible(self, records: Sequence[MemoryRecord], include_quarantined: Any, *, classify: bool = True) -> Plan:
        """`records` less what the read guard withholds (all of them with `include_quarantined`)."""
        if include_quarantined is not False and include_quarantined is not True:
            raise InvalidInput(f"include_quarantined must be True or False, got {include_quarantined!r}")
        if include_quarantined or not records:
            return builtins.list(records)
        blocked = yield from self._blocked()
        return [r for r in records if not self.guard.reasons(r, blocked, classify=classify)]

    def block_source(self, source: str, *, reason: str | None = None) -> Plan:
        self._label(source, "source")
        if reason is not None:
            self._label(reason, "reason")
        changed = yield BlockSource(self.namespace, source, reason, None, self.clock(), True)
        hidden = yield ListRecords(self.namespace, None, None, None, {"source": source}, None, 10_000, 0)
        return {"source": source, "blocked": True, "memories_hidden": len(hidden), "was_blocked": not changed}

    def unblock_source(self, source: str, *, reason: str | None = None) -> Plan:
        self._label(source, "source")
        was = yield BlockSource(self.namespace, source, reason, None, self.clock(), False)
        return {"source": source, "blocked": False, "was_blocked": was}

    def blocked_sources(self) -> Plan:
        return builtins.list((yield from self._blocked()).values())

    def release(self, memory_id: str) -> Plan:
        """A reviewed memory: its flags dropped, trusted, and active again."""
        current = yield from self.get(memory_id, include_quarantined=True)
        if current is None:
            raise NotFoundError(f"no memory {memory_id!r}")
        metadata = {k: v for k, v in current.metadata.items() if k not in FLAG_KEYS}
        metadata["polymem_trust"] = "reviewed"
        return (yield Update(self.namespace, memory_id, {"metadata": metadata, "status": "active"}, None, self.clock()))

    # -- long-term memory (reads) ---------------------------------------------------------------
    def get(self, memory_id: str, as_of: datetime | None = None, include_quarantined: bool = False,
            valid_at: datetime | None = None) -> Plan:
        self._label(memory_id, "memory_id")
        if as_of is not None or valid_at is not None:
            known_at = self.clock() if as_of is None else require_aware(as_of, "as_of")
            past = yield RecordsAsOf(self.namespace, known_at, None, [memory_id], None)
            if valid_at is not None:
                past = yield from self._valid_at(past, require_aware(valid_at, "valid_at"), known_at)
            found = [record for record, _ in past]
        else:
            found = yield GetRecords(self.namespace, [memory_id])
        found = yield from self._visible(found, include_quarantined)
        return found[0] if found else None

    def _as_of(self, as_of: datetime, user_id: str | None, agent_id: str | None, category: str | None,
               filter: dict[str, Any] | None, status: str | None,
               model_id: str | None = None, valid_at: datetime | None = None, changed_only: bool = False,
               memory_ids: Sequence[str] | None = None) -> Plan:
        """The memories in scope as they stood at `as_of` (with their vectors of `model_id`, where
        stored), newest first; with `valid_at`, each in its version that held in the world then;
        with `changed_only`, only those written or deleted since `as_of`; with `memory_ids`, only these.
        The filter applies to those versions, by the same SQL as today's reads: evaluated in an
        in-memory SQLite table holding them."""
        rows = yield RecordsAsOf(self.namespace, as_of, user_id, memory_ids, model_id, changed_only)
        if valid_at is not None:
            rows = yield from self._valid_at(rows, valid_at, as_of, model_id)
        kept = [(r, v) for r, v in rows
                if (agent_id is None or r.agent_id == agent_id) and (category is None or r.category == category)
                and (status is None or r.status == status)
                and (status != "active" or r.expire_at is None or r.expire_at > as_of)]
        if filter:
            from ._sqlite import matching

            passing = matching([r for r, _ in kept], filter)
            kept = [(r, v) for r, v in kept if r.memory_id in passing]
        kept.sort(key=lambda rv: rv[0].created_at, reverse=True)
        return kept

    def _valid_at(self, rows: builtins.list[tuple[MemoryRecord, Any]], at: datetime, known_at: datetime,
                  model_id: str | None = None) -> Plan:
        """Each memory in the version that held in the world at `at` (as known at `known_at`):
        the last one whose validity began by then, left out if that validity ended by then.
        Only the memories whose present version began to hold after `at` have their history read
        (all at once), a past version with the vector of `model_id` it kept."""
        began_later = [record.memory_id for record, _ in rows if valid_from(record) > at]
        histories = (yield RecordHistory(self.namespace, began_later, model_id)) if began_later else {}
        out = []
        for record, vector in rows:
            if valid_from(record) > at:
                earlier = [(v, kept) for v, kept in histories.get(record.memory_id, [])
                           if v.updated_at <= known_at and valid_from(v) <= at]
                if not earlier:
                    continue
                record, vector = earlier[-1]  # with the vector it kept, if any (else embedded by the caller)
            ends = valid_to(record)
            if ends is None or ends > at:
                out.append((record, vector))
        return out

    def list(self, *, user_id: str | None = None, agent_id: str | None = None, category: str | None = None,
             filter: dict[str, Any] | None = None, status: str | None = "active", limit: int = 100,
             offset: int = 0, as_of: datetime | None = None, valid_at: datetime | None = None,
             include_quarantined: bool = False) -> Plan:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000 or \
                isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < 2**63:
            raise InvalidInput("limit must be in [1, 10000] and offset in [0, 2**63)")
        if filter is not None and not isinstance(filter, dict):
            raise InvalidFilterError(f"filter must be a dict, got {type(filter).__name__}")
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)} or None, got {status!r}")
        self._scope(user_id, agent_id, category)
        if as_of is not None or valid_at is not None:
            from ._filters import compile_filter

            compile_filter(filter)  # validate before any work
            known_at = self.clock() if as_of is None else require_aware(as_of, "as_of")
            valid_at = None if valid_at is None else require_aware(valid_at, "valid_at")
            newest = yield from self._past_newest(known_at, valid_at, user_id, agent_id, category, filter, status,
                                                  offset + limit, include_quarantined)
            if newest is None:
                kept = yield from self._as_of(known_at, user_id, agent_id, category, filter, status, valid_at=valid_at)
                newest = yield from self._visible([r for r, _ in kept], include_quarantined, classify=False)
            return newest[offset:offset + limit]
        if status == "active":  # an expired memory is no longer live, whatever consolidation has done yet
            filter = {**(filter or {}), "expire_at": {"$gt": self.clock()}}
        if include_quarantined is not True:
            if status == "blocked":
                yield from self._visible([], include_quarantined)  # checks the argument
                return []
            filter = yield from self._guard_filter(filter, status)
        found = yield ListRecords(self.namespace, user_id, agent_id, category, filter, status, limit, offset)
        # The filter did the guard's work; what it could not (a caller's own condition on the same
        # field) is left out here. The verdict stored at write time stands: no classifying per row.
        return (yield from self._visible(found, include_quarantined, classify=False))

    def _past_newest(self, known_at: datetime, valid_at: datetime | None, user_id: str | None,
                     agent_id: str | None, category: str | None, filter: dict[str, Any] | None, status: str | None,
                     wanted: int, include_quarantined: Any) -> Plan:
        """The newest `wanted` memories in scope as they stood at `known_at` (with `valid_at`, as
        they held in the world then) that the read guard shows, in `_as_of`'s order; or None where
        reading every memory of the scope is needed to tell (then `_as_of` does).

        As a past recall (`_past_candidates`): the memories unchanged since (`_unsettled`) are
        listed by the store, newest first, and only the others are read in their version of then."""
        unsettled = None if filter and "expire_at" in filter else (yield from self._unsettled(known_at, valid_at,
                                                                                               user_id))
        if unsettled is None or len(unsettled[0]) > MAX_SEARCHED_PAST:
            return None
        since, read_since = unsettled
        changed = yield from self._as_of(known_at, user_id, agent_id, category, filter, status, None, valid_at,
                                         changed_only=True)
        others = since - read_since  # unchanged since `known_at`, another version held at `valid_at`
        held_then = {r.memory_id: r for r, _ in (yield from self._as_of(
            known_at, user_id, agent_id, category, filter, status, None, valid_at, memory_ids=sorted(others)))} \
            if others else {}
        bounded = _bounded(filter, "updated_at", known_at)
        if valid_at is not None and valid_at < known_at:
            bounded = _bounded(bounded, "created_at", valid_at)
        if status == "active":  # (as `_as_of` judges expiry: at `known_at`)
            bounded["expire_at"] = {"$gt": known_at}
        fetch = wanted + len(since)
        rows = yield ListRecords(self.namespace, user_id, agent_id, category, bounded, status, fetch, 0)
        complete = len(rows) < fetch  # every unchanged memory in scope was listed
        if not complete:  # a memory not listed is no newer than the last: those as old are listed too
            oldest = rows[-1].created_at
            ties = yield ListRecords(self.namespace, user_id, agent_id, category,
                                     {**bounded, "created_at": {"$eq": oldest}}, status, MAX_TIED + 1, 0)
            if len(ties) > MAX_TIED:
                return None
            rows = [r for r in rows if r.created_at > oldest] + ties
        # `_as_of`'s order before its sort: the unchanged oldest first among equal times (those that
        # held another version then in its place), then those changed since
        merged = [r if r.memory_id not in others else held_then.pop(r.memory_id, None) for r in reversed(rows)]
        merged = [r for r in merged if r is not None] + [*held_then.values()] + [r for r, _ in changed]
        merged.sort(key=lambda r: r.created_at, reverse=True)
        shown = yield from self._visible(merged, include_quarantined, classify=False)
        if complete:
            return shown
        sure = [r for r in shown if r.created_at >= oldest]
        return sure if len(sure) >= wanted else None

    def _guard_filter(self, filter: dict[str, Any] | None, status: str | None) -> Plan:
        """`filter` with the read guard pushed down: no quarantined or flagged memory, no blocked source."""
        blocked = yield from self._blocked()
        guard: dict[str, Any] = {"metadata.polymem_trust": {"$ne": "low"}}
        if status is None:
            guard["status"] = {"$ne": "blocked"}
        if blocked:
            guard["source"] = {"$nin": sorted(blocked)}
        return {**guard, **(filter or {})}

    def get_by_key(self, key: str, *, include_quarantined: bool = False) -> Plan:
        self._label(key, "key")
        found = yield GetByKeys(self.namespace, [key])
        found = yield from self._visible(found, include_quarantined)
        return found[0] if found else None

    def put(self, key: str, content: str, *, user_id: str | None, agent_id: str | None = None,
            session_id: str | None = None, category: str = "fact", source: str = "user_input",
            importance: float | None = None, entities: Sequence[str] | None = None,
            metadata: dict[str, Any] | None = None, expire_at: datetime | None = None,
            valid_from: datetime | None = None, valid_to: datetime | None = None) -> Plan:
        current = yield from self.get_by_key(key, include_quarantined=True)
        if current is not None and current.user_id != user_id:
            raise InvalidInput(f"key {key!r} names a memory of another user")
        if current is not None and (current.status != "active" or (
                current.expire_at is not None and current.expire_at <= self.clock())):
            yield DeleteRecord(self.namespace, current.memory_id, self.clock())  # its key frees for the new one
            current = None
        if current is None:
            return (yield from self.save(content, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                         category=category, source=source, importance=importance,
                                         entities=entities, metadata=metadata, expire_at=expire_at,
                                         idempotency_key=key, valid_from=valid_from, valid_to=valid_to))
        if valid_from is not None or valid_to is not None:  # the new version's validity, beside its metadata
            kept = {k: v for k, v in current.metadata.items() if k not in ("valid_from", "valid_to")}
            metadata = _with_validity(kept if metadata is None else metadata, valid_from, valid_to)
        return (yield from self.update(current.memory_id, content=content, category=category, importance=importance,
                                       metadata=metadata, entities=entities, expire_at=expire_at))

    def distinct(self, field: str, *, user_id: str | None = None, agent_id: str | None = None,
                 category: str | None = None, filter: dict[str, Any] | None = None,
                 status: str | None = "active", include_quarantined: bool = False) -> Plan:
        path = self._field_path(field)
        seen: dict[str, Any] = {}
        offset, page_size = 0, 1000
        while True:  # the backends have no DISTINCT over JSON paths yet: page through the matches
            page = yield from self.list(user_id=user_id, agent_id=agent_id, category=category, filter=filter,
                                        status=status, limit=page_size, offset=offset,
                                        include_quarantined=include_quarantined)
            for record in page:
                value = _field_value(record, path)
                if value is not _MISSING:
                    seen.setdefault(json.dumps(value, sort_keys=True, default=str), value)
            if len(page) < page_size:
                return builtins.list(seen.values())
            offset += page_size

    @staticmethod
    def _field_path(field: str) -> tuple[str, ...]:
        path = tuple(field.split(".")) if isinstance(field, str) else ()
        if not path or not all(path) or (path[0] != "metadata" and (len(path) > 1 or path[0] not in _DISTINCT_FIELDS)):
            raise InvalidInput(f"field must be one of {', '.join(_DISTINCT_FIELDS)} or metadata.<key>, got {field!r}")
        return path

    def recall(self, query: str, *, user_id: str | None, agent_id: str | None = None, top_k: int = 10,
               category: str | None = None, filter: dict[str, Any] | None = None,
               query_vector: Sequence[float] | None = None, min_relevance: float | None = None,
               explain: bool = False, as_of: datetime | None = None, valid_at: datetime | None = None,
               rerank: bool | None = None, rerank_top: int = RERANK_TOP, rewrite: int | None = None) -> Plan:
        query = self._content(query, "query")
        self._scope(user_id, agent_id, category)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be an integer in [1, {MAX_TOP_K}], got {top_k!r}")
        if min_relevance is not None and (isinstance(min_relevance, bool) or not isinstance(min_relevance, (int, float))
                                          or not 0.0 <= min_relevance <= 1.0):
            raise InvalidInput(f"min_relevance must be in [0, 1], got {min_relevance!r}")
        from ._filters import compile_filter

        compile_filter(filter)  # validate before any work
        if not isinstance(explain, bool):
            raise InvalidInput(f"explain must be True or False, got {explain!r}")
        depth = self._rerank_depth(rerank, rerank_top)
        variants = self._variant_count(rewrite)
        blocked = yield from self._blocked()
        filter = _without_sources(filter, blocked)
        now = self.clock() if as_of is None else require_aware(as_of, "as_of")
        model_id = self.embedder.model_id if self.embedder else None
        if self.embedder is not None and as_of is None and \
                (yield CountForeignVectors(self.namespace, model_id)):
            yield from self._embed_missing()
        queries = [query]
        if variants:
            queries += yield from self._rewrite(query, variants)
        if self.embedder is not None:
            raw = [query_vector, *((yield embed_op(queries[1:])) if len(queries) > 1 else [])] \
                if query_vector is not None else (yield embed_op(queries))
            vectors: builtins.list[np.ndarray | None] = builtins.list(as_matrix(raw, self.embedder.dimension))
        elif query_vector is not None:
            raise InvalidInput("query_vector was given but the store has no embedder (lexical-only mode)")
        else:
            vectors = [None] * len(queries)
        terms_of_queries = [tuple(query_terms(q, self.language)) for q in queries]
        if valid_at is not None:
            valid_at = require_aware(valid_at, "valid_at")
        now_only = as_of is None and valid_at is None
        # A caller's own threshold replaces polymem's judgement of what is relevant at all, so
        # `min_relevance=0` ranks everything in scope: k results where k exist, as a vector
        # store or a framework's list memory promises.
        # A broad question ("what do you know about me?") names nothing: every memory in scope is what it
        # asks for, ranked by its score, and no threshold of polymem's cuts it (the caller's still does).
        broad = is_broad(query, self.language)
        admit_all = min_relevance is not None or broad
        # Without a threshold to filter by, only each ranking's best `best` can be among the merged best.
        keep = max(top_k, depth)
        # The time the query asks for (see `_in_time`); read here, as it widens the pool.
        when = self._asked_time(query, now)
        # The context and time steps (see `_in_context`, `_in_time`) may lift a hit from below the first `keep`.
        pool = max(keep, CONTEXT_POOL) if self.scoring.context_weight or when is not None else keep
        best = None if min_relevance is not None else pool
        rankings = []
        best_text: builtins.list[Candidate | None] = []  # each query's best full-text match
        screened: set[str] = set()  # memories the store says this classifier screened on their way in
        for vector, terms_of_query in zip(vectors, terms_of_queries):
            if now_only:
                worth_reading = None if best is None else functools.partial(
                    self.scoring.worth_reading, vector_mode=vector is not None, admit_all=admit_all, best=best)
                request = SearchRequest(self.namespace, user_id, agent_id, category, filter, vector, model_id,
                                        terms_of_query, now, max(CANDIDATES, top_k), worth_reading, self.screened_by)
                candidates = yield Search(request)
                screened.update(c.id for c in candidates if c.screened)
            else:
                candidates = yield from self._past_candidates(
                    now, vector, terms_of_query, user_id, agent_id, category, filter, valid_at,
                    max(CANDIDATES, top_k), everything=min_relevance == 0 and vector is None)
            rankings.append(self.rank(candidates, now, vector_mode=vector is not None, admit_all=admit_all,
                                      explain=explain, best=best))
            best_text.append(max((c for c in candidates if c.text_rank is not None),
                                 key=lambda c: c.text_rank or 0.0, default=None))
        hits, found_by = merge_by_score(rankings)
        cut = min_relevance if min_relevance is not None else None if broad else self.scoring.min_relevance
        if cut:  # calibration below only lowers a relevance: what is under the cut now stays under
            hits = [h for h in hits if h.relevance >= cut]
        hits = hits[:pool]
        # Until the order is final a hit may carry its bare candidate (see `rank`), and the first k
        # are fetched whole then. The calibration below reads the contents of the best text matches
        # and of every text hit, and the time step what the hits of the whole pool say: the search's
        # candidates carry contents where the backend read them; the rest is fetched first.
        texts: dict[str, str | None] = {}
        indexed: dict[str, str] = {}  # what the store indexed them by, where the search read it
        if not broad:
            texts = {c.id: c.text for c in best_text if c is not None}
            texts.update((h.memory.memory_id, h.memory.content) for h in hits if h.text_rank is not None)
            indexed = {c.id: c.indexed_terms for c in (*best_text, *(h.memory for h in hits if h.text_rank is not None))
                       if isinstance(c, Candidate) and c.indexed_terms is not None}
        early = {i for i, text in texts.items() if text is None and i not in indexed}
        if when is not None:
            early |= {h.memory.memory_id for h in hits if not isinstance(h.memory, MemoryRecord)}
        if early:
            records = yield from self._records_of([h.memory for h in hits], early)
            texts.update((i, records[i].content if i in records else None) for i, text in texts.items() if text is None)
            hits = _with_records(hits, early, records)
        if not broad:
            # (terms the store indexed a text by are those `held_terms` finds in it, without analysing it again)
            held = {i: frozenset(indexed[i].split()) if text is None or i in indexed else held_terms(text, self.language)
                    for i, text in texts.items() if text is not None or i in indexed}
            hits = yield from self._calibrate(hits, terms_of_queries, [named_terms(q, self.language) for q in queries],
                                              found_by, user_id, [None if c is None else c.id for c in best_text], held)
            if cut:
                hits = [h for h in hits if h.relevance >= cut]
        if self.scoring.context_weight:
            hits = self._in_context(hits)
        if when is not None:
            hits = self._in_time(hits, *when)
        results: builtins.list[RecallHit] = yield from self._first_fetched(hits, keep)
        if admit_all and len(results) < top_k and not cut and now_only:
            results += (yield from self._unmatched(results, top_k, now, user_id, agent_id, category, filter))
        # (a text this classifier screened on its way in gets the verdict it got then: not classified again)
        withheld = {h.memory.memory_id: reasons for h in results
                    if (reasons := self.guard.reasons(h.memory, blocked, classify=h.memory.memory_id not in screened))}
        results = [h for h in results if h.memory.memory_id not in withheld]
        if depth:  # after the read guard: what it withholds never reaches the reranker's model
            results = yield from self._rerank(query, results, depth)
            if min_relevance is not None:
                results = [h for h in results if h.relevance >= min_relevance]
        results = results[:top_k]
        if explain and results:
            for index, found in enumerate(queries):
                group = [h for h in results if found_by.get(h.memory.memory_id, 0) == index]
                if group:
                    yield from self._explain_terms(group, terms_of_queries[index],
                                                   with_vector=self.embedder is not None)
                for hit in group if len(queries) > 1 else ():
                    if hit.explanation is not None:
                        hit.explanation["query"] = {"text": found, "variant": index}
        if self.scoring.reinforce and results and now_only:  # the past uses nothing now
            bonuses = [(h.memory.memory_id, self.scoring.reinforcement(rank)) for rank, h in enumerate(results)]
            yield Reinforce(self.namespace, bonuses, now)
        return RecallResult(results, withheld_summary(withheld))

    def _first_fetched(self, hits: builtins.list[_Ranked], count: int) -> Plan:
        """The first `count` hits as `RecallHit`s, each with its record: those carrying a bare
        candidate get theirs fetched, in one read, and one whose memory went since the search gives
        its place to the next."""
        out: builtins.list[RecallHit] = []
        while hits and len(out) < count:
            batch, hits = hits[:count - len(out)], hits[count - len(out):]
            bare = {h.memory.memory_id for h in batch if not isinstance(h.memory, MemoryRecord)}
            if bare:
                batch = _with_records(batch, bare, (yield from self._records_of([h.memory for h in batch], bare)))
            out += [RecallHit(h.memory, h.score, h.relevance, h.similarity, h.text_rank, h.live_score, h.explanation)
                    for h in batch if isinstance(h.memory, MemoryRecord)]
        return out

    def _records_of(self, memories: Sequence[MemoryRecord | Candidate], ids: set[str]) -> Plan:
        """The records of the memories `ids` name (by id; a memory gone since the search left out),
        among records and a search's bare candidates: made from what the search read where it read
        whole rows (`Candidate.full`), else fetched."""
        records: dict[str, MemoryRecord] = {}
        for found in memories:
            if isinstance(found, Candidate) and found.full is not None and found.memory_id in ids:
                records[found.memory_id] = found.full()
        if unread := ids - records.keys():
            records.update((r.memory_id, r) for r in (yield GetRecords(self.namespace, builtins.list(unread))))
        return records

    def _calibrate(self, hits: builtins.list[_Ranked], queries: Sequence[Sequence[str]],
                   names: Sequence[Sequence[str]], found_by: dict[str, int], user_id: str | None,
                   best: Sequence[str | None], held: Mapping[str, Collection[str]]) -> Plan:
        """The hits with absolute relevances, in recall's order again (`best`: the id of each
        query's best text match; `held`: the terms the text hits and those best matches hold
        (`held_terms`), by id, where known).

        The search ranks text matches relative to the best one (BM25 over the best match's
        BM25), so the best of a weak lot would rank 1. Each query's ranks are scaled by how much of
        it its best match covers: the weights of the query terms that match holds, over those of
        all the query's terms. A match holding every term thus keeps its rank, and one that holds
        only a word most of the user's memories hold, of a query whose other words none holds,
        almost nothing of it: the ranks become BM25 relative to an ideal match of the query (each
        of its terms once) instead of the best match there happens to be. The best match is the
        one covering most (the search's best by BM25 may hold only a common word), and no hit
        ranks above its own coverage.

        A term weighs its inverse document frequency times its specificity in the language
        (`ScoringPolicy.term_weight`): a few memories cannot tell from their own statistics that
        "like" is common, the language can. Where polymem knows the language's word frequencies
        (English), a query word that no memory holds ("cats" in "Do I like cats?") weighs in too, as
        the rarest word of the store would: a memory holding the query's common words alone covers
        little of it. In another language, such a word is left out of the query's weights (it tells
        no memory apart), and every word is taken as specific.

        A query naming someone or something (`named_terms`) that none of the user's memories
        mention asks about what they do not know: its hits' relevances are scaled by
        `ScoringPolicy.grounding` of the share of its names they know (a cosine alone cannot tell
        "what did Ann paint?" from "what did Bo paint?")."""
        # The person asked about is the scope's user: their own name is known, whether or not
        # their memories (often said in the first person) spell it.
        own = set(terms(user_id, language=self.language)) if user_id else set()
        names = [[t for t in named if t not in own] for named in names]
        wanted = builtins.list(dict.fromkeys(t for query in (*queries, *names) for t in query))
        if not wanted or all(h.text_rank is None for h in hits) and not any(names):
            return hits
        rows, docs = yield DocumentFrequencies(self.namespace, wanted, user_id)
        frequencies = word_frequencies(self.language)
        policy = self.scoring
        weights = [{t: policy.term_weight(bm25_idf(rows, docs.get(t, 0)),
                                          None if frequencies is None else frequencies.get(t))
                    for t in query if t in docs or frequencies is not None} for query in queries]
        covers = {i: policy.coverage(terms_held, weights[found_by.get(i, 0)]) for i, terms_held in held.items()}
        scales = [1.0 if i is None or i not in held else policy.coverage(held[i], w) for w, i in zip(weights, best)]
        for i, covered in covers.items():  # the best by BM25 may not be the best by these weights
            scales[found_by.get(i, 0)] = max(scales[found_by.get(i, 0)], covered)
        grounds = [policy.grounding(sum(docs.get(t, 0) > 0 for t in named) / len(named)) if named else 1.0
                   for named in names]
        vector_mode = self.embedder is not None
        for hit in hits:
            index = found_by.get(hit.memory.memory_id, 0)
            if hit.text_rank is None and grounds[index] == 1.0:
                continue
            text = None if hit.text_rank is None else min(hit.text_rank * scales[index],
                                                          covers.get(hit.memory.memory_id, 1.0))
            relevance = (policy.fuse(hit.similarity, text) if vector_mode else text or 0.0) * grounds[index]
            score = policy.blend(relevance, hit.live_score)
            if hit.explanation is not None:
                if text is not None:
                    hit.explanation["text"]["coverage"] = text / hit.text_rank if hit.text_rank else scales[index]
                hit.explanation["relevance"]["value"] = relevance
                hit.explanation["relevance"]["grounding"] = grounds[index]
                hit.explanation["score"] = score
            hit.rescore(score, relevance)
        in_hit_order(hits)
        return hits

    def _in_context(self, hits: builtins.list[_Ranked]) -> builtins.list[_Ranked]:
        """The hits ordered by their relevance in context (`ScoringPolicy.in_context`): a memory
        written within `context_minutes` of a more relevant one ranks higher for it, as the turn
        that answers a question ranks with the turn that words it. Relevances stay as they were,
        so that a threshold reads the memory's own."""
        policy = self.scoring
        context = policy.context([h.relevance for h in hits], [h.memory.created_at for h in hits]).tolist()
        for hit, near in zip(hits, context):
            if near == 0.0:
                continue
            score = policy.blend(policy.in_context(hit.relevance, near), hit.live_score)
            if hit.explanation is not None:
                hit.explanation["context"] = {"relevance": near, "weight": policy.context_weight,
                                              "minutes": policy.context_minutes}
                hit.explanation["score"] = score
            hit.rescore(score, hit.relevance)
        in_hit_order(hits)
        return hits

    def _asked_time(self, query: str, now: datetime) -> tuple[tuple[date, date] | None, bool] | None:
        """The time `query` asks for: (the period it names, or None; whether it asks for a time
        at all, "When did…?"), None when neither, or when `time_weight` is 0. The patterns are
        English: other languages' queries ask for none."""
        if not self.scoring.time_weight or self.language != DEFAULT_LANGUAGE:
            return None
        period, asks = read_period(query, now), asks_when(query)
        return (period, asks) if period is not None or asks else None

    def _in_time(self, hits: builtins.list[_Ranked], period: tuple[date, date] | None,
                 asks: bool) -> builtins.list[_Ranked]:
        """The hits ordered by the time their query asks for (`ScoringPolicy.in_time`): a memory
        neither written in the period the query names nor stating a day in it, and for a question
        asking when, a memory stating no time, ranks by less of its score. Relevances stay as
        they were, so that a threshold reads the memory's own."""
        policy = self.scoring
        for hit in hits:
            written = hit.memory.created_at
            stated = read_date(hit.memory.content, written) if isinstance(hit.memory, MemoryRecord) else None
            in_period = period is None or any(d is not None and period[0] <= d < period[1]
                                              for d in (written.date(), stated))
            misses = (not in_period) + (asks and stated is None)
            score = policy.in_time(hit.score, misses)
            if hit.explanation is not None:
                hit.explanation["time"] = {
                    "period": None if period is None else [period[0].isoformat(), period[1].isoformat()],
                    "in_period": in_period, "asks_when": asks,
                    "stated": None if stated is None else stated.isoformat(), "weight": policy.time_weight}
                hit.explanation["score"] = score
            if misses:
                hit.rescore(score, hit.relevance)
        in_hit_order(hits)
        return hits

    def _rerank_depth(self, rerank: Any, rerank_top: Any) -> int:
        """How many candidates this recall's reranker sees (0: no rerank)."""
        if rerank is not None and not isinstance(rerank, bool):
            raise InvalidInput(f"rerank must be True, False or None, got {rerank!r}")
        if isinstance(rerank_top, bool) or not isinstance(rerank_top, int) or not 1 <= rerank_top <= CANDIDATES:
            raise InvalidInput(f"rerank_top must be an integer in [1, {CANDIDATES}], got {rerank_top!r}")
        if rerank and self.reranker is None:
            raise InvalidInput("rerank=True needs a store opened with a reranker (polymem.open(..., reranker=...))")
        return rerank_top if self.reranker is not None and rerank is not False else 0

    def _variant_count(self, rewrite: Any) -> int:
        """How many rewrites of the query this recall searches too."""
        if rewrite is None:
            return DEFAULT_REWRITES if self.query_rewriter is not None else 0
        if isinstance(rewrite, bool) or not isinstance(rewrite, int) or not 0 <= rewrite <= MAX_REWRITES:
            raise InvalidInput(f"rewrite must be an integer in [0, {MAX_REWRITES}], got {rewrite!r}")
        if rewrite and self.query_rewriter is None:
            raise InvalidInput("rewrite needs a store opened with a query rewriter "
                               "(polymem.open(..., query_rewriter=...))")
        return rewrite

    def _rewrite(self, query: str, count: int) -> Plan:
        """The rewriter's variants of `query` (valid queries only); none, with a warning, if it fails."""
        assert self.query_rewriter is not None
        try:
            variants = yield _call(self.query_rewriter.rewrite, query, count)
            if not isinstance(variants, (builtins.list, tuple)):
                raise TypeError(f"rewrite returned {type(variants).__name__}, not a list of strings")
        except Exception as exc:  # a model's failure must not fail the recall: the query alone is searched
            log.warning("polymem: the query rewriter failed (%r); recall searches the query alone", exc)
            return []
        kept = []
        for variant in builtins.list(variants)[:count]:
            try:
                kept.append(self._content(variant, "query variant"))
            except InvalidInput as exc:
                log.warning("polymem: skipped a query variant: %s", exc)
        return kept

    def _rerank(self, query: str, hits: builtins.list[RecallHit], depth: int) -> Plan:
        """The first `depth` hits ordered by the reranker's relevance blended with their live
        score, before the rest; the hits as they were, with a warning, if the reranker fails."""
        assert self.reranker is not None
        head, tail = hits[:depth], hits[depth:]
        if not head:
            return hits
        try:
            scores = yield _call(self.reranker.rerank, query, [h.memory.content for h in head])
            relevances = _unit_scores(scores, len(head))
        except Exception as exc:  # a model's failure must not fail the recall: its own order stands
            log.warning("polymem: the reranker failed (%r); recall keeps its own order", exc)
            return hits
        reranked = []
        for rank, (hit, relevance) in enumerate(zip(head, relevances), 1):
            score = self.scoring.blend(relevance, hit.live_score)
            if hit.explanation is not None:
                hit.explanation["rerank"] = {"relevance": relevance, "before": {
                    "rank": rank, "relevance": hit.relevance, "score": hit.score}}
                hit.explanation["score"] = score
            reranked.append(_rescored(hit, score, relevance))
        in_hit_order(reranked)
        return reranked + tail

    def _embed_missing(self) -> Plan:
        """Give a few memories saved without a vector (by a process without a model) one now;
        say once that memories of another model are found by their text alone."""
        assert self.embedder is not None
        model_id = self.embedder.model_id
        rows = yield PendingReembed(self.namespace, model_id, LAZY_EMBED_BATCH, missing_only=True)
        if rows:
            raw = yield embed_op([content for _, content in rows])
            matrix = as_matrix(raw, self.embedder.dimension)
            yield SetVectors(self.namespace, [(mid, matrix[i]) for i, (mid, _) in enumerate(rows)],
                             model_id)
        if len(rows) < LAZY_EMBED_BATCH and not self._told_foreign:
            left = yield CountForeignVectors(self.namespace, model_id)
            if left:
                self._told_foreign = True
                log.warning("polymem: %d memories in namespace %r have vectors of another model than %r; recall "
                            "finds them by full text only until `polymem reembed` (Memory.reembed()) re-embeds them",
                            left, self.namespace, model_id)

    def _past_candidates(self, at: datetime, vector: np.ndarray | None, query: Sequence[str], user_id: str | None,
                         agent_id: str | None, category: str | None, filter: dict[str, Any] | None,
                         valid_at: datetime | None, limit: int, *, everything: bool = False) -> Plan:
        """Recall candidates from the store as it stood at `at`.

        A memory neither written nor deleted since `at` is now as it was then: the store's own
        search finds those (inside the filters, expiry judged at `at`). The memories written or
        deleted since are read in their version of `at` and ranked with them: the cosine from the
        stored vector (a version whose content changed since is embedded again), the full-text
        rank by BM25 with the weights the search gives the query's terms, on the scale of the
        search's best match (all rescaled when a past version matches better). With `valid_at`,
        so are the memories whose present version may not be the one that held then
        (`_unsettled`); with more of those than `MAX_SEARCHED_PAST`, or for `everything` in scope
        (a lexical recall with `min_relevance=0`), every version current then is ranked."""
        model_id = self.embedder.model_id if self.embedder else None
        unsettled = None if everything else (yield from self._unsettled(at, valid_at, user_id))
        if unsettled is None:
            rows = yield from self._as_of(at, user_id, agent_id, category, filter, "active", model_id, valid_at)
            ranks = bm25_ranks([terms(r.content, language=self.language) for r, _ in rows], query)
            similarities = yield from self._similarities(rows, vector)
            return [Candidate(record, sim, ranks.get(i)) for i, ((record, _), sim) in enumerate(zip(rows, similarities))]
        since, read_since = unsettled
        changed = yield from self._as_of(at, user_id, agent_id, category, filter, "active", model_id, valid_at,
                                         changed_only=True)
        if others := sorted(since - read_since):
            changed += yield from self._as_of(at, user_id, agent_id, category, filter, "active", model_id, valid_at,
                                              memory_ids=others)
        # Up to MAX_SEARCHED_PAST memories written since are searched past (the search brings up
        # to twice as many candidates, as if none had been written since unless more of them are
        # among the best); more are left out by a filter, which costs a read of the scope's rows.
        many = len(since) > MAX_SEARCHED_PAST
        if many:
            filter = _bounded(filter, "updated_at", at)
        if valid_at is not None and valid_at < at:  # (created since: held nothing then, declared or read above)
            filter = _bounded(filter, "created_at", valid_at)
        request = SearchRequest(self.namespace, user_id, agent_id, category, filter, vector, model_id, tuple(query),
                                at, limit if many else limit + min(len(since), limit))
        found = [c for c in (yield Search(request)) if c.id not in since]
        best = max((c.text_rank for c in found if c.text_rank is not None), default=1.0)
        if best < 1.0:  # the best text match was written since: the ranks are relative to the best left
            found = [replace(c, text_rank=None if c.text_rank is None else c.text_rank / best) for c in found]
        if not changed:
            return found
        similarities = yield from self._similarities(changed, vector)
        ranks = yield from self._past_text_ranks(found, [r for r, _ in changed], query, with_vector=vector is not None)
        top = max(1.0, *ranks.values()) if ranks else 1.0
        if top > 1.0:  # a past version matches better than the search's best: every rank relative to it
            found = [replace(c, text_rank=None if c.text_rank is None else c.text_rank / top) for c in found]
        return [*found, *(Candidate(record, sim, None if i not in ranks else ranks[i] / top)
                          for i, ((record, _), sim) in enumerate(zip(changed, similarities)))]

    def _unsettled(self, at: datetime, valid_at: datetime | None, user_id: str | None) -> Plan:
        """The memories a search of the store as it is cannot rank as they stood at `at` (and,
        with `valid_at`, as they held in the world then), and those of them written since `at`:
        (ids, ids written since `at`), or None where `valid_at` names more than `MAX_SEARCHED_PAST`
        (every version current at `at` is ranked then).

        A memory unchanged since `at` is now as it stood then. With `valid_at`, its present version
        is the one that held then unless it was written after `valid_at` (an earlier version may
        have held; a memory created after it held nothing, which the search's filter leaves out) or
        declares a validity of its own (`valid_from`, `valid_to`): only those are read in their
        version of `valid_at`, instead of every memory of the scope (100k memories: ~4 s a recall)."""
        read_since = set((yield WrittenSince(self.namespace, at, user_id)))
        if valid_at is None:
            return read_since, read_since
        since = set(read_since)
        asked: builtins.list[dict[str, Any]] = [{f"metadata.{key}": {"$exists": True}} for key in ("valid_from", "valid_to")]
        if valid_at < at:
            asked.append({"updated_at": {"$gt": valid_at}, "created_at": {"$lte": valid_at}})
        for filter in asked:  # (any status: a memory superseded since may have been active then)
            since.update(r.memory_id for r in (yield ListRecords(self.namespace, user_id, filter=filter, status=None,
                                                                 limit=MAX_SEARCHED_PAST + 1)))
            if len(since) > MAX_SEARCHED_PAST:
                return None
        return since, read_since

    def _similarities(self, rows: Sequence[tuple[MemoryRecord, Any]], vector: np.ndarray | None) -> Plan:
        """Each row's cosine to the query `vector` (None without one): from its stored vector, or
        its content embedded again where none is stored for it."""
        if vector is None or self.embedder is None:
            return [None] * len(rows)
        vectors = [v for _, v in rows]
        stale = [i for i, v in enumerate(vectors) if v is None]
        if stale:
            raw = yield embed_op([rows[i][0].content for i in stale])
            for i, fresh in zip(stale, as_matrix(raw, self.embedder.dimension)):
                vectors[i] = fresh
            # Versions kept before they had vectors keep these, so the next past recall reads them;
            # like reinforcement, bookkeeping a read-only store goes without.
            with suppress(ReadOnlyStoreError):
                yield KeepVersionVectors(self.namespace, [(rows[i][0].memory_id, rows[i][0].version, vectors[i])
                                                          for i in stale], self.embedder.model_id)
        return [float(v @ vector) if v is not None else None for v in vectors]

    def _past_text_ranks(self, found: Sequence[Candidate], past: Sequence[MemoryRecord], query: Sequence[str], *,
                         with_vector: bool) -> Plan:
        """The full-text ranks of the `past` versions (by index) on the scale of the search's ranks
        in `found`: BM25 with the search's term weights, relative to the search's best match (its
        text read again); above 1 for a version matching better."""
        rows, docs = yield DocumentFrequencies(self.namespace, builtins.list(dict.fromkeys(query)))
        documents = [terms(record.content, language=self.language) for record in past]
        # a term only past versions hold (a deleted memory's) is no less searchable for it
        held = Counter(t for doc in documents for t in set(doc))
        docs, rows = {t: docs.get(t, 0) + held[t] for t in query}, rows + len(past)
        idf = {t: bm25_idf(rows, docs[t]) for t in selective_terms(query, docs, rows, with_vector=with_vector)}
        best = max((c for c in found if c.text_rank is not None), key=lambda c: c.text_rank or 0.0, default=None)
        if best is not None:
            documents += [terms(r.content, language=self.language) for r in (yield GetRecords(self.namespace, [best.id]))]
        scores = bm25_scores(documents, idf)
        scale = scores.get(len(past)) or max((scores.get(i, 0.0) for i in range(len(past))), default=0.0)
        return {i: score / scale for i, score in scores.items() if i < len(past) and scale > 0}

    def nearest(self, vector: Sequence[float], *, user_id: str | None, agent_id: str | None = None,
                top_k: int = 10, category: str | None = None, filter: dict[str, Any] | None = None) -> Plan:
        """Plain nearest neighbours by cosine: no full text, no live score, no reinforcement."""
        if self.embedder is None:
            raise InvalidInput("nearest() needs a store with an embedder (vectors are of its model)")
        self._scope(user_id, agent_id, category)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be an integer in [1, {MAX_TOP_K}], got {top_k!r}")
        from ._filters import compile_filter

        compile_filter(filter)
        blocked = yield from self._blocked()
        filter = _without_sources(filter, blocked)
        query = as_matrix([vector], self.embedder.dimension)[0]
        request = SearchRequest(self.namespace, user_id, agent_id, category, filter, query, self.embedder.model_id,
                                (), self.clock(), top_k)
        candidates = [c for c in (yield Search(request)) if c.similarity is not None]
        candidates.sort(key=lambda c: -(c.similarity or 0.0))
        candidates = candidates[:top_k]
        bare = {c.id for c in candidates if c.record is None}
        records = {c.id: c.record for c in candidates if c.record is not None}
        if bare:  # (a search that read whole rows makes the records from them: no second read)
            records.update((yield from self._records_of(candidates, bare)))
        pairs = [(records[c.id], float(c.similarity or 0.0)) for c in candidates if c.id in records]
        withheld = {r.memory_id: reasons for r, _ in pairs if (reasons := self.guard.reasons(r, blocked))}
        return NearestResult([(r, s) for r, s in pairs if r.memory_id not in withheld], withheld_summary(withheld))

    def vectors(self, memory_ids: Sequence[str], *, include_quarantined: bool = False) -> Plan:
        if self.embedder is None:
            return {}
        ids = builtins.list(memory_ids)
        if include_quarantined is not True:  # only the vectors of memories this read may return
            ids = [r.memory_id for r in (yield from self._visible((yield GetRecords(self.namespace, ids)),
                                                                   include_quarantined))]
        found = yield ReadVectors(self.namespace, ids, self.embedder.model_id)
        return {k: [float(x) for x in v] for k, v in found.items()}

    def _unmatched(self, hits: Sequence[RecallHit], top_k: int, now: datetime, user_id: str | None,
                   agent_id: str | None, category: str | None, filter: dict[str, Any] | None) -> Plan:
        """Memories in scope that the search did not find (no vector, no text match), newest
        first, as hits of relevance 0 to fill a recall up to `top_k`."""
        found = {h.memory.memory_id for h in hits}
        scope = {**(filter or {}), "expire_at": {"$gt": now}}
        page = yield ListRecords(self.namespace, user_id, agent_id, category, scope, "active", top_k + len(found), 0)
        policy = self.scoring
        return [RecallHit(r, policy.blend(0.0, live), 0.0, None, None, live)
                for r in page if r.memory_id not in found
                for live in (policy.live_score(r, now),)][:top_k - len(hits)]

    def rank(self, candidates: Sequence[Candidate], now: datetime, *, vector_mode: bool, admit_all: bool = False,
             explain: bool = False, best: int | None = None) -> builtins.list[_Ranked]:
        """Admit relevant candidates (all of them with `admit_all`), blend relevance with the live
        score, order by score, and keep the `best` first (all by default); with `explain`, each hit
        also carries the parts of its score, from these same computations."""
        policy = self.scoring
        positions, relevance_of = policy.relevance_table([c.similarity for c in candidates],
                                                         [c.text_rank for c in candidates],
                                                         vector_mode=vector_mode, admit_all=admit_all)
        admit = policy.admission(c.similarity for c in candidates) if explain and vector_mode else None
        if best is not None and len(positions) > best:  # the others' live scores are not computed
            reach = policy.within_reach(relevance_of, best)
            positions, relevance_of = positions[reach], relevance_of[reach]
        admitted = builtins.list(zip(positions.tolist(), relevance_of.tolist()))
        live_parts = policy.live_table([candidates[i].scored for i, _ in admitted], now)
        blended = policy.blend_table(relevance_of, live_parts[0])
        lives, ages, factors, bonuses = (part.tolist() for part in live_parts)
        scores = blended.tolist()

        def order(n: int) -> tuple[float, datetime, str]:
            c = candidates[admitted[n][0]]
            return order_key(scores[n], c.scored, c.id)

        # Hits are made for the kept candidates alone: ~200 are scored per recall, 10 returned.
        if best is None or best >= len(admitted):
            kept = builtins.list(range(len(admitted)))
        else:  # the ties of the `best`-th score are ordered by `order_key` with the rest
            tie = np.partition(-blended, best - 1)[best - 1]
            kept = np.flatnonzero(-blended <= tie).tolist()
        if len(set(scores)) == len(scores):  # `order` only tells equal scores apart
            kept.sort(key=scores.__getitem__, reverse=True)
        else:
            kept.sort(key=order)
        del kept[len(kept) if best is None else best:]
        hits = []
        for n in kept:
            i, relevance = admitted[n]
            c = candidates[i]
            live, age_days, decay_factor, access_bonus = lives[n], ages[n], factors[n], bonuses[n]
            score = scores[n]
            why: dict[str, Any] | None = None
            if explain:
                scored = c.scored
                why = {
                    "score": score, "similarity": c.similarity, "text": {"rank": c.text_rank, "terms": []},
                    "relevance": {"value": relevance, "mode": "hybrid" if vector_mode else "lexical",
                                  "vector_weight": policy.vector_weight if vector_mode else None,
                                  "admitted_by": "similarity" if admit is not None and c.similarity is not None
                                  and c.similarity >= admit else "text",
                                  "admit_similarity": admit},
                    "live": {"value": live, "base": scored.importance, "category": scored.category,
                             "half_life_days": policy.half_life(scored.category), "age_days": age_days,
                             "decay_factor": decay_factor, "access_count": scored.access_count,
                             "access_bonus": access_bonus, "at": now.isoformat()},
                    "blend": {"live_weight": policy.live_weight,
                              "formula": "score = relevance * ((1 - live_weight) + live_weight * live)"},
                }
            # Until the top-k is fetched, a hit may carry the bare candidate.
            hits.append(_Ranked(c.record or c, score, relevance, c.similarity, c.text_rank, live, why))
        return hits

    def _explain_terms(self, hits: builtins.list[RecallHit], query: Sequence[str], *, with_vector: bool) -> Plan:
        """Complete the hits' explanations with what needs the records: the source's base score,
        trust marks, and the query terms each memory holds, weighted as the full-text search weighs them
        and as specific as the calibration takes them."""
        rows, docs = yield DocumentFrequencies(self.namespace, builtins.list(dict.fromkeys(query)))
        searched = set(selective_terms(query, docs, rows, with_vector=with_vector))
        frequencies = word_frequencies(self.language) or {}
        for hit in hits:
            if hit.explanation is None:  # a memory that filled a recall up to top_k matched nothing
                continue
            record = hit.memory
            held = held_terms(record.content, self.language)
            hit.explanation["text"]["terms"] = [
                {"term": t, "weight": bm25_idf(rows, docs.get(t, 0)), "documents": docs.get(t, 0),
                 "searched": t in searched, "specificity": self.scoring.specificity(frequencies.get(t))}
                for t in dict.fromkeys(query) if t in held]
            hit.explanation["live"].update(source=record.source, base_by_source=self.scoring.base_score(record.source))
            hit.explanation["trust"] = {"level": record.metadata.get("polymem_trust"),
                                        "flags": builtins.list(record.metadata.get("polymem_flags") or []),
                                        "guard": []}  # the read guard found nothing (else withheld)

    def update(self, memory_id: str, *, content: str | None = None, category: str | None = None,
               importance: float | None = None, metadata: dict[str, Any] | None = None,
               expected_version: int | None = None, status: str | None = None,
               entities: Sequence[str] | None = None, expire_at: datetime | None = None) -> Plan:
        self._label(memory_id, "memory_id")
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = self._content(content)
        if category is not None:
            changes["category"] = self._label(category, "category")
        if importance is not None:
            changes["importance"] = self._importance(importance)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        if entities is not None:
            changes["entities"] = tuple(entities)
        if expire_at is not None:
            changes["expire_at"] = require_aware(expire_at, "expire_at")
        if status is not None:
            if status not in ("active", "archived", "blocked"):
                raise InvalidInput(f"status must be active, archived or blocked, not {status!r}")
            changes["status"] = status
        if expected_version is not None and (isinstance(expected_version, bool) or not isinstance(expected_version, int)):
            raise InvalidInput("expected_version must be an integer")
        if not changes:
            raise InvalidInput("update needs at least one of content, category, importance, metadata, expire_at")
        if "content" in changes or "metadata" in changes:
            yield from self._screen_update(memory_id, changes)
        vector, model_id, chash, new_terms = None, None, None, None
        if "content" in changes:
            chash, new_terms = content_hash(changes["content"]), terms(changes["content"], language=self.language)
            if self.embedder is not None:
                raw = yield embed_op([changes["content"]])
                vector, model_id = as_matrix(raw, self.embedder.dimension)[0], self.embedder.model_id
        screened = self.screened_by if "content" in changes else None
        return (yield Update(self.namespace, memory_id, changes, expected_version, self.clock(),
                             vector, model_id, chash, new_terms, screened))

    def delete(self, memory_id: str) -> Plan:
        self._label(memory_id, "memory_id")
        return (yield DeleteRecord(self.namespace, memory_id, self.clock()))

    def purge(self, memory_id: str) -> Plan:
        self._label(memory_id, "memory_id")
        return (yield PurgeRecord(self.namespace, memory_id))

    def history(self, memory_id: str, *, include_quarantined: bool = False) -> Plan:
        self._label(memory_id, "memory_id")
        versions = [record for record, _ in (yield RecordHistory(self.namespace, [memory_id])).get(memory_id, [])]
        # The guard judges a memory by its latest version (a deleted memory keeps its versions).
        latest = yield from self._visible(versions[-1:], include_quarantined)
        return versions if latest else []

    def ingest(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None = None,
               session_id: str | None = None) -> Plan:
        insert = yield from self._extract(messages, user_id=user_id, agent_id=agent_id, session_id=session_id)
        if insert is None:
            return []
        results = yield insert
        return [record for record, _ in results]

    def _extract(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None,
                 session_id: str | None) -> Plan:
        """The `Insert` saving what the extractor finds in `messages` (None when there is nothing)."""
        messages = [_as_message(m) for m in _sequence(messages, "messages")]
        if not messages:
            return None
        now = self.clock()  # an undated message was said now: the extractor reads "yesterday" from it
        messages = [m if m.created_at is not None else replace(m, created_at=now) for m in messages]
        drafts = yield _call(self.extractor.extract, messages)
        drafts = [d for d in drafts if isinstance(d, MemoryDraft) and d.content.strip()]
        # An instruction cut across turns reads whole only in the conversation: when no turn is
        # flagged on its own but the conversation is, its verdict goes with every memory drawn from it.
        context = Verdict(False, 0.0)
        if self.classifier is not None and drafts:
            source = drafts[0].source
            if not any(self.classifier.classify(m.content, source=source).flagged for m in messages if m.content):
                context = self.classifier.classify(conversation_text([m.content for m in messages]), source=source)
        return (yield from self._insert_of(drafts, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                           expire_at=None, idempotency_keys=[None] * len(drafts), vectors=None,
                                           context=context))

    def reembed(self, progress: Callable[[int], None] | None = None, batch: int = 256) -> Plan:
        if self.embedder is None:
            raise InvalidInput("the store has no embedder; open it with one to re-embed")
        done, after = 0, None
        while True:
            rows = yield PendingReembed(self.namespace, self.embedder.model_id, batch, after=after)
            if not rows:
                return done
            after = rows[-1][0]
            raw = yield embed_op([content for _, content in rows])
            matrix = as_matrix(raw, self.embedder.dimension)
            yield SetVectors(self.namespace, [(mid, matrix[i]) for i, (mid, _) in enumerate(rows)],
                             self.embedder.model_id)
            done += len(rows)
            if progress:
                progress(len(rows))

    # -- consolidation ------------------------------------------------------------------------
    def consolidate(self, progress: Callable[[int], None] | None = None) -> Plan:
        """Expire, archive what decayed, merge near-duplicates, supersede contradictions."""
        now = self.clock()
        report = ConsolidationReport()
        for session_id in (yield SessionsExpired(self.namespace, now)):
            yield SessionDelete(self.namespace, session_id)
            report.sessions_expired += 1
        model_id = self.embedder.model_id if self.embedder else None
        step = progress or (lambda done: None)
        for user_id in (yield ActiveUsers(self.namespace)):
            # one user at a time, read in pages; a consolidation scope is (user, agent, category)
            groups: dict[tuple[Any, ...], list[tuple[MemoryRecord, np.ndarray | None]]] = {}
            ordered: dict[tuple[Any, ...], list[int]] = {}  # per scope, `Slots.ordered` rows (judged as read)
            after = None
            while True:
                page, after = yield ActivePage(self.namespace, user_id, model_id, after, CONSOLIDATION_PAGE)
                if page:
                    step(len(page))
                lives = self.scoring.live_table([record for record, _ in page], now)[0].tolist()
                for (record, vector), live in zip(page, lives):
                    if record.expire_at is not None and record.expire_at <= now:
                        if (yield from self._retire(record, {"archived_reason": "expired"})):
                            report.expired.append(record.memory_id)
                    elif self.scoring.decay and live < self.scoring.archive_below:
                        if (yield from self._retire(record, {"archived_reason": "decayed"})):
                            report.archived.append(record.memory_id)
                    else:
                        members = groups.setdefault((record.agent_id, record.category), [])
                        if Slots.ordered(self.judge, record):
                            ordered.setdefault((record.agent_id, record.category), []).append(len(members))
                        members.append((record, vector))
                        continue
                    step(CONSOLIDATION_STEPS - 1)
                if len(page) < CONSOLIDATION_PAGE:
                    break
            for key, members in groups.items():
                yield from self._consolidate_group(members, ordered.get(key, []), report, progress)
        return report

    def _retirement(self, record: MemoryRecord, reason: dict[str, Any], status: str = "archived") -> Update:
        """The update archiving `record` (compare-and-set on the version read)."""
        return Update(self.namespace, record.memory_id, {"status": status, "metadata": {**record.metadata, **reason}},
                      record.version, self.clock())

    def _retire(self, record: MemoryRecord, reason: dict[str, Any], status: str = "archived") -> Plan:
        try:
            yield self._retirement(record, reason, status)
        except (VersionConflictError, NotFoundError):
            return False
        return True

    def _consolidate_group(self, members: builtins.list[tuple[MemoryRecord, np.ndarray | None]],
                           ordered: builtins.list[int], report: ConsolidationReport,
                           progress: Callable[[int], None] | None) -> Plan:
        """Pass 1 folds near-duplicates into the oldest copy; pass 2 lets a newer statement supersede
        the most similar older one it contradicts. Each memory is compared only with those that can
        matter (`ScopeIndex`); the outcome is that of comparing every pair."""
        scope = ScopeIndex(members, ordered_rows=ordered, progress=progress, language=self.language)
        step = progress or (lambda done: None)
        kept: builtins.list[int] = []  # rows, oldest first
        kept_records: dict[int, MemoryRecord] = {}
        first_of_hash: dict[str, int] = {}
        for row in range(len(scope)):
            digest = content_hash(scope.records[row].content)
            keeper = first_of_hash.get(digest)
            for other, _ in scope.close_to(row, self.scoring.merge_similarity):
                if other in kept_records and (keeper is None or other < keeper) and \
                        same_facts(scope.records[other].content, scope.records[row].content):
                    keeper = other
            if keeper is None:
                kept.append(row)
                kept_records[row] = scope.records[row]
                first_of_hash.setdefault(digest, row)
                continue
            merged = yield from self._merge(kept_records[keeper], scope.records[row])
            if merged is not None:
                report.merged.setdefault(merged.memory_id, []).append(scope.records[row].memory_id)
                kept_records[keeper] = merged
            step(1)
        slots = Slots(scope, self.judge)
        for row in kept:
            record = kept_records[row]
            chosen = next((slot for sim, slot in slots.candidates(row, record)
                           if self.judge.supersedes(slots.records[slot], record, sim)), None)
            updated = None
            if chosen is not None:
                older = slots.records[chosen]
                updated = yield from self._supersede(older, record, scope.vectors[row])
                if updated is not None:
                    report.superseded[older.memory_id] = record.memory_id
                    slots.replace(chosen, row, updated)
            if updated is None:
                slots.add(row, record)
            step(1)

    def _merge(self, keeper: MemoryRecord, other: MemoryRecord) -> Plan:
        metadata = {**other.metadata, **keeper.metadata,
                    "merged_from": [*keeper.metadata.get("merged_from", []), other.memory_id]}
        entities = tuple(dict.fromkeys([*keeper.entities, *other.entities]))
        merge = Update(
            self.namespace, keeper.memory_id,
            {"metadata": metadata, "entities": entities, "importance": max(keeper.importance, other.importance),
             "access_count": keeper.access_count + other.access_count,
             "last_accessed_at": max((t for t in (keeper.last_accessed_at, other.last_accessed_at) if t),
                                     default=None)},
            keeper.version, self.clock())
        retire = self._retirement(other, {"archived_reason": "merged", "merged_into": keeper.memory_id})
        try:  # one transaction: the keeper takes the other's weight only if the other retires
            merged, _ = yield Batch(merge, retire)
        except (VersionConflictError, NotFoundError):
            return None
        return merged

    def _supersede(self, older: MemoryRecord, newer: MemoryRecord, vector: np.ndarray | None) -> Plan:
        """The older memory takes the newer truth (and its `vector`, if it has one of the store's
        model) as its next version; the newer copy retires."""
        # The newer truth holds from when it says, else from when it was said: that closes the older one's validity.
        metadata = {**older.metadata, **newer.metadata,
                    "superseded_content": [*older.metadata.get("superseded_content", []), older.content],
                    "superseded_by": newer.memory_id, "valid_from": valid_from(newer).isoformat()}
        metadata.pop("valid_to", None)
        if "valid_to" in newer.metadata:
            metadata["valid_to"] = newer.metadata["valid_to"]
        if vector is None and self.embedder is not None:
            raw = yield embed_op([newer.content])
            vector = as_matrix(raw, self.embedder.dimension)[0]
        supersede = Update(
            self.namespace, older.memory_id,
            {"content": newer.content, "metadata": metadata, "importance": max(older.importance, newer.importance),
             "source": newer.source, "entities": tuple(dict.fromkeys([*older.entities, *newer.entities]))},
            older.version, self.clock(), vector, self.embedder.model_id if self.embedder else None,
            content_hash(newer.content), terms(newer.content, language=self.language))
        retire = self._retirement(newer, {"archived_reason": "superseded", "merged_into": older.memory_id})
        try:  # one transaction: the older memory takes the newer truth only if the newer copy retires
            updated, _ = yield Batch(supersede, retire)
        except (VersionConflictError, NotFoundError):
            return None
        return updated

    # -- working memory -----------------------------------------------------------------------
    def _live_session(self, spec: SessionSpec) -> Plan:
        """The session's info, after dropping it if its TTL ran out. A session belongs to the user
        who opened it: a handle of another user gets SessionOwnerError (a handle without a user,
        or a session opened without one, has no owner to check)."""
        info: SessionInfo | None = yield SessionLookup(self.namespace, spec.session_id)
        if info is not None and spec.user_id is not None and info.user_id is not None and info.user_id != spec.user_id:
            raise SessionOwnerError(f"session {spec.session_id!r} belongs to another user, not {spec.user_id!r}")
        if info is not None and info.expire_at is not None and info.expire_at <= self.clock():
            yield SessionDelete(self.namespace, spec.session_id)
            return None
        return info

    def session_add(self, spec: SessionSpec, messages: Sequence[Message]) -> Plan:
        checked = []
        now = self.clock()
        for message in _sequence(messages, "messages"):
            message = _as_message(message)
            self._label(message.role, "role")
            if not isinstance(message.content, str):
                raise InvalidInput("message content must be a string")
            if "\x00" in message.content:  # PostgreSQL text cannot hold it; refuse it everywhere alike
                raise InvalidInput("message content contains a NUL character")
            _encodable(message.content, "message content")
            if len(message.content) > self.max_content_chars:
                raise ContentTooLargeError(f"message has {len(message.content)} characters; the limit is "
                                           f"{self.max_content_chars}")
            if message.created_at is None:
                message = message.replace(created_at=now)
            checked.append((message, self.message_tokens(message)))
        info = yield from self._live_session(spec)
        expire = now + spec.ttl if spec.ttl is not None else None
        writes: builtins.list[StorageOp] = [
            SessionTouch(self.namespace, spec.session_id, spec.user_id, spec.agent_id, now, expire),
            SessionAppend(self.namespace, spec.session_id, checked)]
        if spec.max_tokens is not None:
            writes += yield from self._fit_window(spec, info, checked)
        # The window's read-modify-write: what it read (the session, its window) is read before, the
        # summarizer runs outside any transaction, and the writes are one batch, applied all-or-nothing.
        yield Batch(*writes)
        return [m for m, _ in checked]

    def message_tokens(self, message: Message) -> int:
        """What `message` takes of a session's `max_tokens`: the tokens of its role, name, content
        and tool calls by `token_counter`, and the chat format's framing."""
        return self.token_counter(_message_text(message)) + MESSAGE_FRAMING_TOKENS

    def _fit_window(self, spec: SessionSpec, info: SessionInfo | None,
                    added: builtins.list[tuple[Message, int]]) -> Plan:
        """The writes (summary, eviction) that bring the window with `added` under `max_tokens`."""
        assert spec.max_tokens is not None
        stored = yield SessionMessages(self.namespace, spec.session_id, True)
        window = [*stored, *added]
        summary = info.summary if info else None
        total = sum(t for _, t in window)
        if summary:  # read back as a system message ahead of the window
            total += self.message_tokens(Message(role="system", content=summary))
        writes: builtins.list[StorageOp] = []
        if total <= spec.max_tokens:
            return writes
        overflow: builtins.list[Message] = []
        movable = max(0, len(window) - spec.keep_last)
        for message, tokens in window[:movable]:
            if total <= spec.max_tokens:
                break
            overflow.append(message)
            total -= tokens
        if not overflow:
            return writes
        if spec.overflow == "summarize":
            new_summary = None
            if self.summarizer is not None:
                new_summary = yield _call(self.summarizer.summarize, summary, overflow)
            if not new_summary or not keeps_numbers(summary, overflow, new_summary):
                new_summary = raw_summary(summary, overflow)
            writes.append(SessionSetSummary(self.namespace, spec.session_id, new_summary))
        writes.append(SessionEvict(self.namespace, spec.session_id, [m.message_id for m in overflow]))
        return writes

    def session_messages(self, spec: SessionSpec, window_only: bool = True) -> Plan:
        info = yield from self._live_session(spec)
        if info is None:
            return []
        rows = yield SessionMessages(self.namespace, spec.session_id, window_only)
        messages = [m for m, _ in rows]
        if window_only and info.summary:
            messages.insert(0, Message(role="system", content=info.summary, metadata={"polymem_summary": True},
                                       message_id=f"summary-{spec.session_id}", created_at=info.updated_at))
        return messages

    def session_summary(self, spec: SessionSpec) -> Plan:
        info = yield from self._live_session(spec)
        return info.summary if info else None

    def session_forget(self, spec: SessionSpec, message_ids: Sequence[str]) -> Plan:
        ids = _ids(message_ids)
        yield from self._live_session(spec)
        return (yield SessionForget(self.namespace, spec.session_id, ids))

    def session_evict(self, spec: SessionSpec, message_ids: Sequence[str]) -> Plan:
        ids = _ids(message_ids)
        yield from self._live_session(spec)
        return (yield SessionEvict(self.namespace, spec.session_id, ids))

    def session_delete(self, spec: SessionSpec) -> Plan:
        yield from self._live_session(spec)
        return (yield SessionDelete(self.namespace, spec.session_id))

    def session_replace(self, spec: SessionSpec, messages: Sequence[Message]) -> Plan:
        messages = [_as_message(m) for m in _sequence(messages, "messages")]
        yield from self._live_session(spec)
        current = yield SessionMessages(self.namespace, spec.session_id, True)
        keep_ids = {m.message_id for m in messages}
        stored_ids = {m.message_id for m, _ in current}
        current_order = [m.message_id for m, _ in current]
        wanted_existing = [m.message_id for m in messages if m.message_id in stored_ids]
        # Kept messages must stay in stored order and come before new ones; otherwise rewrite the window.
        in_order = [i for i in current_order if i in keep_ids] == wanted_existing and \
            all(m.message_id in stored_ids for m in messages[: len(wanted_existing)])
        if in_order:
            evict = [i for i in current_order if i not in keep_ids]
            fresh = [m for m in messages if m.message_id not in stored_ids]
        else:  # order changed: retire the whole window and append the new one
            evict = current_order
            fresh = [m.replace(message_id=new_id()) if m.message_id in stored_ids else m for m in messages]
        yield SessionEvict(self.namespace, spec.session_id, evict)
        if fresh:
            yield from self.session_add(spec, fresh)
        else:
            yield SessionTouch(self.namespace, spec.session_id, spec.user_id, spec.agent_id,
                               self.clock(), None if spec.ttl is None else self.clock() + spec.ttl)

    def session_clear(self, spec: SessionSpec) -> Plan:
        yield from self._live_session(spec)
        rows = yield SessionMessages(self.namespace, spec.session_id, True)
        yield Batch(SessionEvict(self.namespace, spec.session_id, [m.message_id for m, _ in rows]),
                    SessionSetSummary(self.namespace, spec.session_id, None))

    def session_end(self, spec: SessionSpec, consolidate: bool) -> Plan:
        insert: Insert | None = None
        info = yield from self._live_session(spec)
        if consolidate and info is not None:
            messages = yield from self.session_messages(spec, window_only=False)
            if messages:
                insert = yield from self._extract(messages, user_id=spec.user_id or info.user_id,
                                                  agent_id=spec.agent_id, session_id=spec.session_id)
        delete = SessionDelete(self.namespace, spec.session_id)
        if insert is None:
            yield delete
            return []
        # Extract and delete as one batch: one transaction where records and sessions share a store
        # (SQLite, PostgreSQL). With sessions in Redis, the transport saves the memories first, then
        # deletes the session: a failure in between leaves the session, and ending it again saves
        # nothing twice (a save of the same content in the same scope returns the stored memory).
        results, _ = yield Batch(insert, delete)
        return [record for record, _ in results]

    def session_info(self, spec: SessionSpec) -> Plan:
        return (yield from self._live_session(spec))


@dataclass(slots=True)
class _Ranked:
    """A hit while recall ranks it, with `RecallHit`'s fields: its memory is the search's bare
    candidate until the first k are fetched (`Engine._first_fetched`), and the steps that score it
    anew (calibration, context, time) change it in place. A recall makes ~100 of them: a frozen
    `RecallHit` takes 3x as long to make."""

    memory: MemoryRecord | Candidate
    score: float
    relevance: float
    similarity: float | None
    text_rank: float | None
    live_score: float
    explanation: dict[str, Any] | None = None

    def rescore(self, score: float, relevance: float) -> None:
        self.score, self.relevance = score, relevance


_Hit = TypeVar("_Hit", RecallHit, _Ranked)


_by_score = attrgetter("score")


def in_hit_order(hits: builtins.list[_Hit]) -> builtins.list[_Hit]:
    """`hits` sorted in `hit_order`, in place: by their scores alone unless two are equal (a
    recall's ~30 hits: making `hit_order`'s key for each took ~3x the sort)."""
    if len({hit.score for hit in hits}) == len(hits):
        hits.sort(key=_by_score, reverse=True)
    else:
        hits.sort(key=hit_order)
    return hits


def hit_order(hit: RecallHit | _Ranked) -> tuple[float, datetime, str]:
    """Recall's order: best score first; among equals, the older memory."""
    return order_key(hit.score, hit.memory, hit.memory.memory_id)


def order_key(score: float, memory: Any, memory_id: str) -> tuple[float, datetime, str]:
    """`hit_order` of a memory (a record, or what scoring reads of one) scored `score`."""
    return -score, memory.created_at, memory_id


def merge_by_score(rankings: Sequence[Sequence[_Hit]]) -> tuple[builtins.list[_Hit], dict[str, int]]:
    """The hits of several queries' rankings (each as `rank` gives it: every memory once, in
    `hit_order`) as one ranking: each memory once, with its best score (on a tie, the earlier
    query's), in `hit_order` — never a set union, which loses the order. Also which ranking
    (its index) each memory's hit came from."""
    if len(rankings) == 1:  # nothing to merge
        return builtins.list(rankings[0]), {hit.memory.memory_id: 0 for hit in rankings[0]}
    best: dict[str, tuple[_Hit, int]] = {}
    for index, ranking in enumerate(rankings):
        for hit in ranking:
            key = hit.memory.memory_id
            if key not in best or hit.score > best[key][0].score:
                best[key] = (hit, index)
    merged = in_hit_order([hit for hit, _ in best.values()])
    return merged, {key: index for key, (_, index) in best.items()}


def _rescored(hit: RecallHit, score: float, relevance: float) -> RecallHit:
    """`hit` scored anew: made directly (`dataclasses.replace` takes 5x as long)."""
    return RecallHit(hit.memory, score, relevance, hit.similarity, hit.text_rank, hit.live_score, hit.explanation)


def _with_records(hits: builtins.list[_Ranked], stand_ins: set[str],
                  records: dict[str, MemoryRecord]) -> builtins.list[_Ranked]:
    """The hits, those carrying a bare candidate in `stand_ins` given their fetched record (left
    out where none was found: the memory went since the search)."""
    if not stand_ins:
        return hits
    kept = []
    for hit in hits:
        if (memory_id := hit.memory.memory_id) in stand_ins:
            if memory_id not in records:
                continue
            hit.memory = records[memory_id]
        kept.append(hit)
    return kept


def _unit_scores(scores: Any, count: int) -> builtins.list[float]:
    """A reranker's answer checked: `count` finite numbers in [0, 1]."""
    if not isinstance(scores, (builtins.list, tuple)) and not hasattr(scores, "tolist"):
        raise TypeError(f"rerank returned {type(scores).__name__}, not a list of numbers")
    values = builtins.list(scores.tolist() if hasattr(scores, "tolist") else scores)
    if len(values) != count:
        raise ValueError(f"rerank returned {len(values)} scores for {count} texts")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0.0 <= v <= 1.0
               for v in values):
        raise ValueError(f"rerank scores must be numbers in [0, 1] (a cross-encoder's logits through a sigmoid), "
                         f"got {values[:5]!r}")
    return [float(v) for v in values]


def _with_validity(metadata: Any, valid_from: datetime | None, valid_to: datetime | None) -> Any:
    """`metadata` with the validity given (ISO-8601 `valid_from`/`valid_to`); anything but a dict
    is left for the metadata check to refuse."""
    validity = {key: require_aware(value, key).isoformat()
                for key, value in (("valid_from", valid_from), ("valid_to", valid_to)) if value is not None}
    if validity and isinstance(metadata, dict):
        return {**metadata, **validity}
    return validity if validity and metadata is None else metadata


def _bounded(filter: dict[str, Any] | None, field: str, at: datetime) -> dict[str, Any]:
    """`filter` restricted to the memories whose time `field` is at or before `at` (a caller's
    own upper bound on it kept: the stricter of the two)."""
    given = (filter or {}).get(field)
    bounds: dict[str, Any] = {"$eq": given}
    if given is None:
        bounds = {}
    elif isinstance(given, dict) and given and all(isinstance(k, str) and k.startswith("$") for k in given):
        bounds = dict(given)
    bound = bounds.get("$lte")
    if isinstance(bound, str):
        bound = from_iso(bound, field)
    if isinstance(bound, datetime):
        at = min(at, require_aware(bound, field))
    return {**(filter or {}), field: {**bounds, "$lte": at}}


def valid_from(record: MemoryRecord) -> datetime:
    """When the memory's fact began to hold in the world: its `valid_from` (metadata, ISO-8601),
    else when it was stated (a first version's creation, a later version's writing)."""
    declared = _metadata_time(record, "valid_from")
    if declared is not None:
        return declared
    return record.created_at if record.version == 1 else record.updated_at


def valid_to(record: MemoryRecord) -> datetime | None:
    """When the memory's fact stopped holding (its `valid_to`), or None: it still holds."""
    return _metadata_time(record, "valid_to")


def _metadata_time(record: MemoryRecord, key: str) -> datetime | None:
    value = record.metadata.get(key)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _without_sources(filter: dict[str, Any] | None, blocked: Any) -> dict[str, Any] | None:
    """A search filter that leaves blocked sources out (unless it names sources itself: then the
    read guard withholds them from what it finds)."""
    if not blocked or (filter and "source" in filter):
        return filter
    return {**(filter or {}), "source": {"$nin": sorted(blocked)}}


def _sequence(value: Any, what: str) -> builtins.list[Any]:
    """A list or tuple argument (a string or a dict is a mistake, not a sequence of items)."""
    if not isinstance(value, (builtins.list, tuple)):
        raise InvalidInput(f"{what} must be a list, got {type(value).__name__}")
    return builtins.list(value)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    items = () if value is None else tuple(_sequence(value, what))
    for item in items:
        if not isinstance(item, str) or "\x00" in item:
            raise InvalidInput(f"{what} must be strings without NUL characters, got {item!r}")
        _encodable(item, what)
    return items


def _ids(value: Any) -> builtins.list[str]:
    """Message ids: a list of strings."""
    return builtins.list(_strings(value, "message_ids"))


def check_label(value: Any, what: str, optional: bool = False) -> Any:
    """A name (user, agent, category…): a non-empty string of storable text; None where optional."""
    return Engine._label(value, what, optional)


def _encodable(text: str, what: str) -> None:
    """Text every backend can store: UTF-8 (a lone surrogate is not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode text (it holds a lone surrogate)") from None


_NEGATION = re.compile(r"\b(not|no|never|don't|doesn't|didn't|isn't|aren't|won't|can't|dislike|hate)\b|不|没",
                       re.IGNORECASE)


def same_facts(a: str, b: str) -> bool:
    """Near-duplicates may merge only if they state the same numbers and the same negations
    ("meeting at 3pm" and "meeting at 4pm" embed alike but are different facts)."""
    return numbers_with_units(a) == numbers_with_units(b) and \
        set(_NEGATION.findall(a.casefold())) == set(_NEGATION.findall(b.casefold()))


def _as_message(value: Any) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, dict):
        try:
            return Message.from_dict(value)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput(f"not a message: {exc!r} in {value!r:.200}") from None
    raise InvalidInput(f"expected a polymem Message or dict, got {type(value).__name__}")


# A chat prompt frames every message (OpenAI's accounting: 3 tokens beside its role, name and
# content; LangChain's count_tokens_approximately adds the same 3).
MESSAGE_FRAMING_TOKENS = 3


def _message_text(message: Message) -> str:
    calls = " ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
    speaker = f"{message.role} {message.name}" if message.name else message.role
    return f"{speaker}: {message.content} {calls}".strip()


def _tool_call(value: Any) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), str) and isinstance(value.get("name"), str):
        return ToolCall.from_dict(value)
    raise InvalidInput(f"a tool call must be a polymem ToolCall or a dict with an 'id' and a 'name', got {value!r}")


def make_message(role: str, content: str, *, name: str | None = None, tool_calls: Sequence[Any] | None = None,
                 tool_call_id: str | None = None, parts: Sequence[dict[str, Any]] | None = None,
                 metadata: dict[str, Any] | None = None) -> Message:
    """Build a validated Message from `Session.add` arguments."""
    if not isinstance(content, str):
        raise InvalidInput("message content must be a string")
    calls = tuple(_tool_call(c) for c in tool_calls or ())
    return Message(role=role, content=content, name=name, tool_calls=calls, tool_call_id=tool_call_id,
                   parts=tuple(parts or ()), metadata=check_metadata(metadata))


def keeps_numbers(previous: str | None, replaced: Sequence[Message], summary: str) -> bool:
    """True when `summary` still holds every number (with its unit) of what it replaces."""
    source = " ".join([previous or "", *(m.content for m in replaced)])
    wanted = numbers_with_units(source)
    have = numbers_with_units(summary)
    have_values = {h.split(" ")[0] for h in have}
    for item in wanted:
        value, _, unit = item.partition(" ")
        if item in have:
            continue
        if not unit and value in have_values:
            continue
        if unit and value in have_values and unit.casefold() in summary.casefold():
            continue
        return False
    return True


def raw_summary(previous: str | None, replaced: Sequence[Message]) -> str:
    """The lossless fallback: earlier summary plus the replaced messages verbatim."""
    lines = [previous] if previous else []
    lines.extend(f"{m.role}{f' ({m.name})' if m.name else ''}: {m.content}" for m in replaced if m.content.strip())
    return "\n".join(lines)
