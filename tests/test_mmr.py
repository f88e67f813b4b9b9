"""`polymem.maximal_marginal_relevance`: relevance against diversity, as LangChain's and LlamaIndex's MMR."""

import numpy as np
import pytest
from langchain_core.vectorstores.utils import maximal_marginal_relevance as langchain_mmr

import polymem
from polymem import maximal_marginal_relevance


def test_lambda_one_is_pure_relevance() -> None:
    picked = maximal_marginal_relevance([0.2, 0.9, 0.5], [[1, 0], [1, 0], [0, 1]], k=3, lambda_mult=1.0)
    assert picked == [1, 2, 0]


def test_a_near_duplicate_of_the_first_pick_waits() -> None:
    vectors = [[1.0, 0.0], [0.99, 0.01], [0.0, 1.0]]
    assert maximal_marginal_relevance([0.9, 0.89, 0.5], vectors, k=2, lambda_mult=0.5) == [0, 2]


def test_picks_what_langchain_picks_from_the_same_query() -> None:
    rng = np.random.default_rng(7)
    query, docs = rng.normal(size=8), rng.normal(size=(12, 8))
    cosine = docs @ query / (np.linalg.norm(docs, axis=1) * np.linalg.norm(query))
    for lambda_mult in (0.0, 0.3, 0.5, 0.9):
        ours = maximal_marginal_relevance(list(cosine), docs.tolist(), k=5, lambda_mult=lambda_mult)
        assert ours == langchain_mmr(query, docs.tolist(), lambda_mult=lambda_mult, k=5)


def test_a_candidate_without_a_vector_is_redundant_with_nothing() -> None:
    assert maximal_marginal_relevance([0.9, 0.8, 0.1], [[1, 0], [1, 0], None], k=2, lambda_mult=0.5) == [0, 2]


def test_k_beyond_the_candidates_returns_them_all_once() -> None:
    assert sorted(maximal_marginal_relevance([0.1, 0.2], [[1, 0], [0, 1]], k=10)) == [0, 1]
    assert maximal_marginal_relevance([], [], k=3) == []


@pytest.mark.parametrize("lambda_mult", [-0.1, 1.5])
def test_lambda_outside_zero_one_is_refused(lambda_mult: float) -> None:
    with pytest.raises(polymem.InvalidInput):
        maximal_marginal_relevance([0.1], [[1.0]], k=1, lambda_mult=lambda_mult)
