"""What plugs into polymem: small Protocols, so the core never imports a framework."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._models import MemoryDraft, MemoryRecord, Message


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension.

    `model_id` names the vector space: vectors of two different ids are never
    compared. `dimension` is read from the model, never hard-coded.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Summarizer(Protocol):
    """Folds messages that leave a working-memory window into a running summary.

    polymem checks the result: a summary that drops a number or unit of what
    it replaces is discarded in favour of the raw text.
    """

    def summarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str: ...


@runtime_checkable
class Extractor(Protocol):
    """Distils a conversation into long-term memory drafts (an LLM or rules)."""

    def extract(self, messages: Sequence[Message]) -> list[MemoryDraft]: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a message costs in a window."""

    def __call__(self, text: str) -> int: ...


@runtime_checkable
class ContradictionJudge(Protocol):
    """Decides whether `newer` supersedes `older` (same scope, related content)."""

    def supersedes(self, older: MemoryRecord, newer: MemoryRecord, similarity: float) -> bool: ...


@runtime_checkable
class IndexableJudge(ContradictionJudge, Protocol):
    """A judge that says which pairs it could ever accept, so consolidation asks it about those
    alone instead of every pair of a scope: `newer` may supersede `older` only if both have the
    same non-None `slot`, or if their cosine is at least `similarity_floor(newer)` (None: never)."""

    def slot(self, record: MemoryRecord) -> str | None: ...

    def similarity_floor(self, newer: MemoryRecord) -> float | None: ...


@runtime_checkable
class Reranker(Protocol):
    """Rescores recall's best candidates: one relevance in [0, 1] per text, higher is better.

    Given to `polymem.open(..., reranker=...)`, it sees the `rerank_top` best candidates of
    each recall, and its relevance replaces theirs (a cross-encoder's logits go through a
    sigmoid first). `ChatReranker` asks a chat model; an `arerank` coroutine of the same
    signature, where defined, is what an `AsyncMemory` awaits."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


@runtime_checkable
class QueryRewriter(Protocol):
    """Writes other phrasings of a recall query (an LLM): at most `count`, without the query itself.

    Given to `polymem.open(..., query_rewriter=...)`; recall searches the query and its
    variants and keeps each memory's best score. `ChatQueryRewriter` asks a chat model;
    an `arewrite` coroutine, where defined, is what an `AsyncMemory` awaits."""

    def rewrite(self, query: str, count: int) -> list[str]: ...
