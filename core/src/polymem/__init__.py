"""polymem: one memory for every agent framework.

A framework-neutral memory core — records scored with half-life decay, hybrid
recall, working memory, consolidation — on an embedded SQLite file by default.

>>> import polymem
>>> with polymem.open("memory://", embedder=None) as mem:
...     rec = mem.save("My favourite colour is blue", user_id="ann", category="preference")
...     [hit.memory.content for hit in mem.recall("favourite colour", user_id="ann")]
['My favourite colour is blue']

See docs/api.md for the whole API.
"""

from . import operations
from ._chat import ChatExtractor, ChatSummarizer
from ._embedders import HttpEmbedder, OnnxEmbedder, SentenceTransformerEmbedder, default_embedder
from ._engine import RuleContradictionJudge
from ._errors import (
    ContentRejectedError,
    ContentTooLargeError,
    DimensionMismatchError,
    EmptyContentError,
    InvalidFilterError,
    InvalidInput,
    InvalidURLError,
    LockTimeoutError,
    MissingDependencyError,
    ModelAnswerError,
    NaiveDatetimeError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    PolymemError,
    ReadOnlyStoreError,
    ReembedRequiredError,
    SessionOwnerError,
    SnapshotError,
    SourceBlockedError,
    StoreClosedError,
    StoreUnreadableError,
    VersionConflictError,
)
from ._extract import ExtractiveSummarizer, RuleExtractor
from ._guard import Classifier, RuleClassifier, Verdict, WritePolicy
from ._loop import LoopThread
from ._memory import AsyncMemory, AsyncSession, Memory, Session, open, open_async
from ._models import (
    ConsolidationReport,
    ImportReport,
    MemoryDraft,
    MemoryRecord,
    Message,
    NearestResult,
    RecallHit,
    RecallResult,
    SessionInfo,
    ToolCall,
)
from ._protocols import ContradictionJudge, Embedder, Extractor, QueryRewriter, Reranker, Summarizer, TokenCounter
from ._render import render_memories
from ._rerank import AsyncChatModel, ChatModel, ChatQueryRewriter, ChatReranker
from ._scoring import ScoringPolicy, maximal_marginal_relevance
from ._text import LANGUAGES, approx_token_count

__version__ = "0.1.0"

__all__ = [
    "AsyncChatModel",
    "AsyncMemory",
    "AsyncSession",
    "ChatExtractor",
    "ChatModel",
    "ChatQueryRewriter",
    "ChatReranker",
    "ChatSummarizer",
    "Classifier",
    "ConsolidationReport",
    "ContentRejectedError",
    "ContentTooLargeError",
    "ContradictionJudge",
    "DimensionMismatchError",
    "Embedder",
    "EmptyContentError",
    "ExtractiveSummarizer",
    "Extractor",
    "HttpEmbedder",
    "ImportReport",
    "InvalidFilterError",
    "InvalidInput",
    "InvalidURLError",
    "LANGUAGES",
    "LockTimeoutError",
    "LoopThread",
    "Memory",
    "MemoryDraft",
    "MemoryRecord",
    "Message",
    "MissingDependencyError",
    "ModelAnswerError",
    "NaiveDatetimeError",
    "NearestResult",
    "NotFoundError",
    "NotSupportedError",
    "OnnxEmbedder",
    "PermissionDeniedError",
    "PolymemError",
    "QueryRewriter",
    "ReadOnlyStoreError",
    "RecallHit",
    "RecallResult",
    "ReembedRequiredError",
    "Reranker",
    "RuleClassifier",
    "RuleContradictionJudge",
    "RuleExtractor",
    "ScoringPolicy",
    "SentenceTransformerEmbedder",
    "Session",
    "SessionInfo",
    "SessionOwnerError",
    "SnapshotError",
    "SourceBlockedError",
    "StoreClosedError",
    "StoreUnreadableError",
    "Summarizer",
    "TokenCounter",
    "ToolCall",
    "Verdict",
    "VersionConflictError",
    "WritePolicy",
    "__version__",
    "approx_token_count",
    "default_embedder",
    "maximal_marginal_relevance",
    "open",
    "open_async",
    "operations",
    "render_memories",
]
