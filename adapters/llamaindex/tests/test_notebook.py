"""The example notebook runs top to bottom, offline, and shows what it promises."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "llamaindex" / "polymem_llamaindex.ipynb"


def test_example_notebook_runs_offline_top_to_bottom(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "POLYMEM_EMBEDDER": "none", "HF_HUB_OFFLINE": "1"}

    NotebookClient(notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)

    outputs = "\n".join(
        output.get("text", "") + str(output.get("data", {}).get("text/plain", ""))
        for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
    )
    assert "Take an umbrella: Rain all day in Bergen, 11 C." in outputs
    assert "Ann lives in Bergen and hates getting wet." in outputs
    assert "I prefer temperatures in Fahrenheit." in outputs
    assert "I am travelling to Oslo on 3 June." in outputs
