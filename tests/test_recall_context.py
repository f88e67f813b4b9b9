"""A memory is recalled in the context of its sitting: one written in the same conversation as a
strongly matching memory (no gap longer than `ScoringPolicy.context_minutes`) ranks above an
equally relevant one written apart, since the answer to a question often sits beside the turn
that words it; its relevance, which thresholds read, stays its own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polymem
from polymem import ScoringPolicy
from polymem.testing import FakeClock

START = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


def store(policy: ScoringPolicy | None = None) -> tuple[polymem.Memory, FakeClock]:
    clock = FakeClock(START)
    return polymem.open("memory://", embedder=None, clock=clock,
                        scoring=policy or ScoringPolicy(reinforce=False, decay=False)), clock


def fill(mem: polymem.Memory, clock: FakeClock) -> None:
    """Two conversations a week apart, each with a memory matching 'violin lessons' as weakly."""
    mem.save("Ann: I started violin lessons with a teacher downtown", user_id="ann")
    clock.advance(minutes=2)
    mem.save("Ann: the teacher says my lessons go well", user_id="ann")
    clock.advance(days=7)
    mem.save("Ann: my neighbour gives guitar lessons", user_id="ann")
    clock.advance(minutes=2)
    mem.save("Ann: the teacher of my gym class is strict", user_id="ann")


def test_a_memory_of_the_same_sitting_as_a_strong_match_ranks_above_an_equally_relevant_one_written_apart() -> None:
    mem, clock = store()
    fill(mem, clock)
    ranked = [h.memory.content for h in mem.recall("violin lessons teacher", user_id="ann", min_relevance=0)]
    assert ranked[0] == "Ann: I started violin lessons with a teacher downtown"
    assert ranked.index("Ann: the teacher says my lessons go well") < \
        ranked.index("Ann: my neighbour gives guitar lessons")


def test_context_raises_the_score_but_not_the_relevance_a_threshold_reads() -> None:
    mem, clock = store()
    fill(mem, clock)
    with_context = {h.memory.content: h for h in mem.recall("violin lessons teacher", user_id="ann", min_relevance=0)}
    off, clock = store(ScoringPolicy(reinforce=False, decay=False, context_weight=0))
    fill(off, clock)
    alone = {h.memory.content: h for h in off.recall("violin lessons teacher", user_id="ann", min_relevance=0)}
    near = "Ann: the teacher says my lessons go well"
    assert with_context[near].relevance == alone[near].relevance
    assert with_context[near].score > alone[near].score


def test_memories_written_further_apart_than_context_minutes_are_not_each_others_context() -> None:
    policy = ScoringPolicy(context_minutes=30)
    times = [START, START + timedelta(minutes=20), START + timedelta(minutes=51)]
    assert policy.context([0.9, 0.1, 0.4], times).tolist() == [0.1, 0.9, 0.0]


def test_the_best_memory_of_a_sitting_takes_the_next_best_as_its_context() -> None:
    assert ScoringPolicy().context([0.2, 0.8, 0.5], [START] * 3).tolist() == [0.8, 0.5, 0.8]


def test_context_weight_zero_ranks_by_relevance_alone() -> None:
    mem, clock = store(ScoringPolicy(reinforce=False, decay=False, context_weight=0))
    fill(mem, clock)
    hits = mem.recall("violin lessons teacher", user_id="ann", min_relevance=0)
    assert all(h.score == mem.engine.scoring.blend(h.relevance, h.live_score) for h in hits)


def test_explain_shows_the_context_a_hit_ranked_with() -> None:
    mem, clock = store()
    fill(mem, clock)
    hits = mem.recall("violin lessons teacher", user_id="ann", min_relevance=0, explain=True)
    near = next(h for h in hits if h.memory.content == "Ann: the teacher says my lessons go well")
    assert near.explanation is not None and near.explanation["context"]["relevance"] == hits[0].relevance
    assert near.explanation["score"] == near.score
