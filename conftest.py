"""Fixtures every test directory shares: the real servers and the per-backend `backend` fixture
(polymem.testing.backends); and a data folder of the run's own."""

import atexit
import os
import shutil
import tempfile

import pytest

pytest_plugins = ["polymem.testing.backends"]


def _own_data_folder() -> None:
    """Point polymem's data folder (default store, exported models) at an empty folder of this run.

    The suite must neither read nor write the data folder of whoever runs it: a model exported there
    by `make demo` would change which embedder every test and every spawned `polymem` uses, and a
    test opening the default store would write into the user's memories. pytest-xdist's workers
    inherit the controller's folder.
    """
    home = os.environ.get("POLYMEM_TESTS_HOME")
    if not home:
        home = tempfile.mkdtemp(prefix="polymem-tests-home-")
        os.environ["POLYMEM_TESTS_HOME"] = home
        atexit.register(shutil.rmtree, home, True)
    os.environ["POLYMEM_HOME"] = home
    for name in ("POLYMEM_URL", "POLYMEM_TOKEN", "POLYMEM_EMBEDDER", "POLYMEM_AUTH_DB"):
        os.environ.pop(name, None)


_own_data_folder()


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A test that skips fails the run: in CI a skip hides whatever the test would have found.
    (Expected failures are xfail, not skips; suites that do not apply here are deselected.)"""
    if _skipped and exitstatus == 0 and not hasattr(session.config, "workerinput"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        session.config.get_terminal_writer().line(f"skipped tests fail the run: {', '.join(_skipped)}", red=True)
