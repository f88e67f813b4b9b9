"""The nearest rows of every row of a matrix of unit vectors, in bulk (consolidation's candidate pairs).

Comparing every pair of a scope's memories in Python is quadratic: 3,000 memories took 95 s. Here each
row gets its `k` nearest rows at once, from a blocked matrix product while that is cheap (a few
thousand rows), else from an inverted-file index (faiss). A caller that needs every row above some cosine
reads on with `above()`/`nearest()`, which fall back to one exact matrix-vector product for a row
whose `k` nearest are exhausted.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ._ann import spherical_kmeans

EXACT_UP_TO = 4096  # rows; a blocked product over 4,096 rows costs ~10 ms of a core
_BLOCK = 512
_BLOCK_CELLS = 1 << 22  # similarities per block at most (~0.1 s of a core at 384 dims: a progress step)
_CHUNK = 2048  # rows per index addition or search (a progress step)
_PROBES = 8  # cells searched per row, at first (`_probes`)
# Near-duplicates (what consolidation looks for) the index must find: of a random sample of
# `_CHECKED_ROWS` rows, those whose nearest row lies within `_NEAR` must find it, or be found by
# it (`_Reverse`), in `_NEAR_FOUND` of the pairs, or each row's search reads twice as many cells.
# Rows without near neighbours to speak of (vectors drawn at random) spread a row's near-duplicate
# over many cells: 100,000 random rows of 384 dimensions with 2,000 pairs planted at cosine
# 0.91-0.94, 8 / 16 cells read of 632: 0.988 / 1.000 of the pairs found by either row, 13 / 23 s.
_CHECKED_ROWS = 2048
_CHECKED_CHUNK = 8192  # rows compared with the sample at once (~0.15 s at 384 dimensions: a progress step)
_NEAR = 0.8
_NEAR_FOUND = 0.99
_ROUNDS = 10  # k-means rounds of the index's cells
_PER_CELL = 16  # training rows per cell (faiss's minimum; at 100,000 rows a round is 2.4 G multiply-adds)


class _Share:
    """Reports `total` progress steps over `parts` calls of `tick()`, as evenly as whole steps allow."""

    def __init__(self, progress: Callable[[int], None] | None, total: int, parts: int) -> None:
        self.progress, self.total, self.parts = progress, total, max(parts, 1)
        self.ticks = self.sent = 0

    def tick(self) -> None:
        self.ticks += 1
        due = self.total * self.ticks // self.parts
        if self.progress and due > self.sent:
            self.progress(due - self.sent)
            self.sent = due


class Neighbours:
    """Each row's `k` nearest other rows by cosine, best first.

    `vectors` holds unit rows (n × d). `exact_up_to` (default `EXACT_UP_TO`) chooses the blocked
    exact product up to that many rows and the approximate index above; `exact_rows` get their
    `exact_k` nearest exactly even then (rows whose choice depends on the order of many neighbours)."""

    def __init__(self, vectors: np.ndarray, k: int = 32, *, exact_up_to: int | None = None,
                 exact_rows: Sequence[int] = (), exact_k: int = 256,
                 progress: Callable[[int], None] | None = None) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n = len(self.vectors)
        self.k = min(k, max(n - 1, 0))
        self._exact_lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._found_by: _Reverse | None = None  # (approximate lists only)
        if self.k == 0:
            self.ids = np.zeros((n, 0), dtype=np.int64)
            self.sims = np.zeros((n, 0), dtype=np.float32)
        elif n <= (EXACT_UP_TO if exact_up_to is None else exact_up_to):
            self.ids, self.sims = self._exact(np.arange(n), self.k, progress)
        else:
            refined = np.unique(np.asarray(exact_rows, dtype=np.int64))
            self.ids, self.sims = self._approximate(progress, skip=refined)
            ids, sims = self._exact(refined, min(exact_k, n - 1), progress)
            self._exact_lists = {int(row): (ids[i], sims[i]) for i, row in enumerate(refined)}
            self._found_by = _Reverse(self.ids, self.sims)

    def _exact(self, rows: np.ndarray, k: int,
               progress: Callable[[int], None] | None) -> tuple[np.ndarray, np.ndarray]:
        """The `k` nearest of each of `rows`, by blocked matrix products."""
        ids = np.empty((len(rows), k), dtype=np.int64)
        sims = np.empty((len(rows), k), dtype=np.float32)
        block_rows = max(1, min(_BLOCK, _BLOCK_CELLS // len(self.vectors)))
        for start in range(0, len(rows), block_rows):
            chunk = rows[start:start + block_rows]
            block = self.vectors[chunk] @ self.vectors.T
            block[np.arange(len(chunk)), chunk] = -np.inf  # not its own neighbour
            top = np.argpartition(-block, k - 1, axis=1)[:, :k]
            top_sims = np.take_along_axis(block, top, axis=1)
            order = np.argsort(-top_sims, axis=1, kind="stable")
            ids[start:start + len(chunk)] = np.take_along_axis(top, order, axis=1)
            sims[start:start + len(chunk)] = np.take_along_axis(top_sims, order, axis=1)
            if progress:
                progress(len(chunk))
        return ids, sims

    def _approximate(self, progress: Callable[[int], None] | None,
                     skip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # An inverted file (k-means cells, each row searched in its nearest cells) beat HNSW here:
        # at 100,000 rows of 384 dims it built and searched ~6x faster (faiss IVF against usearch
        # HNSW, same machine and load) and found the same top 33.
        import faiss

        n, dim = self.vectors.shape
        cells = max(16, int(2 * np.sqrt(n)))
        chunks = range(0, n, _CHUNK)
        # The rows' steps: a quarter while the index is built (k-means rounds, then adding in
        # chunks: ~3 s at 100,000 rows, then how many cells to read: ~1.5 s), the rest as rows
        # are searched; refined rows count in `_exact`.
        searched = n - len(skip)
        build = _Share(progress, searched // 4, _ROUNDS + len(chunks) + len(range(0, n, _CHECKED_CHUNK)))
        # k-means on a sample, one round per call so that each round is a progress step
        sample = self.vectors[np.sort(np.random.default_rng(0).choice(n, min(n, cells * _PER_CELL), replace=False))]
        centroids: np.ndarray | None = None
        for _ in range(_ROUNDS):
            centroids = spherical_kmeans(sample, cells, rounds=1, start=centroids)
            build.tick()
        assert centroids is not None
        quantizer = faiss.IndexFlatIP(dim)
        quantizer.add(centroids)
        index = faiss.IndexIVFFlat(quantizer, dim, cells, faiss.METRIC_INNER_PRODUCT)
        for start in chunks:
            index.add(self.vectors[start:start + _CHUNK])
            build.tick()
        index.nprobe = self._probes(index, cells, build.tick)
        search = _Share(progress, searched - searched // 4, len(chunks))
        ids = np.empty((n, self.k), dtype=np.int64)
        sims = np.empty((n, self.k), dtype=np.float32)
        for start in chunks:
            found_sims, found_ids = index.search(self.vectors[start:start + _CHUNK], self.k + 1)
            for row in range(len(found_ids)):
                keep = found_ids[row] != start + row
                row_ids, row_sims = found_ids[row][keep][:self.k], found_sims[row][keep][:self.k]
                ids[start + row, :len(row_ids)], ids[start + row, len(row_ids):] = row_ids, -1
                sims[start + row, :len(row_ids)], sims[start + row, len(row_ids):] = row_sims, -np.inf
            search.tick()
        return ids, sims

    def _probes(self, index: Any, cells: int, tick: Callable[[], None]) -> int:
        """The cells a row's search reads: `_PROBES`, doubled until the sample's near rows are found
        (`tick`: after each chunk of rows the sample is compared with)."""
        n = len(self.vectors)
        sample = np.sort(np.random.default_rng(1).choice(n, min(n, _CHECKED_ROWS), replace=False))
        queries = self.vectors[sample]
        best = np.full(len(sample), -np.inf, dtype=np.float32)
        nearest = np.full(len(sample), -1, dtype=np.int64)
        for start in range(0, n, _CHECKED_CHUNK):
            sims = queries @ self.vectors[start:start + _CHECKED_CHUNK].T
            mine = (sample >= start) & (sample < start + len(sims[0]))
            sims[np.flatnonzero(mine), sample[mine] - start] = -np.inf  # not its own neighbour
            top = np.argmax(sims, axis=1)
            better = sims[np.arange(len(sample)), top] > best
            best[better], nearest[better] = sims[better, top[better]], start + top[better]
            tick()
        near = best >= _NEAR
        pairs = np.concatenate([queries[near], self.vectors[nearest[near]]])
        probes = _PROBES
        while near.any() and probes < cells:
            index.nprobe = probes
            _, found = index.search(pairs, self.k + 1)
            either = (found[:near.sum()] == nearest[near][:, None]).any(axis=1) | \
                (found[near.sum():] == sample[near][:, None]).any(axis=1)  # (`_Reverse`: either search will do)
            if either.mean() >= _NEAR_FOUND:
                break
            probes = min(cells, 2 * probes)
        return probes

    def above(self, i: int, threshold: float) -> Iterator[tuple[int, float]]:
        """Rows at or above `threshold` of row `i`, best first, every one of them."""
        return itertools.takewhile(lambda pair: pair[1] >= threshold, self.nearest(i))

    def nearest(self, i: int) -> Iterator[tuple[int, float]]:
        """Every other row, best first: the `k` nearest (found by the index: with the rows whose
        own search found this one), then (only if the caller reads on) the rest by one exact
        matrix-vector product."""
        seen = {i}
        ids, sims_i = self._exact_lists.get(i, (self.ids[i], self.sims[i]))
        if self._found_by is not None and i not in self._exact_lists:
            ids, sims_i = self._found_by.joined(i, ids, sims_i)
        for j, sim in zip(ids, sims_i):
            if j >= 0:
                seen.add(int(j))
                yield int(j), float(sim)
        sims = self.vectors @ self.vectors[i]
        for j in np.argsort(-sims, kind="stable"):
            if int(j) not in seen:
                yield int(j), float(sims[j])


class _Reverse:
    """For each row, the rows whose approximate lists hold it: a pair one search missed is often
    found by the other's (100,000 random rows, pairs planted at cosine 0.91-0.94, 8 cells read:
    0.945 of the pairs in the later row's list, 0.988 in either)."""

    def __init__(self, ids: np.ndarray, sims: np.ndarray) -> None:
        owners = np.repeat(np.arange(len(ids)), ids.shape[1])
        targets, found_sims = ids.ravel(), sims.ravel()
        held = targets >= 0
        order = np.argsort(targets[held], kind="stable")
        self.rows, self.sims = owners[held][order], found_sims[held][order]
        self.starts = np.searchsorted(targets[held][order], np.arange(len(ids) + 1))

    def joined(self, i: int, ids: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row `i`'s own list (`ids`, `sims`, best first) and the rows that found it, best first."""
        start, stop = self.starts[i], self.starts[i + 1]
        if start == stop:
            return ids, sims
        ids, sims = np.concatenate([ids, self.rows[start:stop]]), np.concatenate([sims, self.sims[start:stop]])
        order = np.argsort(-sims, kind="stable")
        ids, sims = ids[order], sims[order]
        first = np.sort(np.unique(ids, return_index=True)[1])  # a row in both lists, once
        return ids[first], sims[first]
