"""What a SQLite recall reads: the rows of the candidates that can score among its best, judged
by the live scores its vector cache knows, once each; it ranks exactly as if it had read them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import polymem
from polymem import MemoryDraft
from polymem._sqlite import _STAMPED_SINCE, SQLiteBackend, _VectorCache
from polymem.testing import FakeClock

DIMENSION = 32
QUERY = np.eye(DIMENSION, dtype=np.float32)[0]


class VectorTable:
    """An embedder for tests that only pass precomputed vectors."""

    model_id = "test/unit-vectors"
    dimension = DIMENSION

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [QUERY.tolist() for _ in texts]


def at_cosine(cosine: float, side: int) -> np.ndarray:
    """A unit vector whose cosine with `QUERY` is `cosine`, leaning towards axis 1 + `side` % 15."""
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[0], vector[1 + side % 15] = cosine, np.sqrt(1 - cosine**2)
    return vector


def ranked(mem: polymem.Memory) -> list[tuple[str, float]]:
    return [(h.memory.memory_id, h.score) for h in mem.recall("zzz", user_id="u", top_k=10, query_vector=QUERY)]


def candidate_rows_read(mem: polymem.Memory) -> int:
    """How many candidate rows the next recall reads (its `rowid IN (...)` statement)."""
    counted: list[int] = []
    conn = cast(SQLiteBackend, mem.backend)._conn
    conn.set_trace_callback(lambda sql: counted.append(sql[sql.rindex(" IN (") + 5:].count(",") + 1)
                            if sql.startswith("SELECT m.rowid, m.memory_id") else None)
    try:
        ranked(mem)
    finally:
        conn.set_trace_callback(None)
    return sum(counted)


def distractors_and_one(tmp_path: Path, **options: Any) -> tuple[polymem.Memory, str]:
    """101 memories of one user at cosines 0.80 down to 0.70 of the query, with no importance,
    and the id of the one at 0.75 (about the 50th by relevance), the only one leaning towards
    its own axis (`MIDDLE`)."""
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock(), **options)
    vectors = np.stack([at_cosine(c, i) for i, c in enumerate(np.linspace(0.80, 0.70, 101))])
    vectors[50] = MIDDLE
    saved = mem.save_many([MemoryDraft(f"memory {i}", importance=0.0) for i in range(101)], user_id="u",
                          vectors=vectors)
    return mem, saved[50].memory_id


MIDDLE = np.zeros(DIMENSION, dtype=np.float32)
MIDDLE[0], MIDDLE[20] = 0.75, np.sqrt(1 - 0.75**2)


def test_a_recall_reads_only_the_rows_of_candidates_that_can_score_among_its_best(tmp_path: Path) -> None:
    mem, _ = distractors_and_one(tmp_path)
    ranked(mem)  # the vector cache loaded
    assert candidate_rows_read(mem) < 50  # 101 candidates, all within reach by relevance alone
    mem.close()


def test_a_recall_ranks_as_if_it_had_read_every_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=clock)
    rng = np.random.default_rng(3)
    for i in range(120):  # ages, importances, categories and access counts all differ
        mem.save(f"memory {i}", user_id="u", importance=float(rng.uniform(0, 1)),
                 category=["fact", "event", "task", "preference"][i % 4], vector=at_cosine(rng.uniform(0.6, 0.9), i))
        clock.advance(hours=float(rng.uniform(0, 48)))
    for i in range(20):
        mem.recall("zzz", user_id="u", top_k=5, query_vector=at_cosine(0.99, i))
    mem.close()
    # reopened without bonuses: both rankings below see the same store
    reopened = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=clock,
                            scoring=polymem.ScoringPolicy(reinforce=False))
    pruned = ranked(reopened)
    assert candidate_rows_read(reopened) < 60

    known = _VectorCache.live_inputs

    def nothing_known(cache: _VectorCache, rowids: Any, now_us: int) -> Any:
        inputs = known(cache, rowids, now_us)
        inputs.ages[:] = np.nan
        return inputs

    monkeypatch.setattr(_VectorCache, "live_inputs", nothing_known)
    assert candidate_rows_read(reopened) > 80
    assert ranked(reopened) == pruned
    reopened.close()


def test_a_memory_another_process_reinforced_ranks_by_its_new_live_score(tmp_path: Path) -> None:
    mem, middle = distractors_and_one(tmp_path)
    assert middle not in [i for i, _ in ranked(mem)]
    mem.backend.flush()
    other = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable())
    for _ in range(5):  # the middle memory returned first five times: +0.5 importance, 5 accesses
        assert other.recall("zzz", user_id="u", top_k=1, query_vector=MIDDLE)[0].memory.memory_id == middle
    other.close()
    assert middle in [i for i, _ in ranked(mem)]
    mem.close()


def test_the_rows_stamped_since_a_count_are_read_through_its_index_however_many_were_stamped(
        tmp_path: Path) -> None:
    mem, _ = distractors_and_one(tmp_path)
    for _ in range(3):  # every row stamped, three times
        mem.recall("zzz", user_id="u", top_k=101, query_vector=QUERY, min_relevance=0)
        mem.backend.flush()
    conn = cast(SQLiteBackend, mem.backend)._conn
    plan = conn.execute(f"EXPLAIN QUERY PLAN {_STAMPED_SINCE}", (2,)).fetchall()
    assert [step[3] for step in plan] == ["SEARCH memories USING INDEX memories_accessed (accessed_seq>?)"]
    assert len(conn.execute(_STAMPED_SINCE, (2,)).fetchall()) == 101
    mem.close()


def test_a_recall_returns_the_records_of_the_rows_its_search_read_without_reading_them_again(
        tmp_path: Path) -> None:
    mem, _ = distractors_and_one(tmp_path, scoring=polymem.ScoringPolicy(reinforce=False))  # records stay as read
    ranked(mem)
    conn = cast(SQLiteBackend, mem.backend)._conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        hits = mem.recall("zzz", user_id="u", top_k=10, query_vector=QUERY)
    finally:
        conn.set_trace_callback(None)
    assert not [sql for sql in statements if "memory_id IN" in sql]
    assert [h.memory for h in hits] == [mem.get(h.memory.memory_id) for h in hits]
    mem.close()


def test_the_live_inputs_of_rows_of_many_users_are_each_rows_own(tmp_path: Path) -> None:
    """Over every user, candidates lie a few to a user's block: each one's live inputs are read
    from its own block and slot, as its row gives them."""
    clock = FakeClock()
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=clock)
    rng = np.random.default_rng(4)
    for i in range(90):
        mem.save(f"memory {i}", user_id=f"user{i % 9}", importance=float(rng.uniform(0, 1)),
                 category=["fact", "event", "task", "preference"][i % 4], vector=at_cosine(rng.uniform(0.6, 0.9), i))
        clock.advance(hours=float(rng.uniform(0, 48)))
    for i in range(10):  # some memories accessed since
        mem.recall("zzz", user_id=None, top_k=5, query_vector=at_cosine(0.99, i))
    mem.flush()
    ranked(mem)  # every user's vectors read: the cache is current
    backend = cast(SQLiteBackend, mem.backend)
    rows = backend._conn.execute("SELECT rowid, importance, category, created_at, last_accessed_at, access_count "
                                 "FROM memories ORDER BY random()").fetchall()
    cache = backend._cache(backend._conn, VectorTable.model_id, ("default", None, True))
    now_us = 1_900_000_000_000_000
    inputs = cache.live_inputs([row[0] for row in rows], now_us)
    assert len({cache.directory.get(row[0])[0] for row in rows}) == 9  # nine users' blocks
    assert inputs.importances.tolist() == [row[1] for row in rows]
    assert list(inputs.categories) == [row[2] for row in rows]
    assert inputs.ages.tolist() == [(now_us - (row[4] if row[4] is not None else row[3])) / 1_000_000 for row in rows]
    assert inputs.access_counts.tolist() == [row[5] for row in rows]
    assert any(row[5] for row in rows)
    mem.close()
