"""Reinforcement is written in the background, batched, and never lost or double-counted."""

from __future__ import annotations

from pathlib import Path

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
