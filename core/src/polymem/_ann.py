"""Approximate vector search for large scopes: an inverted-file index per scope, kept beside the SQLite file.

A scope (one user's memories in one namespace, for one embedding model) of `ANN_ROWS` vectors or
more is searched through a faiss inverted file (`IndexIVFScalarQuantizer`, 8-bit codes) instead of
a scan of every row: the rows are split into about 2·√n k-means cells and a query reads the
`PROBES` cells nearest to it. The index only proposes rows: each proposal is mapped back to the
scope's live rows (a deleted, moved, expired or filtered-out row is dropped) and measured exactly
against the process's float32 copy, so every similarity returned is exact and only the choice of
rows is approximate. When too few proposals survive the filters, the caller scans exactly.

Chosen on this machine against HNSW graphs (faiss HNSW-SQ8, usearch i8, hnswlib) at 100,000 real
embeddings, load 13-14, one thread: the inverted file built in 9.5 s against 84-119 s, searched in
0.12 ms p50 against 0.19-0.64 ms, and found 0.99 of the exact top 10 (graphs 0.95-0.99; see `PROBES`); faiss is
already a dependency (consolidation uses the same index kind). See bench/RESULTS.md.

Persistence: `<file>.ann/<scope key>-<seq>.faiss`, written to a temporary name then renamed; `seq`
is the store's change counter the file reflects. A process that opens it adds the rows written
since (by any process) and the rows it lacks; rows deleted since are dropped by the mapping above.
A missing or unreadable file is rebuilt in a background thread while searches stay exact.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._sqlite import _ScopeBlock, _VectorCache

# A scope this large takes about a millisecond to scan exactly (int8 shortlist at 100k rows
# ~2.2 ms on this machine unloaded): above it, the index answers.
ANN_ROWS = 50_000
# Cells read per query. On bench_alternatives' 100k embeddings (bench_ann_candidates.py) the
# index alone found 0.86 / 0.96 / 0.98 of the exact top 10 with 8 / 16 / 32 (0.86 / 0.97 / 0.996 in its
# top 100) for 0.13 / 0.16 / 0.27 ms.
PROBES = 32
FETCH_MARGIN = 128  # proposals beyond those wanted (see `ScopeIndex.best`)
MAX_OVERFETCH = 8  # a filter keeping under 1/8 of the scope: exact search (gathering those rows is cheap)
DEAD_SHARE = 0.25  # rebuild once a quarter of the indexed entries are deleted or superseded rows
GROWTH = 4  # rebuild (retrain the cells) once the scope is 4x the rows the cells were trained on
SAVE_AFTER = 0.01  # on close, save again if this share of the rows changed since the file
_CHUNK = 50_000
_FORMAT = "ivfsq8-v1"


def _new_index(vectors: np.ndarray) -> Any:
    """An empty inverted file whose cells and 8-bit ranges are trained on `vectors`."""
    import faiss

    n, dim = vectors.shape
    cells = max(16, int(2 * np.sqrt(n)))
    kmeans = faiss.Kmeans(dim, cells, niter=10, spherical=True, seed=1234, min_points_per_centroid=16)
    kmeans.train(vectors)
    quantizer = faiss.IndexFlatIP(dim)
    centroids: np.ndarray = np.asarray(kmeans.centroids, dtype=np.float32)
    quantizer.add(centroids)
    index = faiss.IndexIVFScalarQuantizer(quantizer, dim, cells, faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    index.nprobe = PROBES
    return index


class ScopeIndex:
    """The index of one scope's block: proposes rows; `pending` rows are added before the next search."""

    def __init__(self, owner: Indexes, key: str, block: _ScopeBlock, cache: _VectorCache) -> None:
        self.owner, self.key, self.block, self.cache = owner, key, block, cache
        self.index: Any = None
        self.trained_rows = 0
        self.held = 0  # entries added (live, deleted or superseded)
        self.dead = 0  # entries whose row was deleted or re-added since
        self.pending: set[int] = set()
        self.noted_while_building: set[int] = set()
        self.saved_seq = -1
        self.changed_since_save = 0
        self.build_seconds: float | None = None
        self.builder: threading.Thread | None = None
        self.mutex = threading.Lock()  # faiss index: adds, searches and writes one at a time

    @property
    def ready(self) -> bool:
        return self.index is not None

    # -- changes (called with the store's lock held) ------------------------------------------
    def changed(self, rowids: list[int]) -> None:
        """Rows new to the block, or written again (then `dropped` first)."""
        self.pending.update(rowids)
        if self.builder is not None:
            self.noted_while_building.update(rowids)
        self.changed_since_save += len(rowids)

    def dropped(self) -> None:
        self.dead += 1
        self.changed_since_save += 1

    # -- search (store lock held) -------------------------------------------------------------
    def best(self, block: _ScopeBlock, query: np.ndarray, mask: np.ndarray | None, kept: int,
             limit: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Slots and exact products of the best `limit` rows `mask` keeps, or None: search exactly."""
        if self.index is None or kept * MAX_OVERFETCH < block.size or not self.held:
            return None
        self._catch_up(block)
        self._maybe_rebuild(block)
        n = block.size
        wanted = min(limit, kept)
        # 8-bit codes misorder near-duplicates (a memory saved in many wordings): fetch a margin
        # beyond the rows wanted, to be measured exactly (at 100k real embeddings, 10 + 18 rows
        # found 0.93 of the exact top 10)
        fetch = min(self.held, int(wanted * n / kept * 1.25) + FETCH_MARGIN)
        with self.mutex:
            _, labels = self.index.search(np.ascontiguousarray(query[None, :], dtype=np.float32), fetch)
        get = block.slots.get
        slots = np.fromiter((get(label, -1) for label in labels[0].tolist()), dtype=np.int64, count=fetch)
        slots = np.unique(slots[slots >= 0])  # duplicates: a row re-added after a change of vector
        if mask is not None:
            slots = slots[mask[slots]]
        if len(slots) < wanted:
            return None
        # a few hundred rows: one small product (`_scan.products`' thread-limit context costs more)
        sims = block.matrix[slots] @ np.asarray(query, dtype=np.float32)
        if len(sims) > limit:
            top = np.argpartition(-sims, limit)[:limit]
            slots, sims = slots[top], sims[top]
        return slots, sims

    def _catch_up(self, block: _ScopeBlock) -> None:
        if not self.pending:
            return
        slots = np.fromiter((s for r in self.pending if (s := block.slots.get(r)) is not None), dtype=np.int64)
        self.pending.clear()
        if len(slots):
            with self.mutex:
                self.index.add_with_ids(np.ascontiguousarray(block.matrix[slots]), block.rowids[slots].copy())
            self.held += len(slots)

    def _maybe_rebuild(self, block: _ScopeBlock) -> None:
        if self.builder is None and (self.dead > DEAD_SHARE * self.held
                                     or block.size > GROWTH * self.trained_rows):
            self.start_build(block)

    # -- building, loading, saving ------------------------------------------------------------
    def start_build(self, block: _ScopeBlock) -> None:
        """Build a new index from the block in a background thread; searches use the old one (or
        scan exactly) until it is done."""
        self.builder = threading.Thread(target=self._build, args=(block,), name="polymem-ann-build", daemon=True)
        self.builder.start()

    def _build(self, block: _ScopeBlock) -> None:
        lock = self.owner.lock
        started = time.perf_counter()
        try:
            with lock:
                n = block.size
                if self.owner.closed or n == 0:
                    return
                step = max(1, n // 65_536)  # train on a spread sample of at most 64k rows
                sample = np.ascontiguousarray(block.matrix[:n:step])
                self.noted_while_building.clear()
            index = _new_index(sample)
            del sample
            added, start = [], 0
            while True:
                with lock:
                    if self.owner.closed:
                        return
                    if start >= block.size:
                        break
                    ids = block.rowids[start:start + _CHUNK].copy()
                    vectors = np.ascontiguousarray(block.matrix[start:start + _CHUNK])
                index.add_with_ids(vectors, ids)
                added.append(ids)
                start += len(ids)
            held = np.concatenate(added) if added else np.zeros(0, dtype=np.int64)
            with lock:
                # rows a delete moved into a slot already read, and rows changed meanwhile
                live = block.rowids[: block.size]
                self.pending = self.noted_while_building | set(live[~np.isin(live, held)].tolist())
                with self.mutex:
                    self.index = index
                self.held, self.dead, self.trained_rows = len(held), 0, n
                self._catch_up(block)
                seq = self.cache.seq
            self.build_seconds = time.perf_counter() - started
            self.save(seq)
        finally:
            self.builder = None

    def load(self, conn: sqlite3.Connection, block: _ScopeBlock, scope: tuple[str, str | None],
             model_id: str | None) -> bool:
        """Take in the newest saved index of this scope, brought up to date; False when there is
        none or it cannot be read (then it is deleted)."""
        import faiss

        for path, seq in self.owner.files(self.key):
            try:
                index = faiss.read_index(str(path))
                if index.d != block.matrix.shape[1] or not isinstance(index, faiss.IndexIVFScalarQuantizer):
                    raise ValueError("another kind of index")
            except (RuntimeError, ValueError, OSError):
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            index.nprobe = PROBES
            ids = _ids(index)
            live = block.rowids[: block.size]
            present = np.isin(live, ids)
            changed = [row[0] for row in conn.execute(
                "SELECT rowid FROM memories WHERE seq > ? AND namespace = ? AND user_id IS ? AND status = 'active' "
                "AND embedding_model IS ?", (seq, scope[0], scope[1], model_id))]
            self.pending.update(live[~present].tolist())
            self.pending.update(changed)
            self.index, self.held = index, len(ids)
            self.dead = int(np.count_nonzero(~np.isin(ids, live))) + len(changed)
            self.trained_rows = len(ids)
            self.saved_seq = seq
            return True
        return False

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
            os.replace(temporary, final)
            self.saved_seq, self.changed_since_save = seq, 0
            for older, older_seq in self.owner.files(self.key):
                if older_seq < seq:
                    with contextlib.suppress(OSError):
                        older.unlink()


def _ids(index: Any) -> np.ndarray:
    """Every id an inverted file holds."""
    import faiss

    invlists = index.invlists
    parts = [faiss.rev_swig_ptr(invlists.get_ids(c), invlists.list_size(c)).copy()
             for c in range(index.nlist) if invlists.list_size(c)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class Indexes:
    """The approximate indexes of one store's scopes: in `folder` (None: kept in memory only)."""

    def __init__(self, folder: Path | None, lock: Any, read_only: bool) -> None:
        self.folder, self.lock, self.read_only = folder, lock, read_only
        self.closed = False
        self.scopes: dict[tuple[str | None, str, str | None], ScopeIndex] = {}

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
        """Give every block of `ANN_ROWS` rows or more its index: loaded from its file, else built
        in the background (called with the store's lock held, after the cache is current)."""
        for (namespace, user_id), block in cache.blocks.items():
            if block.ann is not None or block.size < ANN_ROWS:
                continue
            scope = (cache.model_id, namespace, user_id)
            key = hashlib.sha256(f"{_FORMAT}\x00{scope!r}".encode()).hexdigest()[:24]
            ann = self.scopes[scope] = block.ann = ScopeIndex(self, key, block, cache)
            if not ann.load(conn, block, (namespace, user_id), cache.model_id):
                ann.start_build(block)

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
                scope._catch_up(scope.block)
                seq = scope.cache.seq
            scope.save(seq)
