"""Reinforcement is written in the background, batched, and never lost or double-counted."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

import polymem
from polymem import _sqlite
from polymem._backend import REINFORCE_WINDOW_S
from polymem.testing import FakeClock, HashEmbedder


def test_recalls_in_quick_succession_each_count_once_after_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with polymem.open(url, embedder=None, clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        for _ in range(25):
            assert mem.recall("bees", user_id="u")[0].memory.memory_id == record.memory_id
    with polymem.open(url, embedder=None) as mem:
        stored = mem.get(record.memory_id)
        assert stored is not None and stored.access_count == 25


def test_flush_makes_pending_reinforcement_visible_at_once(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        mem.recall("bees", user_id="u")
        mem.flush()
        stored = mem.get(record.memory_id)
        assert stored is not None and stored.access_count == 1 and stored.last_accessed_at is not None


def cached_live(mem: polymem.Memory, memory_id: str) -> tuple[int, float, float]:
    """What the store's vector cache holds of a memory's live score: (access count, importance, age in s)."""
    with mem.backend._read() as conn:
        rowid = conn.execute("SELECT rowid FROM memories WHERE memory_id = ?", (memory_id,)).fetchone()[0]
    cache = next(iter(mem.backend._caches.values()))
    now = mem.engine.clock()
    inputs = cache.live_inputs([rowid], _sqlite.to_micros(now))
    return int(inputs.access_counts[0]), float(inputs.importances[0]), float(inputs.ages[0])


def stored_live(mem: polymem.Memory, memory_id: str) -> tuple[int, float, float]:
    record = mem.get(memory_id)
    assert record is not None
    seen = record.last_accessed_at or record.created_at
    return record.access_count, record.importance, (mem.engine.clock() - seen).total_seconds()


def test_a_recall_does_not_wait_for_bonuses_that_wait_for_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=HashEmbedder(), clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process writing: the bonus writer waits for it
        mem.recall("bees", user_id="u")
        time.sleep(5 * REINFORCE_WINDOW_S)  # the bonus is being written by now
        answered: list[int] = []
        reader = threading.Thread(target=lambda: answered.append(len(mem.recall("bees", user_id="u"))))
        reader.start()
        reader.join(10)
        waited = reader.is_alive()
        other.execute("ROLLBACK")
        other.close()
        reader.join()
        assert not waited and answered == [1]
        mem.flush()
        stored = mem.get(record.memory_id)
        assert stored is not None and stored.access_count == 2  # neither bonus lost


def test_a_few_recalls_bonuses_are_written_on_the_connection_recalls_read_on(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=HashEmbedder(), clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        on_store_connection: list[str] = []
        mem.backend._conn.set_trace_callback(on_store_connection.append)
        mem.recall("bees", user_id="u")
        mem.flush()
        mem.backend._conn.set_trace_callback(None)
        stored = mem.get(record.memory_id)
        assert stored is not None and stored.access_count == 1
        assert [s for s in on_store_connection if s.startswith("UPDATE memories")]


def test_a_large_batch_of_bonuses_is_written_on_a_connection_recalls_do_not_read_on(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, clock=FakeClock()) as mem:
        records = mem.save_many([polymem.MemoryDraft(f"memory {i}") for i in range(_sqlite.BONUS_ROWS_HELD + 1)],
                                user_id="u")
        on_store_connection: list[str] = []
        mem.backend._conn.set_trace_callback(on_store_connection.append)
        mem.backend.reinforce("default", [(r.memory_id, 0.05) for r in records], mem.engine.clock())
        mem.flush()
        mem.backend._conn.set_trace_callback(None)
        assert [stored.access_count for stored in mem.list(user_id="u", limit=1000)] == [1] * len(records)
        assert not [s for s in on_store_connection if s.startswith("UPDATE memories")]


def test_a_store_in_memory_writes_its_bonuses_too() -> None:
    with polymem.open("memory://bonuses", embedder=HashEmbedder(), clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        mem.recall("bees", user_id="u")
        mem.flush()
        stored = mem.get(record.memory_id)
        assert stored is not None and stored.access_count == 1


def test_a_cache_behind_another_process_bonuses_reads_them_and_its_own_written_after(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    clock = FakeClock()
    with polymem.open(url, embedder=HashEmbedder(), clock=clock) as mem, \
            polymem.open(url, embedder=HashEmbedder(), clock=clock) as other:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        mem.recall("bees", user_id="u")
        mem.flush()
        clock.advance(minutes=5)
        other.recall("bees", user_id="u")  # another process's bonus, not yet read by `mem`
        other.flush()
        clock.advance(minutes=5)
        mem.backend.reinforce("default", [(record.memory_id, 0.05)], clock())  # this one's, written after it
        mem.backend.flush()
        mem.nearest(HashEmbedder().embed(["bees"])[0], user_id="u")  # the cache catches up
        assert cached_live(mem, record.memory_id) == stored_live(mem, record.memory_id)
        assert stored_live(mem, record.memory_id)[0] == 3


def test_this_process_bonuses_reach_its_cache_when_written_not_at_the_next_recall(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=HashEmbedder(), clock=FakeClock()) as mem:
        record = mem.save("The user keeps bees on the roof", user_id="u")
        mem.recall("bees", user_id="u")
        mem.flush()
        assert cached_live(mem, record.memory_id) == stored_live(mem, record.memory_id)
        assert stored_live(mem, record.memory_id)[0] == 1
        on_store_connection: list[str] = []
        mem.backend._conn.set_trace_callback(on_store_connection.append)
        mem.recall("bees", user_id="u")
        mem.backend._conn.set_trace_callback(None)
        assert on_store_connection and not [s for s in on_store_connection if "accessed_seq >" in s]


# -- the background writer both backends share (`Bookkeeping`) ---------------------------------
def test_bonuses_queued_in_quick_succession_are_written_in_one_batch() -> None:
    from polymem._backend import Bookkeeping

    batches: list[list[int]] = []
    book = Bookkeeping(batches.append, "test-bookkeeping")
    for n in range(20):
        book.put(n)
    book.close()
    assert [n for batch in batches for n in batch] == list(range(20))
    assert len(batches) <= 2  # the first may be taken before the rest arrive, never one write each


def test_a_write_that_fails_loses_its_batch_but_not_the_worker(caplog: pytest.LogCaptureFixture) -> None:
    from polymem._backend import Bookkeeping

    written: list[int] = []

    def write(batch: list[int]) -> None:
        if 0 in batch:
            raise RuntimeError("database went away")
        written.extend(batch)

    book = Bookkeeping(write, "test-bookkeeping")
    book.put(0)
    book.flush()
    book.put(1)
    book.flush()
    assert written == [1]
    assert "1 recall bonuses could not be written" in caplog.text
    book.close()
