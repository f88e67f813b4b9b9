"""compat_matrix.yaml is the one source of supported versions: README, pins and installs agree."""

from __future__ import annotations

import importlib.util
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

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


def test_torch_is_a_range_in_every_extra_and_one_version_only_where_tests_run() -> None:
    """A user's own torch must fit polymem's extras; the test and CI environments all run compat.TORCH."""
    pyprojects = [ROOT / "core" / "pyproject.toml", *sorted((ROOT / "adapters").glob("*/pyproject.toml"))]
    for path in pyprojects:
        project = tomllib.loads(path.read_text())["project"]
        requirements = [Requirement(r) for r in project.get("dependencies", [])]
        requirements += [Requirement(r) for extra in project.get("optional-dependencies", {}).values() for r in extra]
        for requirement in requirements:
            if requirement.name == "torch":
                assert not any(s.operator in ("==", "===") for s in requirement.specifier), (path, str(requirement))
                assert requirement.specifier.contains(compat.TORCH), (path, str(requirement))
    for name in ("requirements-dev.txt", "bench/requirements-bench.txt"):
        lines = [line.split("#")[0].strip() for line in (ROOT / name).read_text().splitlines()]
        pinned = [Requirement(line) for line in lines if line and not line.startswith("-")]
        assert [str(r.specifier) for r in pinned if r.name == "torch"] == [f"=={compat.TORCH}"], name
    makefile = (ROOT / "Makefile").read_text()
    assert "-c requirements-dev.txt" in makefile, "core's extras must install under requirements-dev.txt's torch pin"
    assert f"pip install -q torch=={compat.TORCH}" in makefile


def test_this_environment_runs_the_pinned_torch() -> None:
    assert version("torch").split("+")[0] == compat.TORCH


def test_a_row_installs_the_adapter_and_core_with_its_frameworks_pinned_exactly() -> None:
    spec = MATRIX["adapters"]["langchain"]
    core, adapter, *pins = compat.row_install("langchain", spec, "lowest")
    assert core.endswith("core[local,server]") and adapter.endswith("adapters/langchain[test]")
    assert {f"{pkg}=={ends['lowest']}" for pkg, ends in spec["frameworks"].items()} <= set(pins)
    assert set(spec.get("extra_pins", {}).get("lowest", [])) <= set(pins)


def _spec(tmp_path: Path, version: str = "1.0.0") -> dict[str, object]:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    return {"distribution": "x", "path": str(tmp_path), "frameworks": {"fw": {"lowest": version, "latest": "2.0"}}}


def test_a_rows_stamp_changes_with_its_matrix_entry_and_its_pyproject(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    stamp = compat.row_stamp(spec, compat.row_install("x", spec, "lowest"))
    assert stamp == compat.row_stamp(spec, compat.row_install("x", spec, "lowest"))
    raised = _spec(tmp_path, "1.1.0")
    assert compat.row_stamp(raised, compat.row_install("x", raised, "lowest")) != stamp
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["fw>=1"]\n')
    assert compat.row_stamp(spec, compat.row_install("x", spec, "lowest")) != stamp


def test_uv_gets_the_local_torch_wheel_and_refuses_to_go_without_it(tmp_path: Path, monkeypatch) -> None:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    monkeypatch.setattr(compat, "WHEELS", tmp_path)
    with pytest.raises(SystemExit):
        compat.torch_wheel()
    wheel = tmp_path / f"torch-{compat.TORCH}+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"
    wheel.touch()
    commands: list[list[str]] = []

    def run(cmd: list[str], **kwargs: object) -> SimpleNamespace:
        commands.append(cmd)
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(compat.subprocess, "run", run)
    assert compat.build_row(tmp_path / "venv", ["core", "adapter", "fw==1.0.0"], {})
    install = next(c for c in commands if "install" in c and "pip" in c)
    assert str(wheel) in install and install[install.index("--find-links") + 1] == str(tmp_path)
    assert not [arg for arg in install if arg.startswith("torch") and arg != str(wheel)]


def test_a_latest_row_equal_to_its_lowest_runs_once_and_failures_fail_the_run(monkeypatch) -> None:
    matrix = {"adapters": {
        "same": {"path": "a", "frameworks": {"fw": {"lowest": "1.0", "latest": "1.0"}}},
        "two": {"path": "b", "frameworks": {"fw": {"lowest": "1.0", "latest": "2.0"}}},
    }}
    ran: list[str] = []
    verdicts = {"two-latest": False}
    monkeypatch.setattr(compat, "load", lambda: matrix)

    def run_row(name: str, spec: dict[str, object], end: str, env: dict[str, str]) -> tuple[bool, str]:
        ran.append(f"{name}-{end}")
        return verdicts.get(f"{name}-{end}", True), ""

    monkeypatch.setattr(compat, "run_row", run_row)
    assert compat.run(["lowest", "latest"], []) == 1
    assert ran == ["same-lowest", "two-lowest", "two-latest"]
    ran.clear()
    assert compat.run(["latest"], ["same"]) == 0 and ran == ["same-latest"]
    ran.clear()
    assert compat.run(["latest"], ["same"], skip_same_as_lowest=True) == 0 and ran == []
    with pytest.raises(SystemExit):
        compat.run(["lowest"], ["nope"])
