"""A store file this process may only read opens read-only: reads work, writes are a typed error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import polymem


@pytest.fixture()
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as store:
        store.save("I like blue", user_id="ann")
        store.session("s1", user_id="ann").add("user", "hello")
    return path


def test_mode_ro_reads_and_refuses_writes_with_a_typed_error(stored: Path) -> None:
    with polymem.open(f"sqlite:///{stored}?mode=ro", embedder=None) as store:
        assert [r.content for r in store.list(user_id="ann")] == ["I like blue"]
        assert [h.memory.content for h in store.recall("blue", user_id="ann")] == ["I like blue"]
        assert store.url.endswith("?mode=ro")
        with pytest.raises(polymem.ReadOnlyStoreError):
            store.save("I like red", user_id="ann")
        with pytest.raises(polymem.ReadOnlyStoreError):
            store.session("s1", user_id="ann").add("user", "more")
    with polymem.open(f"sqlite:///{stored}", embedder=None) as store:
        assert [r.content for r in store.list(user_id="ann")] == ["I like blue"]


def test_an_unknown_sqlite_url_option_is_refused(stored: Path) -> None:
    for query in ("mode=rw", "durability=paranoid", "cache=shared"):
        with pytest.raises(polymem.InvalidURLError):
            polymem.open(f"sqlite:///{stored}?{query}", embedder=None)


def test_a_file_this_process_may_not_write_opens_read_only_by_itself(stored: Path) -> None:
    """The file and its folder may only be read, and no WAL index exists. Modes do not stop root, so
    under root the store is opened as `nobody` (the file stays root's, 0644); otherwise by the modes."""
    as_root = os.geteuid() == 0
    if as_root:
        # a folder `nobody` can reach: not under pytest's own, which another pytest run resets to 0700
        folder = Path(tempfile.mkdtemp(prefix="polymem-read-only-"))
        stored = Path(shutil.copy(stored, folder / stored.name))
        os.chmod(folder, 0o755)
    else:
        os.chmod(stored, 0o444)
        os.chmod(stored.parent, 0o555)
    script = textwrap.dedent(f"""
        import os, sqlite3, polymem, polymem._sqlite
        if {as_root}:
            os.setgid(65534); os.setuid(65534)
        with polymem.open("sqlite:///{stored}", embedder=None) as store:
            print([r.content for r in store.list(user_id="ann")], store.url.endswith("?mode=ro"))
            try:
                store.save("I like red", user_id="ann")
            except polymem.ReadOnlyStoreError:
                print("refused")
    """)
    try:
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "POLYMEM_DATA_DIR": "/tmp"})
    finally:
        os.chmod(stored.parent, 0o755)
        if as_root:
            shutil.rmtree(stored.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["['I like blue'] True", "refused"]
