"""The example notebook runs top to bottom, offline, and shows what it promises."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).with_name("polymem_semantic_kernel.ipynb")


def outputs(nb) -> str:
    return "\n".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
    )


def test_the_notebook_runs_offline_and_shows_memory_at_work(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = outputs(nb)
    assert "('Ann is allergic to peanuts', 'inference')" in text
    assert "tool_result" in text and "Oslo: 4 degrees C and rain" in text
    assert "From memory:\n1. [" in text and "allergic to peanuts" in text
    assert "office: The office is in Oslo" in text
    assert "system: You cook for Ann.\nsystem: Relevant long-term memories" in text
    saw = text.split("The model saw:")[1]
    assert "\n1. [" in saw and "allergic to peanuts" in saw
