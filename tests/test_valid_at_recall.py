"""A recall or a list `valid_at=T` (or `as_of=T`) gives what held in the world at T without reading
every memory's version of T: the store's search (or list) answers for the memories whose present
version held then, and only those written since T or declaring a validity of their own are read
in their version of T."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import polymem
from polymem import _engine
from polymem.testing import FakeClock, local_embedder

QUESTIONS = ["Where do I live?", "dog", "What do I drink?", "music", "hospital work", "Tell me about my family"]


def _store(path: Path) -> tuple[Any, FakeClock, dict[str, datetime]]:
    """120 memories of ann (and some of bob) over a year, a few updated, deleted or declaring when
    they held; `times`: the moments the tests ask about."""
    clock = FakeClock()
    mem = polymem.open(f"sqlite:///{path / 'memory.db'}", embedder=local_embedder(), clock=clock,
                       scoring=polymem.ScoringPolicy(reinforce=False))
    start = clock.now
    topics = ["my dog Rex", "green tea", "jazz records", "the city hospital", "my sister in Lyon", "Paris"]
    saved = []
    for i in range(120):
        saved.append(mem.save(f"Note {i} about {topics[i % len(topics)]} and day {i}", user_id="ann"))
        mem.save(f"Bob's note {i} about football", user_id="bob") if i % 10 == 0 else None
        clock.advance(days=1)
    mem.save("I live in Paris", user_id="ann", valid_from=start - timedelta(days=300),
             valid_to=start + timedelta(days=60))
    mem.save("I live in Berlin", user_id="ann", valid_from=start + timedelta(days=60))
    middle = start + timedelta(days=50)
    for i in (3, 40, 77):
        mem.update(saved[i].memory_id, content=f"Note {i} rewritten: my dog Rex sleeps a lot")
    mem.update(saved[5].memory_id, content="I drink black coffee now",
               metadata={"valid_from": (start + timedelta(days=30)).isoformat()})
    mem.delete(saved[8].memory_id)
    clock.advance(days=10)
    return mem, clock, {"before": start - timedelta(days=100), "early": start + timedelta(days=20),
                        "middle": middle, "late": start + timedelta(days=119, hours=12), "now": clock.now}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    mem, clock, times = _store(tmp_path)
    yield mem, times
    mem.close()


def _hits(mem: Any, question: str, at: datetime, **options: Any) -> list[tuple[Any, ...]]:
    return [(h.memory.memory_id, h.memory.version, h.memory.content, round(h.similarity or 0.0, 6),
             round(h.text_rank or 0.0, 6), round(h.score, 6))
            for h in mem.recall(question, user_id="ann", valid_at=at, **options)]


@pytest.mark.parametrize("top_k", [10, 20])
def test_a_recall_valid_at_ranks_as_ranking_every_version_that_held_then(
        store: Any, monkeypatch: pytest.MonkeyPatch, top_k: int) -> None:
    mem, times = store
    for name, at in times.items():
        for question in QUESTIONS:
            searched = _hits(mem, question, at, top_k=top_k)
            with monkeypatch.context() as patched:
                patched.setattr(_engine, "MAX_SEARCHED_PAST", 0)  # every memory ranked in its version of T
                every = _hits(mem, question, at, top_k=top_k)
            assert searched == every, (name, question)


def test_a_recall_valid_at_reads_only_the_memories_written_since_or_declaring_a_validity(
        store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mem, times = store
    backend = mem.backend
    reads: list[tuple[Any, bool]] = []
    as_of = backend.as_of

    def recording(namespace: str, at: datetime, user_id: str | None, memory_ids: Any, model_id: str | None,
                  changed_only: bool = False) -> Any:
        reads.append((None if memory_ids is None else set(memory_ids), changed_only))
        return as_of(namespace, at, user_id, memory_ids, model_id, changed_only)

    monkeypatch.setattr(backend, "as_of", recording)
    at = times["late"]
    every = mem.list(user_id="ann", limit=1000)
    declaring = {r.memory_id for r in every if {"valid_from", "valid_to"} & set(r.metadata)}
    written_since = {r.memory_id for r in every if r.updated_at > at}
    mem.recall("Where do I live?", user_id="ann", valid_at=at)
    assert reads and all(changed_only or ids is not None for ids, changed_only in reads)  # no read of every row
    assert set().union(*(ids for ids, _ in reads if ids is not None)) == declaring | written_since
    assert len(declaring | written_since) == 6  # of 122: two declaring, four written since


def test_a_version_declared_to_hold_later_gives_way_to_the_one_before_it(store: Any) -> None:
    mem, times = store

    def versions(at: datetime) -> dict[str, str]:
        return {h.memory.content: h.memory.memory_id for h in mem.recall(
            "black coffee", user_id="ann", valid_at=at, min_relevance=0, top_k=200)}

    early, late = versions(times["early"]), versions(times["late"])
    assert "I drink black coffee now" not in early and "Note 5 about Paris and day 5" in early
    assert "I drink black coffee now" in late and "Note 5 about Paris and day 5" not in late
    assert early["Note 5 about Paris and day 5"] == late["I drink black coffee now"]


@pytest.mark.parametrize("options", [{"valid_at": "late"}, {"as_of": "late"}, {"valid_at": "early", "as_of": "late"}])
def test_a_past_list_reads_only_the_memories_written_since_or_declaring_a_validity(
        store: Any, monkeypatch: pytest.MonkeyPatch, options: dict[str, str]) -> None:
    mem, times = store
    asked = {key: times[name] for key, name in options.items()}
    with monkeypatch.context() as patched:
        patched.setattr(_engine, "MAX_SEARCHED_PAST", 0)  # every memory read in its version of T
        every_version = mem.list(user_id="ann", limit=7, offset=3, **asked)
    backend = mem.backend
    reads: list[tuple[Any, bool]] = []
    as_of = backend.as_of

    def recording(namespace: str, at: datetime, user_id: str | None, memory_ids: Any, model_id: str | None,
                  changed_only: bool = False) -> Any:
        reads.append((memory_ids, changed_only))
        return as_of(namespace, at, user_id, memory_ids, model_id, changed_only)

    monkeypatch.setattr(backend, "as_of", recording)
    listed = mem.list(user_id="ann", limit=7, offset=3, **asked)
    assert reads and all(changed_only or ids is not None for ids, changed_only in reads)
    assert [(r.memory_id, r.version) for r in listed] == [(r.memory_id, r.version) for r in every_version]


@pytest.mark.parametrize("user_id", ["ann", None])
def test_the_memories_declaring_a_validity_are_found_through_their_indexes_not_by_reading_the_scope(
        store: Any, user_id: str | None) -> None:
    mem, times = store
    statements: list[str] = []
    mem.backend._conn.set_trace_callback(statements.append)
    try:
        hits = mem.recall("Where do I live?", user_id=user_id, valid_at=times["early"])
    finally:
        mem.backend._conn.set_trace_callback(None)
    assert "I live in Paris" in [h.memory.content for h in hits]
    declared = [s for s in statements if "valid_from" in s or "valid_to" in s]
    assert len(declared) == 2
    for statement in declared:
        plan = " ".join(row[3] for row in mem.backend._conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        key = "valid_from" if "valid_from" in statement else "valid_to"
        assert f"USING INDEX memories_{key}" in plan, plan
