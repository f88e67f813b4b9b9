"""Deprecated names of the HTTP client: `polymem.open("http://…", token=…)` is the client now.

`polymem.open(url)` returns a `polymem.Memory` for every URL (and `open_async` an
`AsyncMemory`); over HTTP its transport is `polymem._http.HttpTransport`. The
names below keep code written against the old client classes working.
"""

from __future__ import annotations

import warnings
from typing import Any

from ._http import HttpTransport, RemoteEmbedder
from ._memory import AsyncMemory, AsyncSession, Memory, Session
from ._models import NearestResult, RecallResult

__all__ = ["AsyncHttpMemory", "AsyncHttpSession", "HttpMemory", "HttpSession", "NearestResult", "RecallResult",
           "RemoteEmbedder", "open_http", "open_http_async"]

HttpSession = Session
AsyncHttpSession = AsyncSession


def _deprecated(old: str) -> None:
    warnings.warn(f"polymem.client.{old} is deprecated: use polymem.open('http://…', token=…) "
                  "(or polymem.open_async), which returns polymem.Memory / polymem.AsyncMemory",
                  DeprecationWarning, stacklevel=3)


class HttpMemory(Memory):
    """Deprecated: a `polymem.Memory` over HTTP (`HttpTransport` takes the same arguments)."""

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        _deprecated("HttpMemory")
        super().__init__(HttpTransport(url, token, **options))


class AsyncHttpMemory(AsyncMemory):
    """Deprecated: a `polymem.AsyncMemory` over HTTP (`HttpTransport` takes the same arguments)."""

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        _deprecated("AsyncHttpMemory")
        super().__init__(HttpTransport(url, token, asynchronous=True, **options))


def open_http(url: str, token: str | None = None, **options: Any) -> Memory:
    """Deprecated: `polymem.open(url, token=token)`."""
    _deprecated("open_http")
    return Memory(HttpTransport(url, token, **options))


def open_http_async(url: str, token: str | None = None, **options: Any) -> AsyncMemory:
    """Deprecated: `polymem.open_async(url, token=token)`."""
    _deprecated("open_http_async")
    return AsyncMemory(HttpTransport(url, token, asynchronous=True, **options))
