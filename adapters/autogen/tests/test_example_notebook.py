"""The AutoGen example notebook runs top to bottom, offline, and shows what it promises."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "autogen" / "polymem_autogen.ipynb"


def test_example_notebook_runs_offline_and_recalls_memories(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    env_before = os.environ.pop("POLYMEM_EXAMPLE_OPENAI_MODEL", None)
    try:
        NotebookClient(
            notebook, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        if env_before is not None:
            os.environ["POLYMEM_EXAMPLE_OPENAI_MODEL"] = env_before
    printed = "\n".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    )
    assert "Alice is allergic to peanuts" in printed
    assert "[fact, just now] Alice is allergic to peanuts" in printed
    assert "You fly on May 3 with 1200 EUR to spend." in printed
    assert "[('preference', 'Alice is vegetarian')]" in printed
