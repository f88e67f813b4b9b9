"""Which candidates a recall admits, how relevant each is (`ScoringPolicy.relevances`), and which
of them a search need read (`ScoringPolicy.worth_reading`)."""

from __future__ import annotations

import functools
import random
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

import polymem
from polymem import MemoryDraft, ScoringPolicy, _plan
from polymem._backend import Candidate, SearchRequest
from polymem._engine import _Ranked, hit_order, in_hit_order
from polymem._storage import Search
from polymem._text import terms


class VectorTable:
    """An embedder for tests that only pass precomputed vectors."""

    model_id = "test/unit-vectors"
    dimension = 16

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dimension - 1) for _ in texts]


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


def test_the_candidates_worth_reading_hold_every_one_that_could_rank_among_the_best() -> None:
    policy = ScoringPolicy()
    rng = np.random.default_rng(3)
    sims = rng.uniform(0.0, 0.6, 200)
    texts = np.where(rng.random(200) < 0.5, rng.uniform(0.0, 1.0, 200), np.nan)
    keep = policy.worth_reading(sims, texts, vector_mode=True, admit_all=False, best=30)
    admitted, relevances = policy.relevance_table(sims, texts, vector_mode=True)
    assert 30 <= keep.sum() < len(admitted)  # some are left unread
    for _ in range(200):  # whatever their live scores, the best 30 scores are among those kept
        lives = rng.random(len(admitted))
        scores = relevances * ((1 - policy.live_weight) + policy.live_weight * lives)
        assert keep[admitted[np.argsort(-scores)[:30]]].all()


def test_the_closest_candidate_and_the_best_text_match_are_worth_reading_whatever_they_score() -> None:
    policy = ScoringPolicy()
    # Thirty strong hybrids outrank both; yet the closest sets which vector matches are admitted,
    # and the best text match is what the calibration reads.
    closest, best_text = 30, 31
    sims = np.array([*[0.9] * 30, 0.95, 0.0])
    texts = np.array([*[0.99] * 30, np.nan, 1.0])
    keep = policy.worth_reading(sims, texts, vector_mode=True, admit_all=False, best=30)
    assert keep[closest] and keep[best_text]


def test_a_search_reads_only_the_candidates_worth_reading_and_the_recall_ranks_them_as_all(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(400, VectorTable.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = [f"w{i}" for i in range(60)]
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=lambda: now) as mem:
        mem.save_many([MemoryDraft(" ".join(rng.choice(words, 6)), importance=float(rng.random()))
                       for _ in range(400)], user_id="u", vectors=vectors)
        engine = mem.engine
        query = vectors[7] + rng.normal(0, 0.3, VectorTable.dimension).astype(np.float32)
        query /= np.linalg.norm(query)
        worth = functools.partial(engine.scoring.worth_reading, vector_mode=True, admit_all=False, best=30)
        request = SearchRequest("default", "u", None, None, None, query, VectorTable.model_id,
                                tuple(terms("w1 w2 w3")), now, 100)
        every = mem.backend.search(request)
        read = mem.backend.search(replace(request, worth_reading=worth))
        assert len(read) < len(every)
        ranked = [(h.memory.memory_id, h.score) for h in engine.rank(every, now, vector_mode=True, best=30)]
        assert [(h.memory.memory_id, h.score) for h in engine.rank(read, now, vector_mode=True, best=30)] == ranked


def test_a_memory_deleted_between_the_search_and_the_fetch_gives_its_place_to_the_next(tmp_path: Path) -> None:
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, scoring=ScoringPolicy(reinforce=False),
                      clock=lambda: now) as mem:
        for i in range(12):
            mem.save(f"tea note {i}: " + "tea " * (1 + i % 4), user_id="ann")
        longer = [h.memory.memory_id for h in mem.recall("tea", user_id="ann", top_k=6)]
        transport = mem.transport.local()

        def step(op: Any) -> Any:
            result = transport._step(op)
            if isinstance(op, Search):  # gone once searched, before the top k are fetched
                mem.delete(longer[0])
            return result

        hits = _plan.drive(mem.engine.recall("tea", user_id="ann", top_k=5), step)
        assert [h.memory.memory_id for h in hits] == longer[1:]


def _ranked(score: float, created_s: int, memory_id: str) -> _Ranked:
    return _Ranked(Candidate(None, None, None, memory_id=memory_id, created_us=created_s * 1_000_000),
                   score, score, None, None, 0.0)


def test_hits_of_equal_score_are_ordered_older_memory_first_then_by_id() -> None:
    hits = [_ranked(0.5, 30, "c"), _ranked(0.9, 50, "z"), _ranked(0.5, 10, "b"), _ranked(0.5, 10, "a")]
    assert [h.memory.memory_id for h in in_hit_order(hits)] == ["z", "a", "b", "c"]


def test_hits_are_put_in_recall_order_whether_or_not_scores_repeat() -> None:
    rng = random.Random(7)
    for _ in range(300):
        hits = [_ranked(rng.choice([0.25, 0.5, rng.random()]), rng.randrange(4), f"m{rng.randrange(50)}")
                for _ in range(rng.randrange(1, 40))]
        assert [id(h) for h in in_hit_order(list(hits))] == [id(h) for h in sorted(hits, key=hit_order)]


def test_rank_orders_candidates_of_equal_score_older_memory_first() -> None:
    engine = polymem.open("memory://", embedder=VectorTable()).engine
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    seen_us = int((now.timestamp() - 3600) * 1_000_000)  # the same last access: the same live score
    candidates = [Candidate(None, 0.8, None, memory_id=i, importance=0.5, created_us=seen_us - age, accessed_us=seen_us)
                  for i, age in [("new", 1), ("b-old", 9), ("a-old", 9), ("closer", 5)]]
    candidates[3].similarity = 0.9
    for best in (None, 2):
        ranked = engine.rank(candidates, now, vector_mode=True, admit_all=True, best=best)
        assert [h.memory.memory_id for h in ranked] == ["closer", "a-old", "b-old", "new"][:best]
