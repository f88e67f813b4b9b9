"""Fixtures: real polymem stores on SQLite files, the real MiniLM embedder, replayed models."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from autogen_core.models import ModelInfo
from autogen_ext.models.replay import ReplayChatCompletionClient

import polymem

TOOL_MODEL = ModelInfo(
    vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False
)


@pytest.fixture(scope="session")
def embedder() -> Any:
    """polymem's default local embedder (all-MiniLM-L6-v2, offline), loaded once per test run."""
    with polymem.open("memory://") as mem:
        emb = mem.embedder
    assert emb is not None, "polymem's local embedder is not available"
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def lexical(db_url: str) -> Iterator[Any]:
    """A lexical-only store on an SQLite file: fast, for tests where meaning does not matter."""
    with polymem.open(db_url, embedder=None) as mem:
        yield mem


@pytest.fixture
def semantic(db_url: str, embedder: Any) -> Iterator[Any]:
    """A store on an SQLite file with the real MiniLM embedder."""
    with polymem.open(db_url, embedder=embedder) as mem:
        yield mem


@pytest.fixture
def replay() -> Callable[..., ReplayChatCompletionClient]:
    """Factory of model clients that answer with the given responses, in order (no network)."""

    def make(*responses: Any, tools: bool = False) -> ReplayChatCompletionClient:
        return ReplayChatCompletionClient(list(responses), model_info=TOOL_MODEL if tools else None)

    return make
