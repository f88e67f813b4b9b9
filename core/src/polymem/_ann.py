"""Approximate vector search for large scopes: an inverted-file index per scope, kept beside the SQLite file.

A scope (one user's memories in one namespace, for one embedding model) of `ANN_ROWS` vectors or
more is searched through a faiss inverted file of fast-scan product-quantizer codes
(`IndexIVFPQFastScan`, 4 bits a dimension) instead of a scan of every
row: the rows are split into about 2·√n k-means cells (trained on a random sample) and a query
reads the `PROBES` cells nearest to it. Codes trained on some rows may describe a row unlike them
badly (a memory on a new subject, saved after the build), and the index would then not propose
it: every row whose code lost more than any of a random sample of the rows' codes did (`outliers`)
is proposed by every search. The index only proposes rows: each proposal is mapped back to the
scope's live rows (a deleted, moved, expired or filtered-out row is dropped) and measured exactly
against the process's float32 copy, so every similarity returned is exact and only the choice of
rows is approximate. When too few proposals survive the filters, the caller scans exactly.

How many cells a query reads, and how many proposals it measures, is measured when the index is
built: `PROBES` and `FETCH_MARGIN` where they propose `TARGET_FOUND` of the exact 10 nearest of a
sample of the scope's own rows; more proposals where the codes order near neighbours too coarsely
(rows of few dimensions), more cells where the rows have no near neighbours to speak of (vectors
drawn at random spread a query's nearest over many cells); where even every cell does not, the
index is not searched at all: the scope is searched exactly.

A recall over every user of a namespace reads one index of the whole namespace (`Span`: every
user's block), built once the namespace holds `ANN_ROWS` vectors in more than one scope; its
proposals are mapped back through the process's copy the same way, so a row of another
namespace, a deleted or an expired one is never returned.

Chosen on this machine against HNSW graphs (faiss HNSW-SQ8, usearch i8, hnswlib) at 100,000 real
embeddings, load 13-14, one thread: the inverted file built in 9.5 s against 84-119 s, searched in
0.12 ms p50 against 0.19-0.64 ms, and found 0.99 of the exact top 10 (graphs 0.95-0.99; see `PROBES`); faiss is
already a dependency (consolidation uses the same index kind). See bench/RESULTS.md.

Persistence: `<file>.ann/<scope key>-<seq>.faiss`, written to a temporary name then renamed; `seq`
is the store's change counter the file reflects. A process that opens it adds the rows written
since (by any process) and the rows it lacks; rows deleted since are dropped by the mapping above.
A missing or unreadable file is rebuilt in a background thread while searches stay exact. Beside
it, `<scope key>-<seq>.outliers.npz` keeps the rows its codes describe worst (see `ScopeIndex`),
the cells a search reads, and a fingerprint of the index they were found in: a pair that does not
match is rebuilt too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ._scan import products

if TYPE_CHECKING:
    from ._sqlite import _ScopeBlock, _VectorCache

# A scope this large takes about a millisecond to scan exactly (int8 shortlist at 100k rows
# ~2.2 ms on this machine unloaded): above it, the index answers.
ANN_ROWS = 50_000
# Cells read per query, whatever the index's size. Measured with `bench_ann_candidates.py` and
# scratch runs of the same measurement (bench/RESULTS.md, 2026-12-03, one core, load 0.6-1.9) on
# bench_alternatives' embeddings, as the share of the exact top 10 in the index's top 140 (a
# search of 10, see `FETCH_MARGIN`): 1M rows, 2,000 cells, 32 / 40 / 48 cells read: 0.977 / 0.991 /
# 0.997 in 0.43 / 0.46 / 0.55 ms; 100k rows, 632 cells, 32 read: 0.996 in 0.14 ms (top 100).
# More cells of fewer rows keep a query's neighbours in as few cells as the index grows: the same
# 1M rows in 516 cells took 4.3 ms for 32 of them (8-bit codes). Measured again 2026-12-04 (load
# 0.7-1.0): 1M rows, 32 / 40 read: 0.987 / 0.989 in 0.43 / 0.60 ms; 100k rows (top 100): 0.987 /
# 0.995 in 0.13 / 0.15 ms; a recall over every user of the 1M, alternated processes: 2.27-2.37 /
# 2.48-2.60 ms p50. 32: the exact top 10 found well above 0.95, in three quarters of the time.
# The first number of cells tried: a scope whose rows have no near neighbours to speak of (vectors
# drawn at random) spreads a query's nearest over many cells, and reads more (`_Calibration`).
PROBES = 32
# The share of the exact 10 nearest an index must propose, measured when it is built on a random
# sample of its own rows (`_Calibration`): 0.97 of 128 rows' nearest, so that what a search finds
# stays above 0.95 (issue #27's floor; 128 rows measure the share within about 0.015; 64 chose 512
# cells of 100k vectors drawn at random, which found 0.95 of 200 other queries' nearest).
# Cells read double from `PROBES`, and with each the margin of proposals from `FETCH_MARGIN`, until
# it does; an index that does not even reading every cell is not searched (the scope is searched exactly). 100,000 random unit vectors (384 dimensions, 632
# cells): 32 / 64 / 128 / 256 / 632 cells found 0.21 / 0.31 / 0.47 / 0.70 / 1.00 of the exact top 10
# in 0.13 / 0.17 / 0.28 / 0.46 / 1.0 ms; in 200 clusters, 1.00 from 32.
TARGET_FOUND = 0.97
CALIBRATION_QUERIES = 128
MARGIN_STEPS = 3  # margins tried: FETCH_MARGIN, twice, 4 and 8 times it
# Proposals measured exactly beyond 1.25 x those wanted (`proposals`): compressed codes order a
# query's near neighbours coarsely, so a search of 10 reads 60 proposals and a recall's 100
# candidates 173. Measured with `bench_ann_settings.py` against 128 (bench/RESULTS.md, 2026-12-04,
# load 0.3-1.0): 1M over every user, 0.97x the recall time, 0.988 of an exact recall's top 10
# against 0.992 and 0.991 of the exact nearest 10 against 0.995; 100k in one scope, 0.94x, the
# same results (0.990 and 0.987). Fewer cells read (28, 24) cost more than this: 100k 0.975 / 0.953.
FETCH_MARGIN = 48
MAX_OVERFETCH = 8  # a filter keeping under 1/8 of the scope: exact search (gathering those rows is cheap)
DEAD_SHARE = 0.25  # rebuild once a quarter of the indexed entries are deleted or superseded rows
GROWTH = 4  # rebuild (retrain the cells) once the scope is 4x the rows the cells were trained on
OUTLIER_SHARE = 0.01  # rebuild (retrain the codes) once this share of the rows is badly described (`outliers`)
SAVE_AFTER = 0.01  # on close, save again if this share of the rows changed since the file
TRAINING_ROWS = 65_536  # the cells are trained on a random sample of at most this many rows
_CHUNK = 50_000
# The codes: product quantization with a 4-bit code (16 levels) for every dimension of the row
# itself (faiss's fast scan does not code a row's difference from its cell's centre for inner
# products: `by_residual` is off), laid out for faiss's fast scan (`IndexIVFPQFastScan`: the
# codes of 32 rows compared at once against a table of the query's products, in SIMD registers).
# At 1M rows (one core, 2,000 cells, a search of 10) they found 0.991 of the exact top 10 with 40
# cells read in 0.46 ms (see `PROBES` for 32); a code for every 2 dimensions 0.922 with 48 read in 0.36 ms (it orders
# near neighbours more coarsely: 0.981 took the top 400); the 2-bit RaBitQ codes of the version
# before (`IndexIVFRaBitQ`) about 0.965 with 32 read in 0.72 ms. 192 bytes a 384-dimension row.
# Part of every index file's name: an older kind of index under the same name is found by `load`,
# deleted and rebuilt, where a new name would leave the old file in the folder for good.
_FILE_NAMESPACE = "ivfsq8-v1"


def proposals(wanted: float, margin: int = FETCH_MARGIN) -> int:
    """How many rows the index proposes for `wanted` rows (`FETCH_MARGIN`, or the margin an index measured)."""
    return int(wanted * 1.25) + margin


def probes(cells: int) -> int:
    """Cells a query reads first in an index of `cells` cells (`_Calibration` may take more)."""
    return min(cells, PROBES)


class Rows(Protocol):
    """What an index is built from and kept current with: one scope's block, or a namespace's span of them."""

    @property
    def size(self) -> int: ...

    @property
    def dimension(self) -> int: ...

    def parts(self) -> list[_ScopeBlock]:
        """The blocks holding the rows."""

    def live_ids(self) -> np.ndarray:
        """The rowids of every row held."""

    def vectors_of(self, rowids: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """The rowids among `rowids` still held, and their vectors."""

    def scope_sql(self) -> tuple[str, tuple[Any, ...]]:
        """The SQL condition (and its parameters) selecting the rows of this scope in `memories`."""


def cell_count(rows: int) -> int:
    """Cells of an index of `rows` rows: about 2·√rows, at least 16 and no more than its training
    sample gives 32 rows each."""
    return max(16, min(int(2 * np.sqrt(rows)), min(rows, TRAINING_ROWS) // 32))


def _new_index(vectors: np.ndarray, cells: int) -> Any:
    """An empty inverted file of `cells` cells of fast-scan product-quantizer codes, whose cells
    and codes are trained on `vectors`."""
    return _Filling(vectors, cells).index()[0]


class _Filling:
    """An index of `cells` cells trained on a sample (`vectors`), filled a chunk of rows at a time
    (`add`) with the codes faiss's own `add` would give them, to the bit, and each row's
    `code_losses` from the same pass; laid out for fast scan once full (`index`).

    Faiss codes a row a dimension at a time, measuring 16 levels for each, and finds its cell
    through the BLAS of its wheel (`_nearest_cells`). Here each dimension's code is counted against
    the midpoints between its sorted levels, for every row at once, into an inverted file of plain
    codes (`IndexIVFPQ`) that faiss then lays out in fast-scan blocks: 100k rows of
    bench_alternatives' data 2.2-2.6 s, against 4.9-5.3 s for faiss's add and the losses' pass after it."""

    def __init__(self, vectors: np.ndarray, cells: int) -> None:
        import faiss

        dimension = vectors.shape[1]
        quantizer = trained_cells(vectors, cells)
        self.plain = faiss.IndexIVFPQ(quantizer, dimension, cells, dimension, 4, faiss.METRIC_INNER_PRODUCT)
        self.plain.by_residual = False  # as the fast-scan index codes rows for inner products
        self.plain.train(vectors)
        self.centres = quantizer.reconstruct_n(0, cells)
        pq = self.plain.pq
        centroids = faiss.vector_to_array(pq.centroids).reshape(pq.M, pq.ksub)
        self.numbers = np.argsort(centroids, axis=1).astype(np.uint8)  # faiss's number of each level, in order
        self.levels = np.take_along_axis(centroids, self.numbers.astype(np.int64), axis=1)
        self.ids: list[np.ndarray] = []
        self.losses: list[np.ndarray] = []

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Add rows `vectors` (unit length, float32) under `ids`."""
        plain = self.plain
        cells = _nearest_cells(self.centres, vectors)
        codes = self.numbers[np.arange(len(self.numbers)), _nearest_levels(self.levels, vectors)]
        if codes.shape[1] % 2:  # two 4-bit codes a byte, the first in the low half
            codes = np.hstack([codes, np.zeros((len(codes), 1), dtype=np.uint8)])
        coarse = plain.sa_code_size() - plain.code_size  # the bytes of a row's cell number
        with_cells = np.empty((len(codes), coarse + codes.shape[1] // 2), dtype=np.uint8)
        for byte in range(coarse):  # each row's cell first, as faiss's `sa_encode` writes it
            with_cells[:, byte] = (cells >> (8 * byte)) & 0xFF
        with_cells[:, coarse:] = codes[:, 0::2] | (codes[:, 1::2] << 4)
        plain.add_sa_codes(with_cells, ids)
        self.ids.append(ids)
        self.losses.append(_residual_losses(plain, self.levels, vectors, cells))

    def index(self) -> tuple[Any, np.ndarray, np.ndarray]:
        """The fast-scan index of the rows added, their ids, and their code losses, in the order added."""
        import faiss

        index = faiss.IndexIVFPQFastScan(self.plain)  # (holds the plain index, and through it the cells)
        self.plain.reset()  # its codes: the fast-scan index has its own copy
        ids = np.concatenate(self.ids) if self.ids else np.zeros(0, dtype=np.int64)
        losses = np.concatenate(self.losses) if self.losses else np.zeros(0, dtype=np.float32)
        return index, ids, losses


def _nearest_cells(centres: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The number of the cell whose centre has the largest product with each row, as faiss's
    `assign` finds it, through numpy's BLAS: the OpenBLAS in faiss's wheel may not know a newer
    CPU and fall back to its oldest kernels (here: 50k rows to 2,000 cells in 1.7 s, against 0.35)."""
    cells = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), 8_192):  # (the products of 8k rows with 2,000 cells: 64 MB)
        cells[start:start + 8_192] = np.argmax(rows[start:start + 8_192] @ centres.T, axis=1)
    return cells


def _outliers(ids: np.ndarray, losses: np.ndarray, n: int) -> tuple[float, np.ndarray]:
    """The loss limit of a new index of `n` rows (the largest of a random sample of its rows'
    `code_losses`) and the rows `ids` whose codes lost more (`losses`, in the same order)."""
    if not len(ids):
        return float("inf"), np.zeros(0, dtype=np.int64)
    sample = np.random.default_rng(n).choice(len(losses), min(len(losses), TRAINING_ROWS), replace=False)
    limit = float(losses[sample].max())
    return limit, np.unique(ids[losses > limit])  # (a row a delete moved was added twice)


def _levels(index: Any) -> np.ndarray:
    """Each dimension's 16 code levels, in increasing order."""
    import faiss

    return np.sort(faiss.vector_to_array(index.pq.centroids).reshape(index.pq.M, index.pq.ksub), axis=1)


def _nearest_levels(levels: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each component of `rows`, the position of its nearest among its dimension's `levels`
    (increasing): how many of the midpoints between them it lies above."""
    positions = np.zeros(rows.shape, dtype=np.uint8)
    for midpoint in ((levels[:, 1:] + levels[:, :-1]) / 2).T:
        positions += rows > midpoint
    return positions


def code_losses(index: Any, vectors: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """How badly the codes describe each row as its cell sees it: the length of what coding its
    difference from its cell's centre (`cells`) with the codes' levels would lose. Large for a row
    far from its cell's centre (on a subject the cells were not trained on) and for one with a
    component beyond the levels' range: rows the index would not propose (see `outliers`)."""
    return _residual_losses(index, _levels(index), vectors, cells)


def _residual_losses(index: Any, levels: np.ndarray, vectors: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """`code_losses` with the levels read already."""
    residuals = vectors - index.quantizer.reconstruct_batch(cells)
    lost = residuals - levels[np.arange(len(levels)), _nearest_levels(levels, residuals)]
    return np.asarray(np.linalg.norm(lost, axis=1), dtype=np.float32)


def trained_cells(vectors: np.ndarray, cells: int) -> Any:
    """A flat index of `cells` k-means centroids of `vectors` (spherical: the vectors are unit length)."""
    import faiss

    quantizer = faiss.IndexFlatIP(vectors.shape[1])
    quantizer.add(spherical_kmeans(vectors, cells))
    return quantizer


def spherical_kmeans(vectors: np.ndarray, cells: int, rounds: int = 10, seed: int = 1234,
                     start: np.ndarray | None = None) -> np.ndarray:
    """`cells` centres of unit rows `vectors`, as faiss's `Kmeans(spherical=True)` finds them:
    rows drawn at random to start (or the centres `start`), then `rounds` times each centre made
    the normalised sum of the rows nearest it, an empty cell taking half of the largest one. Its
    products go through numpy's BLAS (`_nearest_cells`): 65k rows into 632 / 2,000 cells took
    13.2 / 31.5 s with faiss's, 4.0 / 9.2 s so, both as close to their rows (mean product 0.742 / 0.764)."""
    centres = vectors[np.sort(np.random.default_rng(seed).choice(len(vectors), cells, replace=False))] \
        if start is None else np.asarray(start, dtype=np.float32)
    # how a split cell's two halves are told apart (faiss's: every other component 1/1024 up, the rest down)
    nudge = np.where(np.arange(vectors.shape[1]) % 2 == 0, 1.0, -1.0).astype(np.float32) / 1024
    for _ in range(rounds):
        nearest = _nearest_cells(centres, vectors)
        counts = np.bincount(nearest, minlength=cells)
        held = np.flatnonzero(counts)
        sums = np.zeros_like(centres)
        sums[held] = np.add.reduceat(vectors[np.argsort(nearest, kind="stable")], (np.cumsum(counts) - counts)[held])
        for empty in np.flatnonzero(counts == 0):
            largest = int(np.argmax(counts))
            sums[empty], sums[largest] = sums[largest] * (1 + nudge), sums[largest] * (1 - nudge)
            counts[empty] = counts[largest] // 2
            counts[largest] -= counts[empty]
        lengths = np.linalg.norm(sums, axis=1, keepdims=True)
        centres = np.where(lengths > 0, sums / np.where(lengths > 0, lengths, 1), centres)  # (opposite rows only: kept)
    return np.ascontiguousarray(centres, dtype=np.float32)


def _tune(index: Any, cells_read: int) -> None:
    """Set how `index` is searched (not kept in its file: in its outliers' beside it)."""
    index.nprobe = max(1, cells_read)


class _Calibration:
    """How an index must be searched: the exact 10 nearest rows of `CALIBRATION_QUERIES` of the
    scope's own rows (each row's own excluded), gathered as the rows are read a chunk at a time
    (`add`), against what the index proposes for them (`settings`)."""

    NEAREST = 10

    def __init__(self, parts: list[_ScopeBlock], n: int) -> None:
        self.queries, self.query_ids = _drawn(parts, n, CALIBRATION_QUERIES, seed=n + 1)
        self.sims = np.full((len(self.query_ids), self.NEAREST), -np.inf, dtype=np.float32)
        self.nearest = np.full((len(self.query_ids), self.NEAREST), -1, dtype=np.int64)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Rows of the scope (every row once, in any order and chunks)."""
        if not len(ids) or not len(self.query_ids):
            return
        sims = self.queries @ vectors.T
        sims[self.query_ids[:, None] == ids[None, :]] = -np.inf  # a query's own row
        sims = np.concatenate([self.sims, sims], axis=1)
        ids = np.concatenate([self.nearest, np.broadcast_to(ids, (len(sims), len(ids)))], axis=1)
        top = np.argpartition(-sims, self.NEAREST - 1, axis=1)[:, :self.NEAREST]
        self.sims, self.nearest = np.take_along_axis(sims, top, 1), np.take_along_axis(ids, top, 1)

    def settings(self, index: Any, outliers: np.ndarray) -> tuple[int, int, float]:
        """The cells to read and the margin of proposals (`proposals`) that propose `TARGET_FOUND`
        of the exact nearest, and the share they found: the fewest cells (from `PROBES`, doubling),
        and with them the smallest margin (from `FETCH_MARGIN`, doubling up to `MARGIN_STEPS`
        times). Codes too coarse to order near neighbours (few dimensions) need a wider margin;
        rows without near neighbours, more cells; (0, 0, share) when even every cell does not do."""
        truths = [set(row[sims > -np.inf].tolist()) for row, sims in zip(self.nearest, self.sims)]
        total = sum(map(len, truths))
        if not total:
            return probes(index.nlist), FETCH_MARGIN, 1.0
        always = set(outliers.tolist())  # proposed by every search
        margins = [FETCH_MARGIN << step for step in range(MARGIN_STEPS + 1)]
        cells, found = probes(index.nlist), 0.0
        while True:
            index.nprobe = cells
            _, labels = index.search(self.queries, proposals(self.NEAREST, margins[-1]))
            for margin in margins:
                fetched = proposals(self.NEAREST, margin)
                found = sum(len(truth & (always | set(row[:fetched].tolist())))
                            for truth, row in zip(truths, labels)) / total
                if found >= TARGET_FOUND:
                    return cells, margin, found
            if cells >= index.nlist:
                return 0, 0, found
            cells = min(index.nlist, 2 * cells)


def _is_current(index: Any, dimension: int) -> bool:
    """Whether a read index is of the kind and shape this version builds."""
    import faiss

    return (isinstance(index, faiss.IndexIVFPQFastScan) and index.d == dimension
            and index.d == index.pq.M and index.pq.nbits == 4
            and index.metric_type == faiss.METRIC_INNER_PRODUCT)


def _training_sample(parts: list[_ScopeBlock], n: int) -> np.ndarray:
    """At most `TRAINING_ROWS` of the `n` rows of `parts`, drawn at random (the same for the same
    `n`). Not every k-th row: rows saved in a repeating pattern (a benchmark's sentences in turn,
    an agent's daily routine) then leave whole regions of the space out of the sample, and their
    rows crowd into cells trained for others: at 1M rows of 3,000 sentences repeated with noise, a
    sample of every 15th row held 200 of the sentences, and 46 cells found 0.92 of the exact top
    10 where a random sample's found 0.98."""
    return _drawn(parts, n, TRAINING_ROWS, seed=n)[0]


def _drawn(parts: list[_ScopeBlock], n: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors (contiguous float32) and rowids of at most `count` of the `n` rows of `parts`,
    drawn at random (the same for the same `seed`), in the blocks' order."""
    chosen = np.sort(np.random.default_rng(seed).choice(n, min(n, count), replace=False))
    vectors, ids, start = [], [], 0
    for block in parts:
        mine = chosen[(chosen >= start) & (chosen < start + block.size)] - start
        vectors.append(block.matrix[mine])
        ids.append(block.rowids[mine])
        start += block.size
    return np.ascontiguousarray(np.concatenate(vectors), dtype=np.float32), np.concatenate(ids).astype(np.int64)


class ScopeIndex:
    """The index of one scope's rows (`Rows`): proposes rows; `pending` rows are added before the next search."""

    def __init__(self, owner: Indexes, key: str, rows: Rows, cache: _VectorCache) -> None:
        self.owner, self.key, self.rows, self.cache = owner, key, rows, cache
        self.index: Any = None
        self.trained_rows = 0
        self.held = 0  # entries added (live, deleted or superseded)
        self.dead = 0  # entries whose row was deleted or re-added since
        self.pending: set[int] = set()
        self.noted_while_building: set[int] = set()
        self.saved_seq = -1
        self.changed_since_save = 0
        # rows whose code lost more than any of a random sample's (`code_losses`): proposed by every search
        self.loss_limit = float("inf")
        self.outliers = np.zeros(0, dtype=np.int64)
        # cells a search reads (0: the index does not find enough of a search's nearest rows, and
        # the scope is searched exactly), the margin of its proposals (`proposals`), and the share
        # of the exact nearest found so (`_Calibration`)
        self.cells_read = 0
        self.margin = FETCH_MARGIN
        self.found = 0.0
        self.build_seconds: float | None = None
        self.builder: threading.Thread | None = None
        # whether `_maybe_rebuild` must look again: rows changed, or a build ended, since it last
        # looked (a span's size is a sum over every user's block: 100 users, ~10 us a search)
        self.unchecked = True
        self.mutex = threading.Lock()  # faiss index: adds, searches and writes one at a time

    @property
    def ready(self) -> bool:
        """Whether the index is built (or read) and answers searches."""
        return self.index is not None and self.cells_read > 0

    # -- changes (called with the store's lock held) ------------------------------------------
    def changed(self, rowids: list[int]) -> None:
        """Rows new to the block, or written again (then `dropped` first)."""
        self.pending.update(rowids)
        self.unchecked = True
        if self.builder is not None:
            self.noted_while_building.update(rowids)
        self.changed_since_save += len(rowids)

    def dropped(self) -> None:
        self.dead += 1
        self.unchecked = True
        self.changed_since_save += 1

    # -- search (store lock held) -------------------------------------------------------------
    def propose(self, query: np.ndarray, fetch: int) -> np.ndarray:
        """The rowids of the index's best `fetch` entries for `query` (-1 where it has fewer); the
        rows may since have been deleted, moved or written again: the caller maps them back."""
        self._catch_up()
        self._maybe_rebuild()
        with self.mutex:
            _, labels = self.index.search(np.ascontiguousarray(query[None, :], dtype=np.float32),
                                          min(fetch, self.held))
        out: np.ndarray = np.concatenate([labels[0], self.outliers]) if len(self.outliers) else labels[0]
        return out

    def best(self, block: _ScopeBlock, query: np.ndarray, mask: np.ndarray | None, kept: int,
             limit: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Slots and exact products of the best `limit` rows `mask` keeps, or None: search exactly."""
        if self.index is not None and not self.ready:
            self._maybe_rebuild()  # (an index that does not answer may, once the rows have changed)
        if not self.ready or kept * MAX_OVERFETCH < block.size or not self.held:
            return None
        n = block.size
        wanted = min(limit, kept)
        # compressed codes misorder near-duplicates (a memory saved in many wordings): fetch a margin
        # beyond the rows wanted, to be measured exactly (at 100k real embeddings, 10 + 18 rows
        # found 0.93 of the exact top 10)
        labels = self.propose(query, proposals(wanted * n / kept, self.margin))
        slots = self._slots(block, labels)
        slots = np.sort(slots[slots >= 0])  # duplicates: a row re-added after a change of vector
        slots = slots[np.concatenate(([True], slots[1:] != slots[:-1]))]  # (np.unique: 5x the time)
        if mask is not None:
            slots = slots[mask[slots]]
        if len(slots) < wanted:
            return None
        sims = products(block.matrix[slots], query)
        if len(sims) > limit:
            top = np.argpartition(-sims, limit)[:limit]
            slots, sims = slots[top], sims[top]
        return slots, sims

    @staticmethod
    def _slots(block: _ScopeBlock, labels: np.ndarray) -> np.ndarray:
        """The slots of `block` holding the rowids `labels` (-1: none)."""
        numbers, slots = block.directory.locate(labels)
        return np.where(numbers == block.number, slots, -1).astype(np.int64)

    def _catch_up(self) -> None:
        if not self.pending:
            return
        ids, vectors = self.rows.vectors_of(self.pending)
        self.pending.clear()
        if len(ids):
            vectors = np.ascontiguousarray(vectors)
            with self.mutex:
                self.index.add_with_ids(vectors, ids)
                cells = self.index.quantizer.assign(vectors, 1).ravel()
                losses = code_losses(self.index, vectors, cells)
            self.held += len(ids)
            if (lost := losses > self.loss_limit).any():
                self.outliers = np.union1d(self.outliers, ids[lost])

    def _maybe_rebuild(self) -> None:
        if not self.unchecked or self.builder is not None:
            return
        self.unchecked = False
        if (self.dead > DEAD_SHARE * self.held or self.rows.size > GROWTH * self.trained_rows
                or len(self.outliers) > OUTLIER_SHARE * self.held):
            self.start_build()

    # -- building, loading, saving ------------------------------------------------------------
    def start_build(self) -> None:
        """Build a new index from the rows in a background thread; searches use the old one (or
        scan exactly) until it is done."""
        self.builder = threading.Thread(target=self._build, name="polymem-ann-build", daemon=True)
        self.builder.start()

    def _build(self) -> None:
        import faiss

        # OpenMP's thread count is this thread's own: faiss's threads spin while they wait and
        # collapse on busy cores, as they are while the process recalls meanwhile. With two busy
        # processes on two cores, a 100k build took 20-37 s with two threads and 13.8-15.7 s with
        # one (its PQ training alone 17-63 s against 4.8-5.9); idle, 8.7-9.4 s against 9.5-10.1.
        faiss.omp_set_num_threads(1)
        lock, rows = self.owner.lock, self.rows
        started = time.perf_counter()
        try:
            with lock:
                n = rows.size
                if self.owner.closed or n == 0:
                    return
                parts = rows.parts()
                sample = _training_sample(parts, n)
                calibration = _Calibration(parts, n)
                self.noted_while_building.clear()
            filling = _Filling(sample, cell_count(n))
            del sample
            for block in parts:
                start = 0
                while True:
                    with lock:
                        if self.owner.closed:
                            return
                        if start >= block.size:
                            break
                        ids = block.rowids[start:min(block.size, start + _CHUNK)].copy()
                        vectors = np.ascontiguousarray(block.matrix[start:start + len(ids)])
                    filling.add(vectors, ids)
                    calibration.add(vectors, ids)
                    start += len(ids)
            index, held, losses = filling.index()
            loss_limit, outliers = _outliers(held, losses, n)
            settings = calibration.settings(index, outliers)
            _tune(index, settings[0])
            with lock:
                # rows a delete moved into a slot already read, rows of blocks begun since, rows changed meanwhile
                live = rows.live_ids()
                self.pending = self.noted_while_building | set(live[~np.isin(live, held)].tolist())
                with self.mutex:
                    self.index = index
                self.held, self.dead, self.trained_rows = len(held), 0, n
                self.loss_limit, self.outliers = loss_limit, outliers
                self.cells_read, self.margin, self.found = settings
                self._catch_up()
                seq = self.cache.seq
            self.build_seconds = time.perf_counter() - started
            self.save(seq)
        finally:
            self.builder = None
            self.unchecked = True

    def load(self, conn: sqlite3.Connection, model_id: str | None) -> bool:
        """Take in the newest saved index of this scope, brought up to date; False when there is
        none or it cannot be read (then it is deleted)."""
        import faiss

        for path, seq in self.owner.files(self.key):
            try:
                index: Any = faiss.read_index(str(path))
                if not _is_current(index, self.rows.dimension):
                    raise ValueError("another kind of index")
                if 2 * index.nlist < cell_count(index.ntotal):  # cells of an older version: too few to probe 32
                    raise ValueError("an index of too few cells")
                ids = _ids(index)
                with np.load(_outliers_file(path)) as saved:
                    loss_limit, outliers = float(saved["loss_limit"]), saved["outliers"].astype(np.int64)
                    # (a file saved before its search was measured is measured below)
                    measured = (int(saved["cells_read"]), int(saved["margin"]), float(saved["found"])) \
                        if "cells_read" in saved else None
                    # (a file saved before fingerprints were kept is read as it was written)
                    if "fingerprint" in saved and str(saved["fingerprint"]) != _fingerprint(index, ids):
                        raise ValueError("the outliers of another build")
            except (RuntimeError, ValueError, OSError, KeyError):
                for stale in (path, _outliers_file(path)):
                    with contextlib.suppress(OSError):
                        stale.unlink()
                continue
            live = self.rows.live_ids()
            present = np.isin(live, ids)
            where, params = self.rows.scope_sql()
            changed = [row[0] for row in conn.execute(
                f"SELECT rowid FROM memories WHERE seq > ? AND {where} AND status = 'active' "
                "AND embedding_model IS ?", (seq, *params, model_id))]
            self.pending.update(live[~present].tolist())
            self.pending.update(changed)
            self.index, self.held = index, len(ids)
            self.loss_limit, self.outliers = loss_limit, outliers
            self.dead = int(np.count_nonzero(~np.isin(ids, live))) + len(changed)
            self.trained_rows = len(ids)
            self.saved_seq = seq
            if measured is None:
                self._catch_up()  # (the rows measured against: the scope's rows now)
                measured = self._calibrated()
                self.changed_since_save = self.held  # saved again, measured, on close
            self.cells_read, self.margin, self.found = measured
            _tune(index, self.cells_read)
            return True
        return False

    def _calibrated(self) -> tuple[int, int, float]:
        """`_Calibration.settings` of the index against the scope's rows now (store lock held)."""
        parts = self.rows.parts()
        calibration = _Calibration(parts, self.rows.size)
        for block in parts:
            for start in range(0, block.size, _CHUNK):
                stop = min(block.size, start + _CHUNK)
                calibration.add(block.matrix[start:stop], block.rowids[start:stop])
        with self.mutex:
            return calibration.settings(self.index, self.outliers)

    def save(self, seq: int) -> None:
        folder = self.owner.folder
        if folder is None or self.index is None or self.owner.read_only:
            return
        import faiss

        with contextlib.suppress(OSError):
            folder.mkdir(exist_ok=True)
            final = folder / f"{self.key}-{seq}.faiss"
            temporary = folder / f".{self.key}-{seq}.{os.getpid()}.{threading.get_ident()}.tmp"
            with self.mutex:
                faiss.write_index(self.index, str(temporary))
                with open(temporary.with_suffix(".npz"), "wb") as out:
                    np.savez(out, loss_limit=self.loss_limit, outliers=self.outliers,
                             fingerprint=_fingerprint(self.index, _ids(self.index)),
                             cells_read=self.cells_read, margin=self.margin, found=self.found)
            os.replace(temporary.with_suffix(".npz"), _outliers_file(final))  # first: a file found has its outliers
            os.replace(temporary, final)
            self.saved_seq, self.changed_since_save = seq, 0
            for older, older_seq in self.owner.files(self.key):
                if older_seq < seq:
                    for stale in (older, _outliers_file(older)):
                        with contextlib.suppress(OSError):
                            stale.unlink()


def _outliers_file(index_file: Path) -> Path:
    """Where the outliers (`ScopeIndex.outliers`) of an index file are kept."""
    return index_file.with_name(index_file.stem + ".outliers.npz")


def _fingerprint(index: Any, ids: np.ndarray) -> str:
    """What ties an outliers file to the index it was computed for: the rows the index holds and
    the cells it was trained with. Two processes saving one scope at once can each rename its
    own pair into place, leaving one's index beside the other's outliers; built from rows in
    another order, their cells and codes differ, and so do the rows whose codes lose most."""
    digest = hashlib.sha256(np.sort(ids).tobytes())
    digest.update(np.ascontiguousarray(index.quantizer.reconstruct_n(0, index.nlist)).tobytes())  # the cells' centres
    return digest.hexdigest()


def _cells(index: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every id an inverted file holds, and the cell holding it."""
    import faiss

    invlists = index.invlists
    ids = [faiss.rev_swig_ptr(invlists.get_ids(c), invlists.list_size(c)).copy()
           for c in range(index.nlist)]
    cells = np.repeat(np.arange(index.nlist, dtype=np.int64), [len(part) for part in ids])
    return (np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)), cells


def _ids(index: Any) -> np.ndarray:
    """Every id an inverted file holds."""
    return _cells(index)[0]


class Span:
    """Every block of one namespace seen as one `Rows`: what a recall over every user searches."""

    def __init__(self, cache: _VectorCache, namespace: str) -> None:
        self.cache, self.namespace = cache, namespace
        self.ann: ScopeIndex | None = None
        self._of_namespace = np.zeros(0, dtype=bool)  # by block number (`_mine`)

    def parts(self) -> list[_ScopeBlock]:
        return [block for (namespace, _), block in self.cache.blocks.items() if namespace == self.namespace]

    @property
    def size(self) -> int:
        return sum(block.size for block in self.parts())

    @property
    def dimension(self) -> int:
        return max((block.dimension for block in self.parts()), default=0)

    def live_ids(self) -> np.ndarray:
        return np.concatenate([block.rowids[:block.size] for block in self.parts()] or [np.zeros(0, np.int64)])

    def _places(self, rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rowids among `rowids` this namespace holds, once each (not held: deleted, or another
        namespace's; rowids are reused), with their blocks' numbers and their slots there: in
        numpy, as a search over every user maps ~170 proposals."""
        directory = self.cache.directory
        numbers, slots = directory.locate(rowids)
        held = numbers >= 0
        held[held] = self._mine(directory.blocks)[numbers[held]]
        rowids, numbers, slots = rowids[held], numbers[held], slots[held]
        ordered = np.sort(rowids)
        if len(ordered) > 1 and (ordered[1:] == ordered[:-1]).any():  # a row re-added after a change of vector
            first = np.sort(np.unique(rowids, return_index=True)[1])
            rowids, numbers, slots = rowids[first], numbers[first], slots[first]
        return rowids, numbers, slots

    def _mine(self, blocks: list[_ScopeBlock]) -> np.ndarray:
        """Whether each block (by number) is of this namespace (blocks are only ever added)."""
        if len(self._of_namespace) < len(blocks):
            self._of_namespace = np.concatenate([self._of_namespace, np.array(
                [block.scope[0] == self.namespace for block in blocks[len(self._of_namespace):]], dtype=bool)])
        return self._of_namespace

    def vectors_of(self, rowids: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        ids, numbers, slots = self._places(np.fromiter(rowids, dtype=np.int64))
        blocks = self.cache.directory.blocks
        vectors = np.empty((len(ids), self.dimension), dtype=np.float32)
        for i, (number, slot) in enumerate(zip(numbers.tolist(), slots.tolist())):
            vectors[i] = blocks[number].matrix[slot]
        return ids.astype(np.int64), vectors

    def scope_sql(self) -> tuple[str, tuple[Any, ...]]:
        return "namespace = ?", (self.namespace,)

    def best(self, query: np.ndarray, now_us: int, limit: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Rowids and exact products of the best `limit` unexpired rows of the namespace the index
        proposes, or None (no index yet, or too few proposals left: search exactly)."""
        ann = self.ann
        if ann is not None and ann.index is not None and not ann.ready:
            ann._maybe_rebuild()  # (an index that does not answer may, once the rows have changed)
        if ann is None or not ann.ready or not ann.held:
            return None
        rowids, numbers, slots = self._places(ann.propose(query, proposals(limit, ann.margin)))
        # each proposal gathered on its own: the proposals fall in many users' blocks, a few
        # each, where grouping them by block cost ~20 us of numpy calls a block (100 users:
        # 2.6 ms of a 4 ms search at 200k rows)
        blocks = self.cache.directory.blocks
        ids: list[int] = []
        rows = np.empty((len(rowids), len(query)), dtype=np.float32)
        for rowid, number, slot in zip(rowids.tolist(), numbers.tolist(), slots.tolist()):
            block = blocks[number]
            if block.soonest > now_us or block.expire[slot] > now_us:  # (soonest: no row of the block expires yet)
                rows[len(ids)] = block.matrix[slot]
                ids.append(rowid)
        if len(ids) < limit:
            return None
        sims = products(rows[:len(ids)], query)
        top = np.argpartition(-sims, limit - 1)[:limit] if len(sims) > limit else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        return np.asarray(ids, dtype=np.int64)[top], sims[top]


class Indexes:
    """The approximate indexes of one store's scopes: in `folder` (None: kept in memory only)."""

    def __init__(self, folder: Path | None, lock: Any, read_only: bool) -> None:
        self.folder, self.lock, self.read_only = folder, lock, read_only
        self.closed = False
        # (model, namespace, user_id, every user of the namespace)
        self.scopes: dict[tuple[str | None, str, str | None, bool], ScopeIndex] = {}

    def files(self, key: str) -> list[tuple[Path, int]]:
        """This scope's saved indexes, newest first."""
        if self.folder is None or not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.glob(f"{key}-*.faiss"):
            with contextlib.suppress(ValueError):
                found.append((path, int(path.stem.rsplit("-", 1)[1])))
        return sorted(found, key=lambda item: -item[1])

    def attach(self, conn: sqlite3.Connection, cache: _VectorCache) -> None:
        """Give every block of `ANN_ROWS` rows or more its index, and every namespace read whole
        with `ANN_ROWS` rows in more than one block its span's: loaded from its file, else built
        in the background (called with the store's lock held, after the cache is current)."""
        for (namespace, user_id), block in cache.blocks.items():
            if block.ann is None and block.size >= ANN_ROWS:
                block.ann = self._index((cache.model_id, namespace, user_id, False), block, cache, conn)
        for namespace in cache.namespaces:
            if namespace in cache.spans:
                continue
            span = Span(cache, namespace)
            if len(span.parts()) > 1 and span.size >= ANN_ROWS:
                cache.spans[namespace] = span
                span.ann = self._index((cache.model_id, namespace, None, True), span, cache, conn)

    def _index(self, scope: tuple[str | None, str, str | None, bool], rows: Rows, cache: _VectorCache,
               conn: sqlite3.Connection) -> ScopeIndex:
        key = hashlib.sha256(f"{_FILE_NAMESPACE}\x00{scope!r}".encode()).hexdigest()[:24]
        ann = self.scopes[scope] = ScopeIndex(self, key, rows, cache)
        if not ann.load(conn, cache.model_id):
            ann.start_build()
        return ann

    @property
    def building(self) -> bool:
        return any(scope.builder is not None for scope in self.scopes.values())

    def wait(self, timeout: float) -> None:
        """Until every index being built is done (or `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        for scope in list(self.scopes.values()):
            builder = scope.builder
            if builder is not None:
                builder.join(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Stop the builders; save the indexes that changed much since their file."""
        with self.lock:
            self.closed = True
        self.wait(60)
        for scope in self.scopes.values():
            if scope.index is None or scope.changed_since_save <= SAVE_AFTER * max(1, scope.held):
                continue
            with self.lock:
                scope._catch_up()
                seq = scope.cache.seq
            scope.save(seq)
        self.scopes.clear()  # (each refers back to this object: freed now, not at a cyclic collection)
