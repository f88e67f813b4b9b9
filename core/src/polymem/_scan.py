"""Matrix-vector products for the in-process vector caches.

An exact scan reads every float32 vector of a scope: at 100k x 384 that is 154 MB a query,
memory-bound at ~9.5 ms on two cores. An int8 copy (each row as codes times its own scale),
packed for NumKong's matrix kernels (`PackedCodes`), reads a quarter of that. Its products come
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
# Rows packed together (`PackedCodes`): a pack is made again when one of its rows changes, 2,048
# rows in ~0.06 ms; scanning 20k rows in packs of 2,048 costs ~3 % more than in one pack.
PACK_ROWS = 2_048
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


def _on_cores(product: Callable[[int, int, np.ndarray], Any], rows: int, step: int = 1) -> np.ndarray:
    """The products of `rows` rows, `product(start, stop, out)` writing those of rows [start, stop)
    into `out`, with a large matrix split across the cores (at multiples of `step`), one part a thread.

    Two cores read memory faster than one; plain threads just queue on a busy machine, where
    BLAS's or OpenMP's own threads spin while they wait and collapse."""
    out = np.empty(rows, dtype=np.float32)
    workers = _WORKERS
    if rows < PARALLEL_ROWS or workers == 1:
        product(0, rows, out)
        return out
    cuts = [0, *(round(rows * k / workers / step) * step for k in range(1, workers)), rows]
    sent = []
    for a, b in zip(cuts[1:-1], cuts[2:]):
        part = alongside(product, a, b, out[a:b])
        if part is None:  # every helper busy (another search's text ranking): this thread does it too
            product(a, b, out[a:b])
        else:
            sent.append(part)
    product(0, cuts[1], out[: cuts[1]])
    for part in sent:
        part.result()
    return out


_TURNED_OFF: list[str] | None = None  # NumKong's kernels `_packing` turned off (None: not yet looked)


def _packing() -> tuple[bool, ...]:
    """The NumKong kernels packs are made for now, its AMX kernels turned off (for the whole
    process) the first time: they multiply 16 query rows at once, and for a recall's one query
    cost ~1.5x the AVX-512 ones (20k x 384: 0.62 against 0.41 ms)."""
    global _TURNED_OFF
    import numkong

    if _TURNED_OFF is None:
        _TURNED_OFF = [name for name in ("sapphireamx",) if numkong.get_capabilities().get(name)]
        for name in _TURNED_OFF:
            numkong.disable_capability(name)
    return tuple(numkong.get_capabilities().values())


class PackedCodes:
    """The int8 codes of a matrix packed for NumKong's matrix kernels (`numkong.dots_pack`),
    `PACK_ROWS` rows a pack: a query's products of 20k x 384 codes take ~0.42 ms, against ~0.75
    for a product row by row (SimSIMD's or NumKong's `cdist`). The rows may change in place:
    the owner names those that did (`changed`) and their pack is made again when next read; a
    pack of rows that grew or shrank in number is too. A pack is laid out for the kernels of
    the moment, so all are made again if another part of the process turned some on or off.
    Searches in several threads may read one (a dict of packs, never resized under them)."""

    __slots__ = ("_packs", "_count", "_state")

    def __init__(self) -> None:
        self._packs: dict[int, tuple[Any, int]] = {}  # by pack number: (packed matrix, rows packed)
        self._count = 0  # packs the last scan read
        self._state: tuple[bool, ...] | None = None

    def changed(self, slots: np.ndarray | int) -> None:
        """The codes of rows `slots` changed."""
        for number in np.unique(np.asarray(slots, dtype=np.int64) // PACK_ROWS).tolist():
            self._packs.pop(number, None)

    def products(self, codes: np.ndarray, query_codes: np.ndarray) -> np.ndarray:
        """`codes @ query_codes` in float32 (exact: int32 sums below 2^24), `codes` the rows as they
        are now."""
        import numkong

        state = _packing()
        if state != self._state:
            self._packs, self._state = {}, state
        packs = self._packs
        count = -(-len(codes) // PACK_ROWS)
        for number in range(count, self._count):  # the rows there are gone
            packs.pop(number, None)
        self._count = count
        query = query_codes.reshape(1, -1)

        def product(start: int, stop: int, out: np.ndarray) -> None:
            for number in range(start // PACK_ROWS, -(-stop // PACK_ROWS)):
                a, b = number * PACK_ROWS, min(stop, (number + 1) * PACK_ROWS)
                pack = packs.get(number)
                if pack is None or pack[1] != b - a:
                    pack = packs[number] = (numkong.dots_pack(codes[a:b]), b - a)
                out[a - start:b - start] = np.asarray(numkong.dots_packed(query, pack[0])).reshape(-1)

        return _on_cores(product, len(codes), PACK_ROWS)


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
    query = np.asarray(query, dtype=np.float32)
    with _single_threaded_blas():
        return _on_cores(lambda start, stop, out: np.matmul(matrix[start:stop], query, out=out), len(matrix))


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


def _row_by_row(codes: np.ndarray, query_codes: np.ndarray) -> np.ndarray:
    """`codes @ query_codes` in float32 (exact), one row's product at a time: no packs to keep."""
    import numkong

    def product(start: int, stop: int, out: np.ndarray) -> None:
        dots = numkong.cdist(query_codes.reshape(1, -1), codes[start:stop], metric="dot", out_dtype="float32")
        out[:] = np.asarray(dots).reshape(-1)

    return _on_cores(product, len(codes))


def bounds(codes: np.ndarray, scales: np.ndarray, lost: np.ndarray, norms: np.ndarray, query: np.ndarray,
           packed: PackedCodes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of `rows @ query` from the rows' int8 codes, scales, rounding losses
    (`quantize`) and norms; `packed`: the codes' packs, where the caller keeps them (as much memory
    again as the codes, for ~40 % less time: `PackedCodes`), else the codes are read row by row.

    With row = s*c + e and query = t*d + f (codes c, d; losses e, f): row @ query = s*t*(c @ d)
    + s*c @ f + e @ query, and |s*c| <= |row| + |e|, so it is off by at most
    |e| * |query| + (|row| + |e|) * |f|."""
    query = np.asarray(query, dtype=np.float32)
    query_codes, query_scale, off = _quantized(query)
    approx = _row_by_row(codes, query_codes) if packed is None else packed.products(codes, query_codes)
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
