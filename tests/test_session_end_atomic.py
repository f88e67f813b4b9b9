"""`session.end()` saves the extracted memories and deletes the session in one transaction: after a
failure or a kill between the two steps, either both happened or neither did."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import polymem

FACTS = ["My name is Ann Lee.", "I live in Leeds.", "I prefer tea over coffee."]


def _open(path: Path) -> polymem.Memory:
    return polymem.open(f"sqlite:///{path}", embedder=None)


def _start_session(path: Path) -> None:
    with _open(path) as mem:
        session = mem.session("chat", user_id="ann")
        for fact in FACTS:
            session.add("user", fact)


def _state(path: Path) -> tuple[int, bool]:
    """(memories of ann, whether the session still exists)."""
    with _open(path) as mem:
        return len(mem.list(user_id="ann")), any(s.session_id == "chat" for s in mem.sessions(user_id="ann"))


def test_a_failing_delete_leaves_no_extracted_memory(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _start_session(path)
    with sqlite3.connect(path) as conn:  # the second step fails inside the database itself
        conn.execute("CREATE TRIGGER refuse BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'injected'); END")
    with _open(path) as mem, pytest.raises(sqlite3.DatabaseError, match="injected"):
        mem.session("chat", user_id="ann").end()
    assert _state(path) == (0, True)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TRIGGER refuse")
    with _open(path) as mem:
        saved = mem.session("chat", user_id="ann").end()
    assert len(saved) >= 1 and _state(path) == (len(saved), False)


def test_a_kill_between_extraction_and_delete_leaves_neither(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    _start_session(path)
    script = textwrap.dedent(f"""
        import os, signal, polymem
        from polymem._sqlite import SQLiteBackend

        def killed(self, namespace, session_id):  # the memories are inserted, the session not yet deleted
            os.kill(os.getpid(), signal.SIGKILL)

        SQLiteBackend.session_delete = killed
        mem = polymem.open("sqlite:///{path}", embedder=None)
        mem.session("chat", user_id="ann").end()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == -9, done.stderr
    assert _state(path) == (0, True)
