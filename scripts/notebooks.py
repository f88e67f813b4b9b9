"""`make notebooks`: run every example notebook top to bottom and save it with its outputs.

Each notebook runs in a scratch folder (the stores it opens land there), offline, on the
interpreter's `python3` kernel. The saved notebook is what a reader sees on GitHub; the tests
execute them again (adapters/*/tests/test_*notebook*.py) and check that what is committed carries
outputs and no noise (tests/test_docs.py).

    python scripts/notebooks.py                 # every notebook under examples/
    python scripts/notebooks.py examples/langchain/polymem_langchain.ipynb
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def notebooks() -> list[Path]:
    return sorted((ROOT / "examples").glob("*/*.ipynb"))


def refresh(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="polymem-notebook-") as scratch:
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": scratch}}).execute()
    for cell in notebook.cells:  # execution times would change the file on every refresh
        cell.get("metadata", {}).pop("execution", None)
    nbformat.write(notebook, path)


def main(args: list[str]) -> None:
    for path in [Path(a).resolve() for a in args] or notebooks():
        print(f"running {path.relative_to(ROOT)}", flush=True)
        refresh(path)


if __name__ == "__main__":
    main(sys.argv[1:])
