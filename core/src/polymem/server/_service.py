"""The service's behaviour, independent of HTTP: who may do what, filter, guard, audit.

`Service` holds one `polymem.AsyncMemory` per namespace (all memory logic stays
in the core), the token store and the audit log. Every operation takes a
`Context` (the caller's grant in the namespace it acts on) and:

1. checks the grant (permission; the users and agent it may act for — a body
   naming anyone else is refused, never trusted),
2. calls the core, whose write filter and read guard every store applies (only an
   admin may ask for what the guard withholds, `include_quarantined`, and that is audited),
3. appends to the audit log before the response is sent.

Mutations run shielded: a request that times out or whose client goes away
still completes its write *and* its audit entry, and `aclose()` waits for them.
"""

from __future__ import annotations

import asyncio
import builtins
import tempfile
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from .. import _memory
from .. import operations as ops
from .._backend import AsyncSessionStore
from .._errors import InvalidFilterError, InvalidInput, NotFoundError, PermissionDeniedError
from .._guard import Classifier, RuleClassifier, WritePolicy
from .._memory import AsyncMemory
from .._models import ConsolidationReport, ImportReport, MemoryRecord, NearestResult, RecallResult, SessionInfo
from ..operations import Operation
from ._audit import AuditLog
from ._auth import AuthStore, Database, Grant, Principal, auth_db_for
from ._errors import ContentRejectedError, ServiceUnavailableError, SourceBlockedError
from ._replay import recall_entry, replay, returned

T = TypeVar("T")
R = TypeVar("R")
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Context:
    """One request's caller, as far as the service is concerned."""

    actor: str
    grant: Grant
    request_id: str

    @property
    def namespace(self) -> str:
        return self.grant.namespace


# /v1/embed embeds this many texts per step: an abandoned request stops after the step under way.
EMBED_CHUNK = 4


class Service:
    """polymem as a multi-tenant service (see the module docstring)."""

    def __init__(self, store_url: str, *, auth_db: str | Path | None = None, auth: bool = True,
                 classifier: Classifier | None = None, policy: WritePolicy | None = None,
                 **open_kwargs: Any) -> None:
        self.store_url = store_url
        self.auth_enabled = auth
        self.db = Database(auth_db if auth_db is not None else auth_db_for(store_url))
        self.tokens = AuthStore(self.db)
        self.audit = AuditLog(self.db)
        self.classifier: Classifier = classifier or RuleClassifier()
        self.policy = policy or WritePolicy()
        self.open_kwargs = open_kwargs
        self._stores: dict[str, AsyncMemory] = {}
        self._inflight: set[asyncio.Future[Any]] = set()
        self.closing = False

    # -- plumbing -----------------------------------------------------------------------------
    def store(self, namespace: str) -> AsyncMemory:
        """The namespace's store, opened on first use."""
        if self.closing:
            raise ServiceUnavailableError("the service is shutting down")
        found = self._stores.get(namespace)
        if found is None:
            found = self._stores[namespace] = _memory.open_async(
                self.store_url, namespace=namespace, classifier=self.classifier, write_policy=self.policy,
                **self.open_kwargs)
        return found

    def context(self, token: str | None, namespace: str | None, request_id: str | None = None) -> Context:
        """Authenticate a bearer token and pick its grant for `namespace` (default: its home)."""
        rid = request_id or uuid.uuid4().hex
        if not self.auth_enabled:
            ns = namespace or "default"
            return Context(ANONYMOUS, Grant(ns, frozenset({"read", "write", "admin"})), rid)
        principal: Principal = self.tokens.authenticate(token)
        return Context(principal.token_id, principal.grant(namespace), rid)

    async def _shielded(self, work: Awaitable[T]) -> T:
        """Run a mutation to completion even if the request is cancelled; `aclose` waits for it."""
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        return await asyncio.shield(task)

    async def _audit(self, ctx: Context, action: str, **fields: Any) -> None:
        await asyncio.to_thread(self.audit.append, ctx.actor, action, ctx.namespace, request_id=ctx.request_id,
                                **fields)

    async def aclose(self) -> None:
        """Finish in-flight writes, flush bookkeeping, close every store."""
        self.closing = True
        if self._inflight:
            await asyncio.gather(*list(self._inflight), return_exceptions=True)
        for store in list(self._stores.values()):
            await store.close()
        self._stores.clear()
        await asyncio.to_thread(self.audit.checkpoint)  # sign the head the last requests left

    def close_sync(self) -> None:
        self.db.close()

    # -- scope checks -------------------------------------------------------------------------
    @staticmethod
    def _write_user(grant: Grant, user_id: str | None) -> str | None:
        if grant.users is None:
            return user_id
        if user_id is None:
            if len(grant.users) == 1:
                return grant.users[0]
            raise PermissionDeniedError("this token acts for several users: name the user_id")
        if user_id not in grant.users:
            raise PermissionDeniedError(f"this token may not act for user {user_id!r}")
        return user_id

    @staticmethod
    def _write_agent(grant: Grant, agent_id: str | None) -> str | None:
        if grant.agent_id is None:
            return agent_id
        if agent_id not in (None, grant.agent_id):
            raise PermissionDeniedError(f"this token writes as agent {grant.agent_id!r}, not {agent_id!r}")
        return grant.agent_id

    @staticmethod
    def _read_scope(grant: Grant, user_id: str | None,
                    filter: dict[str, Any] | None) -> tuple[str | None, dict[str, Any] | None]:
        """The user and filter a read may use: a named user must be granted; none means all granted users."""
        if grant.users is None:
            return user_id, filter
        allowed = set(grant.users)
        if user_id is not None:
            if user_id not in allowed:
                raise PermissionDeniedError(f"this token may not read user {user_id!r}")
            return user_id, filter
        if filter is not None and not isinstance(filter, dict):
            raise InvalidFilterError("filter must be a dict")
        if filter and "user_id" in filter:
            cond = filter["user_id"]
            named = cond.get("$eq", cond.get("$in")) if isinstance(cond, dict) else cond
            values = named if isinstance(named, list) else [named]
            if not values or not set(values) <= allowed or (isinstance(cond, dict) and set(cond) - {"$eq", "$in"}):
                raise PermissionDeniedError("the filter names users this token may not read")
            return None, filter
        if len(grant.users) == 1:
            return grant.users[0], filter
        return None, {**(filter or {}), "user_id": {"$in": list(grant.users)}}

    async def _visible(self, ctx: Context, memory_id: str) -> MemoryRecord | None:
        """The memory, whatever the read guard says (for writes by its owner's grant), or None."""
        rec = await self.store(ctx.namespace).get(memory_id, include_quarantined=True)
        return rec if rec is not None and ctx.grant.covers_user(rec.user_id) else None

    # -- the core's write filter and read guard -------------------------------------------------
    async def _refusals_audited(self, ctx: Context, work: Awaitable[T], content: Any, source: Any,
                                user_id: str | None) -> T:
        """`work`, with a write the core's filter refuses (or a blocked source's) audited as such."""
        try:
            return await work
        except (ContentRejectedError, SourceBlockedError) as exc:
            await self._audit(ctx, "refuse_write", content=content if isinstance(content, str) else None,
                              detail={"why": exc.code, "source": source, "user_id": user_id})
            raise

    async def _quarantined_read(self, ctx: Context, op: Operation[Any]) -> None:
        """Only an admin may see what the read guard withholds, and each such read is audited."""
        if getattr(op, "include_quarantined", False) is True:
            ctx.grant.require_admin()
            await self._audit(ctx, "read_quarantined", memory_id=getattr(op, "memory_id", None),
                              detail={"operation": op.name})

    @staticmethod
    def _flags(rec: MemoryRecord) -> dict[str, Any] | None:
        flags = rec.metadata.get("polymem_flags")
        return {"source": rec.source, "flags": flags, "status": rec.status} if flags else None

    # -- the operation table ------------------------------------------------------------------
    async def execute(self, ctx: Context, op: Operation[R]) -> R:
        """Run one operation of the table for a caller: its grant checked, filtered, guarded, audited."""
        if isinstance(op, ops.SessionOperation):
            return cast(R, await self.session_operation(ctx, op))
        handler = getattr(self, op.name)
        return cast(R, await handler(ctx, op))

    # -- long-term memory ---------------------------------------------------------------------
    async def save(self, ctx: Context, op: ops.Save) -> MemoryRecord:
        ctx.grant.require("write")
        user_id, agent_id = self._write_user(ctx.grant, op.user_id), self._write_agent(ctx.grant, op.agent_id)
        store = self.store(ctx.namespace)
        op = op.model_copy(update={"user_id": user_id, "agent_id": agent_id})

        async def work() -> MemoryRecord:
            # Another user's idempotency key is an unused key to the core: a memory of this user,
            # that user's row neither returned nor touched (no answer tells whether the key exists).
            rec = await self._refusals_audited(ctx, store.execute(op), op.content, op.source, user_id)
            await self._audit(ctx, "save", memory_id=rec.memory_id, content=rec.content, detail=self._flags(rec))
            return rec

        return await self._shielded(work())

    async def save_many(self, ctx: Context, op: ops.SaveMany) -> builtins.list[MemoryRecord]:
        """Each memory passes the write filter and is audited as a save of its own."""
        n = len(op.drafts)
        if op.vectors is not None and len(op.vectors) != n:
            raise InvalidInput("give one vector per memory")
        if op.idempotency_keys is not None and len(op.idempotency_keys) != n:
            raise InvalidInput("give one idempotency key (or None) per memory")
        saved = []
        for i, draft in enumerate(op.drafts):
            saved.append(await self.save(ctx, ops.Save.bind(
                draft.content, user_id=op.user_id, agent_id=op.agent_id, session_id=op.session_id,
                category=draft.category, source=draft.source, importance=draft.importance,
                entities=list(draft.entities), metadata=dict(draft.metadata),
                idempotency_key=None if op.idempotency_keys is None else op.idempotency_keys[i],
                vector=None if op.vectors is None else op.vectors[i], valid_from=op.valid_from or draft.valid_from,
                valid_to=op.valid_to or draft.valid_to)))
        return saved

    async def recall(self, ctx: Context, op: ops.Recall) -> RecallResult:
        ctx.grant.require("read")
        user_id, filter = self._read_scope(ctx.grant, op.user_id, op.filter)
        hits = await self.store(ctx.namespace).execute(op.model_copy(update={"user_id": user_id, "filter": filter}))
        withheld = [m["memory_id"] for m in hits.withheld["memories"]]
        detail: dict[str, Any] = {"returned": returned(list(hits))}
        if withheld:
            detail["withheld"] = withheld
        if op.as_of is not None:
            detail["as_of"] = op.as_of.isoformat()
        await self._audit(ctx, "recall", refs=[h.memory.memory_id for h in hits], content=op.query, detail=detail)
        return hits

    async def embed(self, ctx: Context, texts: Sequence[str]) -> tuple[str, builtins.list[builtins.list[float]]]:
        """The server's embeddings of `texts` (so clients can pass `query_vector`s of the right model)."""
        ctx.grant.require("read")
        embedder = self.store(ctx.namespace).embedder
        if embedder is None:
            raise InvalidInput("the service runs without an embedder (lexical-only mode)")
        vectors: builtins.list[Any] = []
        for start in range(0, len(texts), EMBED_CHUNK):  # cancelled between chunks if the request is abandoned
            vectors += await asyncio.to_thread(embedder.embed, list(texts[start:start + EMBED_CHUNK]))
        return embedder.model_id, [[float(x) for x in v] for v in vectors]

    async def nearest(self, ctx: Context, op: ops.Nearest) -> NearestResult:
        """Plain nearest neighbours, in the caller's scope and through the read guard."""
        ctx.grant.require("read")
        user_id, filter = self._read_scope(ctx.grant, op.user_id, op.filter)
        found = await self.store(ctx.namespace).execute(op.model_copy(update={"user_id": user_id, "filter": filter}))
        withheld = [m["memory_id"] for m in found.withheld["memories"]]
        await self._audit(ctx, "nearest", refs=[r.memory_id for r, _ in found],
                          detail={"withheld": withheld} if withheld else None)
        return found

    async def vectors(self, ctx: Context, op: ops.Vectors) -> dict[str, builtins.list[float]]:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        store = self.store(ctx.namespace)
        visible = [r.memory_id for r in await asyncio.gather(*(store.get(m, include_quarantined=True)
                                                               for m in op.memory_ids))
                   if r is not None and ctx.grant.covers_user(r.user_id)]
        found = await store.execute(op.model_copy(update={"memory_ids": visible})) if visible else {}
        return {k: [float(x) for x in v] for k, v in found.items()}

    async def get(self, ctx: Context, op: ops.Get) -> MemoryRecord | None:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        rec = await self.store(ctx.namespace).execute(op)
        return rec if rec is not None and ctx.grant.covers_user(rec.user_id) else None

    async def list(self, ctx: Context, op: ops.ListMemories) -> builtins.list[MemoryRecord]:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        user_id, filter = self._read_scope(ctx.grant, op.user_id, op.filter)
        return await self.store(ctx.namespace).execute(op.model_copy(update={"user_id": user_id, "filter": filter}))

    async def get_by_key(self, ctx: Context, op: ops.GetByKey) -> MemoryRecord | None:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        rec = await self.store(ctx.namespace).execute(op)
        return rec if rec is not None and ctx.grant.covers_user(rec.user_id) else None

    async def distinct(self, ctx: Context, op: ops.Distinct) -> builtins.list[Any]:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        user_id, filter = self._read_scope(ctx.grant, op.user_id, op.filter)
        return await self.store(ctx.namespace).execute(op.model_copy(update={"user_id": user_id, "filter": filter}))

    async def put(self, ctx: Context, op: ops.Put) -> MemoryRecord:
        """A save or an update by key: the same scope checks and audit."""
        ctx.grant.require("write")
        user_id, agent_id = self._write_user(ctx.grant, op.user_id), self._write_agent(ctx.grant, op.agent_id)
        store = self.store(ctx.namespace)
        current = await store.get_by_key(op.key, include_quarantined=True)
        if current is not None and not ctx.grant.covers_user(current.user_id):
            raise PermissionDeniedError("this key belongs to a memory outside your scope")
        op = op.model_copy(update={"user_id": user_id, "agent_id": agent_id})

        async def work() -> MemoryRecord:
            rec = await self._refusals_audited(ctx, store.execute(op), op.content, op.source, user_id)
            await self._audit(ctx, "put", memory_id=rec.memory_id, content=rec.content,
                              detail={"key": op.key, "version": rec.version,
                                      "flags": rec.metadata.get("polymem_flags")})
            return rec

        return await self._shielded(work())

    async def update(self, ctx: Context, op: ops.Update) -> MemoryRecord:
        ctx.grant.require("write")
        current = await self._visible(ctx, op.memory_id)
        if current is None:
            raise NotFoundError(f"no memory {op.memory_id!r}")
        store = self.store(ctx.namespace)

        async def work() -> MemoryRecord:
            rec = await self._refusals_audited(ctx, store.execute(op), op.content, current.source, current.user_id)
            await self._audit(ctx, "update", memory_id=op.memory_id, content=rec.content,
                              detail={"version": rec.version, "flags": rec.metadata.get("polymem_flags")})
            return rec

        return await self._shielded(work())

    async def set_status(self, ctx: Context, op: ops.SetStatus) -> MemoryRecord:
        ctx.grant.require_admin()
        if await self._visible(ctx, op.memory_id) is None:
            raise NotFoundError(f"no memory {op.memory_id!r}")
        store = self.store(ctx.namespace)

        async def work() -> MemoryRecord:
            rec = await store.execute(op)
            await self._audit(ctx, "set_status", memory_id=op.memory_id, content=rec.content,
                              detail={"status": op.status, "version": rec.version})
            return rec

        return await self._shielded(work())

    async def delete(self, ctx: Context, op: ops.Delete) -> bool:
        ctx.grant.require("write")
        current = await self._visible(ctx, op.memory_id)
        if current is None:
            return False
        store = self.store(ctx.namespace)

        async def work() -> bool:
            done = await store.execute(op)
            if done:
                await self._audit(ctx, "delete", memory_id=op.memory_id, content=current.content)
            return done

        return await self._shielded(work())

    async def purge(self, ctx: Context, op: ops.Purge) -> bool:
        """Remove a memory and every version of it for good (admin; audited without its content)."""
        ctx.grant.require_admin()
        store = self.store(ctx.namespace)

        async def work() -> bool:
            done = await store.execute(op)
            if done:
                await self._audit(ctx, "purge", memory_id=op.memory_id)
            return done

        return await self._shielded(work())

    async def audit_replay(self, ctx: Context, op: ops.AuditReplay) -> dict[str, Any]:
        """What recall entry `op.entry` gave the agent, checked against the log and the store (admin)."""
        ctx.grant.require_admin()
        entry, problems = await asyncio.to_thread(recall_entry, self.audit, op.entry, ctx.namespace)
        store = self.store(ctx.namespace)
        ids = [given["memory_id"] for given in entry["detail"]["returned"]]
        histories = dict(zip(ids, await asyncio.gather(*(store.history(i) for i in ids))))
        return replay(entry, problems, histories)

    async def audit_log(self, ctx: Context, op: ops.AuditEntries) -> dict[str, Any]:
        """The namespace's audit entries, newest first, and the whole chain's verification (admin)."""
        ctx.grant.require_admin()

        def read() -> dict[str, Any]:
            entries = self.audit.entries(namespace=ctx.namespace, memory_id=op.memory_id, action=op.action,
                                         before=op.before, limit=op.limit, newest_first=True)
            return {"entries": entries, "verification": self.audit.verify().to_dict()}

        return await asyncio.to_thread(read)

    async def history(self, ctx: Context, op: ops.History) -> builtins.list[MemoryRecord]:
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        versions = await self.store(ctx.namespace).execute(op)
        return versions if versions and ctx.grant.covers_user(versions[-1].user_id) else []

    async def ingest(self, ctx: Context, op: ops.Ingest) -> builtins.list[MemoryRecord]:
        ctx.grant.require("write")
        user_id, agent_id = self._write_user(ctx.grant, op.user_id), self._write_agent(ctx.grant, op.agent_id)
        store = self.store(ctx.namespace)
        op = op.model_copy(update={"user_id": user_id, "agent_id": agent_id})

        async def work() -> builtins.list[MemoryRecord]:
            saved: builtins.list[MemoryRecord] = await store.execute(op)
            for rec in saved:
                await self._audit(ctx, "ingest", memory_id=rec.memory_id, content=rec.content, detail=self._flags(rec))
            return saved

        return await self._shielded(work())

    async def consolidate(self, ctx: Context, op: ops.Consolidate | None = None) -> ConsolidationReport:
        ctx.grant.require_admin()

        async def work() -> ConsolidationReport:
            report = await self.store(ctx.namespace).consolidate()
            changed = [*report.expired, *report.archived, *report.superseded,
                       *(m for ids in report.merged.values() for m in ids)]
            await self._audit(ctx, "consolidate", refs=changed, detail=report.to_dict())
            return report

        return await self._shielded(work())

    async def reembed(self, ctx: Context, op: ops.Reembed | None = None) -> int:
        ctx.grant.require_admin()

        async def work() -> int:
            done = await self.store(ctx.namespace).reembed()
            await self._audit(ctx, "reembed", detail={"reembedded": done})
            return done

        return await self._shielded(work())

    async def export_stream(self, ctx: Context, op: ops.ExportSnapshot) -> tuple[IO[bytes], int]:
        """Write the snapshot to a temporary file (streamed to the client by the app)."""
        ctx.grant.require("read")
        await self._quarantined_read(ctx, op)
        user_id = op.user_id
        if ctx.grant.users is not None:
            user_id = self._write_user(ctx.grant, user_id)
        target: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the streaming response
        count = await self.store(ctx.namespace).export_snapshot(target, user_id=user_id,
                                                                include_quarantined=op.include_quarantined)
        target.seek(0)
        await self._audit(ctx, "export", detail={"user_id": user_id, "memories": count})
        return target, count

    async def import_snapshot(self, ctx: Context, op: ops.ImportSnapshot) -> ImportReport:
        ctx.grant.require_admin()

        async def work() -> ImportReport:
            report = await self.store(ctx.namespace).import_snapshot(op.source)
            await self._audit(ctx, "import", detail=report.to_dict())
            return report

        return await self._shielded(work())

    async def stats(self, ctx: Context, op: ops.Stats | None = None) -> dict[str, Any]:
        ctx.grant.require("read")
        if ctx.grant.users is not None:
            raise PermissionDeniedError("namespace statistics need a grant over every user")
        return await self.store(ctx.namespace).stats()

    async def flush(self, ctx: Context, op: ops.Flush | None = None) -> None:
        ctx.grant.require("read")
        await self.store(ctx.namespace).flush()

    # -- quarantine ---------------------------------------------------------------------------
    async def block_source(self, ctx: Context, op: ops.BlockSource) -> dict[str, Any]:
        """Mark a source polluted: its memories leave every read, its writes are refused. Reversible."""
        ctx.grant.require_admin()
        store = self.store(ctx.namespace)
        result = await store.execute(op)
        hidden = await store.list(filter={"source": op.source}, status=None, limit=10_000, include_quarantined=True)
        await self._audit(ctx, "block_source", refs=[r.memory_id for r in hidden],
                          detail={"source": op.source, "reason": op.reason})
        return {k: v for k, v in result.items() if k != "was_blocked"}

    async def unblock_source(self, ctx: Context, op: ops.UnblockSource) -> dict[str, Any]:
        ctx.grant.require_admin()
        result = await self.store(ctx.namespace).execute(op)
        await self._audit(ctx, "unblock_source", detail={"source": op.source, "was_blocked": result["was_blocked"]})
        return result

    async def blocked_sources(self, ctx: Context, op: ops.BlockedSources | None = None) -> builtins.list[dict[str, Any]]:
        ctx.grant.require("read")
        return await self.store(ctx.namespace).blocked_sources()

    async def release(self, ctx: Context, op: ops.Release) -> MemoryRecord:
        """An admin reviewed a flagged memory: make it active and trusted again (audited)."""
        ctx.grant.require_admin()
        current = await self._visible(ctx, op.memory_id)
        if current is None:
            raise NotFoundError(f"no memory {op.memory_id!r}")
        rec = await self.store(ctx.namespace).execute(op)
        await self._audit(ctx, "release", memory_id=op.memory_id, content=rec.content,
                          detail={"previous_flags": current.metadata.get("polymem_flags")})
        return rec

    # -- working memory -----------------------------------------------------------------------
    async def _session_spec(self, ctx: Context, spec: ops.SessionSpec, *, write: bool) -> ops.SessionSpec:
        """The session's settings in the caller's scope (the session must not belong to another user)."""
        ctx.grant.require("write" if write else "read")
        user_id = self._write_user(ctx.grant, spec.user_id)
        agent_id = self._write_agent(ctx.grant, spec.agent_id) if write else spec.agent_id
        store = self.store(ctx.namespace)
        sessions = store.transport.local().sessions
        info = await (sessions.session_info(ctx.namespace, spec.session_id) if isinstance(sessions, AsyncSessionStore)
                      else asyncio.to_thread(sessions.session_info, ctx.namespace, spec.session_id))
        if info is not None and not ctx.grant.covers_user(info.user_id):
            raise PermissionDeniedError("this session belongs to a user outside your scope")
        return spec.model_copy(update={"user_id": user_id, "agent_id": agent_id})

    async def session_operation(self, ctx: Context, op: ops.SessionOperation[Any]) -> Any:
        """Run one session operation, auditing the mutations."""
        write = op.permission == "write"
        op = op.model_copy(update={"session": await self._session_spec(ctx, op.session, write=write)})
        store = self.store(ctx.namespace)
        if not write:
            return await store.execute(op)

        async def work() -> Any:
            result = await store.execute(op)
            texts = [m.content for m in op.messages] if isinstance(op, (ops.SessionAdd, ops.SessionReplace)) else None
            await self._audit(ctx, f"session_{op.name}", content="\n".join(texts) if texts is not None else None,
                              refs=[r.memory_id for r in result] if isinstance(op, ops.SessionEnd) else (),
                              detail={"session_id": op.session.session_id})
            return result

        return await self._shielded(work())

    async def sessions(self, ctx: Context, op: ops.Sessions) -> builtins.list[SessionInfo]:
        ctx.grant.require("read")
        if op.user_id is not None:
            self._read_scope(ctx.grant, op.user_id, None)
        found = await self.store(ctx.namespace).sessions(user_id=op.user_id)
        return [s for s in found if ctx.grant.covers_user(s.user_id)]
