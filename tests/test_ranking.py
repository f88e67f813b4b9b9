"""Which candidates a recall admits, and how relevant each is (`ScoringPolicy.relevances`)."""

from __future__ import annotations

from datetime import datetime, timezone

import polymem
from polymem import ScoringPolicy


def test_relevances_admit_text_matches_and_close_vectors_only() -> None:
    policy = ScoringPolicy(min_similarity=0.25, relative_floor=0.15, relative_margin=0.1, vector_weight=0.4)
    found = policy.relevances([("close", 0.5, None), ("far", 0.2, None), ("text", 0.1, 1.0), ("none", None, None)],
                              vector_mode=True)
    assert found == {"close": 0.4 * 0.5, "text": 0.4 * 0.1 + 0.6 * 1.0}


def test_a_broad_query_admits_what_is_nearly_as_close_as_its_best_match() -> None:
    policy = ScoringPolicy(min_similarity=0.25, relative_floor=0.15, relative_margin=0.1)
    found = policy.relevances([("best", 0.24, None), ("near", 0.16, None), ("far", 0.13, None)], vector_mode=True)
    assert set(found) == {"best", "near"}  # from 0.24 - 0.1, below min_similarity 0.25
    found = policy.relevances([("best", 0.2, None), ("near", 0.16, None), ("far", 0.14, None)], vector_mode=True)
    assert set(found) == {"best", "near"}  # never below relative_floor 0.15


def test_without_a_vector_search_only_text_matches_count() -> None:
    assert ScoringPolicy().relevances([("close", 0.5, None), ("text", 0.1, 0.5)], vector_mode=False) == {"text": 0.5}


def test_a_recall_of_k_returns_the_first_k_of_a_longer_recall() -> None:
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    with polymem.open("memory://", embedder=None, scoring=ScoringPolicy(reinforce=False), clock=lambda: now) as mem:
        for i in range(60):  # many equal scores: the order among them must hold too
            mem.save(f"note {i % 7} item{i}: " + "tea " * (1 + i % 3), user_id="ann", category=["fact", "task"][i % 2])
        longer = mem.recall("tea note", user_id="ann", top_k=40)
        for k in (1, 5, 12):
            assert [(h.memory.memory_id, h.score) for h in mem.recall("tea note", user_id="ann", top_k=k)] == \
                [(h.memory.memory_id, h.score) for h in longer[:k]]
