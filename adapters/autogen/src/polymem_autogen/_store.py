"""Calling a sync or an async polymem store from AutoGen's async methods, and reopening it from config."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import polymem

EmbedderChoice = Literal["auto", "none"]


def is_async_store(mem: Any) -> bool:
    """Whether `mem` is a `polymem.AsyncMemory` (its methods are awaited)."""
    cls = getattr(polymem, "AsyncMemory", None)
    return cls is not None and isinstance(mem, cls)


async def call(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call `target.method`: awaited on async stores, in a worker thread on sync ones.

    Sync stores run in a thread because recall and save embed text (~10 ms of
    CPU), which must not stall the event loop that runs the agents.
    """
    fn = getattr(target, method)
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


async def open_session(mem: Any, session_id: str, **kwargs: Any) -> Any:
    """`mem.session(...)` for either kind of store."""
    ses = mem.session(session_id, **kwargs)
    if inspect.isawaitable(ses):
        ses = await ses
    return ses


def safe_url(url: str) -> str:
    """The store's URL without a password (polymem promises none; this makes sure)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


def describe(mem: Any) -> dict[str, Any]:
    """The parts of a config that reopen `mem`: URL, namespace, embedder choice, sync or async."""
    namespace = getattr(mem, "namespace", None)
    return {
        "url": safe_url(mem.url),
        "namespace": namespace if isinstance(namespace, str) else None,
        "embedder": "none" if mem.embedder is None else "auto",
        "async_store": is_async_store(mem),
    }


def reopen(url: str, *, namespace: str | None, embedder: EmbedderChoice, async_store: bool) -> Any:
    """Open the store a config describes."""
    kwargs: dict[str, Any] = {"embedder": None if embedder == "none" else "auto"}
    if namespace is not None:
        kwargs["namespace"] = namespace
    opener = polymem.open_async if async_store else polymem.open
    return opener(url, **kwargs)
