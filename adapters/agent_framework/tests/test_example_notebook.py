"""The Agent Framework example notebook runs top to bottom, offline, and shows what it promises."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "agent_framework" / "polymem_agent_framework.ipynb"


def test_example_notebook_runs_offline_and_recalls_memories(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, kernel_name="python3", timeout=180,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "\n".join(
        output.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs)
    assert "[fact, just now] Alice is allergic to peanuts" in printed
    assert "model sees [user] I fly to Oslo on May 3 and have 1200 EUR to spend." in printed
    assert "You fly on May 3 with 1200 EUR to spend." in printed
    assert (tmp_path / "memory.db").exists()
