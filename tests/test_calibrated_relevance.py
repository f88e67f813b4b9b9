"""Relevance means the same in every recall: absolute, not relative to the query's best match, so
that the default threshold (`ScoringPolicy.min_relevance`, which the adapters' recalls apply)
decides alike what reaches an agent's prompt."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import polymem
from polymem import ScoringPolicy

NOW = datetime(2026, 5, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm() -> Any:
    """The default embedder (all-MiniLM-L6-v2), loaded once for the module."""
    with polymem.open("memory://") as mem:
        assert mem.embedder is not None
        return mem.embedder


# What else the user said: term weights (inverse document frequencies) need a few memories to mean anything.
OTHER = ["Ann's sister lives in Lisbon", "Ann works as a nurse at night", "Ann plays chess with Bo on Fridays",
         "Ann is allergic to peanuts", "Ann has a cat named Pixel", "Ann runs five kilometres every morning",
         "Ann learns Japanese on the train", "Ann's car is a blue hatchback"]


def lexical() -> polymem.Memory:
    mem = polymem.open("memory://", embedder=None, scoring=ScoringPolicy(reinforce=False), clock=lambda: NOW)
    for text in OTHER:
        mem.save(text, user_id="ann")
    mem.save("Bo visited the Louvre museum in Paris", user_id="bo")  # words the store knows, Ann's memories not
    return mem


def test_a_question_about_a_name_the_users_memories_never_mention_scores_below_the_threshold(minilm: Any) -> None:
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        for text in OTHER:
            mem.save(text, user_id="ann")
        question = "What instrument does Melanie play?"  # close in meaning to Ann's chess, but about Melanie
        assert mem.recall(question, user_id="ann") == []
        mem.save("Melanie plays the violin", user_id="ann")
        assert [h.memory.content for h in mem.recall(question, user_id="ann")][:1] == ["Melanie plays the violin"]


def test_a_single_common_word_match_scores_below_the_default_threshold(minilm: Any) -> None:
    # The case: "Do I like promotions?" once recalled "I like blue" at 0.66 on "like" alone.
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue"):
            mem.save(text, user_id="ann")
        mem.save("User B hates promotions", user_id="bo")
        scored = mem.recall("Do I like promotions?", user_id="ann", min_relevance=0)
        assert max(h.relevance for h in scored) < mem.engine.scoring.min_relevance
        assert mem.recall("Do I like promotions?", user_id="ann") == []


def test_the_best_of_weak_matches_is_not_scored_high() -> None:
    with lexical() as mem:
        for text in ("Ann walks the dog in the park", "Ann bought a new bicycle", "Ann reads in the evening",
                     "Ann cooks pasta on Sundays"):
            mem.save(text, user_id="ann")
        weak = mem.recall("When did Ann visit the Louvre museum in Paris?", user_id="ann", min_relevance=0)
        assert weak and weak[0].text_rank == 1.0  # the search's best match, on "Ann" alone
        assert weak[0].relevance < mem.engine.scoring.min_relevance
        assert mem.recall("When did Ann visit the Louvre museum in Paris?", user_id="ann") == []


def test_a_memory_holding_every_term_of_the_query_keeps_its_full_text_rank() -> None:
    with lexical() as mem:
        mem.save("Ann visited the Louvre museum in Paris in May", user_id="ann")
        mem.save("Ann bought a new bicycle", user_id="ann")
        [hit] = mem.recall("When did Ann visit the Louvre museum in Paris?", user_id="ann")
        assert hit.memory.content.startswith("Ann visited the Louvre") and hit.relevance == hit.text_rank == 1.0


def test_a_relevance_does_not_depend_on_what_else_matches() -> None:
    with lexical() as mem:
        weak = mem.save("Ann bought a new bicycle in Paris", user_id="ann")
        question = "Louvre museum Paris bicycle"
        alone = {h.memory.memory_id: h.relevance for h in mem.recall(question, user_id="ann", min_relevance=0)}
        mem.save("Ann visited the Louvre museum in Paris", user_id="ann")
        beside = {h.memory.memory_id: h.relevance for h in mem.recall(question, user_id="ann", min_relevance=0)}
        # Relative to the best match it would have been 1 alone; absolute, it stays about what it
        # was beside a better match (term weights move a little with the new memory's words).
        assert alone[weak.memory_id] < 0.8
        assert beside[weak.memory_id] == pytest.approx(alone[weak.memory_id], rel=0.3)


def test_a_broad_question_about_the_user_still_returns_their_memories(minilm: Any) -> None:
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue", "I dislike promotions"):
            mem.save(text, user_id="ann")
        mem.save("User B hates promotions", user_id="bo")
        for question in ("What do you know about me?", "Tell me about myself"):
            found = [h.memory.content for h in mem.recall(question, user_id="ann", top_k=5)]
            assert sorted(found) == ["I dislike promotions", "I like blue", "My name is Xiaoming"], question


def test_a_question_without_matching_words_is_answered_by_meaning_above_the_threshold(minilm: Any) -> None:
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue"):
            mem.save(text, user_id="ann")
        assert [h.memory.content for h in mem.recall("Any suggestions in cool tones?", user_id="ann")] == ["I like blue"]


def test_a_callers_threshold_replaces_the_default() -> None:
    with lexical() as mem:
        mem.save("Ann bought a new bicycle", user_id="ann")
        question = "When did Ann visit the Louvre museum in Paris?"
        assert mem.recall(question, user_id="ann") == []
        assert "Ann bought a new bicycle" in [h.memory.content for h in mem.recall(question, user_id="ann",
                                                                                  min_relevance=0)]


def test_the_default_threshold_is_the_scoring_policys() -> None:
    with polymem.open("memory://", embedder=None, clock=lambda: NOW,
                      scoring=ScoringPolicy(reinforce=False, min_relevance=0.0)) as mem:
        mem.save("Ann bought a new bicycle", user_id="ann")
        assert len(mem.recall("When did Ann visit the Louvre museum in Paris?", user_id="ann")) == 1


def test_explain_shows_the_coverage_that_scaled_the_text_rank() -> None:
    with lexical() as mem:
        mem.save("Ann bought a new bicycle in Paris", user_id="ann")
        mem.save("Ann likes tea", user_id="ann")
        hits = mem.recall("Louvre museum Paris", user_id="ann", min_relevance=0, explain=True)
        hit = next(h for h in hits if h.memory.content == "Ann bought a new bicycle in Paris")
        assert hit.explanation is not None
        coverage = hit.explanation["text"]["coverage"]
        assert 0 < coverage < 1 and hit.relevance == pytest.approx(hit.text_rank * coverage)
        assert hit.explanation["relevance"]["value"] == hit.relevance
