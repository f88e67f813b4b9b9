"""Matrix-vector products for the in-process vector caches.

An exact scan reads every float32 vector of a scope: at 100k x 384 that is 154 MB a query,
memory-bound at ~9.5 ms on two cores. An int8 copy (each row as codes times its own scale)
scanned by SimSIMD's kernels reads a quarter of that and takes ~2.2 ms. Its products come
with proven bounds (`bounds`), so `shortlist` keeps every row that could still belong to the
exact best, which the caller then measures exactly: results are the exact scan's. When many
rows lie too close together to tell apart the shortlist is long, and the caller measures all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

# Below this many rows one core finishes a matrix-vector product before a second would start.
PARALLEL_ROWS = 32_768
# Below this many rows an exact float32 scan costs about what shortlisting does.
APPROX_ROWS = 4_096
# Up to this many rows each row's product is taken on its own (`row_products`): BLAS's thread
# limit costs ~25 us a product, more than the dot kernel's loop over these rows (1,024 x 384: +8 us).
ROW_BY_ROW = 1_024

_WORKERS = min(4, os.cpu_count() or 1)  # threads for a large product, counted once
_POOL: ThreadPoolExecutor | None = None
_FREE: threading.BoundedSemaphore | None = None  # the pool's threads not running `alongside` work
_BLAS: Any = None

T = TypeVar("T")


def _pool() -> ThreadPoolExecutor:
    global _POOL, _FREE
    if _POOL is None:
        _POOL = ThreadPoolExecutor(_WORKERS - 1, thread_name_prefix="polymem-alongside")
        _FREE = threading.BoundedSemaphore(_WORKERS - 1)
    return _POOL


def _forget_pool() -> None:
    """A forked child has none of its parent's threads: a pool of them would take work and never do it."""
    global _POOL, _FREE
    _POOL = _FREE = None


os.register_at_fork(after_in_child=_forget_pool)


def alongside(work: Callable[..., T], *args: Any) -> Future[T] | None:
    """`work(*args)` started on another core while the caller goes on, for work that releases the
    GIL, as a SQLite statement or a scan does: the caller's own scan and a full-text query then
    take the time of the longer one. None on a single core, or while every thread of the pool
    runs other callers' work (searches in many threads): the caller then does it itself rather
    than queue behind them."""
    if _WORKERS == 1:
        return None
    pool = _pool()
    assert _FREE is not None
    if not _FREE.acquire(blocking=False):
        return None
    free = _FREE

    def run() -> T:
        try:
            return work(*args)
        finally:
            free.release()

    return pool.submit(run)


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
    out = np.empty(len(matrix), dtype=np.float32)
    workers = _WORKERS
    if len(matrix) < PARALLEL_ROWS or workers == 1:
        product(matrix, query, out)
        return out
    bounds = np.linspace(0, len(matrix), workers + 1).astype(int)
    sent = []
    for a, b in zip(bounds[1:-1], bounds[2:]):
        part = alongside(product, matrix[a:b], query, out[a:b])
        if part is None:  # every helper busy (another search's text ranking): this thread does it too
            product(matrix[a:b], query, out[a:b])
        else:
            sent.append(part)
    product(matrix[: bounds[1]], query, out[: bounds[1]])
    for part in sent:
        part.result()
    return out


def _exact_product(matrix: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    np.matmul(matrix, query, out=out)


def _int8_product(codes: np.ndarray, query_codes: np.ndarray, out: np.ndarray) -> None:
    import simsimd

    # Not cdist(out=...): SimSIMD 6.5 then returns None without a reference of its own, and the
    # interpreter dies once None's count has run down (Python 3.11: "deallocating None").
    dots = simsimd.cdist(query_codes[None], codes, metric="dot", out_dtype="float32")  # exact: int32 sums < 2^24
    out[:] = np.asarray(dots).reshape(-1)


def row_products(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row's product with `query` as `row @ query` gives it, to the last bit: numpy's dot
    kernel (1 x d by d x 1) row by row, which never starts BLAS's threads. A row of 1 x d by the
    d x n matrix would use BLAS's matrix kernel, whose sums may round otherwise: a memory's
    similarity does not depend on how many rows it was measured with."""
    out: np.ndarray = np.matmul(rows[:, None, :], np.asarray(query, dtype=np.float32)[:, None])[:, 0, 0]
    return out


def products(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`matrix @ query` in float32 (up to `ROW_BY_ROW` rows: `row_products`)."""
    if len(matrix) <= ROW_BY_ROW:
        return row_products(matrix, query)
    with _single_threaded_blas():
        return _on_cores(_exact_product, matrix, np.asarray(query, dtype=np.float32))


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row as int8 codes times its own scale (largest component -> 127), and the norm of
    what that rounding lost (zero rows: zero codes, scale and loss)."""
    rows = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    scales = (np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), np.float32)) / np.float32(127)
    safe = np.where(scales > 0, scales, np.float32(1))[:, None]
    codes = np.rint(rows / safe).astype(np.int8)
    lost = np.linalg.norm(rows - codes * safe, axis=1)
    return codes, scales.astype(np.float32), lost.astype(np.float32)


def _quantized(vector: np.ndarray) -> tuple[np.ndarray, np.float32, float]:
    """`quantize` of one vector (codes, scale, loss), in a third of the numpy calls: one per recall."""
    scale = np.abs(vector).max() / np.float32(127)
    if not scale > 0:
        return np.zeros(len(vector), dtype=np.int8), np.float32(0), 0.0
    codes = np.rint(vector / scale).astype(np.int8)
    return codes, scale, float(np.sqrt(((lost := vector - codes * scale)) @ lost))


def bounds(codes: np.ndarray, scales: np.ndarray, lost: np.ndarray, norms: np.ndarray,
           query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of `rows @ query` from the rows' int8 codes, scales, rounding
    losses (`quantize`) and norms.

    With row = s*c + e and query = t*d + f (codes c, d; losses e, f): row @ query = s*t*(c @ d)
    + s*c @ f + e @ query, and |s*c| <= |row| + |e|, so it is off by at most
    |e| * |query| + (|row| + |e|) * |f|."""
    query = np.asarray(query, dtype=np.float32)
    query_codes, query_scale, off = _quantized(query)
    approx = _on_cores(_int8_product, codes, query_codes)
    approx *= scales
    approx *= query_scale
    length = float(np.sqrt(query @ query))
    margin = lost * np.float32(length + off)
    margin += norms * np.float32(off + len(query) * 1.2e-7 * length)  # and float32's rounding of sums
    return approx - margin, approx + margin


def _holding_top(approx: np.ndarray, count: int) -> np.ndarray | None:
    """Indices of a few rows that surely hold the `count` largest of `approx` (None: no quick way):
    every row at or above a threshold read off a sample, when at least `count` rows reach it.
    Partitioning those instead of every row: 100k rows 1.2 ms -> 0.2 ms."""
    n = len(approx)
    if n < 16 * count:
        return None
    sample = approx[:: max(1, n // 4096)]
    rank = min(len(sample) - 1, 3 * count * len(sample) // n + 8)  # expect ~3x `count` rows above
    threshold = np.partition(sample, len(sample) - 1 - rank)[len(sample) - 1 - rank]
    if threshold == -np.inf:
        return None
    held = np.flatnonzero(approx >= threshold)
    return held if len(held) >= count else None


def shortlist(lower: np.ndarray, upper: np.ndarray, limit: int) -> np.ndarray:
    """Indices of every row whose upper bound reaches the `limit`-th largest lower bound (-inf
    both: a row filtered out): they hold the exact best `limit`, since at least `limit` rows
    are known to reach that lower bound and no other row can."""
    floor = -np.inf
    if limit < len(lower):
        held = _holding_top(lower, limit)
        rows = lower if held is None else lower[held]
        floor = np.partition(rows, len(rows) - limit)[len(rows) - limit]
    if floor == -np.inf:
        return np.flatnonzero(upper > -np.inf)
    return np.flatnonzero(upper >= floor)
