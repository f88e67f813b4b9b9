"""Recall reads the scoring fields of the candidates that can still reach the top-k only,
and ranks exactly as if it had read them all."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import polymem
from polymem import MemoryDraft, ScoringPolicy
from polymem._backend import SearchRequest
from polymem._engine import CANDIDATES
from polymem._text import query_terms
from polymem.testing import FakeClock

unit = st.floats(0, 1, allow_nan=False)


class Precomputed:
    """Answers embedding calls from a table (text -> vector)."""

    model_id = "test/precomputed-32"
    dimension = 32

    def __init__(self) -> None:
        self.table: dict[str, list[float]] = {}

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=60), st.integers(1, 12), unit)
def test_contenders_hold_the_top_k_whatever_the_live_scores(candidates: list[tuple[float, float]], top_k: int,
                                                             live_weight: float) -> None:
    policy = ScoringPolicy(live_weight=live_weight)
    relevance = {i: r for i, (r, _) in enumerate(candidates)}
    scores = {i: policy.blend(r, live) for i, (r, live) in enumerate(candidates)}
    best = sorted(scores, key=lambda i: (-scores[i], i))[:top_k]
    assert set(best) <= set(policy.contenders(relevance, top_k))


def test_contenders_leave_out_what_cannot_outscore_the_top_k() -> None:
    policy = ScoringPolicy(live_weight=0.15)
    relevance = {"a": 1.0, "b": 0.9, "c": 0.86, "d": 0.84}
    # The second best scores at least 0.9 * 0.85 = 0.765 ...
    assert policy.contenders(relevance, 2) == ["a", "b", "c", "d"]
    # ... and 0.5 stays below it whatever its live score.
    assert policy.contenders({**relevance, "e": 0.5}, 2) == ["a", "b", "c", "d"]


def test_contenders_without_live_weight_are_the_top_k_and_its_ties() -> None:
    policy = ScoringPolicy(live_weight=0.0)
    assert policy.contenders({"a": 0.9, "b": 0.7, "c": 0.7, "d": 0.2}, 2) == ["a", "b", "c"]


def test_relevances_admit_text_matches_and_close_vectors_only() -> None:
    policy = ScoringPolicy(min_similarity=0.25, relative_floor=0.15, relative_margin=0.1, vector_weight=0.4)
    found = policy.relevances([("close", 0.5, None), ("far", 0.2, None), ("text", 0.1, 1.0), ("none", None, None)],
                              vector_mode=True)
    assert found == {"close": 0.4 * 0.5, "text": 0.4 * 0.1 + 0.6 * 1.0}
    assert policy.relevances([("close", 0.5, None), ("text", 0.1, 0.5)], vector_mode=False) == {"text": 0.5}


def test_recall_ranks_as_if_every_candidate_were_scored(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    embedder = Precomputed()
    clock = FakeClock()
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder, clock=clock,
                       scoring=ScoringPolicy(reinforce=False))
    centre = rng.normal(size=32)
    words = ["tea", "coffee", "train", "garden", "piano", "river"]
    for batch in range(6):  # memories of many ages and importances, close to one another
        drafts, vectors = [], []
        for i in range(100):
            text = f"memory {batch}-{i} about {words[i % len(words)]}"
            vector = centre + rng.normal(scale=0.8, size=32)
            embedder.table[text] = (vector / np.linalg.norm(vector)).tolist()
            drafts.append(MemoryDraft(text, importance=float(rng.uniform(0.05, 1.0)),
                                      category=["fact", "event", "task"][i % 3]))
            vectors.append(embedder.table[text])
        mem.save_many(drafts, user_id="u", vectors=vectors)
        clock.advance(days=20)
    pruned = 0
    for q in range(20):
        query = f"what about the {words[q % len(words)]} {q}"
        vector = centre + rng.normal(scale=0.8, size=32)
        embedder.table[query] = (vector / np.linalg.norm(vector)).tolist()
        hits = mem.recall(query, user_id="u", top_k=5)
        request = SearchRequest("default", "u", None, None, None, np.asarray(embedder.table[query], np.float32),
                                embedder.model_id, tuple(query_terms(query)), clock(), CANDIDATES)
        every = mem.backend.search(request)
        ranked = mem.engine.rank(every, clock(), vector_mode=True)[:5]
        assert [h.memory.memory_id for h in hits] == [h.memory.memory_id for h in ranked]
        assert [h.score for h in hits] == pytest.approx([h.score for h in ranked], abs=1e-6)
        pruned += len(every) - len(mem.engine.scoring.contenders(
            mem.engine.scoring.relevances(((c.id, c.similarity, c.text_rank) for c in every), vector_mode=True), 5))
    mem.close()
    assert pruned > 0  # the comparison above covered candidates left unread
