"""Helpers for the cross-framework tests: run a framework's agent in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

HERE = Path(__file__).parent
AGENTS = HERE / "agents.py"


def start_agents(framework: str, url: str, spec: dict[str, Any], workdir: Path) -> subprocess.Popen[str]:
    """Start `agents.py` for one framework on the store at `url` (its own process)."""
    spec_path = workdir / f"{framework}-{abs(hash(json.dumps(spec, sort_keys=True)))}.json"
    spec_path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    # One torch thread per process: on 2 busy cores, two threads per query embedding are ~6x slower.
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(AGENTS), framework, url, str(spec_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(process: subprocess.Popen[str], timeout: float = 600) -> list[dict[str, Any]]:
    """Wait for an `agents.py` process; its answers (what each model saw)."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])["answers"]  # type: ignore[no-any-return]


def run_agents(framework: str, url: str, spec: dict[str, Any], workdir: Path) -> list[dict[str, Any]]:
    return finish(start_agents(framework, url, spec, workdir))


@pytest.fixture(scope="session")
def agents() -> SimpleNamespace:
    """`agents.start(framework, url, spec, workdir)`, `agents.finish(process)`, `agents.run(...)`."""
    return SimpleNamespace(start=start_agents, finish=finish, run=run_agents)
