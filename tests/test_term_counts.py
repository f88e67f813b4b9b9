"""The SQLite store keeps how many full-text rows hold each term beside the rows, as every write changes them."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polymem
from polymem._sqlite import MIGRATIONS, TERM_COUNTS_MIGRATION, SQLiteBackend
from polymem.testing import FakeClock

WORDS = ["garden", "violin", "lesson", "friday", "water", "jazz", "concert", "tea", "kyoto", "budget"]


def stored_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {term: docs for term, docs in conn.execute("SELECT term, docs FROM memory_terms") if docs}


def counted_from_rows(path: Path) -> dict[str, int]:
    """What the counts must be: each term once per full-text row holding it."""
    with sqlite3.connect(path) as conn:
        return dict(Counter(term for (body,) in conn.execute("SELECT body FROM memory_fts") for term in set(body.split())))


def open_store(path: Path) -> polymem.Memory:
    return polymem.open(f"sqlite:///{path}", embedder=None, clock=FakeClock())


def test_saving_counts_each_term_once_per_memory_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as mem:
        mem.save("The garden needs water, garden first", user_id="a")
        mem.save_many([polymem.MemoryDraft("Water the garden on Friday"), polymem.MemoryDraft("Violin on Friday")],
                      user_id="b")
    counts = stored_counts(path)
    assert counts["garden"] == 2 and counts["water"] == 2 and counts["friday"] == 2 and counts["violin"] == 1
    assert counts == counted_from_rows(path)


def test_updating_deleting_and_purging_move_the_counts_with_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as mem:
        garden = mem.save("The garden needs water", user_id="a")
        violin = mem.save("Violin lesson on Friday", user_id="a")
        kept = mem.save("Jazz concert in the garden", user_id="a")
        mem.update(garden.memory_id, content="The budget needs review")
        mem.delete(violin.memory_id)
        mem.purge(kept.memory_id)
    counts = stored_counts(path)
    assert "garden" not in counts and "violin" not in counts and counts["budget"] == 1
    assert counts == counted_from_rows(path)


def test_an_imported_snapshot_is_counted_like_saved_memories(tmp_path: Path) -> None:
    with open_store(tmp_path / "a.db") as mem:
        mem.save("Green tea in Kyoto", user_id="a")
        mem.save("Tea with the budget team", user_id="b")
        mem.export_snapshot(tmp_path / "snap.jsonl")
    with open_store(tmp_path / "b.db") as mem:
        mem.import_snapshot(tmp_path / "snap.jsonl")
    assert stored_counts(tmp_path / "b.db") == stored_counts(tmp_path / "a.db") == counted_from_rows(tmp_path / "b.db")


def test_document_frequencies_are_the_rows_fts5_matches(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as mem:
        for n in range(12):
            mem.save(f"{WORDS[n % 4]} and {WORDS[(n * 3) % 7]} note {n}", user_id=f"u{n % 3}")
        backend = mem.backend
        assert isinstance(backend, SQLiteBackend)
        rows, docs = backend.document_frequencies("default", WORDS)
    with sqlite3.connect(path) as conn:
        for word in WORDS:
            matched = conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                                   (f'body : "{word}"',)).fetchone()[0]
            assert docs[word] == matched
    assert rows == 12


def test_a_store_written_before_the_counts_gets_them_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as mem:
        for n in range(20):
            mem.save(f"{WORDS[n % 10]} {WORDS[(n * 7) % 10]} {n}", user_id="a")
    with sqlite3.connect(path) as conn:  # the file as the version before wrote it
        conn.executescript("DROP TABLE memory_terms; ALTER TABLE memories DROP COLUMN screened;"
                           "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab('memory_fts', 'row');"
                           f"DELETE FROM schema_migrations WHERE version >= {TERM_COUNTS_MIGRATION};")
    with open_store(path) as mem:
        assert mem.backend.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
        assert [h.memory.content for h in mem.recall("kyoto budget", user_id="a")]
    assert stored_counts(path) == counted_from_rows(path) != {}
    with sqlite3.connect(path) as conn:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_fts_vocab'").fetchall()


def test_reindexing_in_another_language_counts_the_new_terms(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with open_store(path) as mem:
        mem.save("Die Kinder spielten in den Häusern", user_id="u")
    english = stored_counts(path)
    with polymem.open(f"sqlite:///{path}", embedder=None, language="de"):
        pass
    assert stored_counts(path) == counted_from_rows(path) != english


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["save", "update", "delete", "purge"]),
                          st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.integers(0, 50)),
                min_size=1, max_size=25))
def test_counts_match_the_rows_after_any_sequence_of_writes(tmp_path: Path, writes: list[tuple[str, list[str], int]]) -> None:
    path = tmp_path / f"m{abs(hash(str(writes)))}.db"
    ids: list[str] = []
    with open_store(path) as mem:
        for kind, words, pick in writes:
            if kind == "save" or not ids:
                ids.append(mem.save(" ".join(words) + f" item {len(ids)}", user_id=f"u{pick % 3}").memory_id)
                continue
            memory_id = ids[pick % len(ids)]
            if kind == "update":
                mem.update(memory_id, content=" ".join(words) + f" changed {pick}")
            else:
                getattr(mem, kind)(memory_id)
                ids.remove(memory_id)
    assert stored_counts(path) == counted_from_rows(path)
