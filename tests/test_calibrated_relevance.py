"""Relevance means the same in every recall: absolute, not relative to the query's best match, so
that the default threshold (`ScoringPolicy.min_relevance`, which the adapters' recalls apply)
decides alike what reaches an agent's prompt."""

from __future__ import annotations

from collections.abc import Iterator
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


def test_a_match_of_one_common_word_in_a_small_store_scores_below_the_default_threshold(minilm: Any) -> None:
    # "cats" is in no memory, and five memories cannot tell by themselves that "like" is common.
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue.", "I work as a nurse", "My sister lives in Lisbon",
                     "I play chess on Fridays"):
            mem.save(text, user_id="ann")
        scored = mem.recall("Do I like cats?", user_id="ann", min_relevance=0)
        assert "I like blue." in [h.memory.content for h in scored]
        assert max(h.relevance for h in scored) < mem.engine.scoring.min_relevance
        assert mem.recall("Do I like cats?", user_id="ann") == []


def test_a_match_of_one_common_word_scores_below_the_default_threshold_without_an_embedder() -> None:
    with polymem.open("memory://", embedder=None, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue.", "I work as a nurse"):
            mem.save(text, user_id="ann")
        assert mem.recall("Do I like cats?", user_id="ann") == []
        assert [h.memory.content for h in mem.recall("Do I like blue?", user_id="ann")] == ["I like blue."]


@pytest.fixture(scope="module")
def demo(minilm: Any) -> Iterator[polymem.Memory]:
    """The store `make demo` builds from its conversation (examples/demo.py, part 1)."""
    with polymem.open("memory://", embedder=minilm, clock=lambda: NOW) as mem:
        session = mem.session("chat-1", user_id="xiaoming", agent_id="demo")
        for role, text in [("user", "Hi! My name is Xiaoming."), ("assistant", "Nice to meet you, Xiaoming."),
                           ("user", "I like blue. My favourite colour is blue."), ("user", "I dislike promotions."),
                           ("user", "Please recommend a shirt.")]:
            session.add(role, text)
        assert "I dislike promotions." in [r.content for r in session.end(consolidate=True)]
        yield mem


def test_do_i_like_promotions_in_the_demo_injects_the_dislike_not_the_colour(demo: polymem.Memory) -> None:
    injected = [h.memory.content for h in demo.recall("Do I like promotions?", user_id="xiaoming", top_k=5)]
    assert injected[:1] == ["I dislike promotions."] and "I like blue." not in injected


def test_what_do_you_know_about_me_in_the_demo_still_injects_the_name_and_the_colour(demo: polymem.Memory) -> None:
    injected = [h.memory.content for h in demo.recall("What do you know about me?", user_id="xiaoming", top_k=5)]
    assert "My name is Xiaoming." in injected and "I like blue." in injected


def test_a_question_about_a_word_the_demo_holds_still_finds_its_memory_among_common_words(
        demo: polymem.Memory) -> None:
    injected = [h.memory.content for h in demo.recall("What colours does the user like?", user_id="xiaoming")]
    assert injected[:1] == ["My favourite colour is blue."]


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


def test_a_word_as_common_as_like_has_no_specificity_and_a_rarer_one_full() -> None:
    policy = ScoringPolicy()
    assert policy.specificity(policy.common_zipf) == 0.0  # "like": 6.5
    assert policy.specificity(5.75) == pytest.approx(0.5)
    assert policy.specificity(policy.specific_zipf) == policy.specificity(3.0) == 1.0
    assert policy.specificity(None) == 1.0  # a word the language's table does not list, or no table


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


def test_explain_shows_how_specific_each_matched_word_was_taken() -> None:
    with polymem.open("memory://", embedder=None, clock=lambda: NOW) as mem:
        for text in ("My name is Xiaoming", "I like blue.", "I work as a nurse"):
            mem.save(text, user_id="ann")
        [hit] = mem.recall("Do I like blue?", user_id="ann", explain=True)
        assert hit.explanation is not None
        specificity = {t["term"]: t["specificity"] for t in hit.explanation["text"]["terms"]}
        assert specificity["like"] == 0.0 < 0.5 < specificity["blue"]


def test_the_only_memory_holding_the_querys_subject_is_injected() -> None:
    with polymem.open("memory://", embedder=None, clock=lambda: NOW) as mem:
        mem.save("Ann's budget is 40 EUR", user_id="ann")
        assert [h.memory.content for h in mem.recall("A gift within my budget?", user_id="ann")] == [
            "Ann's budget is 40 EUR"]
