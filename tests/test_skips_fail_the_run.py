"""The repository's conftest fails a run in which a test skips (a skip in CI hides a failure)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text("import pytest\n\n" + body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "core" / "src")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest", *args,
                           "test_sample.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_skipped_test_fails_the_run(tmp_path: Path) -> None:
    result = _run(tmp_path, "def test_needs_a_key():\n    pytest.skip('needs a key')\n")
    assert result.returncode == 1, result.stdout
    assert "skipped tests fail the run: test_sample.py::test_needs_a_key" in result.stdout


def test_a_skip_in_a_worker_fails_the_run_too(tmp_path: Path) -> None:
    result = _run(tmp_path, "def test_needs_a_key():\n    pytest.skip('needs a key')\n", "-n", "2")
    assert result.returncode == 1, result.stdout


def test_expected_failures_and_passes_leave_the_run_green(tmp_path: Path) -> None:
    result = _run(tmp_path, "@pytest.mark.xfail(strict=True)\ndef test_known():\n    assert False\n\n"
                            "def test_fine():\n    pass\n")
    assert result.returncode == 0, result.stdout
