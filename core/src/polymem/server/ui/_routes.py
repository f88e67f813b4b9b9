"""The pages of `/ui`: each one runs operations of the table through `Service.execute`.

A page reads its parameters from the query string (views) or a form (changes), builds the
operation (validated by the operation's own model, as the HTTP API validates a body), and
runs it under the signed-in token's `Context`: the same grants, read guard, audit log and
rate limit as `/v1`. What the token may not read is not shown because the service refuses it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlencode

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from ... import __version__
from ... import operations as ops
from ..._errors import InvalidInput, NotFoundError, PermissionDeniedError, PolymemError
from ..._models import MemoryRecord
from .._errors import AuthenticationError, RateLimitedError, status_for
from .._limits import RateLimiter
from .._service import Context, Service
from ._plot import live_plot
from ._sessions import COOKIE, Sessions, UiSession

R = TypeVar("R")
PAGE = 50  # memories or audit entries per page

# No inline script or style, no eval, nothing from elsewhere; forms post only here; no framing.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "x-frame-options": "DENY",
           "referrer-policy": "no-referrer", "cache-control": "no-store"}
STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}


class _Spent(RateLimitedError):
    """The token's budget is spent; `retry_after` as the API's `Retry-After` says it."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"this token's request budget is spent; retry in {wait:.1f} s")
        self.retry_after = RateLimiter.retry_after(wait)


class _Redirect(Exception):
    def __init__(self, to: str) -> None:
        self.to = to


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("polymem.server.ui", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["when"] = lambda t: "" if t is None else t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    env.filters["pretty"] = lambda v: json.dumps(v, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    env.filters["num"] = lambda v, digits=3: "–" if v is None else f"{v:.{digits}f}"
    return env


def _text(values: dict[str, str], key: str) -> str | None:
    """A form or query value, stripped; None when absent or blank."""
    value = values.get(key, "").strip()
    return value or None


def _number(values: dict[str, str], key: str, default: int | None) -> int | None:
    """A whole number from a form or query (a typed error, not a crash, when it is not one)."""
    text = _text(values, key)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(f"{key}: {text!r} is not a whole number") from None


def _moment(text: str | None) -> datetime | None:
    """An `as_of` typed in the page: ISO-8601, read as UTC when it names no zone (the page says so)."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"as_of: {text!r} is not an ISO-8601 date and time") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _op(cls: type[ops.Operation[R]], **values: Any) -> ops.Operation[R]:
    """The operation, checked by its own model (as the HTTP API checks a body)."""
    try:
        return cls.model_validate(values)
    except ValidationError as exc:
        parts = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
        raise InvalidInput("; ".join(parts)) from None


def _changes(versions: list[MemoryRecord]) -> list[list[str]]:
    """What each version changed from the one before it (field names)."""
    fields = ("content", "category", "importance", "status", "metadata", "entities", "expire_at")
    out: list[list[str]] = [["created"]]
    for before, after in zip(versions, versions[1:]):
        out.append([f for f in fields if getattr(before, f) != getattr(after, f)] or ["(no field changed)"])
    return out


class WebUi:
    """The `/ui` pages over one `Service` (see the module docstring)."""

    def __init__(self, service: Service, limiter: RateLimiter | None) -> None:
        self.service, self.limiter = service, limiter
        self.sessions = Sessions()
        self.env = _environment()

    # -- plumbing -------------------------------------------------------------------------------
    def render(self, request: Request, template: str, code: int = 200, **values: Any) -> Response:
        session: UiSession | None = getattr(request.state, "ui_session", None)
        grants = getattr(request.state, "ui_grants", [])
        html = self.env.get_template(template).render(
            request=request, session=session, grants=grants, version=__version__,
            ctx=getattr(request.state, "ui_ctx", None), **values)
        return self.secure(HTMLResponse(html, status_code=code))

    @staticmethod
    def secure(response: Response) -> Response:
        response.headers.update(HEADERS)
        return response

    def _take(self, caller: str, body_bytes: int) -> None:
        """The same per-token budget as the API (a request costs what it would cost there)."""
        if self.limiter is not None and (wait := self.limiter.take(caller, RateLimiter.cost(body_bytes))) > 0:
            raise _Spent(wait)

    async def context(self, request: Request, form: dict[str, str] | None = None) -> Context:
        """The signed-in caller's context; a change must carry the session's CSRF token."""
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is None:
            raise _Redirect("/ui/signin")
        request.state.ui_session = session
        if form is not None and not session.csrf_ok(form.get("csrf")):
            raise PermissionDeniedError("this form is stale or did not come from this page (CSRF check failed)")
        try:
            ctx = self.service.context(session.token, session.namespace, request.state.request_id)
        except AuthenticationError:
            self.sessions.close(request.cookies.get(COOKIE))
            raise _Redirect("/ui/signin") from None
        self._take(RateLimiter.caller(f"Bearer {session.token}".encode(), None),
                   int(request.headers.get("content-length") or 0))
        request.state.ui_ctx = ctx
        request.state.ui_grants = sorted(self.service.tokens.authenticate(session.token).grants) \
            if self.service.auth_enabled else [ctx.namespace]
        return ctx

    @staticmethod
    async def form(request: Request) -> dict[str, str]:
        body = (await request.body()).decode("utf-8", "replace")
        return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}

    @staticmethod
    def query(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    def page(self, handler: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
        """A page: redirects and polymem errors become responses (an error page with its status)."""

        @functools.wraps(handler)
        async def run(request: Request, **kwargs: Any) -> Response:
            try:
                return await handler(request, **kwargs)
            except _Redirect as go:
                return self.secure(RedirectResponse(go.to, status_code=303))
            except PolymemError as exc:
                response = self.render(request, "error.html", status_for(exc), error=exc)
                if isinstance(exc, _Spent):
                    response.headers["retry-after"] = exc.retry_after
                return response

        return run

    @staticmethod
    def is_admin(ctx: Context) -> bool:
        return "admin" in ctx.grant.permissions and ctx.grant.users is None

    # -- sign in and out ------------------------------------------------------------------------
    async def signin_page(self, request: Request) -> Response:
        return self.render(request, "signin.html", error=None)

    async def signin(self, request: Request) -> Response:
        client = request.client.host if request.client else None
        self._take(RateLimiter.caller(None, client), int(request.headers.get("content-length") or 0))
        token = _text(await self.form(request), "token")
        try:
            self.service.context(token, None, request.state.request_id)
        except AuthenticationError as exc:
            return self.render(request, "signin.html", 401, error=str(exc))
        sid, _ = self.sessions.open(token or "")
        response = self.secure(RedirectResponse("/ui/memories", status_code=303))
        response.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/ui",
                            secure=request.url.scheme == "https")
        return response

    async def signout(self, request: Request) -> Response:
        await self.context(request, await self.form(request))
        self.sessions.close(request.cookies.get(COOKIE))
        response = self.secure(RedirectResponse("/ui/signin", status_code=303))
        response.delete_cookie(COOKIE, path="/ui")
        return response

    async def switch_namespace(self, request: Request) -> Response:
        form = await self.form(request)
        await self.context(request, form)
        session: UiSession = request.state.ui_session
        namespace = _text(form, "namespace")
        self.service.context(session.token, namespace)  # refused without a grant there
        session.namespace = namespace
        raise _Redirect("/ui/memories")

    async def home(self, request: Request) -> Response:
        raise _Redirect("/ui/memories")

    # -- browse, search, one memory -------------------------------------------------------------
    async def memories(self, request: Request) -> Response:
        ctx = await self.context(request)
        q = self.query(request)
        status = q.get("status", "active")
        source, as_of = _text(q, "source"), _moment(_text(q, "as_of"))
        offset = _number(q, "offset", 0) or 0
        listed = await self.service.execute(ctx, _op(
            ops.ListMemories, user_id=_text(q, "user_id"), agent_id=_text(q, "agent_id"),
            category=_text(q, "category"), filter={"source": source} if source else None,
            status=None if status == "any" else status, limit=PAGE + 1, offset=offset, as_of=as_of))
        choices = {}
        for field in ("user_id", "agent_id", "category", "source"):
            choices[field] = await self.service.execute(ctx, _op(ops.Distinct, field=field, status=None))
        now = datetime.now(timezone.utc)
        oldest = min((m.created_at for m in listed), default=now)
        kept = {k: v for k, v in q.items() if k != "offset" and v}
        return self.render(request, "memories.html", memories=listed[:PAGE], more=len(listed) > PAGE,
                           offset=offset, page=PAGE, q=q, status=status, choices=choices, as_of=as_of,
                           slider={"start": int(oldest.timestamp() * 1000), "end": int(now.timestamp() * 1000)},
                           next_query=urlencode({**kept, "offset": offset + PAGE}))

    async def search(self, request: Request) -> Response:
        ctx = await self.context(request)
        q = self.query(request)
        query, result = _text(q, "q"), None
        if query is not None:
            result = await self.service.execute(ctx, _op(
                ops.Recall, query=query, user_id=_text(q, "user_id"), top_k=_number(q, "top_k", 10),
                explain=True, as_of=_moment(_text(q, "as_of"))))
        return self.render(request, "search.html", q=q, result=result)

    async def memory(self, request: Request, memory_id: str) -> Response:
        ctx = await self.context(request)
        admin = self.is_admin(ctx)
        record = await self.service.execute(ctx, _op(ops.Get, memory_id=memory_id))
        guarded = record is None and admin  # withheld by the read guard: an admin may look (audited)
        if guarded:
            record = await self.service.execute(ctx, _op(ops.Get, memory_id=memory_id, include_quarantined=True))
        if record is None:
            raise NotFoundError(f"no memory {memory_id!r} (or not yours to read)")
        versions = await self.service.execute(ctx, _op(ops.History, memory_id=memory_id, include_quarantined=guarded))
        entries = (await self.service.execute(ctx, _op(ops.AuditEntries, memory_id=memory_id, limit=200)))["entries"] \
            if admin else []
        writers = {}
        for e in reversed(entries):  # oldest first: the last writer of each version wins
            version = 1 if e["action"] in ("save", "ingest") else (e["detail"] or {}).get("version")
            if version is not None:
                writers[version] = f"{e['action']} by {e['actor']}"
        recalled_at = [datetime.fromisoformat(e["at"]) for e in reversed(entries)
                       if e["action"] == "recall" and not (e["detail"] or {}).get("as_of")]  # a past recall reinforces nothing
        policy = self.service.store(ctx.namespace).transport.local().engine.scoring
        return self.render(request, "memory.html", m=record, versions=versions, changes=_changes(versions),
                           writers=writers, entries=entries, admin=admin, guarded=guarded,
                           plot=live_plot(policy, versions, datetime.now(timezone.utc), recalled_at))

    # -- changes ----------------------------------------------------------------------------------
    async def edit(self, request: Request, memory_id: str) -> Response:
        form = await self.form(request)
        ctx = await self.context(request, form)
        importance = _text(form, "importance")
        try:
            weight = None if importance is None else float(importance)
        except ValueError:
            raise InvalidInput(f"importance: {importance!r} is not a number") from None
        await self.service.execute(ctx, _op(ops.Update, memory_id=memory_id, content=form.get("content"),
                                            category=_text(form, "category"), importance=weight))
        raise _Redirect(f"/ui/memories/{memory_id}")

    async def delete(self, request: Request, memory_id: str) -> Response:
        ctx = await self.context(request, await self.form(request))
        await self.service.execute(ctx, _op(ops.Delete, memory_id=memory_id))
        raise _Redirect("/ui/memories")

    async def purge(self, request: Request, memory_id: str) -> Response:
        form = await self.form(request)
        ctx = await self.context(request, form)
        if form.get("confirm") != "yes":
            raise InvalidInput("tick the box to purge: the memory and every version of it go for good")
        await self.service.execute(ctx, _op(ops.Purge, memory_id=memory_id))
        raise _Redirect("/ui/memories")

    async def approve(self, request: Request, memory_id: str) -> Response:
        ctx = await self.context(request, await self.form(request))
        await self.service.execute(ctx, _op(ops.Release, memory_id=memory_id))
        raise _Redirect("/ui/safety")

    async def reject(self, request: Request, memory_id: str) -> Response:
        ctx = await self.context(request, await self.form(request))
        await self.service.execute(ctx, _op(ops.Delete, memory_id=memory_id))
        raise _Redirect("/ui/safety")

    # -- safety -----------------------------------------------------------------------------------
    async def safety(self, request: Request) -> Response:
        ctx = await self.context(request)
        flagged = await self.service.execute(ctx, _op(
            ops.ListMemories, filter={"metadata.polymem_flags": {"$exists": True}}, status=None, limit=PAGE,
            include_quarantined=True))
        blocked = await self.service.execute(ctx, _op(ops.BlockedSources))
        return self.render(request, "safety.html", flagged=flagged, blocked=blocked)

    async def block(self, request: Request) -> Response:
        form = await self.form(request)
        ctx = await self.context(request, form)
        await self.service.execute(ctx, _op(ops.BlockSource, source=form.get("source"), reason=_text(form, "reason")))
        raise _Redirect("/ui/safety")

    async def unblock(self, request: Request) -> Response:
        form = await self.form(request)
        ctx = await self.context(request, form)
        await self.service.execute(ctx, _op(ops.UnblockSource, source=form.get("source")))
        raise _Redirect("/ui/safety")

    async def audit(self, request: Request) -> Response:
        ctx = await self.context(request)
        q = self.query(request)
        log = await self.service.execute(ctx, _op(
            ops.AuditEntries, memory_id=_text(q, "memory_id"), action=_text(q, "action"),
            before=_number(q, "before", None), limit=PAGE))
        entries = log["entries"]
        kept = {k: v for k, v in q.items() if k != "before" and v}
        older = urlencode({**kept, "before": entries[-1]["seq"]}) if len(entries) == PAGE else None
        return self.render(request, "audit.html", entries=entries, verification=log["verification"], q=q,
                           older=older)

    async def replay(self, request: Request, seq: int) -> Response:
        ctx = await self.context(request)
        report = await self.service.execute(ctx, _op(ops.AuditReplay, entry=seq))
        return self.render(request, "replay.html", report=report)

    async def static(self, request: Request, name: str) -> Response:
        if name not in STATIC:
            return self.secure(Response("not found", status_code=404, media_type="text/plain"))
        body = (resources.files("polymem.server.ui") / "static" / name).read_bytes()
        response = self.secure(Response(body, media_type=STATIC[name]))
        response.headers["cache-control"] = "public, max-age=3600"
        return response


def router(service: Service, limiter: RateLimiter | None) -> APIRouter:
    """The `/ui` routes (left out of the OpenAPI document: the API is `/v1`)."""
    ui = WebUi(service, limiter)
    api = APIRouter(prefix="/ui", include_in_schema=False)
    pages: list[tuple[str, str, Callable[..., Awaitable[Response]]]] = [
        ("GET", "", ui.home), ("GET", "/", ui.home),
        ("GET", "/signin", ui.signin_page), ("POST", "/signin", ui.signin), ("POST", "/signout", ui.signout),
        ("POST", "/namespace", ui.switch_namespace),
        ("GET", "/memories", ui.memories), ("GET", "/search", ui.search),
        ("GET", "/memories/{memory_id}", ui.memory), ("POST", "/memories/{memory_id}/edit", ui.edit),
        ("POST", "/memories/{memory_id}/delete", ui.delete), ("POST", "/memories/{memory_id}/purge", ui.purge),
        ("POST", "/memories/{memory_id}/approve", ui.approve), ("POST", "/memories/{memory_id}/reject", ui.reject),
        ("GET", "/safety", ui.safety), ("POST", "/sources/block", ui.block), ("POST", "/sources/unblock", ui.unblock),
        ("GET", "/audit", ui.audit), ("GET", "/audit/{seq}", ui.replay),
    ]
    for method, path, handler in pages:
        api.add_api_route(path, ui.page(handler), methods=[method], response_class=HTMLResponse)
    api.add_api_route("/static/{name}", ui.static, methods=["GET"])
    return api
