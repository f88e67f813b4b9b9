"""Matrix-vector products for the in-process vector caches.

An exact scan reads every float32 vector of a scope: at 100k x 384 that is 154 MB a query,
memory-bound at ~9 ms on two cores. A float16 copy scanned by SimSIMD's kernels reads half and
takes ~2 ms; its products are off by at most `HALF_ERROR`, so `shortlist` keeps every row that
could still belong to the exact best, which the caller then measures exactly. When rows lie too
close together to tell, it says so and the caller scans exactly: results never change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

# Below this many rows one core finishes a matrix-vector product before a second would start.
PARALLEL_ROWS = 32_768
# Below this many rows an exact float32 scan costs about what shortlisting does.
HALF_ROWS = 4_096
# |float16 product - float32 product| <= HALF_ERROR * |query| * |row|. Rounding both vectors to
# float16 moves each component by <= 2^-11 of itself (<= ~1e-3 of the product together); the rest
# covers the kernel's accumulation. Measured on 384-dimension unit vectors: <= 6e-4.
HALF_ERROR = 4e-3
# Rows above this norm could overflow float16 (max 65504): such scopes are scanned exactly.
HALF_MAX_NORM = 1e3

_POOL: ThreadPoolExecutor | None = None
_BLAS: Any = None


def _single_threaded_blas() -> Any:
    """A matrix-vector product is memory-bound: BLAS threads only add synchronisation, and on a
    busy machine they cost 20x (measured: 14 ms vs 0.7 ms for 10k x 384 at load 8 on 2 cores)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def _on_cores(product: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], matrix: np.ndarray,
              query: np.ndarray) -> np.ndarray:
    """`product(matrix, query, out)` with a large matrix split across the cores, one part a thread.

    Two cores read memory faster than one; plain threads just queue on a busy machine, where
    BLAS's or OpenMP's own threads spin while they wait and collapse."""
    global _POOL
    out = np.empty(len(matrix), dtype=np.float32)
    workers = min(4, os.cpu_count() or 1)
    if len(matrix) < PARALLEL_ROWS or workers == 1:
        product(matrix, query, out)
        return out
    if _POOL is None:
        _POOL = ThreadPoolExecutor(workers - 1, thread_name_prefix="polymem-matvec")
    bounds = np.linspace(0, len(matrix), workers + 1).astype(int)
    parts = [_POOL.submit(product, matrix[a:b], query, out[a:b]) for a, b in zip(bounds[1:-1], bounds[2:])]
    product(matrix[: bounds[1]], query, out[: bounds[1]])
    for part in parts:
        part.result()
    return out


def _exact_product(matrix: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    np.matmul(matrix, query, out=out)


def _half_product(matrix: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    import simsimd

    simsimd.cdist(query[None], matrix, metric="dot", out=out[None])


def products(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`matrix @ query` in float32."""
    with _single_threaded_blas():
        return _on_cores(_exact_product, matrix, np.asarray(query, dtype=np.float32))


def half_products(half: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`half @ query` for a float16 matrix, within `HALF_ERROR * |query| * |row|` of the float32 product."""
    return _on_cores(_half_product, half, np.asarray(query, dtype=np.float16))


def _holding_top(approx: np.ndarray, count: int) -> np.ndarray | None:
    """Indices of a few rows that surely hold the `count` largest of `approx` (None: no quick way):
    every row at or above a threshold read off a sample, when at least `count` rows reach it.
    Partitioning those instead of every row: 100k rows 1.2 ms -> 0.2 ms."""
    n = len(approx)
    if n < 64 * count:
        return None
    sample = approx[:: max(1, n // 4096)]
    rank = min(len(sample) - 1, 3 * count * len(sample) // n + 8)  # expect ~3x `count` rows above
    threshold = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
    if threshold == -np.inf:
        return None
    held = np.flatnonzero(approx >= threshold)
    return held if len(held) >= count else None


def shortlist(approx: np.ndarray, limit: int, error: float, margin: int | None = None) -> np.ndarray | None:
    """Indices of rows that hold the exact best `limit`, given products each off by at most
    `error` (-inf: a row filtered out): the best `limit + margin` by `approx` (default margin:
    `limit + 32`), 8x as many if need be; None when still too many lie within `2 * error` to tell.

    The rows past the shortlist are each at least `2 * error` below the `limit`-th best, so
    none of them can overtake a row in it, whatever their exact products."""
    take = limit + (limit + 32 if margin is None else margin)
    for _ in range(2):
        if take >= len(approx):
            return np.flatnonzero(approx > -np.inf)
        held = _holding_top(approx, take + 1)
        rows = approx if held is None else approx[held]
        order = np.argpartition(-rows, (limit - 1, take))
        if held is not None:
            order = held[order]
        floor, beyond = approx[order[limit - 1]], approx[order[take]]
        if beyond == -np.inf:
            picked = order[:take]
            return picked[approx[picked] > -np.inf]
        if floor - beyond > 2 * error:
            return order[:take]
        take *= 8
    return None
