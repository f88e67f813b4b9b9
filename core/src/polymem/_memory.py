"""`Memory` and `AsyncMemory`: two small drivers over the same plans, and `open()`."""

from __future__ import annotations

import asyncio
import builtins
import inspect
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlparse

from ._backend import Backend
from ._embedders import data_dir, resolve_embedder
from ._engine import Engine, Op, Plan, RuleContradictionJudge, SessionSpec, make_message
from ._errors import InvalidInput, InvalidURLError, StoreClosedError
from ._extract import ExtractiveSummarizer, RuleExtractor
from ._models import ConsolidationReport, ImportReport, MemoryDraft, MemoryRecord, Message, RecallHit, SessionInfo
from ._protocols import ContradictionJudge, Embedder, Extractor, Summarizer, TokenCounter
from ._scoring import ScoringPolicy
from ._snapshot import export_plan, import_plan
from ._text import approx_token_count
from ._time import Clock, checked_clock, utc_now

Progress = Callable[[int], None]

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


def split_namespace(url: str) -> tuple[str, str | None]:
    """Take `namespace=…` out of a URL's query: (url without it, namespace or None)."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    pairs = parse_qsl(query, keep_blank_values=True)
    namespace = next((v for k, v in pairs if k == "namespace"), None)
    rest = urlencode([(k, v) for k, v in pairs if k != "namespace"])
    return (f"{base}?{rest}" if rest else base), namespace


def _load_factory(spec: str) -> Callable[..., Any]:
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def make_backend(url: str, *, asynchronous: bool = False, working_memory: str | None = None) -> Backend:
    """Open the storage a URL names, optionally with working memory elsewhere (`redis://…`)."""
    backend = _long_term_backend(url, asynchronous)
    if working_memory is None:
        return backend
    scheme = urlparse(working_memory).scheme
    if scheme not in WORKING_MEMORY:
        raise InvalidURLError(f"working_memory must be a redis:// URL, got {working_memory!r}")
    from ._redis import CompositeBackend

    working = _load_factory(WORKING_MEMORY[scheme][1 if asynchronous else 0])(working_memory)
    return CompositeBackend(backend, working)  # type: ignore[return-value]


def _long_term_backend(url: str, asynchronous: bool) -> Backend:
    """Open the storage a URL names: `sqlite:///path`, `memory://`, or a plug-in scheme."""
    if not isinstance(url, str) or "://" not in url:
        raise InvalidURLError(f"not a store URL: {url!r} (try sqlite:///path/memory.db or memory://)")
    parsed = urlparse(url)
    scheme = parsed.scheme.split("+")[0]
    if scheme == "memory":
        from ._sqlite import SQLiteBackend

        return SQLiteBackend(None, memory_name=unquote(url[len("memory://"):]).strip("/"))
    if scheme == "sqlite":
        # As SQLAlchemy: sqlite:///relative/file.db, sqlite:////absolute/file.db
        path = unquote(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else ""
        if not path.strip("/"):
            raise InvalidURLError(f"{url!r} names no file; use sqlite:///relative/file.db or sqlite:////abs/file.db")
        from ._sqlite import SQLiteBackend

        return SQLiteBackend(Path(path))
    spec = (ASYNC_BACKENDS.get(scheme) if asynchronous else None) or BACKENDS.get(scheme) or _entry_point(scheme)
    if spec is None:
        hint = {"http": "server", "https": "server"}.get(scheme)
        extra = f" Install it with `pip install polymem[{hint}]`." if hint else ""
        raise InvalidURLError(f"no backend for {scheme!r} URLs.{extra}")
    return _load_factory(spec)(url)  # type: ignore[no-any-return]


def _entry_point(scheme: str) -> str | None:
    from importlib.metadata import entry_points

    for ep in entry_points(group="polymem.backends"):
        if ep.name == scheme:
            return str(ep.value)
    return None


def _engine(namespace: str, embedder: Any, clock: Clock | None, scoring: ScoringPolicy | None,
            extractor: Extractor | None, summarizer: Summarizer | None, token_counter: TokenCounter | None,
            judge: ContradictionJudge | None, max_content_chars: int) -> Engine:
    policy = scoring or ScoringPolicy()
    return Engine(
        namespace=namespace, embedder=resolve_embedder(embedder),
        clock=checked_clock(clock) if clock is not None else utc_now, scoring=policy,
        extractor=extractor or RuleExtractor(), summarizer=summarizer or ExtractiveSummarizer(),
        token_counter=token_counter or approx_token_count,
        judge=judge or RuleContradictionJudge(min_similarity=policy.contradiction_similarity),
        max_content_chars=max_content_chars,
    )


def _spec(session_id: str, user_id: str | None, agent_id: str | None, max_tokens: int | None,
          ttl: timedelta | float | None, overflow: str, keep_last: int) -> SessionSpec:
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput("session_id must be a non-empty string")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise InvalidInput("max_tokens must be a positive integer or None")
    if overflow not in ("drop", "summarize"):
        raise InvalidInput("overflow must be 'drop' or 'summarize'")
    if not isinstance(keep_last, int) or keep_last < 0:
        raise InvalidInput("keep_last must be an integer >= 0")
    if ttl is not None and not isinstance(ttl, timedelta):
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
            raise InvalidInput("ttl must be a timedelta or a number of seconds > 0")
        ttl = timedelta(seconds=ttl)
    return SessionSpec(session_id, user_id, agent_id, max_tokens, ttl, overflow, keep_last)


class _Base:
    """What both drivers share: configuration, not behaviour."""

    _engine: Engine
    _backend: Backend
    _closed: bool

    @property
    def url(self) -> str:
        """Connection descriptor (no secrets): `polymem.open(mem.url)` reopens this store and namespace."""
        return with_namespace(self._backend.url, self.namespace)

    @property
    def namespace(self) -> str:
        return self._engine.namespace

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use, or None in lexical-only mode."""
        return self._engine.embedder

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def engine(self) -> Engine:
        return self._engine

    def now(self) -> datetime:
        """The store's clock (aware UTC)."""
        return self._engine.clock()

    def _target(self, op: Op) -> Callable[..., Any]:
        if self._closed:
            raise StoreClosedError("the store is closed")
        if op.target == "backend":
            return getattr(self._backend, op.name)  # type: ignore[no-any-return]
        if op.target == "embed":
            assert self._engine.embedder is not None
            return self._engine.embedder.embed
        assert op.func is not None
        return op.func


class Memory(_Base):
    """A polymem store, synchronous. Open one with `polymem.open()`."""

    def __init__(self, backend: Backend, engine: Engine) -> None:
        self._backend = backend
        self._engine = engine
        self._closed = False

    def _run(self, plan: Plan) -> Any:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                send = self._target(op)(*op.args, **op.kwargs)
            except BaseException as exc:  # handed back to the plan, which may handle it
                error, send = exc, None

    # long-term memory
    def save(self, content: str, *, user_id: str | None, agent_id: str | None = None, session_id: str | None = None,
             category: str = "fact", source: str = "user_input", importance: float | None = None,
             entities: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
             expire_at: datetime | None = None, idempotency_key: str | None = None,
             vector: Sequence[float] | None = None) -> MemoryRecord:
        """Store one memory (idempotent by key, or by same content in the same scope)."""
        return self._run(self._engine.save(  # type: ignore[no-any-return]
            content, user_id=user_id, agent_id=agent_id, session_id=session_id, category=category, source=source,
            importance=importance, entities=entities, metadata=metadata, expire_at=expire_at,
            idempotency_key=idempotency_key, vector=vector))

    def save_many(self, drafts: Sequence[MemoryDraft], *, user_id: str | None, agent_id: str | None = None,
                  session_id: str | None = None, vectors: Sequence[Sequence[float]] | None = None,
                  idempotency_keys: Sequence[str | None] | None = None) -> builtins.list[MemoryRecord]:
        """Store many memories in one transaction (batched embedding)."""
        return self._run(self._engine.save_many(  # type: ignore[no-any-return]
            drafts, user_id=user_id, agent_id=agent_id, session_id=session_id, vectors=vectors,
            idempotency_keys=idempotency_keys))

    def recall(self, query: str, *, user_id: str | None, agent_id: str | None = None, top_k: int = 10,
               category: str | None = None, filter: dict[str, Any] | None = None,
               query_vector: Sequence[float] | None = None,
               min_relevance: float | None = None) -> builtins.list[RecallHit]:
        """The memories most relevant to `query`, best first (hybrid search × live score).

        `query_vector` replaces the query's embedding (same model and dimension as the store's);
        `min_relevance` drops hits less relevant than that, whatever their live score."""
        return self._run(self._engine.recall(  # type: ignore[no-any-return]
            query, user_id=user_id, agent_id=agent_id, top_k=top_k, category=category, filter=filter,
            query_vector=query_vector, min_relevance=min_relevance))

    def nearest(self, vector: Sequence[float], *, user_id: str | None, agent_id: str | None = None,
                top_k: int = 10, category: str | None = None,
                filter: dict[str, Any] | None = None) -> builtins.list[tuple[MemoryRecord, float]]:
        """Plain nearest neighbours of a vector by cosine (no scoring, no reinforcement)."""
        return self._run(self._engine.nearest(  # type: ignore[no-any-return]
            vector, user_id=user_id, agent_id=agent_id, top_k=top_k, category=category, filter=filter))

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, builtins.list[float]]:
        """The stored vectors (of the store's embedding model) of these memories."""
        return self._run(self._engine.vectors(memory_ids))  # type: ignore[no-any-return]

    def get(self, memory_id: str) -> MemoryRecord | None:
        """The current version of a memory, or None."""
        return self._run(self._engine.get(memory_id))  # type: ignore[no-any-return]

    def list(self, *, user_id: str | None = None, agent_id: str | None = None, category: str | None = None,
             filter: dict[str, Any] | None = None, status: str | None = "active", limit: int = 100,
             offset: int = 0) -> builtins.list[MemoryRecord]:
        """Exact lookup by scope and filter (no vector search), newest first."""
        return self._run(self._engine.list(  # type: ignore[no-any-return]
            user_id=user_id, agent_id=agent_id, category=category, filter=filter, status=status, limit=limit,
            offset=offset))

    def update(self, memory_id: str, *, content: str | None = None, category: str | None = None,
               importance: float | None = None, metadata: dict[str, Any] | None = None,
               expected_version: int | None = None, expire_at: datetime | None = None) -> MemoryRecord:
        """Write a new version; `expected_version` makes it a compare-and-set. Arguments left
        None are unchanged (`expire_at` sets a new expiry)."""
        return self._run(self._engine.update(  # type: ignore[no-any-return]
            memory_id, content=content, category=category, importance=importance, metadata=metadata,
            expected_version=expected_version, expire_at=expire_at))

    def delete(self, memory_id: str) -> bool:
        """Remove a memory and its history; False if there was none."""
        return self._run(self._engine.delete(memory_id))  # type: ignore[no-any-return]

    def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        """Every version of a memory, oldest first."""
        return self._run(self._engine.history(memory_id))  # type: ignore[no-any-return]

    def ingest(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None = None,
               session_id: str | None = None) -> builtins.list[MemoryRecord]:
        """Distil messages into long-term memories through the store's extractor."""
        return self._run(self._engine.ingest(  # type: ignore[no-any-return]
            messages, user_id=user_id, agent_id=agent_id, session_id=session_id))

    def consolidate(self, progress: Progress | None = None) -> ConsolidationReport:
        """Expire, archive the decayed, merge near-duplicates, supersede contradictions.

        On a shared backend (PostgreSQL, Redis) it runs under the namespace's consolidation
        lock, so two instances never consolidate at once."""
        lock = getattr(self._backend, "consolidation_lock", None)
        with lock(self.namespace) if lock is not None else nullcontext():
            return self._run(self._engine.consolidate(progress))  # type: ignore[no-any-return]

    def reembed(self, progress: Progress | None = None) -> int:
        """Re-embed every memory whose vector is missing or from another model."""
        return self._run(self._engine.reembed(progress))  # type: ignore[no-any-return]

    def export_snapshot(self, target: str | Path | IO[bytes], *, user_id: str | None = None,
                        progress: Progress | None = None) -> int:
        """Write a JSONL snapshot; returns the number of memories written."""
        return self._run(export_plan(self._engine, target, user_id, progress))  # type: ignore[no-any-return]

    def import_snapshot(self, source: str | Path | IO[bytes], progress: Progress | None = None) -> ImportReport:
        """Import a snapshot whole (validated first; one transaction); duplicates are skipped."""
        return self._run(import_plan(self._engine, source, progress))  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        """Counts by status, category and embedding model."""
        return self._backend.stats(self.namespace)

    def flush(self) -> None:
        """Wait for background bookkeeping (recall reinforcement) to be written."""
        self._backend.flush()

    # working memory
    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> Session:
        """A working-memory session handle (created on first write)."""
        return Session(self, _spec(session_id, user_id, agent_id, max_tokens, ttl, overflow, keep_last))

    def sessions(self, *, user_id: str | None = None) -> builtins.list[SessionInfo]:
        """The working-memory sessions of the namespace (optionally of one user)."""
        return self._backend.session_list(self.namespace, user_id)

    def close(self) -> None:
        """Flush bookkeeping and release the store."""
        if not self._closed:
            self._backend.close()
            self._closed = True

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Session:
    """One conversation's working memory: a token-bounded window over its transcript."""

    def __init__(self, memory: Memory, spec: SessionSpec) -> None:
        self._memory = memory
        self.spec = spec

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

    def add_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        return self._memory._run(self._memory.engine.session_add(self.spec, messages))  # type: ignore[no-any-return]

    def messages(self) -> builtins.list[Message]:
        """The window, oldest first; a running summary comes first as a system message."""
        return self._memory._run(self._memory.engine.session_messages(self.spec))  # type: ignore[no-any-return]

    def transcript(self) -> builtins.list[Message]:
        """Every message of the session, including those out of the window."""
        return self._memory._run(self._memory.engine.session_messages(self.spec, False))  # type: ignore[no-any-return]

    @property
    def summary(self) -> str | None:
        return self._memory._run(self._memory.engine.session_summary(self.spec))  # type: ignore[no-any-return]

    def forget(self, message_ids: Sequence[str]) -> int:
        """Delete messages from the session for good (window and transcript)."""
        return self._memory._run(self._memory.engine.session_forget(self.spec, message_ids))  # type: ignore[no-any-return]

    def evict(self, message_ids: Sequence[str]) -> int:
        """Take messages out of the window; the transcript keeps them."""
        return self._memory._run(self._memory.engine.session_evict(self.spec, message_ids))  # type: ignore[no-any-return]

    def replace(self, messages: Sequence[Message]) -> None:
        """Make the window exactly `messages` (the transcript keeps what leaves)."""
        self._memory._run(self._memory.engine.session_replace(self.spec, messages))

    def clear(self) -> None:
        """Empty the window and the summary; the transcript stays until `end()`/`delete()`."""
        self._memory._run(self._memory.engine.session_clear(self.spec))

    def end(self, consolidate: bool = True) -> builtins.list[MemoryRecord]:
        """Close the session: distil it into long-term memories (or just discard it)."""
        return self._memory._run(self._memory.engine.session_end(self.spec, consolidate))  # type: ignore[no-any-return]

    def delete(self) -> bool:
        return self._memory.backend.session_delete(self._memory.namespace, self.session_id)

    def info(self) -> SessionInfo | None:
        return self._memory._run(self._memory.engine.session_info(self.spec))  # type: ignore[no-any-return]


class AsyncMemory(_Base):
    """A polymem store with awaitable methods. Open one with `polymem.open_async()`.

    Each step of a plan runs in a worker thread (or natively, for an async backend),
    so the event loop never blocks on SQLite or on the embedding model.
    """

    def __init__(self, backend: Backend, engine: Engine) -> None:
        self._backend = backend
        self._engine = engine
        self._closed = False

    @staticmethod
    async def _call(method: Callable[..., Any], *args: Any) -> Any:
        """A backend method: awaited natively if it is a coroutine, else run in a worker thread."""
        if inspect.iscoroutinefunction(method):
            return await method(*args)
        return await asyncio.to_thread(method, *args)

    async def _run(self, plan: Plan) -> Any:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                target = self._target(op)
                if op.target == "call":  # a plug-in's async twin (aextract, asummarize…) runs on this loop
                    twin = getattr(getattr(target, "__self__", None), "a" + getattr(target, "__name__", ""), None)
                    target = twin if inspect.iscoroutinefunction(twin) else target
                if inspect.iscoroutinefunction(target):
                    send = await target(*op.args, **op.kwargs)
                else:
                    send = await asyncio.to_thread(target, *op.args, **op.kwargs)
            except BaseException as exc:
                error, send = exc, None

    async def save(self, content: str, *, user_id: str | None, agent_id: str | None = None,
                   session_id: str | None = None, category: str = "fact", source: str = "user_input",
                   importance: float | None = None, entities: Sequence[str] | None = None,
                   metadata: dict[str, Any] | None = None, expire_at: datetime | None = None,
                   idempotency_key: str | None = None, vector: Sequence[float] | None = None) -> MemoryRecord:
        """Store one memory (idempotent by key, or by same content in the same scope)."""
        return await self._run(self._engine.save(  # type: ignore[no-any-return]
            content, user_id=user_id, agent_id=agent_id, session_id=session_id, category=category, source=source,
            importance=importance, entities=entities, metadata=metadata, expire_at=expire_at,
            idempotency_key=idempotency_key, vector=vector))

    async def save_many(self, drafts: Sequence[MemoryDraft], *, user_id: str | None, agent_id: str | None = None,
                        session_id: str | None = None,
                        vectors: Sequence[Sequence[float]] | None = None,
                        idempotency_keys: Sequence[str | None] | None = None) -> builtins.list[MemoryRecord]:
        return await self._run(self._engine.save_many(  # type: ignore[no-any-return]
            drafts, user_id=user_id, agent_id=agent_id, session_id=session_id, vectors=vectors,
            idempotency_keys=idempotency_keys))

    async def recall(self, query: str, *, user_id: str | None, agent_id: str | None = None, top_k: int = 10,
                     category: str | None = None, filter: dict[str, Any] | None = None,
                     query_vector: Sequence[float] | None = None,
                     min_relevance: float | None = None) -> builtins.list[RecallHit]:
        return await self._run(self._engine.recall(  # type: ignore[no-any-return]
            query, user_id=user_id, agent_id=agent_id, top_k=top_k, category=category, filter=filter,
            query_vector=query_vector, min_relevance=min_relevance))

    async def nearest(self, vector: Sequence[float], *, user_id: str | None, agent_id: str | None = None,
                      top_k: int = 10, category: str | None = None,
                      filter: dict[str, Any] | None = None) -> builtins.list[tuple[MemoryRecord, float]]:
        return await self._run(self._engine.nearest(  # type: ignore[no-any-return]
            vector, user_id=user_id, agent_id=agent_id, top_k=top_k, category=category, filter=filter))

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, builtins.list[float]]:
        return await self._run(self._engine.vectors(memory_ids))  # type: ignore[no-any-return]

    async def get(self, memory_id: str) -> MemoryRecord | None:
        return await self._run(self._engine.get(memory_id))  # type: ignore[no-any-return]

    async def list(self, *, user_id: str | None = None, agent_id: str | None = None, category: str | None = None,
                   filter: dict[str, Any] | None = None, status: str | None = "active", limit: int = 100,
                   offset: int = 0) -> builtins.list[MemoryRecord]:
        return await self._run(self._engine.list(  # type: ignore[no-any-return]
            user_id=user_id, agent_id=agent_id, category=category, filter=filter, status=status, limit=limit,
            offset=offset))

    async def update(self, memory_id: str, *, content: str | None = None, category: str | None = None,
                     importance: float | None = None, metadata: dict[str, Any] | None = None,
                     expected_version: int | None = None, expire_at: datetime | None = None) -> MemoryRecord:
        return await self._run(self._engine.update(  # type: ignore[no-any-return]
            memory_id, content=content, category=category, importance=importance, metadata=metadata,
            expected_version=expected_version, expire_at=expire_at))

    async def delete(self, memory_id: str) -> bool:
        return await self._run(self._engine.delete(memory_id))  # type: ignore[no-any-return]

    async def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        return await self._run(self._engine.history(memory_id))  # type: ignore[no-any-return]

    async def ingest(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None = None,
                     session_id: str | None = None) -> builtins.list[MemoryRecord]:
        return await self._run(self._engine.ingest(  # type: ignore[no-any-return]
            messages, user_id=user_id, agent_id=agent_id, session_id=session_id))

    async def consolidate(self, progress: Progress | None = None) -> ConsolidationReport:
        lock = getattr(self._backend, "consolidation_lock", None)
        if lock is None:
            return await self._run(self._engine.consolidate(progress))  # type: ignore[no-any-return]
        held = lock(self.namespace)
        if hasattr(held, "__aenter__"):
            async with held:
                return await self._run(self._engine.consolidate(progress))  # type: ignore[no-any-return]
        with held:
            return await self._run(self._engine.consolidate(progress))  # type: ignore[no-any-return]

    async def reembed(self, progress: Progress | None = None) -> int:
        return await self._run(self._engine.reembed(progress))  # type: ignore[no-any-return]

    async def export_snapshot(self, target: str | Path | IO[bytes], *, user_id: str | None = None,
                              progress: Progress | None = None) -> int:
        return await self._run(export_plan(self._engine, target, user_id, progress))  # type: ignore[no-any-return]

    async def import_snapshot(self, source: str | Path | IO[bytes],
                              progress: Progress | None = None) -> ImportReport:
        return await self._run(import_plan(self._engine, source, progress))  # type: ignore[no-any-return]

    async def stats(self) -> dict[str, Any]:
        return await self._call(self._backend.stats, self.namespace)  # type: ignore[no-any-return]

    async def flush(self) -> None:
        await self._call(self._backend.flush)

    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> AsyncSession:
        return AsyncSession(self, _spec(session_id, user_id, agent_id, max_tokens, ttl, overflow, keep_last))

    async def sessions(self, *, user_id: str | None = None) -> builtins.list[SessionInfo]:
        return await self._call(self._backend.session_list, self.namespace, user_id)  # type: ignore[no-any-return]

    async def close(self) -> None:
        if not self._closed:
            await self._call(self._backend.close)
            self._closed = True

    def to_sync(self) -> Memory:
        """A synchronous `Memory` over the same open store (for a framework's sync code path)."""
        return Memory(self._backend, self._engine)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncSession:
    """`Session` with awaitable methods."""

    def __init__(self, memory: AsyncMemory, spec: SessionSpec) -> None:
        self._memory = memory
        self.spec = spec

    @property
    def session_id(self) -> str:
        return self.spec.session_id

    async def add(self, role: str, content: str, *, name: str | None = None, tool_calls: Sequence[Any] | None = None,
                  tool_call_id: str | None = None, parts: Sequence[dict[str, Any]] | None = None,
                  metadata: dict[str, Any] | None = None) -> Message:
        message = make_message(role, content, name=name, tool_calls=tool_calls, tool_call_id=tool_call_id,
                               parts=parts, metadata=metadata)
        return (await self.add_messages([message]))[0]

    async def add_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        return await self._memory._run(self._memory.engine.session_add(self.spec, messages))  # type: ignore[no-any-return]

    async def messages(self) -> builtins.list[Message]:
        return await self._memory._run(self._memory.engine.session_messages(self.spec))  # type: ignore[no-any-return]

    async def transcript(self) -> builtins.list[Message]:
        return await self._memory._run(self._memory.engine.session_messages(self.spec, False))  # type: ignore[no-any-return]

    async def get_summary(self) -> str | None:
        return await self._memory._run(self._memory.engine.session_summary(self.spec))  # type: ignore[no-any-return]

    async def forget(self, message_ids: Sequence[str]) -> int:
        return await self._memory._run(self._memory.engine.session_forget(self.spec, message_ids))  # type: ignore[no-any-return]

    async def evict(self, message_ids: Sequence[str]) -> int:
        return await self._memory._run(self._memory.engine.session_evict(self.spec, message_ids))  # type: ignore[no-any-return]

    async def replace(self, messages: Sequence[Message]) -> None:
        await self._memory._run(self._memory.engine.session_replace(self.spec, messages))

    async def clear(self) -> None:
        await self._memory._run(self._memory.engine.session_clear(self.spec))

    async def end(self, consolidate: bool = True) -> builtins.list[MemoryRecord]:
        return await self._memory._run(self._memory.engine.session_end(self.spec, consolidate))  # type: ignore[no-any-return]

    async def delete(self) -> bool:
        return await self._memory._call(  # type: ignore[no-any-return]
            self._memory.backend.session_delete, self._memory.namespace, self.session_id)

    async def info(self) -> SessionInfo | None:
        return await self._memory._run(self._memory.engine.session_info(self.spec))  # type: ignore[no-any-return]


def open(  # noqa: A001 - the public name is polymem.open
    url: str | None = None, *, embedder: Any = "auto", clock: Clock | None = None, namespace: str = "default",
    scoring: ScoringPolicy | None = None, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None, judge: ContradictionJudge | None = None,
    max_content_chars: int = 8000, token: str | None = None, working_memory: str | None = None,
) -> Memory:
    """Open a store: `sqlite:///path.db` (default: a file in the user's data dir;
    `POLYMEM_URL` overrides), `memory://`, `http(s)://host:port` (a `polymem serve` service;
    `token=` or `POLYMEM_TOKEN`), `postgresql://…` (`pip install polymem[postgres]`), or a
    plug-in scheme. `working_memory="redis://…"` keeps sessions in Redis (several service
    instances then share them).

    >>> import polymem
    >>> with polymem.open("memory://", embedder=None) as mem:
    ...     _ = mem.save("I like blue", user_id="ann", category="preference")
    ...     [h.memory.content for h in mem.recall("blue", user_id="ann")]
    ['I like blue']
    """
    url, from_url = split_namespace(url or default_url())
    namespace = from_url if from_url and namespace == "default" else namespace
    if _is_http(url):
        from .client import open_http

        # The client has exactly Memory's interface; scoring and models live in the service.
        return open_http(url, token=token, **_remote_namespace(namespace))  # type: ignore[return-value]
    engine = _engine(namespace, embedder, clock, scoring, extractor, summarizer, token_counter, judge,
                     max_content_chars)
    return Memory(make_backend(url, working_memory=working_memory), engine)


def open_async(
    url: str | None = None, *, embedder: Any = "auto", clock: Clock | None = None, namespace: str = "default",
    scoring: ScoringPolicy | None = None, extractor: Extractor | None = None, summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None, judge: ContradictionJudge | None = None,
    max_content_chars: int = 8000, token: str | None = None, working_memory: str | None = None,
) -> AsyncMemory:
    """`open()` for asyncio code: the same store, with awaitable methods."""
    url, from_url = split_namespace(url or default_url())
    namespace = from_url if from_url and namespace == "default" else namespace
    if _is_http(url):
        from .client import open_http_async

        return open_http_async(url, token=token, **_remote_namespace(namespace))  # type: ignore[return-value]
    engine = _engine(namespace, embedder, clock, scoring, extractor, summarizer, token_counter, judge,
                     max_content_chars)
    return AsyncMemory(make_backend(url, asynchronous=True, working_memory=working_memory), engine)


def _is_http(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https")


def _remote_namespace(namespace: str) -> dict[str, str]:
    return {} if namespace == "default" else {"namespace": namespace}
