"""The polymem HTTP client: the embedded store's Python interface, over the service.

    import polymem.client
    mem = polymem.client.open_http("http://127.0.0.1:8080", token="pm_…")
    mem.save("I like blue", user_id="ann", category="preference")
    [h.memory.content for h in mem.recall("favourite colour", user_id="ann")]

`open_http` returns `HttpMemory` (the methods of `polymem.Memory`),
`open_http_async` returns `AsyncHttpMemory` (those of `polymem.AsyncMemory`).
Each operation is written once, as a plan that yields HTTP requests; the sync
and async clients only drive it (as the core drives its plans). Errors come
back as the same `PolymemError` subclasses the embedded store raises (the JSON
`code` picks the class). Retries happen only where they are safe: reads, and
saves (by idempotency key, or, without one, because the same content in the
same scope is the same memory). The token is sent as a bearer token and never
appears in `url`.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import time
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

import httpx

from ._errors import InvalidInput, PolymemError
from ._models import (
    ConsolidationReport,
    ImportReport,
    MemoryDraft,
    MemoryRecord,
    Message,
    RecallHit,
    SessionInfo,
)
from ._time import from_iso
from .server._errors import ServiceUnavailableError, error_type

__all__ = ["AsyncHttpMemory", "AsyncHttpSession", "HttpMemory", "HttpSession", "RecallResult", "RemoteEmbedder",
           "open_http", "open_http_async"]

RETRY_STATUSES = (502, 503, 504)


@dataclass
class _Req:
    """One HTTP exchange a plan asks for."""

    method: str
    path: str
    json: Any = None
    upload: Any = None              # bytes or a binary file: the raw body
    download: IO[bytes] | None = None  # stream the response body into this file
    retry: bool = False             # safe to send again after a failure
    missing_ok: bool = False        # a 404 answers None instead of raising
    headers: dict[str, str] = field(default_factory=dict)


Plan = Generator[_Req, Any, Any]


@dataclass(frozen=True)
class RemoteEmbedder:
    """The server's embedder (`model_id`, `dimension`); `embed()` asks the server (POST /v1/embed)."""

    model_id: str
    dimension: int
    _embed: Any = field(default=None, repr=False, compare=False)

    def embed(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        if self._embed is None:
            raise PolymemError("this client cannot call the server synchronously; await a method first")
        return self._embed(texts)  # type: ignore[no-any-return]


class RecallResult(builtins.list):  # type: ignore[type-arg]
    """The recalled hits (a list, best first) plus `withheld`: what the read guard kept back and why."""

    withheld: dict[str, Any]

    def __init__(self, hits: Sequence[RecallHit], withheld: dict[str, Any]) -> None:
        super().__init__(hits)
        self.withheld = withheld


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _encode(data: Any) -> bytes:
    try:
        return json.dumps(data, default=_default, ensure_ascii=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"cannot send this value: {exc}") from exc


def _hit(data: dict[str, Any]) -> RecallHit:
    parts = {k: data.pop(k) for k in ("score", "relevance", "similarity", "text_rank", "live_score")}
    return RecallHit(MemoryRecord.from_dict(data), **parts)


def _session_info(data: dict[str, Any]) -> SessionInfo:
    values = dict(data)
    for key in ("created_at", "updated_at", "expire_at"):
        values[key] = from_iso(values[key], key)
    return SessionInfo(**values)


def _raise_for(response: httpx.Response, body: bytes) -> None:
    try:
        error = json.loads(body)["error"]
        code, message = error.get("code"), error.get("message") or response.reason_phrase
    except (ValueError, KeyError, TypeError):
        code, message = None, body.decode("utf-8", "replace")[:500] or response.reason_phrase
    raise error_type(code, response.status_code)(message)


def _spec(session_id: str, user_id: str | None, agent_id: str | None, max_tokens: int | None,
          ttl: timedelta | float | None, overflow: str, keep_last: int) -> dict[str, Any]:
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput("session_id must be a non-empty string")
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    return {"session_id": session_id, "user_id": user_id, "agent_id": agent_id, "max_tokens": max_tokens,
            "ttl": seconds, "overflow": overflow, "keep_last": keep_last}


def _message(value: Any) -> dict[str, Any]:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, dict):
        return Message.from_dict(value).to_dict()
    raise InvalidInput(f"expected a polymem Message or dict, got {type(value).__name__}")


class _Plans:
    """Every operation of the client, once, as a plan of HTTP requests."""

    _url: str
    _namespace: str | None
    _info: dict[str, Any] | None

    # -- long-term memory ---------------------------------------------------------------------
    def _save(self, content: str, **fields: Any) -> Plan:
        if fields.get("vector") is not None:
            fields["vector"] = [float(x) for x in fields["vector"]]
        # Retrying is safe with or without a key: a keyless save of the same content in the same scope
        # returns the memory already stored.
        data = yield _Req("POST", "/v1/memory/save", {"content": content, **fields}, retry=True)
        return MemoryRecord.from_dict(data)

    def _save_many(self, drafts: Sequence[MemoryDraft], **scope: Any) -> Plan:
        vectors = scope.pop("vectors", None)
        keys = scope.pop("idempotency_keys", None)
        if vectors is not None and len(vectors) != len(drafts):
            raise InvalidInput("give one vector per memory")
        if keys is not None and len(keys) != len(drafts):
            raise InvalidInput("give one idempotency key (or None) per memory")
        out = []
        for n, draft in enumerate(drafts):
            rec = yield from self._save(draft.content, category=draft.category, source=draft.source,
                                        importance=draft.importance, entities=list(draft.entities),
                                        metadata=dict(draft.metadata), vector=None if vectors is None else vectors[n],
                                        idempotency_key=None if keys is None else keys[n], **scope)
            out.append(rec)
        return out

    def _recall(self, query: str, **fields: Any) -> Plan:
        if fields.get("query_vector") is not None:
            fields["query_vector"] = [float(x) for x in fields["query_vector"]]
        data = yield _Req("POST", "/v1/memory/recall", {"query": query, **fields}, retry=True)
        return RecallResult([_hit(h) for h in data["memories"]], data["withheld"])

    def _get(self, memory_id: str) -> Plan:
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInput("memory_id must be a non-empty string")
        data = yield _Req("GET", f"/v1/memories/{memory_id}", retry=True, missing_ok=True)
        return None if data is None else MemoryRecord.from_dict(data)

    def _list(self, **fields: Any) -> Plan:
        data = yield _Req("POST", "/v1/memory/list", fields, retry=True)
        return [MemoryRecord.from_dict(r) for r in data["memories"]]

    def _update(self, memory_id: str, **fields: Any) -> Plan:
        data = yield _Req("POST", "/v1/memory/update", {"memory_id": memory_id, **fields},
                          retry=fields.get("expected_version") is not None)
        return MemoryRecord.from_dict(data)

    def _delete(self, memory_id: str) -> Plan:
        return (yield _Req("POST", "/v1/memory/delete", {"memory_id": memory_id}, retry=True))["deleted"]

    def _history(self, memory_id: str) -> Plan:
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInput("memory_id must be a non-empty string")
        data = yield _Req("GET", f"/v1/memories/{memory_id}/history", retry=True)
        return [MemoryRecord.from_dict(r) for r in data["versions"]]

    def _ingest(self, messages: Sequence[Message], **scope: Any) -> Plan:
        data = yield _Req("POST", "/v1/memory/ingest", {"messages": [_message(m) for m in messages], **scope})
        return [MemoryRecord.from_dict(r) for r in data["memories"]]

    def _consolidate(self) -> Plan:
        data = yield _Req("POST", "/v1/memory/consolidate")
        return ConsolidationReport(**data)

    def _reembed(self) -> Plan:
        return (yield _Req("POST", "/v1/memory/reembed"))["count"]

    def _export(self, target: str | Path | IO[bytes], user_id: str | None) -> Plan:
        if isinstance(target, (str, Path)):
            with open(target, "wb") as handle:
                return (yield _Req("POST", "/v1/memory/export", {"user_id": user_id}, download=handle, retry=True))
        return (yield _Req("POST", "/v1/memory/export", {"user_id": user_id}, download=target, retry=True))

    def _import(self, source: str | Path | IO[bytes]) -> Plan:
        if isinstance(source, (str, Path)):
            with open(source, "rb") as handle:
                data = yield _Req("POST", "/v1/memory/import", upload=handle)
        else:
            data = yield _Req("POST", "/v1/memory/import", upload=source)
        data["skipped"] = [tuple(item) for item in data["skipped"]]
        return ImportReport(**data)

    def _stats(self) -> Plan:
        return (yield _Req("GET", "/v1/stats", retry=True))

    def _flush(self) -> Plan:
        yield _Req("POST", "/v1/memory/flush", retry=True)

    def _nearest(self, vector: Sequence[float], **fields: Any) -> Plan:
        data = yield _Req("POST", "/v1/memory/nearest", {"vector": [float(x) for x in vector], **fields}, retry=True)
        return [(MemoryRecord.from_dict(n["memory"]), n["similarity"]) for n in data["neighbours"]]

    def _vectors(self, memory_ids: Sequence[str]) -> Plan:
        return (yield _Req("POST", "/v1/memory/vectors", {"memory_ids": list(memory_ids)}, retry=True))["vectors"]

    def _embed(self, texts: Sequence[str]) -> Plan:
        return (yield _Req("POST", "/v1/embed", {"texts": list(texts)}, retry=True))["vectors"]

    def _load_info(self) -> Plan:
        self._info = yield _Req("GET", "/v1/info", retry=True)
        return self._info

    # -- quarantine (service-only for now) ----------------------------------------------------
    def _block_source(self, source: str, reason: str | None) -> Plan:
        return (yield _Req("POST", "/v1/sources/block", {"source": source, "reason": reason}))

    def _unblock_source(self, source: str) -> Plan:
        return (yield _Req("POST", "/v1/sources/unblock", {"source": source}))

    def _blocked_sources(self) -> Plan:
        return (yield _Req("GET", "/v1/sources/blocked", retry=True))["sources"]

    def _release(self, memory_id: str) -> Plan:
        return MemoryRecord.from_dict((yield _Req("POST", "/v1/memory/release", {"memory_id": memory_id})))

    # -- working memory -----------------------------------------------------------------------
    def _session(self, op: str, spec: dict[str, Any], **extra: Any) -> Plan:
        retry = op in ("messages", "transcript", "summary", "info", "evict", "forget", "clear", "delete")
        return (yield _Req("POST", f"/v1/session/{op}", {"session": spec, **extra}, retry=retry))

    def _session_add(self, spec: dict[str, Any], messages: Sequence[Any]) -> Plan:
        data = yield from self._session("add", spec, messages=[_message(m) for m in messages])
        return [Message.from_dict(m) for m in data["messages"]]

    def _session_messages(self, spec: dict[str, Any], op: str) -> Plan:
        data = yield from self._session(op, spec)
        return [Message.from_dict(m) for m in data["messages"]]

    def _session_end(self, spec: dict[str, Any], consolidate: bool) -> Plan:
        data = yield from self._session("end", spec, consolidate=consolidate)
        return [MemoryRecord.from_dict(r) for r in data["memories"]]

    def _session_info(self, spec: dict[str, Any]) -> Plan:
        data = yield from self._session("info", spec)
        return None if data["session"] is None else _session_info(data["session"])

    def _sessions(self, user_id: str | None) -> Plan:
        data = yield _Req("POST", "/v1/sessions", {"user_id": user_id}, retry=True)
        return [_session_info(s) for s in data["sessions"]]

    # -- identity -----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The service URL (no token): `polymem.open(mem.url, token=…)` reconnects."""
        return self._url

    def _embedder_from(self, info: dict[str, Any], embed: Any = None) -> RemoteEmbedder | None:
        model = info.get("embedding_model")
        return None if model is None else RemoteEmbedder(model, int(info["dimension"]), embed)

    @property
    def closed(self) -> bool:
        return self._closed  # type: ignore[attr-defined,no-any-return]


def _headers(token: str | None, namespace: str | None) -> dict[str, str]:
    headers = {"user-agent": "polymem-client"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    if namespace:
        headers["x-polymem-namespace"] = namespace
    return headers


def _check_open_kwargs(kwargs: dict[str, Any]) -> None:
    ignored = {k for k, v in kwargs.items() if not (k == "embedder" and v == "auto")}
    if ignored:
        raise InvalidInput(f"{sorted(ignored)} are configured on the server (`polymem serve`), not in the client")


class HttpMemory(_Plans):
    """A polymem store served over HTTP, synchronous: the methods of `polymem.Memory`."""

    def __init__(self, url: str, token: str | None = None, *, namespace: str | None = None, timeout: float = 30.0,
                 retries: int = 3, transport: httpx.BaseTransport | None = None,
                 http_client: httpx.Client | None = None) -> None:
        self._url, self._namespace, self._info, self._retries = url.rstrip("/"), namespace, None, retries
        self._token = token if token is not None else os.environ.get("POLYMEM_TOKEN")
        self._http = http_client or httpx.Client(base_url=self._url, transport=transport, timeout=timeout)
        self._http.headers.update(_headers(self._token, namespace))
        self._closed = False

    def _send(self, req: _Req) -> Any:
        attempt = 0
        while True:
            try:
                body = _encode(req.json) if req.json is not None else None
                content = body if req.upload is None else _chunks(req.upload)
                headers = {"content-type": "application/json"} if body is not None else {}
                if req.upload is not None:
                    headers = {"content-type": "application/x-ndjson"}
                with self._http.stream(req.method, req.path, content=content, headers=headers) as response:
                    if response.status_code in RETRY_STATUSES and req.retry and attempt < self._retries:
                        response.read()
                        raise _Retry()
                    if response.status_code == 404 and req.missing_ok:
                        response.read()
                        return None
                    if response.status_code >= 400:
                        _raise_for(response, response.read())
                    if req.download is not None:
                        for chunk in response.iter_bytes():
                            req.download.write(chunk)
                        return int(response.headers.get("x-polymem-count", "0"))
                    return json.loads(response.read())
            except (_Retry, httpx.TransportError) as exc:
                sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if attempt >= self._retries or (sent and not req.retry) or req.upload is not None:
                    raise ServiceUnavailableError(f"{self._url}: {exc!r}") from None
                if req.download is not None:
                    req.download.seek(0)
                    req.download.truncate()
                time.sleep(0.05 * 2 ** attempt)
                attempt += 1

    def _run(self, plan: Plan) -> Any:
        if self._closed:
            from ._errors import StoreClosedError

            raise StoreClosedError("the client is closed")
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                req = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                send = self._send(req)
            except BaseException as exc:
                error, send = exc, None

    @property
    def namespace(self) -> str:
        return self._namespace or self._info_now()["namespace"]

    @property
    def embedder(self) -> RemoteEmbedder | None:
        """What the server embeds with, or None in lexical-only mode."""
        return self._embedder_from(self._info_now(), lambda texts: self._run(self._embed(texts)))

    def _info_now(self) -> dict[str, Any]:
        return self._info if self._info is not None else self._run(self._load_info())  # type: ignore[no-any-return]

    # long-term memory
    def save(self, content: str, *, user_id: str | None, agent_id: str | None = None, session_id: str | None = None,
             category: str = "fact", source: str = "user_input", importance: float | None = None,
             entities: Sequence[str] | None = None, metadata: dict[str, Any] | None = None,
             expire_at: datetime | None = None, idempotency_key: str | None = None,
             vector: Sequence[float] | None = None) -> MemoryRecord:
        """Store one memory (idempotent by key, or by same content in the same scope)."""
        return self._run(self._save(  # type: ignore[no-any-return]
            content, user_id=user_id, agent_id=agent_id, session_id=session_id, category=category, source=source,
            importance=importance, entities=None if entities is None else list(entities), metadata=metadata,
            expire_at=expire_at, idempotency_key=idempotency_key, vector=vector))

    def save_many(self, drafts: Sequence[MemoryDraft], *, user_id: str | None, agent_id: str | None = None,
                  session_id: str | None = None, vectors: Sequence[Sequence[float]] | None = None,
                  idempotency_keys: Sequence[str | None] | None = None) -> builtins.list[MemoryRecord]:
        """Store many memories (one request each; each retry-safe)."""
        return self._run(self._save_many(drafts, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                         session_id=session_id, vectors=vectors, idempotency_keys=idempotency_keys))

    def recall(self, query: str, *, user_id: str | None, agent_id: str | None = None, top_k: int = 10,
               category: str | None = None, filter: dict[str, Any] | None = None,
               query_vector: Sequence[float] | None = None, min_relevance: float | None = None) -> RecallResult:
        """The memories most relevant to `query`, best first; `.withheld` says what the read guard kept back."""
        return self._run(self._recall(query, user_id=user_id, agent_id=agent_id, top_k=top_k,  # type: ignore[no-any-return]
                                      category=category, filter=filter, query_vector=query_vector,
                                      min_relevance=min_relevance))

    def nearest(self, vector: Sequence[float], *, user_id: str | None, agent_id: str | None = None,
                top_k: int = 10, category: str | None = None,
                filter: dict[str, Any] | None = None) -> builtins.list[tuple[MemoryRecord, float]]:
        """Plain nearest neighbours of a vector by cosine (no scoring, no reinforcement; read guard applies)."""
        return self._run(self._nearest(vector, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                       top_k=top_k, category=category, filter=filter))

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, builtins.list[float]]:
        """The stored vectors of these memories (those in your scope that have one)."""
        return self._run(self._vectors(memory_ids))  # type: ignore[no-any-return]

    def get(self, memory_id: str) -> MemoryRecord | None:
        return self._run(self._get(memory_id))  # type: ignore[no-any-return]

    def list(self, *, user_id: str | None = None, agent_id: str | None = None, category: str | None = None,
             filter: dict[str, Any] | None = None, status: str | None = "active", limit: int = 100,
             offset: int = 0) -> builtins.list[MemoryRecord]:
        return self._run(self._list(user_id=user_id, agent_id=agent_id, category=category,  # type: ignore[no-any-return]
                                    filter=filter, status=status, limit=limit, offset=offset))

    def update(self, memory_id: str, *, content: str | None = None, category: str | None = None,
               importance: float | None = None, metadata: dict[str, Any] | None = None,
               expected_version: int | None = None, expire_at: datetime | None = None) -> MemoryRecord:
        """Write a new version; `expected_version` makes it a compare-and-set."""
        return self._run(self._update(memory_id, content=content, category=category,  # type: ignore[no-any-return]
                                      importance=importance, metadata=metadata, expected_version=expected_version,
                                      expire_at=expire_at))

    def delete(self, memory_id: str) -> bool:
        return self._run(self._delete(memory_id))  # type: ignore[no-any-return]

    def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        return self._run(self._history(memory_id))  # type: ignore[no-any-return]

    def ingest(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None = None,
               session_id: str | None = None) -> builtins.list[MemoryRecord]:
        return self._run(self._ingest(messages, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                      session_id=session_id))

    def consolidate(self, progress: Any = None) -> ConsolidationReport:
        return self._run(self._consolidate())  # type: ignore[no-any-return]

    def reembed(self, progress: Any = None) -> int:
        return self._run(self._reembed())  # type: ignore[no-any-return]

    def export_snapshot(self, target: str | Path | IO[bytes], *, user_id: str | None = None,
                        progress: Any = None) -> int:
        """Stream a JSONL snapshot from the service into `target`; returns the number of memories."""
        return self._run(self._export(target, user_id))  # type: ignore[no-any-return]

    def import_snapshot(self, source: str | Path | IO[bytes], progress: Any = None) -> ImportReport:
        """Stream a snapshot to the service (admin); imported whole or not at all."""
        return self._run(self._import(source))  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        return self._run(self._stats())  # type: ignore[no-any-return]

    def flush(self) -> None:
        self._run(self._flush())

    # quarantine
    def block_source(self, source: str, *, reason: str | None = None) -> dict[str, Any]:
        """Quarantine a source: its memories leave recall and its writes are refused (admin; reversible)."""
        return self._run(self._block_source(source, reason))  # type: ignore[no-any-return]

    def unblock_source(self, source: str) -> dict[str, Any]:
        return self._run(self._unblock_source(source))  # type: ignore[no-any-return]

    def blocked_sources(self) -> builtins.list[dict[str, Any]]:
        return self._run(self._blocked_sources())  # type: ignore[no-any-return]

    def release(self, memory_id: str) -> MemoryRecord:
        """Admin review: a flagged memory becomes active and trusted again."""
        return self._run(self._release(memory_id))  # type: ignore[no-any-return]

    # working memory
    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> HttpSession:
        return HttpSession(self, _spec(session_id, user_id, agent_id, max_tokens, ttl, overflow, keep_last))

    def sessions(self, *, user_id: str | None = None) -> builtins.list[SessionInfo]:
        return self._run(self._sessions(user_id))  # type: ignore[no-any-return]

    def close(self) -> None:
        if not self._closed:
            self._http.close()
            self._closed = True

    def __enter__(self) -> HttpMemory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class HttpSession:
    """A working-memory session on the service: the methods of `polymem.Session`."""

    def __init__(self, memory: HttpMemory, spec: dict[str, Any]) -> None:
        self._memory, self.spec = memory, spec

    @property
    def session_id(self) -> str:
        return str(self.spec["session_id"])

    def add(self, role: str, content: str, *, name: str | None = None, tool_calls: Sequence[Any] | None = None,
            tool_call_id: str | None = None, parts: Sequence[dict[str, Any]] | None = None,
            metadata: dict[str, Any] | None = None) -> Message:
        from ._engine import make_message

        return self.add_messages([make_message(role, content, name=name, tool_calls=tool_calls,
                                               tool_call_id=tool_call_id, parts=parts, metadata=metadata)])[0]

    def add_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        return self._memory._run(self._memory._session_add(self.spec, messages))  # type: ignore[no-any-return]

    def messages(self) -> builtins.list[Message]:
        return self._memory._run(self._memory._session_messages(self.spec, "messages"))  # type: ignore[no-any-return]

    def transcript(self) -> builtins.list[Message]:
        return self._memory._run(self._memory._session_messages(self.spec, "transcript"))  # type: ignore[no-any-return]

    @property
    def summary(self) -> str | None:
        return self._memory._run(self._memory._session("summary", self.spec))["summary"]  # type: ignore[no-any-return]

    def evict(self, message_ids: Sequence[str]) -> int:
        return self._memory._run(self._memory._session("evict", self.spec,  # type: ignore[no-any-return]
                                                       message_ids=list(message_ids)))["count"]

    def forget(self, message_ids: Sequence[str]) -> int:
        """Delete messages from the session for good (window and transcript)."""
        return self._memory._run(self._memory._session("forget", self.spec,  # type: ignore[no-any-return]
                                                       message_ids=list(message_ids)))["count"]

    def replace(self, messages: Sequence[Message]) -> None:
        self._memory._run(self._memory._session("replace", self.spec, messages=[_message(m) for m in messages]))

    def clear(self) -> None:
        self._memory._run(self._memory._session("clear", self.spec))

    def end(self, consolidate: bool = True) -> builtins.list[MemoryRecord]:
        return self._memory._run(self._memory._session_end(self.spec, consolidate))  # type: ignore[no-any-return]

    def delete(self) -> bool:
        return self._memory._run(self._memory._session("delete", self.spec))["deleted"]  # type: ignore[no-any-return]

    def info(self) -> SessionInfo | None:
        return self._memory._run(self._memory._session_info(self.spec))  # type: ignore[no-any-return]


class _Retry(Exception):
    pass


def _chunks(source: Any) -> Any:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)

    def gen() -> Iterator[bytes]:
        while block := source.read(1 << 16):
            yield block

    return gen()


def _achunks(source: Any) -> Any:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)

    async def gen() -> AsyncIterator[bytes]:
        while block := await asyncio.to_thread(source.read, 1 << 16):
            yield block

    return gen()


class AsyncHttpMemory(_Plans):
    """A polymem store served over HTTP with awaitable methods: those of `polymem.AsyncMemory`."""

    def __init__(self, url: str, token: str | None = None, *, namespace: str | None = None, timeout: float = 30.0,
                 retries: int = 3, transport: httpx.AsyncBaseTransport | None = None,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self._url, self._namespace, self._info, self._retries = url.rstrip("/"), namespace, None, retries
        self._token = token if token is not None else os.environ.get("POLYMEM_TOKEN")
        self._custom_transport = transport is not None or http_client is not None
        self._http = http_client or httpx.AsyncClient(base_url=self._url, transport=transport, timeout=timeout)
        self._http.headers.update(_headers(self._token, namespace))
        self._closed = False

    async def _send(self, req: _Req) -> Any:
        attempt = 0
        while True:
            try:
                body = _encode(req.json) if req.json is not None else None
                content = body if req.upload is None else _achunks(req.upload)
                headers = {"content-type": "application/json"} if body is not None else {}
                if req.upload is not None:
                    headers = {"content-type": "application/x-ndjson"}
                async with self._http.stream(req.method, req.path, content=content, headers=headers) as response:
                    if response.status_code in RETRY_STATUSES and req.retry and attempt < self._retries:
                        await response.aread()
                        raise _Retry()
                    if response.status_code == 404 and req.missing_ok:
                        await response.aread()
                        return None
                    if response.status_code >= 400:
                        _raise_for(response, await response.aread())
                    if req.download is not None:
                        async for chunk in response.aiter_bytes():
                            req.download.write(chunk)
                        return int(response.headers.get("x-polymem-count", "0"))
                    return json.loads(await response.aread())
            except (_Retry, httpx.TransportError) as exc:
                sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
                if attempt >= self._retries or (sent and not req.retry) or req.upload is not None:
                    raise ServiceUnavailableError(f"{self._url}: {exc!r}") from None
                if req.download is not None:
                    req.download.seek(0)
                    req.download.truncate()
                await asyncio.sleep(0.05 * 2 ** attempt)
                attempt += 1

    async def _run(self, plan: Plan) -> Any:
        if self._closed:
            from ._errors import StoreClosedError

            raise StoreClosedError("the client is closed")
        if self._info is None and plan.gi_code.co_name != "_load_info":  # type: ignore[attr-defined]
            await self._run(self._load_info())
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                req = plan.throw(error) if error is not None else plan.send(send)
            except StopIteration as stop:
                return stop.value
            error = None
            try:
                send = await self._send(req)
            except BaseException as exc:
                error, send = exc, None

    def _info_now(self) -> dict[str, Any]:
        if self._info is None:
            if self._custom_transport:
                raise PolymemError("await any method of the client first (its server info is not loaded yet)")
            with httpx.Client(base_url=self._url, headers=dict(self._http.headers), timeout=10) as client:
                response = client.get("/v1/info")
                if response.status_code >= 400:
                    _raise_for(response, response.content)
                self._info = response.json()
        return self._info

    @property
    def namespace(self) -> str:
        return self._namespace or self._info_now()["namespace"]

    @property
    def embedder(self) -> RemoteEmbedder | None:
        return self._embedder_from(self._info_now(), None if self._custom_transport else self._embed_blocking)

    def _embed_blocking(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        with httpx.Client(base_url=self._url, headers=dict(self._http.headers), timeout=30) as client:
            response = client.post("/v1/embed", json={"texts": list(texts)})
            if response.status_code >= 400:
                _raise_for(response, response.content)
            return response.json()["vectors"]  # type: ignore[no-any-return]

    async def save(self, content: str, *, user_id: str | None, agent_id: str | None = None,
                   session_id: str | None = None, category: str = "fact", source: str = "user_input",
                   importance: float | None = None, entities: Sequence[str] | None = None,
                   metadata: dict[str, Any] | None = None, expire_at: datetime | None = None,
                   idempotency_key: str | None = None, vector: Sequence[float] | None = None) -> MemoryRecord:
        return await self._run(self._save(  # type: ignore[no-any-return]
            content, user_id=user_id, agent_id=agent_id, session_id=session_id, category=category, source=source,
            importance=importance, entities=None if entities is None else list(entities), metadata=metadata,
            expire_at=expire_at, idempotency_key=idempotency_key, vector=vector))

    async def save_many(self, drafts: Sequence[MemoryDraft], *, user_id: str | None, agent_id: str | None = None,
                        session_id: str | None = None, vectors: Sequence[Sequence[float]] | None = None,
                        idempotency_keys: Sequence[str | None] | None = None) -> builtins.list[MemoryRecord]:
        return await self._run(self._save_many(drafts, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                               session_id=session_id, vectors=vectors,
                                               idempotency_keys=idempotency_keys))

    async def recall(self, query: str, *, user_id: str | None, agent_id: str | None = None, top_k: int = 10,
                     category: str | None = None, filter: dict[str, Any] | None = None,
                     query_vector: Sequence[float] | None = None,
                     min_relevance: float | None = None) -> RecallResult:
        return await self._run(self._recall(query, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                            top_k=top_k, category=category, filter=filter,
                                            query_vector=query_vector, min_relevance=min_relevance))

    async def nearest(self, vector: Sequence[float], *, user_id: str | None, agent_id: str | None = None,
                      top_k: int = 10, category: str | None = None,
                      filter: dict[str, Any] | None = None) -> builtins.list[tuple[MemoryRecord, float]]:
        return await self._run(self._nearest(vector, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                             top_k=top_k, category=category, filter=filter))

    async def vectors(self, memory_ids: Sequence[str]) -> dict[str, builtins.list[float]]:
        return await self._run(self._vectors(memory_ids))  # type: ignore[no-any-return]

    async def get(self, memory_id: str) -> MemoryRecord | None:
        return await self._run(self._get(memory_id))  # type: ignore[no-any-return]

    async def list(self, *, user_id: str | None = None, agent_id: str | None = None, category: str | None = None,
                   filter: dict[str, Any] | None = None, status: str | None = "active", limit: int = 100,
                   offset: int = 0) -> builtins.list[MemoryRecord]:
        return await self._run(self._list(user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                          category=category, filter=filter, status=status, limit=limit,
                                          offset=offset))

    async def update(self, memory_id: str, *, content: str | None = None, category: str | None = None,
                     importance: float | None = None, metadata: dict[str, Any] | None = None,
                     expected_version: int | None = None, expire_at: datetime | None = None) -> MemoryRecord:
        return await self._run(self._update(memory_id, content=content, category=category,  # type: ignore[no-any-return]
                                            importance=importance, metadata=metadata,
                                            expected_version=expected_version, expire_at=expire_at))

    async def delete(self, memory_id: str) -> bool:
        return await self._run(self._delete(memory_id))  # type: ignore[no-any-return]

    async def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        return await self._run(self._history(memory_id))  # type: ignore[no-any-return]

    async def ingest(self, messages: Sequence[Message], *, user_id: str | None, agent_id: str | None = None,
                     session_id: str | None = None) -> builtins.list[MemoryRecord]:
        return await self._run(self._ingest(messages, user_id=user_id, agent_id=agent_id,  # type: ignore[no-any-return]
                                            session_id=session_id))

    async def consolidate(self, progress: Any = None) -> ConsolidationReport:
        return await self._run(self._consolidate())  # type: ignore[no-any-return]

    async def reembed(self, progress: Any = None) -> int:
        return await self._run(self._reembed())  # type: ignore[no-any-return]

    async def export_snapshot(self, target: str | Path | IO[bytes], *, user_id: str | None = None,
                              progress: Any = None) -> int:
        return await self._run(self._export(target, user_id))  # type: ignore[no-any-return]

    async def import_snapshot(self, source: str | Path | IO[bytes], progress: Any = None) -> ImportReport:
        return await self._run(self._import(source))  # type: ignore[no-any-return]

    async def stats(self) -> dict[str, Any]:
        return await self._run(self._stats())  # type: ignore[no-any-return]

    async def flush(self) -> None:
        await self._run(self._flush())

    async def block_source(self, source: str, *, reason: str | None = None) -> dict[str, Any]:
        return await self._run(self._block_source(source, reason))  # type: ignore[no-any-return]

    async def unblock_source(self, source: str) -> dict[str, Any]:
        return await self._run(self._unblock_source(source))  # type: ignore[no-any-return]

    async def blocked_sources(self) -> builtins.list[dict[str, Any]]:
        return await self._run(self._blocked_sources())  # type: ignore[no-any-return]

    async def release(self, memory_id: str) -> MemoryRecord:
        return await self._run(self._release(memory_id))  # type: ignore[no-any-return]

    def session(self, session_id: str, *, user_id: str | None, agent_id: str | None = None,
                max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
                keep_last: int = 4) -> AsyncHttpSession:
        return AsyncHttpSession(self, _spec(session_id, user_id, agent_id, max_tokens, ttl, overflow, keep_last))

    async def sessions(self, *, user_id: str | None = None) -> builtins.list[SessionInfo]:
        return await self._run(self._sessions(user_id))  # type: ignore[no-any-return]

    async def close(self) -> None:
        if not self._closed:
            await self._http.aclose()
            self._closed = True

    async def __aenter__(self) -> AsyncHttpMemory:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncHttpSession:
    """`HttpSession` with awaitable methods (the methods of `polymem.AsyncSession`)."""

    def __init__(self, memory: AsyncHttpMemory, spec: dict[str, Any]) -> None:
        self._memory, self.spec = memory, spec

    @property
    def session_id(self) -> str:
        return str(self.spec["session_id"])

    async def add(self, role: str, content: str, *, name: str | None = None,
                  tool_calls: Sequence[Any] | None = None, tool_call_id: str | None = None,
                  parts: Sequence[dict[str, Any]] | None = None, metadata: dict[str, Any] | None = None) -> Message:
        from ._engine import make_message

        return (await self.add_messages([make_message(role, content, name=name, tool_calls=tool_calls,
                                                      tool_call_id=tool_call_id, parts=parts,
                                                      metadata=metadata)]))[0]

    async def add_messages(self, messages: Sequence[Message]) -> builtins.list[Message]:
        return await self._memory._run(self._memory._session_add(self.spec, messages))  # type: ignore[no-any-return]

    async def messages(self) -> builtins.list[Message]:
        return await self._memory._run(self._memory._session_messages(self.spec, "messages"))  # type: ignore[no-any-return]

    async def transcript(self) -> builtins.list[Message]:
        return await self._memory._run(self._memory._session_messages(self.spec, "transcript"))  # type: ignore[no-any-return]

    async def get_summary(self) -> str | None:
        return (await self._memory._run(self._memory._session("summary", self.spec)))["summary"]  # type: ignore[no-any-return]

    async def evict(self, message_ids: Sequence[str]) -> int:
        return (await self._memory._run(self._memory._session(  # type: ignore[no-any-return]
            "evict", self.spec, message_ids=list(message_ids))))["count"]

    async def forget(self, message_ids: Sequence[str]) -> int:
        return (await self._memory._run(self._memory._session(  # type: ignore[no-any-return]
            "forget", self.spec, message_ids=list(message_ids))))["count"]

    async def replace(self, messages: Sequence[Message]) -> None:
        await self._memory._run(self._memory._session("replace", self.spec, messages=[_message(m) for m in messages]))

    async def clear(self) -> None:
        await self._memory._run(self._memory._session("clear", self.spec))

    async def end(self, consolidate: bool = True) -> builtins.list[MemoryRecord]:
        return await self._memory._run(self._memory._session_end(self.spec, consolidate))  # type: ignore[no-any-return]

    async def delete(self) -> bool:
        return (await self._memory._run(self._memory._session("delete", self.spec)))["deleted"]  # type: ignore[no-any-return]

    async def info(self) -> SessionInfo | None:
        return await self._memory._run(self._memory._session_info(self.spec))  # type: ignore[no-any-return]


def open_http(url: str, token: str | None = None, **kwargs: Any) -> HttpMemory:
    """Connect to a polymem service (`polymem serve`); `token` defaults to `POLYMEM_TOKEN`.

    Keywords: namespace (act on a shared namespace granted to the token), timeout, retries,
    transport / http_client (an httpx transport or client, e.g. to test in-process).
    """
    own = {k: kwargs.pop(k) for k in ("namespace", "timeout", "retries", "transport", "http_client") if k in kwargs}
    _check_open_kwargs(kwargs)
    return HttpMemory(url, token, **own)


def open_http_async(url: str, token: str | None = None, **kwargs: Any) -> AsyncHttpMemory:
    """`open_http()` for asyncio code: the same service, with awaitable methods."""
    own = {k: kwargs.pop(k) for k in ("namespace", "timeout", "retries", "transport", "http_client") if k in kwargs}
    _check_open_kwargs(kwargs)
    return AsyncHttpMemory(url, token, **own)
