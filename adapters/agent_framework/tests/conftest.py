"""Fixtures: real polymem stores on SQLite files, the real MiniLM embedder, scripted chat clients."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import polymem


def _load_scripted() -> None:
    """Make `scripted.py` importable as `polymem_af_scripted` (tests run under --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location("polymem_af_scripted", Path(__file__).parent / "scripted.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


_load_scripted()


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
