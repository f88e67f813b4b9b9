"""A recall weighs the time its query asks for: a query naming a period ("in January 2026", "last
week") ranks the memories written in it, or stating a day in it, first; a question asking when
ranks first the memories that state a time. Relevances, which thresholds read, stay their own."""

from __future__ import annotations

from datetime import date, datetime, timezone

import polymem
from polymem import ScoringPolicy
from polymem._dates import asks_when, read_period
from polymem.testing import FakeClock

START = datetime(2026, 1, 10, 12, tzinfo=timezone.utc)
JANUARY, FEBRUARY = "Ann: we went hiking in the hills", "Ann: we went hiking again"
STATED = "Ann: I went hiking yesterday with Bo"


def ranked(query: str, policy: ScoringPolicy | None = None, explain: bool = False) -> list[polymem.RecallHit]:
    """Three memories of hiking, each in its own sitting: in January, in February, and in March
    one stating the day before (the freshest ranks first when the query asks no time)."""
    clock = FakeClock(START)
    mem = polymem.open("memory://", embedder=None, clock=clock, scoring=policy or ScoringPolicy(reinforce=False))
    mem.save(JANUARY, user_id="ann")
    clock.advance(days=30)
    mem.save(FEBRUARY, user_id="ann")
    clock.advance(days=30)
    mem.save(STATED, user_id="ann")
    clock.advance(days=3)
    return mem.recall(query, user_id="ann", min_relevance=0, explain=explain)


def contents(hits: list[polymem.RecallHit]) -> list[str]:
    return [h.memory.content for h in hits]


def test_a_query_naming_a_period_ranks_the_memory_written_in_it_first() -> None:
    assert contents(ranked("where did Ann go hiking in January 2026?"))[0] == JANUARY


def test_a_memory_stating_a_day_in_the_period_ranks_first_too() -> None:
    assert contents(ranked("who went hiking with Ann in March?"))[0] == STATED


def test_a_question_asking_when_ranks_the_memory_stating_a_time_first() -> None:
    assert contents(ranked("When did Ann go hiking with friends?"))[0] == STATED


def test_a_query_asking_no_time_ranks_by_relevance_and_live_score() -> None:
    hits = ranked("Ann hiking")
    assert all(h.score == ScoringPolicy().blend(h.relevance, h.live_score) for h in hits)


def test_the_time_lowers_the_score_but_not_the_relevance_a_threshold_reads() -> None:
    timed = {h.memory.content: h for h in ranked("hiking in January 2026")}
    untimed = {h.memory.content: h for h in ranked("hiking in January 2026", ScoringPolicy(reinforce=False,
                                                                                          time_weight=0))}
    assert timed[FEBRUARY].relevance == untimed[FEBRUARY].relevance
    assert timed[FEBRUARY].score < untimed[FEBRUARY].score


def test_time_weight_zero_leaves_the_order_to_relevance_and_live_score() -> None:
    hits = ranked("where did Ann go hiking in January 2026?", ScoringPolicy(reinforce=False, time_weight=0))
    assert all(h.score == ScoringPolicy().blend(h.relevance, h.live_score) for h in hits)


def test_explain_shows_the_time_a_hit_ranked_by() -> None:
    why = {h.memory.content: h.explanation or {} for h in ranked("hiking in January 2026", explain=True)}
    assert why[FEBRUARY]["time"]["period"] == ["2026-01-01", "2026-02-01"]
    assert why[FEBRUARY]["time"]["in_period"] is False and why[STATED]["time"]["stated"] == "2026-03-10"


def test_a_period_is_read_as_long_as_its_expression_says() -> None:
    now = datetime(2026, 3, 12, 9, tzinfo=timezone.utc)  # a Thursday
    assert read_period("in May 2023", now) == (date(2023, 5, 1), date(2023, 6, 1))
    assert read_period("on March 1st", now) == (date(2026, 3, 1), date(2026, 3, 2))
    assert read_period("last week", now) == (date(2026, 3, 2), date(2026, 3, 9))
    assert read_period("in 2022", now) == (date(2022, 1, 1), date(2023, 1, 1))
    assert read_period("what did I cook?", now) is None


def test_questions_asking_for_a_time_are_told_from_others() -> None:
    assert asks_when("When did Ann move?") and asks_when("what date is the party?")
    assert not asks_when("Where did Ann move when she was ten?")


def test_a_question_opening_with_a_clause_of_time_asks_for_what_follows_the_clause() -> None:
    assert not asks_when("When I was ten, where did I live?")
    assert not asks_when("when Ann moved, what did she sell?")
    assert asks_when("When was I in Paris, and with whom?") and asks_when("When Melanie painted a sunrise?")
