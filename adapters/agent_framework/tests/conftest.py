"""Fixtures: real polymem stores on SQLite files, the real MiniLM embedder, scripted chat clients."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import polymem
from polymem.testing import local_embedder


def _load_scripted() -> None:
    """Make `scripted.py` importable as `polymem_af_scripted` (tests run under --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location("polymem_af_scripted", Path(__file__).parent / "scripted.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)


_load_scripted()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def lexical(db_url: str) -> Iterator[Any]:
    """A lexical-only store on an SQLite file: fast, for tests where meaning does not matter."""
    with polymem.open(db_url, embedder=None) as mem:
        yield mem


@pytest.fixture
def semantic(db_url: str) -> Iterator[Any]:
    """A store on an SQLite file with the real MiniLM embedder (loaded once per process)."""
    with polymem.open(db_url, embedder=local_embedder()) as mem:
        yield mem
