"""The suite runs on a data folder of its own, whatever the runner's polymem data folder holds."""

from __future__ import annotations

import os
from pathlib import Path

from polymem._embedders import data_dir, onnx_model_dir
from polymem._memory import default_url


def test_the_data_folder_is_the_runs_own_temporary_folder() -> None:
    assert data_dir() == Path(os.environ["POLYMEM_TESTS_HOME"])
    assert data_dir() != Path.home() / ".local" / "share" / "polymem"


def test_the_default_store_lives_in_the_runs_own_folder() -> None:
    assert default_url() == f"sqlite:///{data_dir() / 'memory.db'}"


def test_no_exported_fast_path_is_there_to_change_the_default_embedder() -> None:
    assert not onnx_model_dir().exists()
