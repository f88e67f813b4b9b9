"""Fixtures every test directory shares: the real servers and the per-backend `backend` fixture
(polymem.testing.backends); and a data folder of the run's own."""

import atexit
import os
import shutil
import tempfile

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
