"""The HTTP edge: FastAPI routes over `Service`, JSON errors, limits, metrics.

Every error is a JSON body `{"error": {"code", "message", "request_id"}}`
whose `code` is the `PolymemError` subclass's code; every route declares the
errors it can return, so the OpenAPI document is the whole contract.
"""

# No `from __future__ import annotations`: FastAPI resolves the local `Ctx` alias at runtime.

import asyncio
import inspect
import json
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import IO, Annotated, Any, cast

from fastapi import Depends, FastAPI, Header, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from .. import operations as ops
from .._errors import InvalidInput, NotFoundError, PolymemError
from .._models import MemoryRecord, RecallResult
from ..operations import OPERATIONS, Operation
from ._errors import (
    PayloadTooLargeError,
    RateLimitedError,
    RequestTimeoutError,
    ServiceUnavailableError,
    status_for,
)
from ._limits import MAX_EMBED_CHARS, RateLimiter
from ._metrics import Metrics
from ._service import Context, Service

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

# -- wire models of the service's own routes (the operations' come from the operation table) ---
class EmbedIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(max_length=256)


class VectorsOut(BaseModel):
    model_id: str
    vectors: list[list[float]]


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


class HealthOut(BaseModel):
    status: str
    version: str


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
    429: "rate_limited: the token's request budget is spent (see Retry-After)",
    500: "internal error",
    503: "unavailable / store_closed: shutting down",
    504: "timeout: the server gave up waiting (a write in flight still completes)",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    base = (401, 403, 422, 429, 500, 503, 504)  # 422: a malformed header or path parameter, too
    return {s: {"model": ErrorOut, "description": _ERROR_TEXT[s]} for s in sorted({*base, *statuses})}


BODY = (413, 422)


# -- routes from the operation table -----------------------------------------------------------
def _summary(op: type[Operation[Any]]) -> str:
    return (op.__doc__ or op.name).strip().splitlines()[0]


def _tag(op: type[Operation[Any]]) -> str:
    if issubclass(op, ops.SessionOperation) or op is ops.Sessions:
        return "sessions"
    if op in (ops.SetStatus, ops.BlockSource, ops.UnblockSource, ops.BlockedSources, ops.Release, ops.AuditReplay,
              ops.AuditEntries):
        return "safety"
    return "meta" if op in (ops.Stats, ops.Flush) else "memory"


_STREAM = {"application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}}


def _query_value(raw: str) -> Any:
    """A query parameter's value: JSON where it parses as JSON, else the text itself."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _add_route(app: FastAPI, op: type[Operation[Any]], ctx_type: Any, service: Service, metrics: Metrics) -> None:
    """One operation of the table as a route: its body model in, its codec's schema out.

    A streamed request (import) arrives as JSON lines, spooled before the operation runs; a
    streamed answer (export) leaves as JSON lines with the count in `x-polymem-count`."""
    method, path = op.route.split(" ", 1)
    body_model, query_model = op.body_model(), op.query_model()
    path_fields = [k for k in op.wire_fields() if "{" + k + "}" in path]
    # A GET has no body: its other parameters come in the query, as JSON values (`?include_quarantined=true`;
    # a bare date-time, not quoted as JSON, is taken as the text it is).
    query_fields = op.query_fields()

    async def endpoint(ctx: Context, request: Request, body: BaseModel | None = None,
                       **path_values: str | None) -> Response:
        values: dict[str, Any] = dict(body) if body is not None else {}
        query = {k: _query_value(raw) for k in query_fields if (raw := path_values.pop(k)) is not None}
        if query_model is not None:
            try:
                values.update(query_model.model_validate(query).model_dump(exclude_unset=True))
            except ValidationError as exc:  # answered as a malformed body is
                raise RequestValidationError(exc.errors()) from None
        values.update(path_values)
        if op.streams == "request":
            # Checked before the upload is read, not only by the service once it is spooled.
            ctx.grant.require_admin() if op.permission == "admin" else ctx.grant.require(op.permission)
            with tempfile.SpooledTemporaryFile(max_size=8 << 20) as spool:
                async for chunk in request.stream():
                    spool.write(chunk)
                spool.seek(0)
                result = await service.execute(ctx, op.model_construct(**values, source=spool))
        elif op.streams == "response":
            handle, count = await service.export_stream(ctx, cast(ops.ExportSnapshot, op.model_construct(**values)))
            return StreamingResponse(_chunks(handle), media_type="application/x-ndjson",
                                     headers={"x-polymem-count": str(count)})
        else:
            result = await service.execute(ctx, op.model_construct(**values))
        if result is None and op.missing_is_none:
            raise NotFoundError(f"no memory {values.get('memory_id', values.get('key'))!r}")
        if isinstance(result, MemoryRecord) and result.metadata.get("polymem_flags") and op is ops.Save:
            metrics.event("write_flagged", result.status)
        if isinstance(result, RecallResult) and result.withheld.get("count"):
            metrics.event("read_withheld", "recall")
        return _json(op.codec.encode(result))

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=ctx_type),
              inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)]
    if body_model is not None:
        params.append(inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=body_model))
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=str) for k in path_fields]
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=str | None,
                                 default=Query(None, description=f.description)) for k, f in query_fields.items()]
    vars(endpoint)["__signature__"] = inspect.Signature(params, return_annotation=Response)
    statuses = (*(BODY if body_model is not None or op.streams else ()), *op.statuses,
                *((404,) if op.missing_is_none else ()))
    responses = errors(*statuses)
    extra: dict[str, Any] = {}
    if op.streams == "response":
        responses[200] = {"description": "A polymem JSONL snapshot, streamed.", "content": _STREAM}
        extra["response_class"] = StreamingResponse
    else:
        extra["response_model"] = op.codec.schema
    if op.streams == "request":
        extra["openapi_extra"] = {"requestBody": {"required": True, "content": _STREAM}}
    app.add_api_route(path, endpoint, methods=[method], name=op.name, responses=responses,
                      tags=["snapshots" if op.streams else _tag(op)], summary=_summary(op),
                      description=op.__doc__ or "", **extra)


def _chunks(handle: IO[bytes]) -> Any:
    with handle:
        while block := handle.read(1 << 16):
            yield block


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
    """Pure ASGI middleware: request id, body size limit, per-token rate limit, timeout, metrics,
    refusal while closing; a request whose client went away is cancelled."""

    def __init__(self, app: ASGIApp, service: Service, metrics: Metrics, *, max_body_bytes: int,
                 max_import_bytes: int, timeout: float, long_timeout: float, limiter: RateLimiter | None) -> None:
        self.app, self.service, self.metrics = app, service, metrics
        self.max_body, self.max_import = max_body_bytes, max_import_bytes
        self.timeout, self.long_timeout = timeout, long_timeout
        self.limiter = limiter

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

        answered = asyncio.Event()

        async def send_wrapper(message: dict[str, Any]) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode("latin-1"))]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                answered.set()
            await send(message)

        received = 0
        body_read = asyncio.Event()

        async def receive_wrapper() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge()
                if not message.get("more_body"):
                    body_read.set()
            return message

        async def fail(exc: PolymemError, headers: dict[str, str] | None = None) -> None:
            if not started:
                response = _error(exc, rid)
                response.headers.update(headers or {})
                await response(scope, receive, cast(Any, send_wrapper))

        self.metrics.inflight += 1
        try:
            declared = headers.get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await fail(PayloadTooLargeError(f"the body exceeds {limit} bytes"))
            elif self.service.closing and (path.startswith("/v1/") or path == "/mcp"):
                await fail(ServiceUnavailableError("the service is shutting down"))
            elif (wait := self._wait(scope, headers, declared)) > 0:
                self.metrics.event("rate_limited", path)
                await fail(RateLimitedError(f"this token's request budget is spent; retry in {wait:.1f} s"),
                           {"retry-after": RateLimiter.retry_after(wait)})
            elif path == "/mcp" and scope["method"] == "GET":  # an MCP session's event stream stays open
                await self.app(scope, receive_wrapper, send_wrapper)
            else:
                timeout = self.long_timeout if path in LONG_PATHS else self.timeout
                await _unless_gone(asyncio.wait_for(self.app(scope, receive_wrapper, send_wrapper), timeout),
                                   receive, body_read, answered)
        except _TooLarge:
            await fail(PayloadTooLargeError(f"the body exceeds {limit} bytes"))
        except asyncio.TimeoutError:
            await fail(RequestTimeoutError("the request took too long; a write in flight still completes"))
        finally:
            self.metrics.inflight -= 1
            route = scope.get("route")
            self.metrics.observe(scope["method"], getattr(route, "path", "unmatched"), status,
                                 time.perf_counter() - start)


    def _wait(self, scope: Scope, headers: dict[bytes, bytes], declared: bytes | None) -> float:
        """Seconds this caller must wait before this request (0: it goes ahead, its cost taken)."""
        path = scope["path"]
        if self.limiter is None or not (path.startswith("/v1/") or path == "/mcp"):
            return 0.0
        size = int(declared) if declared is not None and declared.isdigit() and path != "/v1/memory/import" else 0
        client = scope.get("client")
        caller = RateLimiter.caller(headers.get(b"authorization"), client[0] if client else None)
        return self.limiter.take(caller, RateLimiter.cost(size))


async def _unless_gone(work: Awaitable[None], receive: Any, body_read: asyncio.Event,
                       answered: asyncio.Event) -> None:
    """Run a request; cancel it if its client disconnects before the answer is sent (a shielded
    write still completes)."""
    task = asyncio.ensure_future(work)

    async def client_gone() -> None:
        await body_read.wait()
        while (await receive())["type"] != "http.disconnect":
            pass
        if answered.is_set():  # a server reports "disconnect" once the response is complete, too
            await asyncio.Event().wait()

    watcher = asyncio.ensure_future(client_gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()  # the client is gone (or this request was cancelled): stop its work
    try:
        await task
    except asyncio.CancelledError:
        if watcher.done() and not watcher.cancelled():
            return  # nobody is left to answer
        raise


# -- the app ----------------------------------------------------------------------------------
def create_app(service: Service, *, max_body_bytes: int = 1 << 20, max_import_bytes: int = 256 << 20,
               timeout: float = 30.0, long_timeout: float = 600.0, mcp: bool = True,
               rate: float | None = None, burst: float = 200.0, max_embed_chars: int = MAX_EMBED_CHARS,
               ui: bool = True) -> FastAPI:
    """The FastAPI app of the polymem service over `service` (with MCP at `/mcp` if `mcp` is installed).

    `rate`/`burst`: each token's request budget in units per second (a request costs one unit
    plus one per KiB of body; None: unlimited); `max_embed_chars`: the most text one `/v1/embed`
    request may ask to embed (see docs/limits.md); `ui`: serve the web page at `/ui` (needs jinja2,
    in the `server` extra)."""
    metrics = Metrics()

    mcp_endpoint = _mcp_endpoint(service) if mcp else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.closing = False  # a server (re)starting on this service reopens its stores lazily
        async with mcp_endpoint.running() if mcp_endpoint is not None else _nothing():
            yield
        await service.aclose()

    app = FastAPI(title="polymem", version=__version__, lifespan=lifespan,
                  description="One memory for every agent framework. Errors are JSON bodies with a stable `code`.")
    app.state.service, app.state.metrics = service, metrics
    limiter = None if rate is None else RateLimiter(rate, burst)
    app.add_middleware(cast(Any, Limits), service=service, metrics=metrics, max_body_bytes=max_body_bytes,
                       max_import_bytes=max_import_bytes, timeout=timeout, long_timeout=long_timeout,
                       limiter=limiter)
    bearer = HTTPBearer(auto_error=False, description="A polymem token: `polymem token create`.")

    @app.exception_handler(PolymemError)
    async def on_polymem_error(request: Request, exc: PolymemError) -> Response:
        return _error(exc, request.state.request_id)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> Response:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]

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

    for op in OPERATIONS:
        _add_route(app, op, Ctx, service, metrics)

    @app.post("/v1/embed", response_model=VectorsOut, responses=errors(*BODY), tags=["meta"])
    async def embed(body: EmbedIn, ctx: Ctx) -> Response:
        chars = sum(len(t) for t in body.texts)
        if chars > max_embed_chars:
            raise PayloadTooLargeError(f"{chars} characters to embed; one request may ask for {max_embed_chars}")
        model, vectors = await service.embed(ctx, body.texts)
        return _json({"model_id": model, "vectors": vectors})

    if ui:
        _mount_ui(app, service, limiter)
    if mcp_endpoint is not None:  # MCP over streamable HTTP: the same tools as `polymem mcp`, per token
        app.add_route("/mcp", mcp_endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    return app


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


def _mcp_endpoint(service: Service) -> Any:
    """The `/mcp` endpoint, or None when the `mcp` package is not installed. With `mcp` present
    but the rest of the `mcp` extra absent, the service refuses to start rather than serve
    without `/mcp` unannounced."""
    try:
        from ._mcp import McpEndpoint
    except ImportError as exc:
        if (exc.name or "mcp").partition(".")[0] == "mcp":
            return None
        from .._errors import missing_extra

        raise missing_extra(exc.name or "mcp", "mcp") from exc
    return McpEndpoint(service)


def _mount_ui(app: FastAPI, service: Service, limiter: RateLimiter | None) -> None:
    """The web page at `/ui`, on the same service and rate limiter; without jinja2, a page that
    names the extra to install."""
    try:
        from .ui import router
    except ImportError as exc:
        from .._errors import missing_extra

        missing = str(missing_extra(exc.name or "jinja2", "server"))

        async def absent() -> Response:
            return PlainTextResponse(f"polymem's web page is not available: {missing}", status_code=501)

        app.add_api_route("/ui{rest:path}", absent, methods=["GET", "POST"], include_in_schema=False)
        return
    app.include_router(router(service, limiter))
