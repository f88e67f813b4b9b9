"""Redis for multi-instance deployments: working memory with native TTL, and a lock.

- `RedisWorkingMemory(url)` implements the `session_*` methods of the backend
  contract over Redis, so sessions are shared by every service instance and
  expire by Redis's own TTL. `AsyncRedisWorkingMemory` is its asyncio twin;
  both drive the same plans (generators yielding Redis commands).
- Both implement the session contract (`SessionStore`, `AsyncSessionStore`); the
  local transport sends session steps to them and record steps to the long-term
  store (SQLite or PostgreSQL, sync or async): `polymem.open(url, working_memory=…)`.
- `RedisLock` is the consolidation lock: `SET NX PX` with a watchdog that
  renews it while its holder works; a dead holder's lock expires on its own.

    >>> working = RedisWorkingMemory("redis://localhost:6379/0")          # doctest: +SKIP
    >>> mem = polymem.Memory(LocalTransport(PostgresBackend(pg_url), engine, sessions=working))   # doctest: +SKIP

Each session lives in four keys sharing one hash tag (Redis Cluster safe):
`meta` (a hash of JSON values), `msgs` (a list of `{"m": message, "t": tokens}`),
`ids` (every message id) and `out` (ids evicted from the window); a sorted set per
namespace indexes sessions by creation time.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ._backend import AsyncSessionStore, SessionStore
from ._errors import LockTimeoutError, missing_extra
from ._filters import dumps, to_micros
from ._models import Message, SessionInfo
from ._plan import adrive, drive
from ._postgres import session_dict
from ._storage import Batch, SessionTouch
from ._time import from_iso

T = TypeVar("T")

# A plan: yields Redis commands (`(script, keys, args)` for EVAL, or a plain command),
# receives each one's reply, returns its own result.
RedisPlan = Generator[tuple[Any, ...], Any, T]

_TOUCH = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'session_id', ARGV[1], 'user_id', ARGV[2], 'agent_id', ARGV[3],
             'created_at', ARGV[4], 'summary', 'null')
  redis.call('ZADD', KEYS[5], ARGV[6], ARGV[7])
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[4], 'expire_at', ARGV[5])
local ttl = tonumber(ARGV[8])
for i = 1, 4 do
  if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
end
return 1
"""
_APPEND = """
local ttl = redis.call('PTTL', KEYS[1])
for i = 1, #ARGV, 2 do
  redis.call('RPUSH', KEYS[2], ARGV[i + 1])
  redis.call('SADD', KEYS[3], ARGV[i])
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 1
"""
_EVICT = """
local count = 0
for i = 1, #ARGV do
  if redis.call('SISMEMBER', KEYS[2], ARGV[i]) == 1 and redis.call('SADD', KEYS[3], ARGV[i]) == 1 then
    count = count + 1
  end
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
return count
"""
_FORGET = """
local wanted = {}
for i = 1, #ARGV do wanted[ARGV[i]] = true end
local count = 0
for _, payload in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local id = cjson.decode(payload)['m']['message_id']
  if wanted[id] then
    count = count + redis.call('LREM', KEYS[1], 1, payload)
    redis.call('SREM', KEYS[2], id)
    redis.call('SREM', KEYS[3], id)
  end
end
return count
"""
_INFO = """
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then return false end
return {meta, redis.call('LLEN', KEYS[2]), redis.call('SCARD', KEYS[3])}
"""
_MESSAGES = "return {redis.call('LRANGE', KEYS[1], 0, -1), redis.call('SMEMBERS', KEYS[2])}"
_SUMMARY = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'summary', ARGV[1]) end
return 1
"""
_DELETE = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
return existed
"""
_IMPORT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'session_id', ARGV[1], 'user_id', ARGV[2], 'agent_id', ARGV[3], 'created_at', ARGV[4],
           'updated_at', ARGV[5], 'expire_at', ARGV[6], 'summary', ARGV[7])
redis.call('ZADD', KEYS[5], ARGV[8], cjson.decode(ARGV[1]))
local n = tonumber(ARGV[10])
for i = 0, n - 1 do
  local id, payload, inwin = ARGV[11 + 3 * i], ARGV[12 + 3 * i], ARGV[13 + 3 * i]
  redis.call('RPUSH', KEYS[2], payload)
  redis.call('SADD', KEYS[3], id)
  if inwin == '0' then redis.call('SADD', KEYS[4], id) end
end
local ttl = tonumber(ARGV[9])
if ttl > 0 then for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end end
return 1
"""
# Lock: renew and release only if we still hold it.
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def _import_redis() -> Any:
    try:
        import redis
    except ImportError:  # pragma: no cover - exercised by the "absent" CI leg
        raise missing_extra("redis", "redis") from None
    return redis


def _tag(namespace: str, session_id: str) -> str:
    return hashlib.sha1(f"{namespace}\x00{session_id}".encode()).hexdigest()[:20]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _iso_json(value: datetime | None) -> str:
    return json.dumps(None if value is None else value.isoformat())


class RedisPlans:
    """Working-memory operations as plans: each yields `(script, keys, args)` for EVAL."""

    def __init__(self, prefix: str = "polymem") -> None:
        self.prefix = prefix

    def keys(self, namespace: str, session_id: str) -> builtins.list[str]:
        tag = _tag(namespace, session_id)
        base = f"{self.prefix}:s:{{{tag}}}"
        return [f"{base}:meta", f"{base}:msgs", f"{base}:ids", f"{base}:out", self.index(namespace)]

    def index(self, namespace: str) -> str:
        return f"{self.prefix}:ns:{hashlib.sha1(namespace.encode()).hexdigest()[:20]}:sessions"

    def session_touch(self, namespace: str, session_id: str, user_id: str | None, agent_id: str | None,
                      now: datetime, expire_at: datetime | None) -> RedisPlan[None]:
        ttl = 0 if expire_at is None else max(1, int((expire_at - now).total_seconds() * 1000))
        yield (_TOUCH, self.keys(namespace, session_id),
               [json.dumps(session_id), json.dumps(user_id), json.dumps(agent_id), _iso_json(now),
                _iso_json(expire_at), to_micros(now), session_id, ttl])

    def _info(self, namespace: str, session_id: str, found: Any) -> SessionInfo | None:
        if not found:
            return None
        raw, total, evicted = found
        meta = {_text(raw[i]): json.loads(_text(raw[i + 1])) for i in range(0, len(raw), 2)}
        created, updated = from_iso(meta["created_at"], "created_at"), from_iso(meta["updated_at"], "updated_at")
        assert created is not None and updated is not None
        return SessionInfo(session_id, meta.get("user_id"), meta.get("agent_id"), namespace, meta.get("summary"),
                           created, updated, from_iso(meta.get("expire_at"), "expire_at"), int(total),
                           int(total) - int(evicted))

    def session_info(self, namespace: str, session_id: str) -> RedisPlan[SessionInfo | None]:
        keys = self.keys(namespace, session_id)
        found = yield (_INFO, [keys[0], keys[1], keys[3]], [])
        return self._info(namespace, session_id, found)

    def session_list(self, namespace: str, user_id: str | None) -> RedisPlan[builtins.list[SessionInfo]]:
        members = yield ("ZRANGE", self.index(namespace), 0, -1)
        infos = []
        for member in members:
            session_id = _text(member)
            info = yield from self.session_info(namespace, session_id)
            if info is None:  # its keys expired: drop it from the index
                yield ("ZREM", self.index(namespace), session_id)
                continue
            if user_id is None or info.user_id == user_id:
                infos.append(info)
        return infos

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> RedisPlan[None]:
        if not messages:
            return None
        args: builtins.list[Any] = []
        for message, tokens in messages:
            args.extend([message.message_id, dumps({"m": message.to_dict(), "t": tokens})])
        keys = self.keys(namespace, session_id)
        yield (_APPEND, keys[:3], args)
        return None

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> RedisPlan[builtins.list[tuple[Message, int]]]:
        keys = self.keys(namespace, session_id)
        payloads, evicted = yield (_MESSAGES, [keys[1], keys[3]], [])
        out_ids = {_text(e) for e in evicted} if window_only else set()
        rows = []
        for payload in payloads:
            item = json.loads(_text(payload))
            if window_only and item["m"]["message_id"] in out_ids:
                continue
            rows.append((Message.from_dict(item["m"]), int(item["t"])))
        return rows

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> RedisPlan[int]:
        if not message_ids:
            return 0
        keys = self.keys(namespace, session_id)
        return int((yield (_EVICT, [keys[0], keys[2], keys[3]], list(message_ids))))

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> RedisPlan[int]:
        if not message_ids:
            return 0
        keys = self.keys(namespace, session_id)
        return int((yield (_FORGET, [keys[1], keys[2], keys[3]], list(message_ids))))

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> RedisPlan[None]:
        yield (_SUMMARY, self.keys(namespace, session_id)[:1], [json.dumps(summary, ensure_ascii=False)])

    def session_delete(self, namespace: str, session_id: str) -> RedisPlan[bool]:
        return int((yield (_DELETE, self.keys(namespace, session_id), [session_id]))) > 0

    def sessions_expired(self, namespace: str, now: datetime) -> RedisPlan[builtins.list[str]]:
        members = yield ("ZRANGE", self.index(namespace), 0, -1)
        expired = []
        for member in members:
            session_id = _text(member)
            info = yield from self.session_info(namespace, session_id)
            if info is None or (info.expire_at is not None and info.expire_at <= now):
                expired.append(session_id)
        return expired

    def export_sessions(self, namespace: str, user_id: str | None) -> RedisPlan[builtins.list[dict[str, Any]]]:
        out = []
        for info in (yield from self.session_list(namespace, user_id)):
            keys = self.keys(namespace, info.session_id)
            payloads, evicted = yield (_MESSAGES, [keys[1], keys[3]], [])
            out_ids = {_text(e) for e in evicted}
            messages = []
            for payload in payloads:
                item = json.loads(_text(payload))
                messages.append({"message": item["m"], "tokens": item["t"],
                                 "in_window": item["m"]["message_id"] not in out_ids})
            out.append(session_dict(info, messages))
        return out

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> RedisPlan[int]:
        count = 0
        for session in sessions:
            created = from_iso(session.get("created_at"), "created_at")
            expire = from_iso(session.get("expire_at"), "expire_at")
            ttl = 0 if expire is None else max(0, int((expire - now).total_seconds() * 1000))
            args: builtins.list[Any] = [
                json.dumps(session["session_id"]), json.dumps(session.get("user_id")), json.dumps(session.get("agent_id")),
                _iso_json(created), _iso_json(from_iso(session.get("updated_at"), "updated_at")), _iso_json(expire),
                json.dumps(session.get("summary"), ensure_ascii=False), to_micros(created) if created else 0, ttl,
                len(session["messages"])]
            for m in session["messages"]:
                args.extend([m["message"]["message_id"], dumps({"m": m["message"], "t": int(m["tokens"])}),
                             "1" if m["in_window"] else "0"])
            count += int((yield (_IMPORT, self.keys(namespace, session["session_id"])[:5], args)))
        return count


def _queued(plans: RedisPlans, batch: Batch) -> tuple[builtins.list[Any], builtins.list[tuple[Any, ...]]]:
    """Each operation's plan started: its result when it sends nothing, else its plan waiting for
    the reply to its one command; and the commands, for MULTI/EXEC."""
    started: builtins.list[Any] = []
    commands: builtins.list[tuple[Any, ...]] = []
    for op in batch.ops:
        if not op.sessions:
            raise TypeError(f"{type(op).__name__} is not a session operation")
        plan = getattr(plans, op.method)(*op.args())
        try:
            commands.append(_command(next(plan)))
        except StopIteration as stop:
            started.append(_Done(stop.value))
            continue
        started.append(plan)
    return started, commands


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value


def _finish(started: builtins.list[Any], replies: Sequence[Any]) -> builtins.list[Any]:
    """Each operation's result from the reply to its command."""
    out: builtins.list[Any] = []
    pending = iter(replies)
    for item in started:
        if isinstance(item, _Done):
            out.append(item.value)
            continue
        try:
            item.send(next(pending))
        except StopIteration as stop:
            out.append(stop.value)
        else:  # pragma: no cover - every session write is one command
            raise TypeError("a batched Redis operation must send one command")
    return out


def _command(item: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(item) == 3 and isinstance(item[1], builtins.list):
        script, keys, args = item
        return ("EVAL", script, len(keys), *keys, *args)
    return item


class _AsyncClient(Protocol):
    """What the working memory calls on a `redis.asyncio.Redis` (whose methods are unannotated)."""

    async def execute_command(self, *args: Any) -> Any: ...

    def pipeline(self, transaction: bool = True) -> Any: ...

    @property
    def connection_pool(self) -> _Pool: ...


class _Pool(Protocol):
    def reset(self) -> None: ...


class _RedisSessions:
    """What both working memories share: the plans, a sync client, the lock, and the two
    methods that stay synchronous in the async one (`session_list`, `session_delete`)."""

    def __init__(self, url: str, *, prefix: str = "polymem") -> None:
        redis = _import_redis()
        self.url = url
        self.plans = RedisPlans(prefix)
        self.client = redis.Redis.from_url(url)

    def _run(self, plan: RedisPlan[T]) -> T:
        return drive(plan, lambda item: self.client.execute_command(*_command(item)))

    def session_list(self, namespace: str, user_id: str | None) -> builtins.list[SessionInfo]:
        return self._run(self.plans.session_list(namespace, user_id))

    def session_delete(self, namespace: str, session_id: str) -> bool:
        return self._run(self.plans.session_delete(namespace, session_id))

    def lock(self, name: str, *, ttl: float = 30.0) -> RedisLock:
        return RedisLock(self.client, f"{self.plans.prefix}:lock:{name}", ttl=ttl)

    def consolidation_lock(self, namespace: str = "default", *, timeout: float | None = None,
                           ttl: float = 30.0) -> Any:
        return self.lock("consolidate:" + namespace, ttl=ttl).hold(timeout=timeout)

    def close(self) -> None:
        self.client.close()


class RedisWorkingMemory(_RedisSessions, SessionStore):
    """Working memory (the `session_*` methods of `Backend`) in Redis, sync.

    `url` is a redis-py URL (`redis://host:6379/0`, `rediss://...`, `unix://...`).
    """

    def apply(self, batch: Batch) -> builtins.list[Any]:
        """The batch's commands in one MULTI/EXEC: no other client's command runs between them.
        Redis does not roll back: an operation that fails before EXEC (its arguments, its encoding)
        sends nothing at all, but a command that Redis itself fails inside EXEC leaves the others
        applied (the session scripts fail only on a wrong key type, which polymem never writes)."""
        started, commands = _queued(self.plans, batch)
        if commands:
            pipe = self.client.pipeline(transaction=True)
            for command in commands:
                pipe.execute_command(*command)
            replies = pipe.execute()
        else:
            replies = []
        return _finish(started, replies)

    def session_touch(self, op: SessionTouch) -> None:
        self._run(self.plans.session_touch(*op.args()))

    def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        return self._run(self.plans.session_info(namespace, session_id))

    def session_append(self, namespace: str, session_id: str, messages: Sequence[tuple[Message, int]]) -> None:
        self._run(self.plans.session_append(namespace, session_id, messages))

    def session_messages(self, namespace: str, session_id: str, window_only: bool) -> builtins.list[tuple[Message, int]]:
        return self._run(self.plans.session_messages(namespace, session_id, window_only))

    def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._run(self.plans.session_evict(namespace, session_id, message_ids))

    def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return self._run(self.plans.session_forget(namespace, session_id, message_ids))

    def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        self._run(self.plans.session_set_summary(namespace, session_id, summary))

    def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        return self._run(self.plans.sessions_expired(namespace, now))

    def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return self._run(self.plans.export_sessions(namespace, user_id))

    def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        return self._run(self.plans.import_sessions(namespace, sessions, now))


class AsyncRedisWorkingMemory(_RedisSessions, AsyncSessionStore):
    """`RedisWorkingMemory` with coroutine methods (redis.asyncio), for `AsyncMemory`.

    `session_list` and `session_delete` stay synchronous (on a sync client) because
    today's `AsyncMemory.sessions()` / `AsyncSession.delete()` call them in a thread.
    """

    def __init__(self, url: str, *, prefix: str = "polymem") -> None:
        super().__init__(url, prefix=prefix)
        import redis.asyncio

        self.aclient: _AsyncClient = redis.asyncio.Redis.from_url(url)

    async def _arun(self, plan: RedisPlan[T]) -> T:
        return await adrive(plan, lambda item: self.aclient.execute_command(*_command(item)))

    async def apply(self, batch: Batch) -> builtins.list[Any]:
        """`RedisWorkingMemory.apply` on redis.asyncio: one MULTI/EXEC."""
        started, commands = _queued(self.plans, batch)
        replies: builtins.list[Any] = []
        if commands:
            pipe = self.aclient.pipeline(transaction=True)
            for command in commands:
                pipe.execute_command(*command)
            replies = await pipe.execute()
        return _finish(started, replies)

    async def session_touch(self, op: SessionTouch) -> None:
        await self._arun(self.plans.session_touch(*op.args()))

    async def session_info(self, namespace: str, session_id: str) -> SessionInfo | None:
        return await self._arun(self.plans.session_info(namespace, session_id))

    async def session_append(self, namespace: str, session_id: str,
                             messages: Sequence[tuple[Message, int]]) -> None:
        await self._arun(self.plans.session_append(namespace, session_id, messages))

    async def session_messages(self, namespace: str, session_id: str,
                               window_only: bool) -> builtins.list[tuple[Message, int]]:
        return await self._arun(self.plans.session_messages(namespace, session_id, window_only))

    async def session_evict(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return await self._arun(self.plans.session_evict(namespace, session_id, message_ids))

    async def session_forget(self, namespace: str, session_id: str, message_ids: Sequence[str]) -> int:
        return await self._arun(self.plans.session_forget(namespace, session_id, message_ids))

    async def session_set_summary(self, namespace: str, session_id: str, summary: str | None) -> None:
        await self._arun(self.plans.session_set_summary(namespace, session_id, summary))

    async def sessions_expired(self, namespace: str, now: datetime) -> builtins.list[str]:
        return await self._arun(self.plans.sessions_expired(namespace, now))

    async def export_sessions(self, namespace: str, user_id: str | None) -> builtins.list[dict[str, Any]]:
        return await self._arun(self.plans.export_sessions(namespace, user_id))

    async def import_sessions(self, namespace: str, sessions: Sequence[dict[str, Any]], now: datetime) -> int:
        return await self._arun(self.plans.import_sessions(namespace, sessions, now))

    def close(self) -> None:
        super().close()
        # The async client's connections belong to its loop; dropping the pool is enough here.
        self.aclient.connection_pool.reset()


class RedisLock:
    """A lock that expires if its holder dies and is renewed while it works.

    `SET key token NX PX ttl` takes it; a watchdog thread renews it every ttl/3 while
    held; renew and release check the token, so nobody releases a lock they lost.
    """

    def __init__(self, client: Any, key: str, *, ttl: float = 30.0) -> None:
        self.client = client
        self.key = key
        self.ttl_ms = max(1, int(ttl * 1000))
        self.token = ""
        self.lost = threading.Event()

    def acquire(self, timeout: float | None = None, poll: float = 0.05) -> bool:
        token = secrets.token_hex(16)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.client.set(self.key, token, nx=True, px=self.ttl_ms):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(poll)
        self.token = token
        self.lost.clear()
        return True

    def renew(self) -> bool:
        return bool(self.client.execute_command("EVAL", _RENEW, 1, self.key, self.token, self.ttl_ms))

    def release(self) -> bool:
        return bool(self.client.execute_command("EVAL", _RELEASE, 1, self.key, self.token))

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[RedisLock]:
        """Hold the lock for the block (raises `LockTimeoutError` after `timeout` seconds)."""
        if not self.acquire(timeout):
            raise LockTimeoutError(f"lock {self.key!r} is held by another instance")
        stop = threading.Event()

        def watchdog() -> None:
            while not stop.wait(self.ttl_ms / 3000):
                try:
                    if not self.renew():
                        self.lost.set()
                        return
                except Exception:  # noqa: BLE001 - a transient error: try again next period
                    continue

        thread = threading.Thread(target=watchdog, name="polymem-lock-watchdog", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            self.release()
