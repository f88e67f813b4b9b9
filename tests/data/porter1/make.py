"""Writes `store.db` with polymem as of main at f74d947 (full text indexed by the hand-written
Porter stemmer, analyzer "porter-1"), for `tests/test_text_index.py`'s test that a store built by
the old analyzer is re-indexed by the Snowball one. Run it with that version's sources first on
the path:

    git -C /work/main worktree add /tmp/porter1 f74d947
    PYTHONPATH=/tmp/porter1/core/src python tests/data/porter1/make.py

The words are ones the two stemmers reduce differently ("generalizations": Porter "gener",
Snowball "general"; "communism": "commun" and "communism")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polymem
from polymem._text import ANALYZER_VERSION

HERE = Path(__file__).parent

if __name__ == "__main__":
    assert ANALYZER_VERSION == "porter-1", "run with the sources of main at f74d947 first on the path"
    path = HERE / "store.db"
    path.unlink(missing_ok=True)
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        mem.save("Generalizations about communism bored the reading group", user_id="u")
        mem.save("The user adopted a kitten in March", user_id="u")
    with sqlite3.connect(path) as conn:  # one self-contained file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    with sqlite3.connect(path) as conn:
        conn.execute("VACUUM")
