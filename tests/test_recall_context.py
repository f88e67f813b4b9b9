"""A memory is recalled in the context of its sitting: one written in the same conversation as a
strongly matching memory (no gap longer than `ScoringPolicy.context_minutes`) ranks above an
equally relevant one written apart, since the answer to a question often sits beside the turn
that words it; its relevance, which thresholds read, stays its own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

import polymem
from polymem import ScoringPolicy
from polymem.testing import FakeClock

START = datetime(2026, 5, 1, 12, tzinfo=timezone.utc)


STRONG, NEAR, APART = "Ann: I started violin lessons downtown", "Ann: lessons go fine", "Ann: lessons run long"


def store(policy: ScoringPolicy | None = None) -> tuple[polymem.Memory, FakeClock]:
    clock = FakeClock(START)
    return polymem.open("memory://", embedder=None, clock=clock,
                        scoring=policy or ScoringPolicy(reinforce=False)), clock


def fill(mem: polymem.Memory, clock: FakeClock) -> None:
    """Two conversations a week apart: in the first, a strong match of 'violin lessons' and a weak
    one; in the second, a weak one as relevant (fresher, so without context it ranks first)."""
    mem.save(STRONG, user_id="ann")
    clock.advance(minutes=2)
    mem.save(NEAR, user_id="ann")
    clock.advance(days=7)
    mem.save(APART, user_id="ann")
    clock.advance(minutes=2)
    mem.save("Ann: the gym class is strict", user_id="ann")


def ranked(policy: ScoringPolicy | None = None) -> list[polymem.RecallHit]:
    mem, clock = store(policy)
    fill(mem, clock)
    return mem.recall("violin lessons", user_id="ann", min_relevance=0)


def test_a_memory_of_the_same_sitting_as_a_strong_match_ranks_above_an_equally_relevant_one_written_apart() -> None:
    order = [h.memory.content for h in ranked()]
    assert order[:3] == [STRONG, NEAR, APART]


def test_without_context_the_fresher_of_two_equally_relevant_memories_ranks_first() -> None:
    order = [h.memory.content for h in ranked(ScoringPolicy(reinforce=False, context_weight=0))]
    assert order[:3] == [STRONG, APART, NEAR]


def test_context_raises_the_score_but_not_the_relevance_a_threshold_reads() -> None:
    with_context = {h.memory.content: h for h in ranked()}
    alone = {h.memory.content: h for h in ranked(ScoringPolicy(reinforce=False, context_weight=0))}
    assert with_context[NEAR].relevance == alone[NEAR].relevance == alone[APART].relevance
    assert with_context[NEAR].score > alone[NEAR].score


def test_memories_written_further_apart_than_context_minutes_are_not_each_others_context() -> None:
    policy = ScoringPolicy(context_minutes=30)
    times = [START, START + timedelta(minutes=20), START + timedelta(minutes=51)]
    assert policy.context([0.9, 0.1, 0.4], times).tolist() == [0.1, 0.9, 0.0]


def test_the_best_memory_of_a_sitting_takes_the_next_best_as_its_context() -> None:
    assert ScoringPolicy().context([0.2, 0.8, 0.5], [START] * 3).tolist() == [0.8, 0.5, 0.8]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.integers(0, 240)), max_size=12))
def test_a_memorys_context_is_the_best_relevance_among_the_others_of_its_sitting(
        hits: list[tuple[float, int]]) -> None:
    policy = ScoringPolicy(context_minutes=30)
    relevances = [relevance for relevance, _ in hits]
    minutes = [minute for _, minute in hits]
    times = [START + timedelta(minutes=m) for m in minutes]
    ordered = sorted(set(minutes))
    # a sitting: the memories between two gaps of more than 30 minutes
    sitting = {m: sum(1 for a, b in zip(ordered, ordered[1:]) if b <= m and b - a > 30) for m in ordered}
    expected = [max((r for j, r in enumerate(relevances) if j != i and sitting[minutes[j]] == sitting[minutes[i]]),
                    default=0.0) for i in range(len(hits))]
    assert policy.context(relevances, times).tolist() == expected


def test_context_weight_zero_ranks_by_relevance_and_live_score_alone() -> None:
    hits = ranked(ScoringPolicy(reinforce=False, context_weight=0))
    assert all(h.score == ScoringPolicy().blend(h.relevance, h.live_score) for h in hits)


def test_explain_shows_the_context_a_hit_ranked_with() -> None:
    mem, clock = store()
    fill(mem, clock)
    hits = mem.recall("violin lessons", user_id="ann", min_relevance=0, explain=True)
    near = next(h for h in hits if h.memory.content == NEAR)
    assert near.explanation is not None and near.explanation["context"]["relevance"] == hits[0].relevance
    assert near.explanation["score"] == near.score
