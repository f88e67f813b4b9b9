"""The HTTP edge: FastAPI routes over `Service`, JSON errors, limits, metrics.

Every error is a JSON body `{"error": {"code", "message", "request_id"}}`
whose `code` is the `PolymemError` subclass's code; every route declares the
errors it can return, so the OpenAPI document is the whole contract.
"""

# No `from __future__ import annotations`: FastAPI resolves the local `Ctx` alias at runtime.

import asyncio
import dataclasses
import json
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import IO, Annotated, Any

from fastapi import Depends, FastAPI, Header, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from .._errors import PolymemError
from .._models import MemoryRecord, Message, RecallHit, SessionInfo
from .._time import from_iso, to_iso
from ._errors import PayloadTooLargeError, RequestTimeoutError, ServiceUnavailableError, status_for
from ._metrics import Metrics
from ._service import Context, Service

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

StrictInt = Annotated[int, Field(strict=True)]
# Times travel as ISO-8601 text and are parsed by the core, which refuses naive ones (naive_datetime);
# pydantic's lax datetime would also accept numbers, which the document does not allow.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
StrictBool = Annotated[bool, Field(strict=True)]
Text = Annotated[str, Field(strict=True, min_length=1, pattern=r"\S")]  # the core refuses empty or blank text
Score = Annotated[float, Field(strict=True, ge=0.0, le=1.0)]


# -- wire models ------------------------------------------------------------------------------
class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallIn(_In):
    id: str
    name: str
    arguments: str = "{}"
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageIn(_In):
    role: str
    content: str = ""
    name: str | None = None
    tool_calls: list[ToolCallIn] = Field(default_factory=list)
    tool_call_id: str | None = None
    parts: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    message_id: str | None = None
    created_at: Timestamp | None = None

    def to_message(self) -> Message:
        return Message.from_dict(self.model_dump(mode="json"))


class SaveIn(_In):
    content: Annotated[str, Field(strict=True, description="Non-blank (else empty_content).")]
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    category: str = "fact"
    source: Text = "user_input"
    importance: Score | None = None
    entities: list[str] | None = None
    metadata: dict[str, Any] | None = None
    expire_at: Timestamp | None = Field(None, description="Aware ISO-8601; a naive time is refused (naive_datetime).")
    idempotency_key: str | None = Field(None, description="Retries with the same key return the same memory.")
    vector: list[float] | None = Field(None, description="Your own embedding (the server's model and dimension).")


class RecallIn(_In):
    query: Annotated[str, Field(strict=True, description="Non-blank (else empty_content).")]
    user_id: str | None = None
    agent_id: str | None = None
    top_k: Annotated[int, Field(strict=True, ge=1, le=1000)] = 10
    category: str | None = None
    filter: dict[str, Any] | None = Field(None, description="field → value or {operator: value} (docs/api.md).")
    query_vector: list[float] | None = Field(None, description="Replaces the query's embedding (server's model).")
    min_relevance: float | None = Field(None, description="Drop hits less relevant than this, in [0, 1].")


class ListIn(_In):
    user_id: str | None = None
    agent_id: str | None = None
    category: str | None = None
    filter: dict[str, Any] | None = None
    status: str | None = "active"
    limit: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 100
    offset: Annotated[int, Field(strict=True, ge=0)] = 0


class UpdateIn(_In):
    memory_id: Text
    content: Annotated[str, Field(strict=True)] | None = None
    category: str | None = None
    importance: Score | None = None
    metadata: dict[str, Any] | None = None
    expected_version: StrictInt | None = None
    expire_at: Timestamp | None = Field(None, description="A new expiry (aware ISO-8601).")


class MemoryIdIn(_In):
    memory_id: Text


class IngestIn(_In):
    messages: list[MessageIn]
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


class ExportIn(_In):
    user_id: str | None = None


class SourceIn(_In):
    source: Text
    reason: str | None = None


class SessionSpecIn(_In):
    session_id: Text
    user_id: str | None = None
    agent_id: str | None = None
    max_tokens: Annotated[int, Field(strict=True, ge=1)] | None = 4096
    ttl: Annotated[float, Field(gt=0, le=3.2e9)] | None = Field(None, description="Seconds (at most ~100 years).")
    overflow: str = "drop"
    keep_last: Annotated[int, Field(strict=True, ge=0)] = 4


class SessionIn(_In):
    session: SessionSpecIn


class SessionMessagesIn(_In):
    session: SessionSpecIn
    messages: list[MessageIn]


class SessionEvictIn(_In):
    session: SessionSpecIn
    message_ids: list[str]


class SessionEndIn(_In):
    session: SessionSpecIn
    consolidate: StrictBool = True


class EmbedIn(_In):
    texts: list[str] = Field(max_length=256)


class VectorsOut(BaseModel):
    model_id: str
    vectors: list[list[float]]


class SessionsIn(_In):
    user_id: str | None = None


class MemoryOut(BaseModel):
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
    last_accessed_at: datetime | None
    access_count: int
    expire_at: datetime | None
    embedding_model: str | None
    entities: list[str]
    metadata: dict[str, Any]
    version: int
    status: str


class HitOut(MemoryOut):
    score: float
    relevance: float
    similarity: float | None
    text_rank: float | None
    live_score: float


class WithheldMemoryOut(BaseModel):
    memory_id: str
    reasons: list[str]


class WithheldOut(BaseModel):
    count: int
    by_reason: dict[str, int]
    memories: list[WithheldMemoryOut]


class RecallOut(BaseModel):
    memories: list[HitOut]
    withheld: WithheldOut


class MemoriesOut(BaseModel):
    memories: list[MemoryOut]


class VersionsOut(BaseModel):
    versions: list[MemoryOut]


class DeletedOut(BaseModel):
    deleted: bool


class ConsolidationOut(BaseModel):
    expired: list[str]
    archived: list[str]
    merged: dict[str, list[str]]
    superseded: dict[str, str]
    sessions_expired: int


class ImportOut(BaseModel):
    imported: int
    duplicates: int
    reembedded: int
    sessions: int
    skipped: list[list[str]]


class CountOut(BaseModel):
    count: int


class OkOut(BaseModel):
    ok: bool


class ToolCallOut(BaseModel):
    id: str
    name: str
    arguments: str
    metadata: dict[str, Any]


class MessageOut(BaseModel):
    role: str
    content: str
    name: str | None
    tool_calls: list[ToolCallOut]
    tool_call_id: str | None
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    message_id: str
    created_at: datetime | None


class MessagesOut(BaseModel):
    messages: list[MessageOut]


class SummaryOut(BaseModel):
    summary: str | None


class SessionInfoOut(BaseModel):
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


class SessionInfoResult(BaseModel):
    session: SessionInfoOut | None


class SessionsOut(BaseModel):
    sessions: list[SessionInfoOut]


class SourceOut(BaseModel):
    source: str
    blocked: bool
    memories_hidden: int | None = None
    was_blocked: bool | None = None


class BlockedSourceOut(BaseModel):
    source: str
    reason: str | None
    blocked_at: str
    blocked_by: str | None


class BlockedSourcesOut(BaseModel):
    sources: list[BlockedSourceOut]


class GrantOut(BaseModel):
    namespace: str
    permissions: list[str]
    users: list[str] | None
    agent_id: str | None


class InfoOut(BaseModel):
    namespace: str
    embedding_model: str | None
    dimension: int | None
    server_version: str
    actor: str
    grant: GrantOut


class StatsOut(BaseModel):
    model_config = ConfigDict(extra="allow")


class HealthOut(BaseModel):
    status: str
    version: str


class NearestIn(_In):
    vector: list[float]
    user_id: str | None = None
    agent_id: str | None = None
    top_k: Annotated[int, Field(strict=True, ge=1, le=1000)] = 10
    category: str | None = None
    filter: dict[str, Any] | None = None


class NeighbourOut(BaseModel):
    memory: MemoryOut
    similarity: float


class NearestOut(BaseModel):
    neighbours: list[NeighbourOut]
    withheld: WithheldOut


class VectorsIn(_In):
    memory_ids: list[str] = Field(max_length=1000)


class StoredVectorsOut(BaseModel):
    vectors: dict[str, list[float]]


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable error code: the PolymemError subclass's `code`.")
    message: str
    request_id: str | None


class ErrorOut(BaseModel):
    error: ErrorDetail


_ERROR_TEXT = {
    401: "unauthenticated: missing, unknown or revoked token",
    403: "permission_denied / source_blocked: outside the token's grants",
    404: "not_found",
    409: "version_conflict / reembed_required",
    413: "payload_too_large",
    422: "invalid_input and its subclasses (naive_datetime, empty_content, content_too_large, invalid_filter, "
         "dimension_mismatch, content_rejected, snapshot_error)",
    500: "internal error",
    503: "unavailable / store_closed: shutting down",
    504: "timeout: the server gave up waiting (a write in flight still completes)",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    base = (401, 403, 422, 500, 503, 504)  # 422: a malformed header or path parameter, too
    return {s: {"model": ErrorOut, "description": _ERROR_TEXT[s]} for s in sorted({*base, *statuses})}


BODY = (413, 422)


# -- serialisation ----------------------------------------------------------------------------
def _record(rec: MemoryRecord) -> dict[str, Any]:
    return rec.to_dict()


def _hit(hit: RecallHit) -> dict[str, Any]:
    return hit.to_dict()


def _session_info(info: SessionInfo) -> dict[str, Any]:
    data = dataclasses.asdict(info)
    for key in ("created_at", "updated_at", "expire_at"):
        data[key] = to_iso(data[key])
    return data


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data, ensure_ascii=False, separators=(",", ":")), status_code=status,
                    media_type="application/json")


def _error(exc: PolymemError, request_id: str | None) -> Response:
    body = {"error": {"code": exc.code, "message": str(exc), "request_id": request_id}}
    return _json(body, status_for(exc))


# -- limits, request ids, metrics -------------------------------------------------------------
class _TooLarge(BaseException):
    """Raised from `receive`; a BaseException so that body parsing cannot turn it into a 400."""


LONG_PATHS = ("/v1/memory/export", "/v1/memory/import", "/v1/memory/consolidate", "/v1/memory/reembed")


class Limits:
    """Pure ASGI middleware: request id, body size limit, timeout, metrics, refusal while closing."""

    def __init__(self, app: ASGIApp, service: Service, metrics: Metrics, *, max_body_bytes: int,
                 max_import_bytes: int, timeout: float, long_timeout: float) -> None:
        self.app, self.service, self.metrics = app, service, metrics
        self.max_body, self.max_import = max_body_bytes, max_import_bytes
        self.timeout, self.long_timeout = timeout, long_timeout

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        rid = (headers.get(b"x-request-id") or b"").decode("latin-1")[:128] or uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        path = scope["path"]
        limit = self.max_import if path == "/v1/memory/import" else self.max_body
        started, status = False, 500
        start = time.perf_counter()

        async def send_wrapper(message: dict[str, Any]) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        received = 0

        async def receive_wrapper() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge()
            return message

        async def fail(exc: PolymemError) -> None:
            if not started:
                response = _error(exc, rid)
                await response(scope, receive, send_wrapper)  # type: ignore[arg-type]

        self.metrics.inflight += 1
        try:
            declared = headers.get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await fail(PayloadTooLargeError(f"the body exceeds {limit} bytes"))
            elif self.service.closing and path.startswith("/v1/"):
                await fail(ServiceUnavailableError("the service is shutting down"))
            else:
                timeout = self.long_timeout if path in LONG_PATHS else self.timeout
                await asyncio.wait_for(self.app(scope, receive_wrapper, send_wrapper), timeout)
        except _TooLarge:
            await fail(PayloadTooLargeError(f"the body exceeds {limit} bytes"))
        except asyncio.TimeoutError:
            await fail(RequestTimeoutError("the request took too long; a write in flight still completes"))
        finally:
            self.metrics.inflight -= 1
            route = scope.get("route")
            self.metrics.observe(scope["method"], getattr(route, "path", "unmatched"), status,
                                 time.perf_counter() - start)


# -- the app ----------------------------------------------------------------------------------
def create_app(service: Service, *, max_body_bytes: int = 1 << 20, max_import_bytes: int = 256 << 20,
               timeout: float = 30.0, long_timeout: float = 600.0) -> FastAPI:
    """The FastAPI app of the polymem service over `service`."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.closing = False  # a server (re)starting on this service reopens its stores lazily
        yield
        await service.aclose()

    app = FastAPI(title="polymem", version=__version__, lifespan=lifespan,
                  description="One memory for every agent framework. Errors are JSON bodies with a stable `code`.")
    app.state.service, app.state.metrics = service, metrics
    app.add_middleware(Limits, service=service, metrics=metrics, max_body_bytes=max_body_bytes,  # type: ignore[arg-type]
                       max_import_bytes=max_import_bytes, timeout=timeout, long_timeout=long_timeout)
    bearer = HTTPBearer(auto_error=False, description="A polymem token: `polymem token create`.")

    @app.exception_handler(PolymemError)
    async def on_polymem_error(request: Request, exc: PolymemError) -> Response:
        return _error(exc, request.state.request_id)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> Response:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
        from .._errors import InvalidInput

        return _error(InvalidInput("; ".join(parts)), request.state.request_id)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400:  # an undecodable body: the same answer as any other malformed input
            from .._errors import InvalidInput

            return _error(InvalidInput(str(exc.detail)), request.state.request_id)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        body = {"error": {"code": code, "message": str(exc.detail), "request_id": request.state.request_id}}
        response = _json(body, exc.status_code)
        response.headers.update(exc.headers or {})  # e.g. `Allow` on a 405
        return response

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception) -> Response:
        body = {"error": {"code": "internal_error", "message": f"{type(exc).__name__}",
                          "request_id": request.state.request_id}}
        return _json(body, 500)

    def context(request: Request, credentials: HTTPAuthorizationCredentials | None = Security(bearer),
                x_polymem_namespace: str | None = Header(None, description="Act on this namespace (needs a grant); "
                                                                            "default: the token's home namespace.")
                ) -> Context:
        token = credentials.credentials if credentials else None
        return service.context(token, x_polymem_namespace, request.state.request_id)

    Ctx = Annotated[Context, Depends(context)]

    # health and metrics
    @app.get("/healthz", response_model=HealthOut, tags=["ops"], responses={503: {"model": ErrorOut}})
    async def healthz() -> Response:
        if service.closing:
            return _error(ServiceUnavailableError("shutting down"), None)
        return _json({"status": "ok", "version": __version__})

    @app.get("/metrics", response_class=PlainTextResponse, tags=["ops"],
             responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
    async def prometheus() -> Response:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/v1/info", response_model=InfoOut, responses=errors(), tags=["meta"])
    async def info(ctx: Ctx) -> Response:
        embedder = service.store(ctx.namespace).embedder
        return _json({"namespace": ctx.namespace, "embedding_model": embedder.model_id if embedder else None,
                      "dimension": embedder.dimension if embedder else None, "server_version": __version__,
                      "actor": ctx.actor, "grant": ctx.grant.to_dict()})

    # long-term memory
    @app.post("/v1/memory/save", response_model=MemoryOut, responses=errors(*BODY), tags=["memory"])
    async def save(body: SaveIn, ctx: Ctx) -> Response:
        args = body.model_dump()
        args["expire_at"] = from_iso(args["expire_at"], "expire_at")
        rec = await service.save(ctx, **args)
        if rec.metadata.get("polymem_flags"):
            metrics.event("write_flagged", rec.status)
        return _json(_record(rec))

    @app.post("/v1/memory/recall", response_model=RecallOut, responses=errors(*BODY, 409), tags=["memory"])
    async def recall(body: RecallIn, ctx: Ctx) -> Response:
        hits, withheld = await service.recall(ctx, **body.model_dump())
        if withheld.memory_ids:
            metrics.event("read_withheld", "recall")
        return _json({"memories": [_hit(h) for h in hits], "withheld": withheld.to_dict()})

    @app.get("/v1/memories/{memory_id}", response_model=MemoryOut, responses=errors(404), tags=["memory"])
    async def get(memory_id: str, ctx: Ctx) -> Response:
        rec = await service.get(ctx, memory_id)
        if rec is None:
            from .._errors import NotFoundError

            raise NotFoundError(f"no memory {memory_id!r}")
        return _json(_record(rec))

    @app.get("/v1/memories/{memory_id}/history", response_model=VersionsOut, responses=errors(), tags=["memory"])
    async def history(memory_id: str, ctx: Ctx) -> Response:
        return _json({"versions": [_record(r) for r in await service.history(ctx, memory_id)]})

    @app.post("/v1/memory/list", response_model=MemoriesOut, responses=errors(*BODY), tags=["memory"])
    async def list_(body: ListIn, ctx: Ctx) -> Response:
        return _json({"memories": [_record(r) for r in await service.list(ctx, **body.model_dump())]})

    @app.post("/v1/memory/update", response_model=MemoryOut, responses=errors(*BODY, 404, 409), tags=["memory"])
    async def update(body: UpdateIn, ctx: Ctx) -> Response:
        args = body.model_dump()
        args["expire_at"] = from_iso(args["expire_at"], "expire_at")
        return _json(_record(await service.update(ctx, args.pop("memory_id"), **args)))

    @app.post("/v1/memory/delete", response_model=DeletedOut, responses=errors(*BODY), tags=["memory"])
    async def delete(body: MemoryIdIn, ctx: Ctx) -> Response:
        return _json({"deleted": await service.delete(ctx, body.memory_id)})

    @app.post("/v1/memory/ingest", response_model=MemoriesOut, responses=errors(*BODY), tags=["memory"])
    async def ingest(body: IngestIn, ctx: Ctx) -> Response:
        records = await service.ingest(ctx, [m.to_message() for m in body.messages], user_id=body.user_id,
                                       agent_id=body.agent_id, session_id=body.session_id)
        return _json({"memories": [_record(r) for r in records]})

    @app.post("/v1/memory/consolidate", response_model=ConsolidationOut, responses=errors(), tags=["memory"])
    async def consolidate(ctx: Ctx) -> Response:
        return _json((await service.consolidate(ctx)).to_dict())

    @app.post("/v1/memory/reembed", response_model=CountOut, responses=errors(), tags=["memory"])
    async def reembed(ctx: Ctx) -> Response:
        return _json({"count": await service.reembed(ctx)})

    @app.post("/v1/memory/export", responses={**errors(*BODY), 200: {
        "description": "A polymem JSONL snapshot, streamed.",
        "content": {"application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}}}},
        response_class=StreamingResponse, tags=["snapshots"])
    async def export(body: ExportIn, ctx: Ctx) -> Response:
        handle, count = await service.export(ctx, body.user_id)

        def chunks() -> Any:
            with handle:
                while block := handle.read(1 << 16):
                    yield block

        return StreamingResponse(chunks(), media_type="application/x-ndjson",
                                 headers={"x-polymem-count": str(count)})

    @app.post("/v1/memory/import", response_model=ImportOut, responses=errors(*BODY), tags=["snapshots"],
              openapi_extra={"requestBody": {"required": True, "content": {
                  "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}}}})
    async def import_(request: Request, ctx: Ctx) -> Response:
        ctx.grant.require_admin()
        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=8 << 20)
        with spool:
            async for chunk in request.stream():
                spool.write(chunk)
            spool.seek(0)
            report = await service.import_(ctx, spool)
        data = report.to_dict()
        data["skipped"] = [list(item) for item in data["skipped"]]
        return _json(data)

    @app.get("/v1/stats", response_model=StatsOut, responses=errors(), tags=["meta"])
    async def stats(ctx: Ctx) -> Response:
        return _json(await service.stats(ctx))

    @app.post("/v1/memory/flush", response_model=OkOut, responses=errors(), tags=["meta"])
    async def flush(ctx: Ctx) -> Response:
        await service.flush(ctx)
        return _json({"ok": True})

    # quarantine
    @app.post("/v1/memory/release", response_model=MemoryOut, responses=errors(*BODY, 404), tags=["safety"])
    async def release(body: MemoryIdIn, ctx: Ctx) -> Response:
        return _json(_record(await service.release(ctx, body.memory_id)))

    @app.post("/v1/sources/block", response_model=SourceOut, responses=errors(*BODY), tags=["safety"])
    async def block_source(body: SourceIn, ctx: Ctx) -> Response:
        return _json(await service.block_source(ctx, body.source, body.reason))

    @app.post("/v1/sources/unblock", response_model=SourceOut, responses=errors(*BODY), tags=["safety"])
    async def unblock_source(body: SourceIn, ctx: Ctx) -> Response:
        return _json(await service.unblock_source(ctx, body.source))

    @app.get("/v1/sources/blocked", response_model=BlockedSourcesOut, responses=errors(), tags=["safety"])
    async def blocked_sources(ctx: Ctx) -> Response:
        return _json({"sources": await service.blocked_sources(ctx)})

    # working memory
    def spec(body: Any) -> dict[str, Any]:
        return dict(body.session.model_dump())

    @app.post("/v1/session/add", response_model=MessagesOut, responses=errors(*BODY), tags=["sessions"])
    async def session_add(body: SessionMessagesIn, ctx: Ctx) -> Response:
        added = await service.session_call(ctx, spec(body), "add_messages", [m.to_message() for m in body.messages])
        return _json({"messages": [m.to_dict() for m in added]})

    @app.post("/v1/session/messages", response_model=MessagesOut, responses=errors(*BODY), tags=["sessions"])
    async def session_messages(body: SessionIn, ctx: Ctx) -> Response:
        return _json({"messages": [m.to_dict() for m in await service.session_call(ctx, spec(body), "messages")]})

    @app.post("/v1/session/transcript", response_model=MessagesOut, responses=errors(*BODY), tags=["sessions"])
    async def session_transcript(body: SessionIn, ctx: Ctx) -> Response:
        return _json({"messages": [m.to_dict() for m in await service.session_call(ctx, spec(body), "transcript")]})

    @app.post("/v1/session/summary", response_model=SummaryOut, responses=errors(*BODY), tags=["sessions"])
    async def session_summary(body: SessionIn, ctx: Ctx) -> Response:
        return _json({"summary": await service.session_call(ctx, spec(body), "get_summary")})

    @app.post("/v1/session/evict", response_model=CountOut, responses=errors(*BODY), tags=["sessions"])
    async def session_evict(body: SessionEvictIn, ctx: Ctx) -> Response:
        return _json({"count": await service.session_call(ctx, spec(body), "evict", body.message_ids)})

    @app.post("/v1/session/forget", response_model=CountOut, responses=errors(*BODY), tags=["sessions"])
    async def session_forget(body: SessionEvictIn, ctx: Ctx) -> Response:
        return _json({"count": await service.session_call(ctx, spec(body), "forget", body.message_ids)})

    @app.post("/v1/memory/nearest", response_model=NearestOut, responses=errors(*BODY, 409), tags=["memory"])
    async def nearest(body: NearestIn, ctx: Ctx) -> Response:
        found, withheld = await service.nearest(ctx, **body.model_dump())
        return _json({"neighbours": [{"memory": _record(r), "similarity": s} for r, s in found],
                      "withheld": withheld.to_dict()})

    @app.post("/v1/memory/vectors", response_model=StoredVectorsOut, responses=errors(*BODY), tags=["memory"])
    async def vectors(body: VectorsIn, ctx: Ctx) -> Response:
        return _json({"vectors": await service.vectors(ctx, body.memory_ids)})

    @app.post("/v1/embed", response_model=VectorsOut, responses=errors(*BODY), tags=["meta"])
    async def embed(body: EmbedIn, ctx: Ctx) -> Response:
        model, vectors = await service.embed(ctx, body.texts)
        return _json({"model_id": model, "vectors": vectors})

    @app.post("/v1/session/replace", response_model=OkOut, responses=errors(*BODY), tags=["sessions"])
    async def session_replace(body: SessionMessagesIn, ctx: Ctx) -> Response:
        await service.session_call(ctx, spec(body), "replace", [m.to_message() for m in body.messages])
        return _json({"ok": True})

    @app.post("/v1/session/clear", response_model=OkOut, responses=errors(*BODY), tags=["sessions"])
    async def session_clear(body: SessionIn, ctx: Ctx) -> Response:
        await service.session_call(ctx, spec(body), "clear")
        return _json({"ok": True})

    @app.post("/v1/session/end", response_model=MemoriesOut, responses=errors(*BODY), tags=["sessions"])
    async def session_end(body: SessionEndIn, ctx: Ctx) -> Response:
        records = await service.session_call(ctx, spec(body), "end", body.consolidate)
        return _json({"memories": [_record(r) for r in records]})

    @app.post("/v1/session/delete", response_model=DeletedOut, responses=errors(*BODY), tags=["sessions"])
    async def session_delete(body: SessionIn, ctx: Ctx) -> Response:
        return _json({"deleted": await service.session_call(ctx, spec(body), "delete")})

    @app.post("/v1/session/info", response_model=SessionInfoResult, responses=errors(*BODY), tags=["sessions"])
    async def session_info(body: SessionIn, ctx: Ctx) -> Response:
        found = await service.session_call(ctx, spec(body), "info")
        return _json({"session": _session_info(found) if found else None})

    @app.post("/v1/sessions", response_model=SessionsOut, responses=errors(*BODY), tags=["sessions"])
    async def sessions(body: SessionsIn, ctx: Ctx) -> Response:
        return _json({"sessions": [_session_info(s) for s in await service.sessions(ctx, body.user_id)]})

    return app
