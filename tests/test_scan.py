"""The int8 copy of the vector caches: its bounds hold and its shortlist never drops a row of the exact best;
and work sent to another core (`alongside`) only while a thread there is free."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

from polymem import _scan
from polymem._scan import (
    PACK_ROWS,
    PARALLEL_ROWS,
    ROW_BY_ROW,
    PackedCodes,
    alongside,
    bounds,
    products,
    quantize,
    shortlist,
)


def unit_rows(n: int, dimension: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def bounds_of(matrix: np.ndarray, query: np.ndarray, packed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    codes, scales, lost = quantize(matrix)
    return bounds(codes, scales, lost, np.linalg.norm(matrix, axis=1), query, PackedCodes() if packed else None)


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "row-by-row"])
@pytest.mark.parametrize("rows", [1_000, PARALLEL_ROWS + 1_000], ids=["one-core", "split-across-cores"])
def test_the_bounds_hold_every_exact_product(rows: int, packed: bool) -> None:
    matrix = unit_rows(rows, 384, seed=1)
    query = unit_rows(1, 384, seed=2)[0]
    lower, upper = bounds_of(matrix, query, packed)
    exact = products(matrix, query)
    assert (lower <= exact).all() and (exact <= upper).all()
    assert (upper - lower).max() < 0.05  # tight enough to shortlist


def test_the_products_of_a_few_rows_are_each_rows_own_product_to_the_last_bit() -> None:
    matrix, query = unit_rows(ROW_BY_ROW, 384, seed=5), unit_rows(1, 384, seed=6)[0]
    assert products(matrix, query).tolist() == [row @ query for row in matrix]


def test_the_products_of_many_rows_are_the_matrix_product() -> None:
    matrix, query = unit_rows(ROW_BY_ROW + 1, 384, seed=5), unit_rows(1, 384, seed=6)[0]
    assert np.allclose(products(matrix, query), matrix @ query, atol=1e-6)


@pytest.mark.parametrize("case", ["same-signs", "large-norms", "one-spike", "query-along-a-row", "zero-rows",
                                  "zero-query"])
def test_the_bounds_hold_for_awkward_vectors(case: str) -> None:
    matrix, query = unit_rows(2_000, 384, seed=3), unit_rows(1, 384, seed=4)[0]
    if case == "same-signs":
        matrix, query = np.abs(matrix), np.abs(query)
    elif case == "large-norms":
        matrix, query = matrix * np.linspace(1, 5_000, len(matrix), dtype=np.float32)[:, None], query * 300
    elif case == "one-spike":
        matrix[:, 7] += 3.0
    elif case == "query-along-a-row":
        query = matrix[42] * 2.5
    elif case == "zero-query":
        query = np.zeros_like(query)
    else:
        matrix[::3] = 0.0
    lower, upper = bounds_of(matrix, query)
    exact = products(matrix, query)
    assert (lower <= exact).all() and (exact <= upper).all()


def test_zero_rows_quantize_to_zero_codes_that_lose_nothing() -> None:
    codes, scales, lost = quantize(np.zeros((3, 8), dtype=np.float32))
    assert not codes.any() and not scales.any() and not lost.any()


@pytest.mark.parametrize("rows", [500, 20_000])
def test_a_shortlist_holds_the_exact_best_rows_and_few_others(rows: int) -> None:
    matrix = unit_rows(rows, 64, seed=5)
    for query in unit_rows(20, 64, seed=6):
        exact = products(matrix, query)
        picked = shortlist(*bounds_of(matrix, query), 10)
        assert set(np.argsort(-exact)[:10]) <= set(picked.tolist())
        assert len(picked) < rows // 4


def test_a_shortlist_leaves_out_filtered_rows() -> None:
    lower = np.array([0.85, -np.inf, 0.75, -np.inf, 0.05], dtype=np.float32)
    upper = lower + 0.1
    assert shortlist(lower, upper, 2).tolist() == [0, 2]
    assert shortlist(lower, upper, 3).tolist() == [0, 2, 4]
    assert shortlist(lower, upper, 4).tolist() == [0, 2, 4]  # fewer rows kept than asked for


def test_a_shortlist_keeps_every_row_that_could_still_be_among_the_best() -> None:
    lower = np.array([0.9, 0.5, 0.49, 0.3], dtype=np.float32)
    upper = np.array([0.95, 0.6, 0.55, 0.52], dtype=np.float32)
    assert shortlist(lower, upper, 2).tolist() == [0, 1, 2, 3]  # 0.52 may still pass the second's 0.5
    assert shortlist(lower, upper, 1).tolist() == [0]


def test_a_shortlist_of_a_mostly_filtered_scope_holds_the_best_unfiltered_rows() -> None:
    rng = np.random.default_rng(7)
    lower = np.full(20_000, -np.inf, dtype=np.float32)
    kept = rng.choice(20_000, size=300, replace=False)
    lower[kept] = rng.uniform(-1, 1, size=300).astype(np.float32)
    upper = lower + np.float32(1e-4)
    picked = shortlist(lower, upper, 10)
    assert sorted(picked.tolist()) == sorted(kept[np.argsort(-lower[kept])[:10]].tolist())


@pytest.mark.parametrize("rows", [2_000, 100_000])
def test_a_shortlist_of_exact_values_is_their_top(rows: int) -> None:
    values = np.random.default_rng(rows).uniform(-1, 1, size=rows).astype(np.float32)
    assert sorted(shortlist(values, values, 30).tolist()) == sorted(np.argsort(-values)[:30].tolist())


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "row-by-row"])
def test_scanning_leaves_the_interpreter_reference_counts_alone(packed: bool) -> None:
    """SimSIMD's cdist(out=...) returned None without owning a reference: used that way, every
    scan took one from None and a long-running process died ("deallocating None"). NumKong's
    kernels that replaced it must not either."""
    import sys

    matrix = unit_rows(PARALLEL_ROWS + 100, 16, seed=8)
    codes, scales, lost = quantize(matrix)
    norms, packs = np.linalg.norm(matrix, axis=1), PackedCodes() if packed else None
    bounds(codes, scales, lost, norms, matrix[0], packs)
    before = sys.getrefcount(None)
    for _ in range(200):
        bounds(codes, scales, lost, norms, matrix[0], packs)
    assert abs(sys.getrefcount(None) - before) < 50


def int8_rows(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, size=(n, 384)).astype(np.int8)


def exact_int8_products(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    return (codes.astype(np.int64) @ query.astype(np.int64)).astype(np.float32)


@pytest.mark.parametrize("rows", [PACK_ROWS - 1, 2 * PACK_ROWS + 5, PARALLEL_ROWS + PACK_ROWS // 2],
                         ids=["one-pack", "packs-and-a-part", "split-across-cores"])
def test_packed_codes_give_each_rows_exact_integer_product(rows: int) -> None:
    codes, query = int8_rows(rows, seed=1), int8_rows(1, seed=2)[0]
    assert np.array_equal(PackedCodes().products(codes, query), exact_int8_products(codes, query))


def test_packed_codes_follow_rows_changed_in_place() -> None:
    codes, query, packed = int8_rows(3 * PACK_ROWS, seed=3), int8_rows(1, seed=4)[0], PackedCodes()
    packed.products(codes, query)
    codes[[5, 2 * PACK_ROWS + 7]] = int8_rows(2, seed=5)
    packed.changed(np.array([5, 2 * PACK_ROWS + 7]))
    assert np.array_equal(packed.products(codes, query), exact_int8_products(codes, query))


def test_packed_codes_follow_rows_added_and_removed_at_the_end() -> None:
    codes, query, packed = int8_rows(2 * PACK_ROWS + 300, seed=6), int8_rows(1, seed=7)[0], PackedCodes()
    for rows in (PACK_ROWS + 10, 2 * PACK_ROWS + 300, PACK_ROWS, 2 * PACK_ROWS + 1):
        assert np.array_equal(packed.products(codes[:rows], query), exact_int8_products(codes[:rows], query))


def test_packed_codes_are_packed_again_when_the_kernels_change() -> None:
    """A pack is laid out for the kernels chosen when it was made: read by others it gave wrong
    products, or crashed the interpreter."""
    import numkong

    codes, query, packed = int8_rows(PACK_ROWS + 3, seed=8), int8_rows(1, seed=9)[0], PackedCodes()
    packed.products(codes, query)
    # the kernels polymem turned off (AMX) on again; where there were none, all but the plainest off
    on, off = _scan._TURNED_OFF, [name for name, on in numkong.get_capabilities().items() if on and name != "serial"]
    if on:
        off = []
    for name in on or []:
        numkong.enable_capability(name)
    for name in off:
        numkong.disable_capability(name)
    try:
        assert np.array_equal(packed.products(codes, query), exact_int8_products(codes, query))
    finally:
        for name in off:
            numkong.enable_capability(name)
        for name in on or []:
            numkong.disable_capability(name)
    assert np.array_equal(packed.products(codes, query), exact_int8_products(codes, query))


@pytest.fixture
def pool_of_one(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`alongside` with a pool of its own, of one thread (two cores)."""
    monkeypatch.setattr(_scan, "_WORKERS", 2)
    monkeypatch.setattr(_scan, "_POOL", None)
    monkeypatch.setattr(_scan, "_FREE", None)
    yield
    if _scan._POOL is not None:
        _scan._POOL.shutdown()


def test_work_goes_alongside_only_while_a_thread_of_the_pool_is_free(pool_of_one: None) -> None:
    started, release = threading.Event(), threading.Event()

    def hold() -> str:
        started.set()
        release.wait(10)
        return "held"

    first = alongside(hold)
    assert first is not None and started.wait(10)
    assert alongside(lambda: "queued") is None  # the caller does it itself rather than wait behind `hold`
    release.set()
    assert first.result(10) == "held"
    after = alongside(lambda: "after")
    assert after is not None and after.result(10) == "after"


def test_work_that_failed_alongside_leaves_its_thread_free(pool_of_one: None) -> None:
    def fail() -> None:
        raise ValueError("no")

    failed = alongside(fail)
    assert failed is not None
    with pytest.raises(ValueError):
        failed.result(10)
    after = alongside(lambda: "after")
    assert after is not None and after.result(10) == "after"


def test_on_one_core_work_is_not_sent_alongside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_scan, "_WORKERS", 1)
    assert alongside(lambda: "mine") is None


def test_a_large_product_is_whole_while_every_thread_of_the_pool_is_busy(pool_of_one: None) -> None:
    matrix, query = unit_rows(PARALLEL_ROWS + 1_000, 64, seed=7), unit_rows(1, 64, seed=8)[0]
    release = threading.Event()
    busy = alongside(release.wait, 10)
    try:
        product = products(matrix, query)  # its second half refused by the pool: done here
        assert not busy.done()  # not waited for
    finally:
        release.set()
    assert busy is not None and busy.result(10)
    assert np.allclose(product, matrix @ query, atol=1e-6)
