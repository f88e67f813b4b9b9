"""Loading and exporting the model print nothing of their libraries': a user sees polymem's own output only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from polymem._embedders import SentenceTransformerEmbedder, _hub_bar_state_table


def run_quietly(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "POLYMEM_EMBEDDER"}
    env["POLYMEM_HOME"] = str(home)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def test_loading_the_default_embedder_prints_nothing(tmp_path: Path) -> None:
    code = ("from polymem._embedders import default_embedder\n"
            "embedder = default_embedder()\n"
            "assert type(embedder).__name__ == 'SentenceTransformerEmbedder', embedder\n"
            "assert embedder.dimension == 384 and len(embedder.embed(['I like blue'])[0]) == 384\n")
    done = run_quietly(code, tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")


def test_loading_puts_the_callers_progress_bar_settings_back() -> None:
    from transformers.utils import logging as hf_logging

    hub = _hub_bar_state_table()
    assert hub is not None
    before = (hf_logging.is_progress_bar_enabled(), dict(hub))
    SentenceTransformerEmbedder().embed(["loaded here"])
    assert (hf_logging.is_progress_bar_enabled(), dict(hub)) == before
    hf_logging.disable_progress_bar()
    try:
        off = (hf_logging.is_progress_bar_enabled(), dict(hub))
        SentenceTransformerEmbedder().embed(["loaded again"])
        assert (hf_logging.is_progress_bar_enabled(), dict(hub)) == off
    finally:
        hf_logging.enable_progress_bar()
        hub.clear()
        hub.update(before[1])


def test_a_notebook_that_embeds_shows_no_output_but_its_own(tmp_path: Path) -> None:
    """In a kernel without ipywidgets, importing transformers' tqdm.auto warned "IProgress not found"."""
    import nbclient
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os\n"
        f"os.environ['POLYMEM_HOME'] = {str(tmp_path / 'home')!r}\n"
        "os.environ.pop('POLYMEM_EMBEDDER', None)\n"
        "from polymem._embedders import default_embedder\n"
        "print(type(default_embedder()).__name__, len(default_embedder().embed(['I like blue'])[0]))")])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [(o.output_type, o.get("name"), o.get("text")) for o in notebook.cells[0].outputs]
    assert outputs == [("stream", "stdout", "SentenceTransformerEmbedder 384\n")]


def test_every_pyproject_states_its_license_as_an_spdx_expression() -> None:
    """A TOML table is deprecated in setuptools (a warning on every install); the string needs setuptools 77."""
    root = Path(__file__).parents[1]
    for path in [root / "core" / "pyproject.toml", *sorted((root / "adapters").glob("*/pyproject.toml"))]:
        config = tomllib.loads(path.read_text())
        assert isinstance(config["project"]["license"], str), path
        assert "setuptools>=77" in config["build-system"]["requires"], path


@pytest.mark.slow
def test_export_prints_only_its_own_steps_and_the_fast_path_loads_silently(tmp_path: Path) -> None:
    code = ("import logging\n"
            "from polymem._embedders import default_embedder, export_onnx_model\n"
            "export_onnx_model(progress=print)\n"
            "embedder = default_embedder()\n"
            "assert type(embedder).__name__ == 'OnnxEmbedder', embedder\n"
            "assert len(embedder.embed(['I like blue'])[0]) == 384\n"
            "assert not logging.getLogger().handlers, 'the root logger was configured'\n")
    done = run_quietly(code, tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("exporting to ONNX\nquantizing int8 per channel\n", "")
