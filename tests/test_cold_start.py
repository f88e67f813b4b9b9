"""A process that only recalls loads only what a recall needs (the cold start of issue 22).

Regression guards on what gets imported and built, not timings (those are bench/bench_cold_start.py's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import polymem

# Modules a recall never needs: the torch model, the consolidation index, the HTTP client and
# service, the MCP SDK, progress bars, and asyncio (a synchronous process never starts a loop).
NOT_FOR_A_RECALL = ("torch", "sentence_transformers", "transformers", "faiss", "httpx", "fastapi", "starlette",
                    "uvicorn", "mcp", "tqdm", "asyncio")


def _run(code: str, home: Path) -> dict[str, object]:
    env = {**os.environ, "POLYMEM_HOME": str(home)}
    env.pop("POLYMEM_EMBEDDER", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    result: dict[str, object] = json.loads(out.splitlines()[-1])
    return result


def test_import_polymem_loads_nothing_a_recall_does_not_need(tmp_path: Path) -> None:
    code = f"import json, sys, polymem; print(json.dumps(sorted(set({NOT_FOR_A_RECALL!r}) & set(sys.modules))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_import_polymem_builds_no_pydantic_model() -> None:
    """The operation table's models build their validators on first use: at import, building
    them (and loading pydantic's plugins) was a third of `import polymem`."""
    code = ("import json, sys, pydantic, polymem, polymem.cli; from polymem import operations; "
            "built = [n for n, v in vars(operations).items() if isinstance(v, type) and issubclass(v, pydantic.BaseModel) "
            "and v.__pydantic_complete__]; print(json.dumps([built, 'importlib.metadata' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [[], False]


@pytest.mark.slow
def test_a_cli_recall_on_the_fast_path_loads_onnxruntime_and_nothing_a_recall_does_not_need(
        exported: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / "all-MiniLM-L6-v2-onnx-int8").symlink_to(exported)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with polymem.open(url, embedder=polymem.OnnxEmbedder(exported)) as mem:
        mem.save("The team meeting is in Berlin on Tuesday", user_id="ann")
        mem.save("Ann drinks her coffee black", user_id="ann")
    code = ("import json, sys\nfrom click.testing import CliRunner\nfrom polymem.cli import main\n"
            f"result = CliRunner().invoke(main, ['recall', 'where is the meeting', '--user', 'ann', '--url', {url!r}, "
            "'--json'])\n"
            f"print(json.dumps({{'output': result.output, 'loaded': sorted(set({NOT_FOR_A_RECALL!r}) & set(sys.modules)), "
            "'onnx': 'onnxruntime' in sys.modules}))")
    result = _run(code, home)
    assert result["loaded"] == [] and result["onnx"] is True
    hits = json.loads(str(result["output"]))["memories"]
    assert hits[0]["content"] == "The team meeting is in Berlin on Tuesday"
