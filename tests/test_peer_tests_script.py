"""scripts/peer_tests.py: a peer suite's junit report becomes a README table row (the real suites run in `make test`)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def peer_tests() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peer_tests", ROOT / "scripts" / "peer_tests.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["peer_tests"] = module
    spec.loader.exec_module(module)
    return module


SUITE = '''
import pytest

def test_passes():
    pass

@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.xfail(strict=True, reason="reads a private attribute")
def test_private(n):
    assert False

def test_breaks():
    assert False

def test_skips_itself():
    pytest.skip("needs a key")
'''


def _junit(tmp_path: Path, source: str) -> Path:
    (tmp_path / "test_suite.py").write_text(source)
    report = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
                    f"--junitxml={report}", str(tmp_path / "test_suite.py")], cwd=tmp_path, capture_output=True)
    return report


def test_a_junit_report_is_counted_by_outcome_with_reasons(peer_tests: ModuleType, tmp_path: Path) -> None:
    result = peer_tests.read_junit(_junit(tmp_path, SUITE), "pkg 1.0: `tests/test_x.py` (A → B)")
    assert (result.passed, result.failed) == (1, ["test_breaks", "test_skips_itself (skipped: needs a key)"])
    assert result.expected == {"reads a private attribute": ["test_private[1]", "test_private[2]"]}
    row = peer_tests.table([result]).splitlines()[2]
    assert row == ("| pkg 1.0: `tests/test_x.py` (A → B) | 1 | 2 | 2: `test_private[…] ×2`: reads a private attribute | "
                   "— |")


def test_not_applicable_peer_tests_are_deselected_and_reported_with_their_reason(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text((ROOT / "adapters" / "conftest.py").read_text())
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(
        "EXPECTED_FAILURES = {}\nNOT_APPLICABLE = {'test_sql': \"checks the replaced package's SQL\"}\n")
    (suite / "test_suite.py").write_text("def test_passes():\n    pass\n\ndef test_sql():\n    assert False\n")
    listed = tmp_path / "not_applicable.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(suite)], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "POLYMEM_PEER_DESELECTED": str(listed)})
    assert "1 passed, 1 deselected" in done.stdout and "skipped" not in done.stdout
    assert "checks the replaced package's SQL" in done.stdout  # the terminal summary names the reason
    assert json.loads(listed.read_text()) == {"checks the replaced package's SQL": ["test_sql"]}


def test_the_table_replaces_what_lies_between_the_markers(peer_tests: ModuleType) -> None:
    readme = f"# x\n{peer_tests.BEGIN}\nold | table\n{peer_tests.END}\nafter\n"
    assert peer_tests.with_table(readme, "| new |", Path("README.md")) == (
        f"# x\n{peer_tests.BEGIN}\n| new |\n{peer_tests.END}\nafter\n")
    with pytest.raises(SystemExit, match="markers"):
        peer_tests.with_table("# no markers\n", "| new |", Path("README.md"))


def test_every_peer_suite_names_its_release(peer_tests: ModuleType) -> None:
    suites = [suite for dirs in peer_tests.suites().values() for suite in dirs]
    assert suites and all(peer_tests.title(suite) for suite in suites)  # `title` exits on a bad SOURCE.md
