"""The polymem conformance suite: the behaviour every store must show.

Subclass `MemoryConformance` in a test module and provide an `open_store`
fixture returning a factory `(clock, embedder, fresh=False, namespace="default") -> Memory | AsyncMemory`:
each call opens the test's store (the same data), or with `fresh=True` a
second, empty one; `namespace` opens another namespace of that store.
Every test is written once and runs over sync and async stores alike (async
calls are awaited by `call`). Backends (SQLite, PostgreSQL) and the HTTP
client all run this same suite.

    class TestMySQLite(MemoryConformance):
        @pytest.fixture(params=["sync", "async"])
        def open_store(self, request, tmp_path):
            def factory(clock, embedder, fresh=False, namespace="default"):
                opener = polymem.open if request.param == "sync" else polymem.open_async
                name = "fresh.db" if fresh else "m.db"
                return opener(f"sqlite:///{tmp_path}/{name}", clock=clock, embedder=embedder, namespace=namespace)
            return factory
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from .._time import require_aware

__all__ = ["FakeClock", "HashEmbedder", "MemoryConformance", "RecordStoreConformance", "RecordingEmbedder",
           "SessionStoreConformance", "call", "local_embedder"]


class FakeClock:
    """A settable aware-UTC clock for simulating time (decay, expiry, TTL)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = require_aware(start or datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


_loop: asyncio.AbstractEventLoop | None = None


def call(value: Any) -> Any:
    """Return `value`, awaiting it first if it is awaitable (runs sync and async stores alike)."""
    global _loop
    if inspect.isawaitable(value):
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
        return _loop.run_until_complete(value)
    return value


_EMBEDDER: Any = None


def local_embedder() -> Any:
    """One shared instance of the local MiniLM embedder (loaded once per process)."""
    global _EMBEDDER
    if _EMBEDDER is None:
        from .._embedders import SentenceTransformerEmbedder

        _EMBEDDER = SentenceTransformerEmbedder()
    return _EMBEDDER


class HashEmbedder:
    """A small deterministic embedder without a model: character trigrams hashed into `dimension`
    dimensions (two sizes are two models)."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.model_id = f"test/hash-trigram-{dimension}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        out = []
        for text in texts:
            v = np.zeros(self.dimension, dtype=np.float32)
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                v[int(hashlib.md5(padded[i:i + 3].encode()).hexdigest(), 16) % self.dimension] += 1.0
            out.append((v / (np.linalg.norm(v) or 1.0)).tolist())
        return out


class RecordingEmbedder:
    """A real embedder that records every text it is asked to embed (`texts`, in order)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Any:
        vectors = self.inner.embed(texts)
        with self._lock:
            self.texts.extend(texts)
        return vectors


from ._storage_suite import RecordStoreConformance, SessionStoreConformance  # noqa: E402
from ._suite import MemoryConformance  # noqa: E402
