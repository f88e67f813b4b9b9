"""The example notebook runs top to bottom, offline."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "langchain" / "polymem_langchain.ipynb"


def test_the_example_notebook_runs_offline(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert "You asked about Lyon." in outputs
    assert "transcript: 6 messages" in outputs
    assert "Your cat is Miso." in outputs
    assert "Error" not in outputs
