"""A polymem store as AutoGen config: what describes it, and reopening it from that."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import polymem

EmbedderChoice = Literal["auto", "none"]


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
        "async_store": isinstance(mem, polymem.AsyncMemory),
    }


def reopen(url: str, *, namespace: str | None, embedder: EmbedderChoice, async_store: bool) -> Any:
    """Open the store a config describes."""
    kwargs: dict[str, Any] = {"embedder": None if embedder == "none" else "auto"}
    if namespace is not None:
        kwargs["namespace"] = namespace
    opener = polymem.open_async if async_store else polymem.open
    return opener(url, **kwargs)
