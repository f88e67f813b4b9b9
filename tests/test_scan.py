"""The float16 shortlist of the vector caches: its error bound holds and it never drops a row of the exact best."""

from __future__ import annotations

import numpy as np
import pytest

from polymem._scan import HALF_ERROR, PARALLEL_ROWS, half_products, products, shortlist


def unit_rows(n: int, dimension: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("rows", [1_000, PARALLEL_ROWS + 1_000], ids=["one-core", "split-across-cores"])
def test_float16_products_stay_within_the_stated_error_of_float32(rows: int) -> None:
    matrix = unit_rows(rows, 384, seed=1)
    query = unit_rows(1, 384, seed=2)[0]
    error = np.abs(half_products(matrix.astype(np.float16), query) - products(matrix, query))
    assert error.max() <= HALF_ERROR / 2


def test_float16_products_of_same_signed_components_stay_within_the_stated_error() -> None:
    matrix = np.abs(unit_rows(2_000, 384, seed=3))
    query = np.abs(unit_rows(1, 384, seed=4)[0])
    error = np.abs(half_products(matrix.astype(np.float16), query) - products(matrix, query))
    assert error.max() <= HALF_ERROR / 2


def test_a_shortlist_holds_the_exact_best_rows() -> None:
    matrix = unit_rows(20_000, 64, seed=5)
    for query in unit_rows(20, 64, seed=6):
        exact = products(matrix, query)
        picked = shortlist(half_products(matrix.astype(np.float16), query), 10, HALF_ERROR, margin=20)
        assert picked is not None
        assert set(np.argsort(-exact)[:10]) <= set(picked.tolist())


def test_a_shortlist_leaves_out_filtered_rows() -> None:
    approx = np.array([0.9, -np.inf, 0.8, -np.inf, 0.1], dtype=np.float32)
    assert sorted(shortlist(approx, 2, 1e-3, margin=1).tolist()) == [0, 2, 4]  # type: ignore[union-attr]
    assert sorted(shortlist(approx, 1, 1e-3, margin=0).tolist()) == [0]  # type: ignore[union-attr]


def test_a_shortlist_gives_up_when_too_many_rows_lie_within_the_error() -> None:
    approx = np.full(10_000, 0.5, dtype=np.float32)
    assert shortlist(approx, 10, 1e-3, margin=10) is None


def test_a_shortlist_of_a_mostly_filtered_scope_holds_the_best_unfiltered_rows() -> None:
    rng = np.random.default_rng(7)
    approx = np.full(20_000, -np.inf, dtype=np.float32)
    kept = rng.choice(20_000, size=300, replace=False)
    approx[kept] = rng.uniform(-1, 1, size=300).astype(np.float32)
    picked = shortlist(approx, 10, 1e-4, margin=20)
    assert picked is not None and np.isfinite(approx[picked]).all()
    assert set(kept[np.argsort(-approx[kept])[:10]]) <= set(picked.tolist())


@pytest.mark.parametrize("rows", [2_000, 100_000])
def test_a_shortlist_of_many_rows_holds_the_same_rows_as_a_full_partition(rows: int) -> None:
    approx = np.random.default_rng(rows).uniform(-1, 1, size=rows).astype(np.float32)
    picked = shortlist(approx, 10, 1e-6, margin=20)
    assert picked is not None
    assert sorted(picked.tolist()) == sorted(np.argsort(-approx)[:30].tolist())
