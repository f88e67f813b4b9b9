"""Reinforcement is written in the background, batched, and never lost or double-counted."""

from __future__ import annotations

from pathlib import Path

import pytest

import polymem
from polymem.testing import FakeClock


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
