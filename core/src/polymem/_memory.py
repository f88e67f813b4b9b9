"""`Memory` and `AsyncMemory`: one store class (and its async form) over transports, and `open()`."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlparse

from . import operations as ops
from ._backend import AnySessionStore, AsyncBackend, Backend
from ._embedders import data_dir, resolve_embedder
from ._engine import DEFAULT_MAX_CONTENT_CHARS, Engine, RuleContradictionJudge, make_message
from ._errors import InvalidInput, InvalidURLError
from ._extract import ExtractiveSummarizer, RuleExtractor
from ._guard import Classifier, RuleClassifier, WritePolicy
from ._local import LocalTransport
from ._models import Message
from ._plan import Plan, adrive, drive
from ._protocols import ContradictionJudge, Embedder, Extractor, QueryRewriter, Reranker, Summarizer, TokenCounter
from ._scoring import ScoringPolicy
from ._surface import AsyncOperation, AsyncSessionOperation, SyncOperation, SyncSessionOperation, Transport
from ._text import approx_token_count, check_language
from ._time import Clock, checked_clock, utc_now
from .operations import Operation, SessionSpec

R = TypeVar("R")
OperationPlan = Plan[Operation[Any], R]
"""A generator yielding operations of the table, receiving their results, returning R."""

# Scheme → "module:factory". Other distributions add theirs through the
# `polymem.backends` entry point group.
BACKENDS: dict[str, str] = {
    "sqlite": "polymem._sqlite:SQLiteBackend",
    "memory": "polymem._sqlite:SQLiteBackend",
    "postgresql": "polymem._postgres:PostgresBackend",
    "postgres": "polymem._postgres:PostgresBackend",
}
# Natively async twins (psycopg's async connections, redis.asyncio): no thread hopping.
ASYNC_BACKENDS: dict[str, str] = {
    "postgresql": "polymem._postgres_async:AsyncPostgresBackend",
    "postgres": "polymem._postgres_async:AsyncPostgresBackend",
}
WORKING_MEMORY: dict[str, tuple[str, str]] = {
    "redis": ("polymem._redis:RedisWorkingMemory", "polymem._redis:AsyncRedisWorkingMemory"),
    "rediss": ("polymem._redis:RedisWorkingMemory", "polymem._redis:AsyncRedisWorkingMemory"),
    "unix": ("polymem._redis:RedisWorkingMemory", "polymem._redis:AsyncRedisWorkingMemory"),
}


def default_url() -> str:
    """`POLYMEM_URL`, else an SQLite file in the user's data folder."""
    return os.environ.get("POLYMEM_URL") or f"sqlite:///{data_dir() / 'memory.db'}"


def with_namespace(url: str, namespace: str) -> str:
    """`url` carrying a non-default namespace as `?namespace=…`."""
    if namespace == "default":
        return url
    return f"{url}{'&' if '?' in url else '?'}namespace={quote(namespace, safe='')}"


def split_option(url: str, option: str = "namespace") -> tuple[str, str | None]:
    """Take `namespace=…` (or another `option`) out of a URL's query: (url without it, its value or None)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    pairs = parse_qsl(query, keep_blank_values=True)
    value = next((v for k, v in pairs if k == option), None)
    rest = urlencode([(k, v) for k, v in pairs if k != option])
    return (f"{base}?{rest}" if rest else base), value


def _load_factory(spec: str) -> Callable[..., Any]:
    import importlib

    module, _, name = spec.partition(":")
    return cast(Callable[..., Any], getattr(importlib.import_module(module), name))


def make_session_store(url: str, *, asynchronous: bool = False) -> AnySessionStore:
    """Open a working memory of its own (`redis://…`), for `working_memory=`."""
    scheme = urlparse(url).scheme
    if scheme not in WORKING_MEMORY:
        raise InvalidURLError(f"working_memory must be a redis:// URL, got {url!r}")
    return cast(AnySessionStore, _load_factory(WORKING_MEMORY[scheme][1 if asynchronous else 0])(url))


def make_backend(url: str, *, asynchronous: bool = False) -> Backend | AsyncBackend:
    """Open the storage a URL names: `sqlite:///path`, `memory://`, or a plug-in scheme
    (`?language=` names the language of its full text for every scheme)."""
    check_url(url)
    parsed = urlparse(url)
    scheme = parsed.scheme.split("+")[0]
    if scheme == "memory":
        from ._sqlite import SQLiteBackend

        name, language = split_option(url, "language")
        return SQLiteBackend(None, memory_name=unquote(name[len("memory://"):]).strip("/"), language=language)
    if scheme == "sqlite":
        # As SQLAlchemy: sqlite:///relative/file.db, sqlite:////absolute/file.db
        location, _, query = url.partition("?")
        path = unquote(location[len("sqlite:///"):]) if location.startswith("sqlite:///") else ""
        if not path.strip("/"):
            raise InvalidURLError(f"{url!r} names no file; use sqlite:///relative/file.db or sqlite:////abs/file.db")
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = sorted(set(options) - {"mode", "durability", "language"})
        if unknown or options.get("mode", "ro") != "ro":
            raise InvalidURLError(f"{url!r}: an sqlite URL takes ?mode=ro, ?durability=normal|full and "
                                  f"?language=, not {unknown or options}")
        from ._sqlite import SQLiteBackend

        return SQLiteBackend(Path(path), read_only="mode" in options,
                             durability=options.get("durability", "normal"), language=options.get("language"))
    spec = (ASYNC_BACKENDS.get(scheme) if asynchronous else None) or BACKENDS.get(scheme) or _entry_point(scheme)
    if spec is None:
        raise _unknown_scheme(url)
    return cast(Backend, _load_factory(spec)(url))


def _unknown_scheme(url: str) -> InvalidURLError:
    schemes = sorted({*BACKENDS, "http", "https", *(ep.name for ep in _backend_entry_points())})
    return InvalidURLError(f"no store for {url!r}: the URL schemes are {', '.join(s + '://' for s in schemes)}")


def check_url(url: str) -> None:
    """Reject a URL no store can open, before anything slow (loading the embedding model) happens."""
    if not isinstance(url, str) or "://" not in url:
        raise InvalidURLError(f"not a store URL: {url!r} (try sqlite:///path/memory.db or memory://)")
    scheme = urlparse(url).scheme.split("+")[0]
    if scheme not in BACKENDS and scheme not in ("http", "https") and _entry_point(scheme) is None:
        raise _unknown_scheme(url)


def _backend_entry_points() -> Any:
    from importlib.metadata import entry_points

    return entry_points(group="polymem.backends")


def _entry_point(scheme: str) -> str | None:
    for ep in _backend_entry_points():
        if ep.name == scheme:
            return str(ep.value)
    return None


def _engine(namespace: str, embedder: Any, clock: Clock | None, scoring: ScoringPolicy | None,
            extractor: Extractor | None, summarizer: Summarizer | None, token_counter: TokenCounter | None,
            judge: ContradictionJudge | None, max_content_chars: int, classifier: Any = "rules",
            write_policy: WritePolicy | None = None, reranker: Reranker | None = None,
            query_rewriter: QueryRewriter | None = None) -> Engine:
    policy = scoring or ScoringPolicy()
    if classifier == "rules":
        classifier = RuleClassifier()
    elif classifier is not None and not isinstance(classifier, Classifier):
        raise InvalidInput(f"classifier must be 'rules', None or a polymem.Classifier, got {classifier!r}")
    return Engine(
        namespace=namespace, embedder=resolve_embedder(embedder),
        clock=checked_clock(clock) if clock is not None else utc_now, scoring=policy,
        extractor=extractor or RuleExtractor(), summarizer=summarizer or ExtractiveSummarizer(),
        token_counter=token_counter or approx_token_count,
        judge=judge or RuleContradictionJudge(min_similarity=policy.contradiction_similarity),
        max_content_chars=max_content_chars, classifier=classifier, write_policy=write_policy,
        reranker=reranker, query_rewriter=query_rewriter,
    )


class _Store:
    """What both store classes share: the transport and what it tells about the store."""

    _transport: Transport

    def __init__(self, transport: Transport | Backend, engine: Engine | None = None) -> None:
        """Over a transport; `(backend, engine)` is short for `LocalTransport(backend, engine)`."""
        if engine is not None:
            transport = LocalTransport(cast(Backend, transport), engine)
        self._transport = cast(Transport, transport)

    @property
    def url(self) -> str:
        """Connection descriptor (no secrets): `polymem.open(mem.url)` reopens this store and namespace."""
        return self._transport.url

    @property
    def namespace(self) -> str:
        return self._transport.namespace

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use, or None in lexical-only mode."""
        return self._transport.embedder

    @property
    def closed(self) -> bool:
        return self._transport.closed

    @property
    def transport(self) -> Transport:
        """What carries the operations: `LocalTransport` (the engine) or `HttpTransport`."""
        return self._transport

    @property
    def backend(self) -> Backend:
        """The storage backend (embedded stores only)."""
        return self._transport.local().backend

    @property
    def engine(self) -> Engine:
        """The memory engine (embedded stores only)."""
        return self._transport.local().engine

    def now(self) -> datetime:
        """The store's clock (aware UTC)."""
        return self._transport.now()


class Memory(_Store):
    """A polymem store, synchronous. Open one with `polymem.open()`.

    Every method comes from the operation table (`polymem.operations`); what is
    underneath (the local engine, or HTTP to `polymem serve`) is the transport.
    """

    def execute(self, op: Operation[R]) -> R:
        """Run one operation of the table."""
        return self._transport.execute(op)

    def run(self, plan: OperationPlan[R]) -> R:
        """Run a plan: a generator that yields operations of the table and receives their results.

        Code written once as a plan runs the same here and on `await AsyncMemory.run(plan)`:
        `hits = yield ops.Recall.bind("tea", user_id="ann")`."""
        return drive(plan, self.execute)

    save = SyncOperation(ops.Save)
    save_many = SyncOperation(ops.SaveMany)
    recall = SyncOperation(ops.Recall)
    nearest = SyncOperation(ops.Nearest)
    vectors = SyncOperation(ops.Vectors)
    get = SyncOperation(ops.Get)
    get_by_key = SyncOperation(ops.GetByKey)
    list = SyncOperation(ops.ListMemories)
    distinct = SyncOperation(ops.Distinct)
    put = SyncOperation(ops.Put)
    update = SyncOperation(ops.Update)
    set_status = SyncOperation(ops.SetStatus)
    delete = SyncOperation(ops.Delete)
    purge = SyncOperation(ops.Purge)
    history = SyncOperation(ops.History)
    ingest = SyncOperation(ops.Ingest)
    consolidate = SyncOperation(ops.Consolidate)
    reembed = SyncOperation(ops.Reembed)
    export_snapshot = SyncOperation(ops.ExportSnapshot)
    import_snapshot = SyncOperation(ops.ImportSnapshot)
    stats = SyncOperation(ops.Stats)
    flush = SyncOperation(ops.Flush)
    sessions = SyncOperation(ops.Sessions)
    block_source = SyncOperation(ops.BlockSource)
    unblock_source = SyncOperation(ops.UnblockSource)
    blocked_sources = SyncOperation(ops.BlockedSources)
    release = SyncOperation(ops.Release)
    audit_replay = SyncOperation(ops.AuditReplay)
    audit_log = SyncOperation(ops.AuditEntries)

    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> Session:
        """A working-memory session handle (created on first write)."""
        return Session(self, SessionSpec.of(session_id, user_id=user_id, agent_id=agent_id, max_tokens=max_tokens,
                                            ttl=ttl, overflow=overflow, keep_last=keep_last))

    def to_sync(self) -> Memory:
        """This store (the sync form of a store is itself)."""
        return self

    def to_async(self) -> AsyncMemory:
        """An `AsyncMemory` over the same open store (for a framework's async code path)."""
        return AsyncMemory(self._transport)

    def close(self) -> None:
        """Flush bookkeeping and release the store."""
        self._transport.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncMemory(_Store):
    """A polymem store with awaitable methods. Open one with `polymem.open_async()`.

    Each step of an embedded store's plan runs in a worker thread (or natively, for
    an async backend), so the event loop never blocks on SQLite or on the embedding model.
    """

    async def execute(self, op: Operation[R]) -> R:
        """Run one operation of the table."""
        return await self._transport.aexecute(op)

    async def run(self, plan: OperationPlan[R]) -> R:
        """Run a plan (see `Memory.run`), awaiting each operation it yields."""
        return await adrive(plan, self.execute)

    save = AsyncOperation(ops.Save)
    save_many = AsyncOperation(ops.SaveMany)
    recall = AsyncOperation(ops.Recall)
    nearest = AsyncOperation(ops.Nearest)
    vectors = AsyncOperation(ops.Vectors)
    get = AsyncOperation(ops.Get)
    get_by_key = AsyncOperation(ops.GetByKey)
    list = AsyncOperation(ops.ListMemories)
    distinct = AsyncOperation(ops.Distinct)
    put = AsyncOperation(ops.Put)
    update = AsyncOperation(ops.Update)
    set_status = AsyncOperation(ops.SetStatus)
    delete = AsyncOperation(ops.Delete)
    purge = AsyncOperation(ops.Purge)
    history = AsyncOperation(ops.History)
    ingest = AsyncOperation(ops.Ingest)
    consolidate = AsyncOperation(ops.Consolidate)
    reembed = AsyncOperation(ops.Reembed)
    export_snapshot = AsyncOperation(ops.ExportSnapshot)
    import_snapshot = AsyncOperation(ops.ImportSnapshot)
    stats = AsyncOperation(ops.Stats)
    flush = AsyncOperation(ops.Flush)
    sessions = AsyncOperation(ops.Sessions)
    block_source = AsyncOperation(ops.BlockSource)
    unblock_source = AsyncOperation(ops.UnblockSource)
    blocked_sources = AsyncOperation(ops.BlockedSources)
    release = AsyncOperation(ops.Release)
    audit_replay = AsyncOperation(ops.AuditReplay)
    audit_log = AsyncOperation(ops.AuditEntries)

    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> AsyncSession:
        """A working-memory session handle (created on first write)."""
        return AsyncSession(self, SessionSpec.of(session_id, user_id=user_id, agent_id=agent_id,
                                                 max_tokens=max_tokens, ttl=ttl, overflow=overflow,
                                                 keep_last=keep_last))

    def to_sync(self) -> Memory:
        """A synchronous `Memory` on the same data (for a framework's sync code path)."""
        return Memory(self._transport.sync_twin())

    def to_async(self) -> AsyncMemory:
        """This store (the async form of a store is itself)."""
        return self

    async def close(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Session:
    """One conversation's working memory: a token-bounded window over its transcript."""

    def __init__(self, memory: Memory, spec: SessionSpec) -> None:
        self.memory = memory
        self.spec = spec

    def execute(self, op: Operation[R]) -> R:
        return self.memory.execute(op)

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    def add(self, role: str, content: str, *, name: str | None = None, tool_calls: Sequence[Any] | None = None,
            tool_call_id: str | None = None, parts: Sequence[dict[str, Any]] | None = None,
            metadata: dict[str, Any] | None = None) -> Message:
        """Append a message; the window then sheds (or summarises) its oldest part if over budget."""
        message = make_message(role, content, name=name, tool_calls=tool_calls, tool_call_id=tool_call_id,
                               parts=parts, metadata=metadata)
        return self.add_messages([message])[0]

    add_messages = SyncSessionOperation(ops.SessionAdd)
    messages = SyncSessionOperation(ops.SessionMessages)
    transcript = SyncSessionOperation(ops.SessionTranscript)
    get_summary = SyncSessionOperation(ops.SessionSummary)
    evict = SyncSessionOperation(ops.SessionEvict)
    forget = SyncSessionOperation(ops.SessionForget)
    replace = SyncSessionOperation(ops.SessionReplace)
    clear = SyncSessionOperation(ops.SessionClear)
    end = SyncSessionOperation(ops.SessionEnd)
    delete = SyncSessionOperation(ops.SessionDelete)
    info = SyncSessionOperation(ops.SessionInfoOp)

    @property
    def summary(self) -> str | None:
        """The running summary of what left the window (`get_summary()`)."""
        return self.get_summary()


class AsyncSession:
    """`Session` with awaitable methods (`summary` is awaitable too)."""

    def __init__(self, memory: AsyncMemory, spec: SessionSpec) -> None:
        self.memory = memory
        self.spec = spec

    async def execute(self, op: Operation[R]) -> R:
        return await self.memory.execute(op)

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    async def add(self, role: str, content: str, *, name: str | None = None, tool_calls: Sequence[Any] | None = None,
                  tool_call_id: str | None = None, parts: Sequence[dict[str, Any]] | None = None,
                  metadata: dict[str, Any] | None = None) -> Message:
        """Append a message; the window then sheds (or summarises) its oldest part if over budget."""
        message = make_message(role, content, name=name, tool_calls=tool_calls, tool_call_id=tool_call_id,
                               parts=parts, metadata=metadata)
        return (await self.add_messages([message]))[0]

    add_messages = AsyncSessionOperation(ops.SessionAdd)
    messages = AsyncSessionOperation(ops.SessionMessages)
    transcript = AsyncSessionOperation(ops.SessionTranscript)
    get_summary = AsyncSessionOperation(ops.SessionSummary)
    evict = AsyncSessionOperation(ops.SessionEvict)
    forget = AsyncSessionOperation(ops.SessionForget)
    replace = AsyncSessionOperation(ops.SessionReplace)
    clear = AsyncSessionOperation(ops.SessionClear)
    end = AsyncSessionOperation(ops.SessionEnd)
    delete = AsyncSessionOperation(ops.SessionDelete)
    info = AsyncSessionOperation(ops.SessionInfoOp)

    @property
    def summary(self) -> Awaitable[str | None]:
        """The running summary of what left the window: `await session.summary`."""
        return self.get_summary()


def open(  # noqa: A001 - the public name is polymem.open
    url: str | None = None, *, embedder: Any = "auto", clock: Clock | None = None, namespace: str = "default",
    scoring: ScoringPolicy | None = None, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None, judge: ContradictionJudge | None = None,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS, token: str | None = None, working_memory: str | None = None,
    classifier: Classifier | str | None = "rules", write_policy: WritePolicy | None = None,
    reranker: Reranker | None = None, query_rewriter: QueryRewriter | None = None, language: str | None = None,
) -> Memory:
    """Open a store: `sqlite:///path.db` (default: a file in the user's data dir;
    `POLYMEM_URL` overrides), `memory://`, `http(s)://host:port` (a `polymem serve` service;
    `token=` or `POLYMEM_TOKEN`), `postgresql://…` (`pip install polymem[postgres]`), or a
    plug-in scheme. `working_memory="redis://…"` keeps sessions in Redis (several service
    instances then share them). A memory, message or query longer than `max_content_chars`
    (default 4,000,000) raises `ContentTooLargeError`; anything shorter is stored whole.
    instances then share them). `classifier` judges every write and read against memory
    poisoning ("rules": `RuleClassifier`; None: no filter; or your own `Classifier`);
    `write_policy` says what a flagged write becomes (`WritePolicy`). A `reranker` rescores
    each recall's best candidates and a `query_rewriter` adds variants of its query
    (`ChatReranker`, `ChatQueryRewriter`, or the adapters' on their framework's model).
    `language` (or `?language=` in the URL: "german", "fr", ... any of `polymem.LANGUAGES`) is
    the one the store's full text is stemmed in; a new store is English, an existing one keeps
    the language it was indexed in unless another is named (then it is re-indexed).

    >>> import polymem
    >>> with polymem.open("memory://", embedder=None) as mem:
    ...     _ = mem.save("I like blue", user_id="ann", category="preference")
    ...     [h.memory.content for h in mem.recall("blue", user_id="ann")]
    ['I like blue']
    """
    return Memory(_transport(url, False, embedder=embedder, clock=clock, namespace=namespace, scoring=scoring,
                             extractor=extractor, summarizer=summarizer, token_counter=token_counter, judge=judge,
                             max_content_chars=max_content_chars, token=token, working_memory=working_memory,
                             classifier=classifier, write_policy=write_policy, reranker=reranker,
                             query_rewriter=query_rewriter, language=language))


def open_async(
    url: str | None = None, *, embedder: Any = "auto", clock: Clock | None = None, namespace: str = "default",
    scoring: ScoringPolicy | None = None, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None, judge: ContradictionJudge | None = None,
    max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS, token: str | None = None, working_memory: str | None = None,
    classifier: Classifier | str | None = "rules", write_policy: WritePolicy | None = None,
    reranker: Reranker | None = None, query_rewriter: QueryRewriter | None = None, language: str | None = None,
) -> AsyncMemory:
    """`open()` for asyncio code: the same store, with awaitable methods."""
    return AsyncMemory(_transport(url, True, embedder=embedder, clock=clock, namespace=namespace, scoring=scoring,
                                  extractor=extractor, summarizer=summarizer, token_counter=token_counter, judge=judge,
                                  max_content_chars=max_content_chars, token=token, working_memory=working_memory,
                                  classifier=classifier, write_policy=write_policy, reranker=reranker,
                                  query_rewriter=query_rewriter, language=language))


def _transport(url: str | None, asynchronous: bool, *, embedder: Any, clock: Clock | None, namespace: str,
               scoring: ScoringPolicy | None, extractor: Extractor | None, summarizer: Summarizer | None,
               token_counter: TokenCounter | None, judge: ContradictionJudge | None, max_content_chars: int,
               token: str | None, working_memory: str | None, classifier: Any = "rules",
               write_policy: WritePolicy | None = None, reranker: Reranker | None = None,
               query_rewriter: QueryRewriter | None = None, language: str | None = None) -> Transport:
    """What carries a store's operations: HTTP to a service, or the engine over a backend."""
    url, from_url = split_option(url or default_url())
    namespace = from_url if from_url and namespace == "default" else namespace
    check_url(url)
    if _is_http(url):
        configured = {"clock": clock, "scoring": scoring, "extractor": extractor, "summarizer": summarizer,
                      "token_counter": token_counter, "judge": judge, "working_memory": working_memory,
                      "write_policy": write_policy, "classifier": None if classifier == "rules" else classifier,
                      "reranker": reranker, "query_rewriter": query_rewriter, "language": language}
        # `embedder` is ignored: whether this process would load a model does not matter to a remote store.
        ignored = sorted(k for k, v in configured.items() if v is not None)
        if ignored:
            raise InvalidInput(f"{sorted(ignored)} are configured on the server (`polymem serve`), not in the client")
        from ._http import HttpTransport

        return HttpTransport(url, token, namespace=None if namespace == "default" else namespace,
                             asynchronous=asynchronous)
    engine = _engine(namespace, embedder, clock, scoring, extractor, summarizer, token_counter, judge,
                     max_content_chars, classifier, write_policy, reranker, query_rewriter)
    if language is not None:  # the backends read it from the URL, as their other options
        url, _ = split_option(url, "language")
        url = f"{url}{'&' if '?' in url else '?'}{urlencode({'language': check_language(language)})}"
    backend = make_backend(url, asynchronous=asynchronous)
    try:
        sessions = None if working_memory is None else make_session_store(working_memory, asynchronous=asynchronous)
    except BaseException:
        backend.close()
        raise
    return LocalTransport(backend, engine, sessions)


def _is_http(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https")
