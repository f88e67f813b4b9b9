"""compat_matrix.yaml is the one source of supported versions: README, pins and installs agree."""

from __future__ import annotations

import importlib.util
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

ROOT = Path(__file__).parents[1]
spec = importlib.util.spec_from_file_location("compat", ROOT / "scripts" / "compat.py")
assert spec and spec.loader
compat = importlib.util.module_from_spec(spec)
sys.modules["compat"] = compat
spec.loader.exec_module(compat)
MATRIX = compat.load()
ROWS = [(name, pkg, ends) for name, a in MATRIX["adapters"].items() for pkg, ends in a["frameworks"].items()]


def test_readme_table_is_generated_from_the_matrix() -> None:
    assert compat.readme_table() == compat.table(), "run `python scripts/compat.py write-readme`"


def test_every_adapter_folder_is_in_the_matrix() -> None:
    folders = {p.parent.name for p in (ROOT / "adapters").glob("*/pyproject.toml")}
    assert folders == set(MATRIX["adapters"])


@pytest.mark.parametrize("adapter, package, ends", ROWS)
def test_adapter_requirements_admit_both_ends(adapter: str, package: str, ends: dict[str, str]) -> None:
    project = tomllib.loads((ROOT / MATRIX["adapters"][adapter]["path"] / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    requirements += [Requirement(r) for extra in project.get("optional-dependencies", {}).values() for r in extra]
    matching = [r for r in requirements if r.name == package]
    assert matching, f"{adapter} does not declare {package}"
    for requirement in matching:
        assert requirement.specifier.contains(ends["lowest"]) and requirement.specifier.contains(ends["latest"])


@pytest.mark.parametrize("adapter, package, ends", ROWS)
def test_this_environment_runs_the_latest_versions(adapter: str, package: str, ends: dict[str, str]) -> None:
    assert version(package) == ends["latest"]
