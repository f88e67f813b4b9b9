"""The MCP server inside `polymem serve`: streamable HTTP at `/mcp`.

The same generated tools as `polymem mcp` (`polymem.mcp_server`), but every call
runs through `Service.execute(ctx, op)` for the bearer token of the HTTP request
that carries it: its namespace (or `x-polymem-namespace`), its grants (tools it
may not call are not listed, and refused), the write filter, the read guard and
the audit log. The route sits behind the app's `Limits` middleware like every
other route (body size, timeouts, metrics, refusal while shutting down).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request

from .._errors import PolymemError
from ..mcp_server import Caller, build_server
from ._app import _error
from ._auth import Grant
from ._errors import ServiceUnavailableError
from ._service import Context, Service

CONTEXT_KEY = "polymem_context"


def _permissions(grant: Grant) -> frozenset[str]:
    allowed = set()
    for permission in ("read", "write", "admin"):
        try:
            grant.require_admin() if permission == "admin" else grant.require(permission)
        except PolymemError:
            continue
        allowed.add(permission)
    return frozenset(allowed)


class McpEndpoint:
    """ASGI app of `/mcp`: authenticates the request, then hands it to the SDK's session manager."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.manager: StreamableHTTPSessionManager | None = None

        def resolve(context: Any) -> Caller:
            ctx: Context = context.request.scope["state"][CONTEXT_KEY]

            async def run(op: Any) -> Any:
                return await service.execute(ctx, op)

            return Caller(run, _permissions(ctx.grant))

        self.server = build_server(resolve)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, for the app's lifespan (a new manager per server start)."""
        self.manager = StreamableHTTPSessionManager(self.server, json_response=True)
        async with self.manager.run():
            yield
        self.manager = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        state = scope.setdefault("state", {})
        request = Request(scope)
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else None
        try:
            ctx = self.service.context(token, request.headers.get("x-polymem-namespace"),
                                       state.get("request_id") or uuid.uuid4().hex)
        except PolymemError as exc:
            response = _error(exc, state.get("request_id"))
            if response.status_code == 401:
                response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        if self.manager is None:
            await _error(ServiceUnavailableError("the MCP endpoint is not running"), state.get("request_id"))(
                scope, receive, send)
            return
        state[CONTEXT_KEY] = ctx
        await self.manager.handle_request(scope, receive, send)
