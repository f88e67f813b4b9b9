"""The SQLite full-text index follows the analyzer: stores indexed otherwise are re-indexed on open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polymem
from polymem._sqlite import MIGRATIONS, namespace_token, scope_token
from polymem._text import ANALYZER_VERSION


def _store_with_one_memory(path: Path) -> str:
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        return mem.save("The user was inspired by jazz concerts", user_id="u").memory_id


def _found(path: Path, query: str) -> list[str]:
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        return [hit.memory.memory_id for hit in mem.recall(query, user_id="u")]


def test_a_store_indexed_by_another_analyzer_is_reindexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory_id = _store_with_one_memory(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = 'light-stemmer' WHERE key = 'analyzer'")
        conn.execute("UPDATE memory_fts SET body = 'stale'")
    assert _found(path, "inspiration") == [memory_id]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()[0] == ANALYZER_VERSION


def test_a_version_3_store_moves_its_scope_tokens_out_of_the_ranked_text(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory_id = _store_with_one_memory(path)
    with sqlite3.connect(path) as conn:  # put the file back as schema version 3 wrote it
        conn.executescript("DROP TABLE memory_fts_vocab; DROP TABLE memory_fts;"
                           "CREATE VIRTUAL TABLE memory_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0');"
                           "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab('memory_fts', 'row');"
                           "DELETE FROM schema_migrations WHERE version > 3; DELETE FROM meta WHERE key = 'analyzer';")
        conn.execute("INSERT INTO memory_fts(rowid, body) SELECT rowid, ? FROM memories",
                     (f"{namespace_token('default')} {scope_token('default', 'u')} user wa inspir jazz concert",))
    assert _found(path, "inspiring jazz") == [memory_id]
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        assert mem.backend.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        scope, body = conn.execute("SELECT scope, body FROM memory_fts").fetchone()
    assert scope == f"{namespace_token('default')} {scope_token('default', 'u')}"
    assert "jazz" in body and "zs" not in body
