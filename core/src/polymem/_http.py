"""The HTTP transport: the operation table sent to a `polymem serve` service.

Each operation becomes one request: its route from the table, path parameters
from its fields, the other fields as the JSON body; the reply is decoded by the
operation's codec. Errors come back as the same `PolymemError` subclasses the
embedded store raises (the JSON `code` picks the class). Retries happen only
where the table says an operation is safe to repeat. The token is sent as a
bearer token and never appears in `url`.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import json
import os
import random
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any, TypeVar, cast
from urllib.parse import quote, urlencode

from . import operations as ops
from ._errors import InvalidInput, PolymemError, StoreClosedError
from ._models import MemoryDraft, Message
from ._plan import Plan, adrive, drive

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from ._errors import missing_extra

    raise missing_extra("httpx", "http") from exc

from .server._errors import ServiceUnavailableError, error_type
from .server._limits import MAX_EMBED_CHARS

R = TypeVar("R")
RETRY_STATUSES = (502, 503, 504)
MAX_RETRY_AFTER = 30.0  # seconds: a longer Retry-After is the caller's to wait out


def backoff(attempt: int) -> float:
    """Seconds before retry `attempt` (from 0) after a failure: 50 ms doubling each time, each wait
    drawn between half and all of that, so clients that failed together do not retry together."""
    return float(0.05 * 2 ** attempt) * random.uniform(0.5, 1.0)


def after_retry_after(seconds: float) -> float:
    """Seconds to wait for a 429's Retry-After: at least what the service asked, up to a fifth more,
    so the clients it refused at once are not all back in the same instant."""
    return min(seconds * random.uniform(1.0, 1.2), MAX_RETRY_AFTER)


def _embed_batches(texts: Sequence[str]) -> Iterator[builtins.list[str]]:
    """`texts` in requests of at most 256 texts and MAX_EMBED_CHARS characters (a longer text goes alone)."""
    batch: builtins.list[str] = []
    size = 0
    for text in texts:
        if batch and (len(batch) == 256 or size + len(text) > MAX_EMBED_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


@dataclass
class Request:
    """One HTTP exchange a plan asks for."""

    method: str
    path: str
    json: Any = None
    upload: Any = None              # bytes or a binary file: the raw body
    download: IO[bytes] | None = None  # stream the response body into this file
    retry: bool = False             # safe to send again after a failure
    missing_ok: bool = False        # a 404 answers None instead of raising
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoteEmbedder:
    """The server's embedder (`model_id`, `dimension`); `embed()` asks the server (POST /v1/embed)."""

    model_id: str
    dimension: int
    _embed: Any = field(default=None, repr=False, compare=False)

    def embed(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        if self._embed is None:
            raise PolymemError("this client cannot call the server synchronously")
        return cast("list[list[float]]", self._embed(texts))


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, MemoryDraft):
        return ops.draft_out(value)
    if isinstance(value, ops.SessionSpec):
        return value.model_dump()
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _encode(data: Any) -> bytes:
    try:
        return json.dumps(data, default=_default, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"cannot send this value: {exc}") from exc


def _raise_for(response: httpx.Response, body: bytes) -> None:
    try:
        error = json.loads(body)["error"]
        code, message = error.get("code"), error.get("message") or response.reason_phrase
    except (ValueError, KeyError, TypeError):
        code, message = None, body.decode("utf-8", "replace")[:500] or response.reason_phrase
    raise error_type(code, response.status_code)(message)


def request_plan(op: ops.Operation[Any]) -> Plan[Request, Any]:
    """One operation of the table as an HTTP exchange."""
    method, path = op.route.split(" ", 1)
    args = op.arguments()
    body: dict[str, Any] = {}
    for key in op.wire_fields():
        if "{" + key + "}" in path:
            value = args[key]
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(f"{key} must be a non-empty string")
            path = path.replace("{" + key + "}", quote(value, safe=""))
        else:
            body[key] = args[key]
    if method == "GET":  # a GET has no body: what differs from the defaults travels in the query, as JSON
        query = {k: json.dumps(v.isoformat() if isinstance(v, datetime) else v)
                 for k, v in body.items() if v != op.model_fields[k].default}
        path += f"?{urlencode(query)}" if query else ""
    req = Request(method, path, None if method == "GET" or not body else body, retry=op.is_retry_safe(),
                  missing_ok=op.missing_is_none)
    if op.streams == "response":
        target = args["target"]
        if isinstance(target, (str, Path)):
            with open(target, "wb") as handle:
                req.download = handle
                return (yield req)
        req.download = target
        return (yield req)
    if op.streams == "request":
        source = args["source"]
        req.json = None
        if isinstance(source, (str, Path)):
            with open(source, "rb") as handle:
                req.upload = handle
                data = yield req
        else:
            req.upload = source
            data = yield req
        return op.codec.decode(data)
    data = yield req
    return None if data is None and op.missing_is_none else op.codec.decode(data)


class _Retry(Exception):
    """The answer says to send the request again after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay


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


def _content(req: Request, chunks: Any) -> tuple[Any, dict[str, str]]:
    if req.upload is not None:
        return chunks(req.upload), {"content-type": "application/x-ndjson"}
    if req.json is not None:
        return _encode(req.json), {"content-type": "application/json"}
    return None, {}


class HttpTransport:
    """Sends the operation table to a `polymem serve` service, from sync or async code.

    `transport=`/`http_client=` put a custom httpx transport or client underneath (an
    ASGI app in tests); a sync one serves `execute`, an async one `aexecute`.
    """

    def __init__(self, url: str, token: str | None = None, *, namespace: str | None = None, timeout: float = 30.0,
                 retries: int = 3, transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                 http_client: httpx.Client | httpx.AsyncClient | None = None, asynchronous: bool = False) -> None:
        self._url, self._namespace, self._retries, self._timeout = url.rstrip("/"), namespace, retries, timeout
        self._token = token if token is not None else os.environ.get("POLYMEM_TOKEN")
        self._info: dict[str, Any] | None = None
        self._closed = False
        self.custom = transport is not None or http_client is not None
        self._sync: httpx.Client | None = None
        self._async: httpx.AsyncClient | None = None
        # Duck-typed: test clients (Starlette's) may come from another build of httpx.
        if http_client is not None:
            if inspect.iscoroutinefunction(getattr(http_client, "send", None)):
                self._async = cast(httpx.AsyncClient, http_client)
            else:
                self._sync = cast(httpx.Client, http_client)
        elif transport is not None:  # a transport may serve both (httpx.MockTransport does)
            if hasattr(transport, "handle_async_request"):
                self._async = httpx.AsyncClient(base_url=self._url, transport=cast(httpx.AsyncBaseTransport, transport),
                                                timeout=timeout)
            if hasattr(transport, "handle_request"):
                self._sync = httpx.Client(base_url=self._url, transport=cast(httpx.BaseTransport, transport),
                                          timeout=timeout)
        for client in (self._sync, self._async):
            if client is not None:
                client.headers.update(self._headers())

    def _headers(self) -> dict[str, str]:
        headers = {"user-agent": "polymem-client"}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        if self._namespace:
            headers["x-polymem-namespace"] = self._namespace
        return headers

    def _sync_client(self) -> httpx.Client:
        if self._sync is None:
            if self.custom:
                raise PolymemError("this client was given an async httpx transport; use the async methods")
            self._sync = httpx.Client(base_url=self._url, timeout=self._timeout, headers=self._headers())
        return self._sync

    def _async_client(self) -> httpx.AsyncClient:
        if self._async is None:
            if self.custom:
                raise PolymemError("this client was given a sync httpx transport; use the sync methods")
            self._async = httpx.AsyncClient(base_url=self._url, timeout=self._timeout, headers=self._headers())
        return self._async

    # -- what the store tells -----------------------------------------------------------------
    @property
    def url(self) -> str:
        """The service URL (no token): `polymem.open(mem.url, token=…)` reconnects."""
        return self._url

    @property
    def namespace(self) -> str:
        return self._namespace or cast(str, self._info_now()["namespace"])

    @property
    def embedder(self) -> RemoteEmbedder | None:
        """What the server embeds with, or None in lexical-only mode."""
        info = self._info_now()
        model = info.get("embedding_model")
        if model is None:
            return None
        embed = None if self._sync is None and self.custom else self._embed
        return RemoteEmbedder(model, int(info["dimension"]), embed)

    @property
    def closed(self) -> bool:
        return self._closed

    def now(self) -> datetime:
        from ._time import utc_now

        return utc_now()

    def local(self) -> Any:
        raise PolymemError(f"{self._url} is a remote store: its engine and backend live in the service")

    def sync_twin(self) -> HttpTransport:
        """A transport on the same service and token that sync code can use."""
        if self._async is not None and self.custom:
            raise PolymemError("this client runs on a custom async httpx transport; it has no synchronous twin")
        return self

    def _info_now(self) -> dict[str, Any]:
        if self._info is None:
            self._info = cast("dict[str, Any]", self._send(Request("GET", "/v1/info", retry=True)))
        return self._info

    def _embed(self, texts: Sequence[str]) -> builtins.list[builtins.list[float]]:
        vectors: builtins.list[builtins.list[float]] = []
        for batch in _embed_batches(texts):
            data = self._send(Request("POST", "/v1/embed", {"texts": batch}, retry=True))
            vectors += cast("list[list[float]]", data["vectors"])
        return vectors

    # -- sending ------------------------------------------------------------------------------
    def execute(self, op: ops.Operation[R]) -> R:
        if self._closed:
            raise StoreClosedError("the client is closed")
        return cast(R, drive(request_plan(op), self._send))

    async def aexecute(self, op: ops.Operation[R]) -> R:
        if self._closed:
            raise StoreClosedError("the client is closed")
        if self._info is None:  # so `namespace` and `embedder` answer without blocking later
            self._info = cast("dict[str, Any]", await self._asend(Request("GET", "/v1/info", retry=True)))
        return cast(R, await adrive(request_plan(op), self._asend))

    def _again_after(self, response: httpx.Response, req: Request, attempt: int) -> float | None:
        """Seconds to wait before sending `req` again after this answer, or None to take it.

        A 429 was refused before anything ran, so any request may go again once its Retry-After
        has passed; a 502/503/504 only a request that is safe to repeat."""
        if attempt >= self._retries or req.upload is not None:
            return None
        if response.status_code == 429:
            try:
                return after_retry_after(max(float(response.headers.get("retry-after", "1")), 0.0))
            except ValueError:
                return after_retry_after(1.0)
        if response.status_code in RETRY_STATUSES and req.retry:
            return backoff(attempt)
        return None

    def _give_up(self, req: Request, exc: Exception, attempt: int) -> bool:
        sent = not isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
        if attempt >= self._retries or (sent and not req.retry) or req.upload is not None:
            raise ServiceUnavailableError(f"{self._url}: {exc!r}") from None
        if req.download is not None:
            req.download.seek(0)
            req.download.truncate()
        return False

    def _send(self, req: Request) -> Any:
        attempt = 0
        while True:
            try:
                content, headers = _content(req, _chunks)
                with self._sync_client().stream(req.method, req.path, content=content, headers=headers) as response:
                    if (delay := self._again_after(response, req, attempt)) is not None:
                        response.read()
                        raise _Retry(delay)
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
            except _Retry as again:
                time.sleep(again.delay)
                attempt += 1
            except httpx.TransportError as exc:
                self._give_up(req, exc, attempt)
                time.sleep(backoff(attempt))
                attempt += 1

    async def _asend(self, req: Request) -> Any:
        attempt = 0
        while True:
            try:
                content, headers = _content(req, _achunks)
                async with self._async_client().stream(req.method, req.path, content=content,
                                                       headers=headers) as response:
                    if (delay := self._again_after(response, req, attempt)) is not None:
                        await response.aread()
                        raise _Retry(delay)
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
            except _Retry as again:
                await asyncio.sleep(again.delay)
                attempt += 1
            except httpx.TransportError as exc:
                self._give_up(req, exc, attempt)
                await asyncio.sleep(backoff(attempt))
                attempt += 1

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._sync is not None:
                self._sync.close()
            if self._async is not None:
                try:
                    asyncio.get_running_loop()
                except RuntimeError:
                    # an async client used by `to_async()` on a loop that has ended since: its
                    # connections died with that loop, and closing them there cannot run any more
                    with contextlib.suppress(RuntimeError):
                        asyncio.run(self._async.aclose())

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._async is not None:
                await self._async.aclose()
            if self._sync is not None:
                self._sync.close()
