"""A store used with the local model, then forked (gunicorn --preload, Celery prefork): the child works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WORKER = Path(__file__).parent / "helpers" / "fork_worker.py"


def run_forked(tmp_path: Path, embedder: str) -> str:
    # Two OpenMP threads in the parent: with one, torch never starts the pool a fork would strand.
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, str(WORKER), str(tmp_path / "shared.db"), embedder, "120"],
                          capture_output=True, text=True, env=env, timeout=400, check=True)
    return done.stdout.strip()


def test_a_forked_child_embeds_with_the_torch_model_its_parent_used(tmp_path: Path) -> None:
    assert run_forked(tmp_path, "torch") == "The staging database runs on port 5433"


def test_a_forked_child_embeds_with_the_onnx_model_its_parent_used(tmp_path: Path, exported: Path) -> None:
    assert run_forked(tmp_path, f"onnx:{exported}") == "The staging database runs on port 5433"


def test_a_forked_child_searches_on_two_cores_as_its_parent_did(tmp_path: Path) -> None:
    # the parent's recall started the thread that ranks full text alongside a vector scan
    assert run_forked(tmp_path, "hash") == "The staging database runs on port 5433"
