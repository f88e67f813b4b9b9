"""Shared fixtures: real stores over every embedded backend, sync and async."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import polymem
from polymem._embedders import export_onnx_model

BACKENDS = ["memory", "sqlite"]
DRIVERS = ["sync", "async"]
_names = itertools.count()


def store_factory(backend: str, driver: str, tmp_path: Path) -> Any:
    """`(clock, embedder, fresh=False, namespace="default") -> store` for one backend × driver."""
    shared = f"t{next(_names)}"

    def factory(clock: Any, embedder: Any, fresh: bool = False, namespace: str = "default") -> Any:
        opener = polymem.open if driver == "sync" else polymem.open_async
        name = f"{shared}-fresh" if fresh else shared
        url = f"memory://{name}" if backend == "memory" else f"sqlite:///{tmp_path / (name + '.db')}"
        return opener(url, clock=clock, embedder=embedder, namespace=namespace)

    return factory


@pytest.fixture(params=[f"{b}-{d}" for b in BACKENDS for d in DRIVERS])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    backend, driver = request.param.split("-")
    return store_factory(backend, driver, tmp_path)


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 exported to ONNX int8 once per test run (takes a minute)."""
    return export_onnx_model(tmp_path_factory.mktemp("onnx"))


@pytest.fixture(scope="session")
def user_mypy() -> Callable[..., tuple[str, str, int]]:
    """mypy over a user's module (its path, then mypy's options), strict, with the repository's
    settings and cache (`make test` has just checked polymem with them: only the user's module is
    analysed again): (stdout, stderr, exit status)."""
    from mypy import api as mypy_api

    root = Path(__file__).resolve().parents[1]

    def run(user_code: Path, *options: str) -> tuple[str, str, int]:
        return mypy_api.run([str(user_code), "--config-file", str(root / "pyproject.toml"),
                             "--cache-dir", str(root / ".mypy_cache"), *options])

    return run
