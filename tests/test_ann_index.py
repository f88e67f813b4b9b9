"""Large scopes are searched through an approximate index kept beside the SQLite file (`polymem._ann`)."""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import faiss
import numpy as np
import pytest

import polymem
from polymem import _ann
from polymem._sqlite import SQLiteBackend, _ScopeBlock
from polymem.testing import FakeClock

ROWS = 6_000  # the tests lower the threshold to 3,000 rows: the index is built in about a second
DIMENSION = 32


class VectorTable:
    """An embedder for tests that only pass precomputed vectors."""

    model_id = "test/clustered-vectors"
    dimension = DIMENSION

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dimension - 1) for _ in texts]


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors in 60 clusters with noise, as sentence embeddings of related memories are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, DIMENSION))
    vectors = centres[rng.integers(0, 60, n)] + rng.normal(0, 0.35, (n, DIMENSION))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ann, "ANN_ROWS", 3_000)


def open_store(path: Path) -> polymem.Memory:
    return polymem.open(f"sqlite:///{path}", embedder=VectorTable(), clock=FakeClock())


def filled(path: Path, vectors: np.ndarray, user_id: str = "u") -> tuple[polymem.Memory, list[str]]:
    mem = open_store(path)
    records = mem.save_many([polymem.MemoryDraft(f"memory {user_id} {i}") for i in range(len(vectors))],
                            user_id=user_id, vectors=vectors)
    return mem, [r.memory_id for r in records]


def indexed(mem: polymem.Memory, user_id: str = "u") -> _ann.ScopeIndex:
    """The scope's index, built: the first search starts the build, searches stay exact until it is done."""
    mem.nearest(np.ones(DIMENSION, dtype=np.float32), user_id=user_id, top_k=1)
    indexes(mem).wait(120)
    (scope,) = [s for key, s in indexes(mem).scopes.items() if key[2] == user_id]
    assert scope.ready
    return scope


def indexes(mem: polymem.Memory) -> _ann.Indexes:
    assert isinstance(mem.backend, SQLiteBackend)
    return mem.backend.indexes


def index_files(db: Path) -> list[Path]:
    return sorted(db.with_name(db.name + ".ann").glob("*.faiss"))


def test_the_index_finds_at_least_95_percent_of_the_exact_top_10(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=1)
    mem, ids = filled(tmp_path / "m.db", vectors)
    indexed(mem)
    assert share_of_exact_top_10(mem, vectors, ids, clustered(40, seed=2)) >= 0.95
    mem.close()


def drawn_at_random(n: int, seed: int) -> np.ndarray:
    """Unit vectors drawn at random: no row has near neighbours to speak of."""
    vectors = np.random.default_rng(seed).normal(size=(n, DIMENSION))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def share_of_exact_top_10(mem: polymem.Memory, vectors: np.ndarray, ids: list[str], queries: np.ndarray) -> float:
    shares = []
    for query in queries:
        exact = {ids[i] for i in np.argsort(-(vectors @ query))[:10]}
        found = {record.memory_id for record, _ in mem.nearest(query, user_id="u", top_k=10)}
        shares.append(len(exact & found) / 10)
    return float(np.mean(shares))


def test_an_index_of_rows_without_near_neighbours_reads_more_cells_and_still_finds_95_percent(tmp_path: Path) -> None:
    vectors = drawn_at_random(ROWS, seed=40)
    mem, ids = filled(tmp_path / "m.db", vectors)
    scope = indexed(mem)
    assert scope.cells_read > _ann.PROBES
    assert share_of_exact_top_10(mem, vectors, ids, drawn_at_random(40, seed=41)) >= 0.95
    mem.close()


def test_an_index_that_cannot_find_enough_of_the_nearest_is_not_searched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ann, "TARGET_FOUND", 1.01)  # more than reading every cell finds
    vectors = clustered(ROWS, seed=42)
    mem, ids = filled(tmp_path / "m.db", vectors)
    mem.nearest(vectors[0], user_id="u", top_k=1)
    indexes(mem).wait(120)
    (scope,) = indexes(mem).scopes.values()
    assert scope.index is not None and not scope.ready
    assert share_of_exact_top_10(mem, vectors, ids, clustered(20, seed=43)) == 1.0  # searched exactly
    mem.close()
    reopened = open_store(tmp_path / "m.db")  # the measure is kept with the file: not built again
    reopened.nearest(vectors[0], user_id="u", top_k=1)
    indexes(reopened).wait(120)
    (scope,) = indexes(reopened).scopes.values()
    assert scope.index is not None and scope.build_seconds is None and not scope.ready
    reopened.close()


def test_similarities_from_the_index_are_exact(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=3)
    mem, ids = filled(tmp_path / "m.db", vectors)
    indexed(mem)
    by_id = dict(zip(ids, vectors))
    query = clustered(1, seed=4)[0]
    for record, similarity in mem.nearest(query, user_id="u", top_k=10):
        assert similarity == pytest.approx(float(by_id[record.memory_id] @ query), abs=1e-5)
    mem.close()


def test_deleted_and_other_users_memories_are_never_returned(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=5)
    mem, ids = filled(tmp_path / "m.db", vectors)
    others = {r.memory_id for r in mem.save_many(  # the same vectors, another user: the best matches there
        [polymem.MemoryDraft(f"someone else's {i}") for i in range(ROWS)], user_id="v", vectors=vectors)}
    indexed(mem)
    queries = vectors[:30]
    deleted = set()
    for query in queries:  # each query's own best match, and the next best, are deleted
        for record, _ in mem.nearest(query, user_id="u", top_k=2):
            mem.delete(record.memory_id)
            deleted.add(record.memory_id)
    for query in queries:
        found = {record.memory_id for record, _ in mem.nearest(query, user_id="u", top_k=10)}
        assert len(found) == 10
        assert not found & deleted
        assert not found & others
    mem.close()


def test_a_memory_re_embedded_after_the_build_is_found_by_its_new_vector(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=14)
    mem, ids = filled(tmp_path / "m.db", vectors)
    scope = indexed(mem)
    mem.update(ids[7], content="re-embedded by the store's embedder")
    new = np.array(VectorTable().embed(["anything"])[0], dtype=np.float32)
    found = mem.nearest(new, user_id="u", top_k=1)
    assert found[0][0].memory_id == ids[7]
    assert found[0][1] == pytest.approx(1.0)
    assert scope.best(scope.rows, new, None, scope.rows.size, 1) is not None  # answered by the index
    mem.close()


def test_a_memory_unlike_the_others_is_proposed_by_every_search_and_by_another_process_reading_the_file(
        tmp_path: Path) -> None:
    """Codes trained on clustered rows describe a row far from all of them badly: it would not be
    proposed. It is kept as an outlier, proposed by every search, in this process and in one that
    reads the saved index."""
    db = tmp_path / "m.db"
    vectors = clustered(ROWS, seed=16)
    mem, _ = filled(db, vectors)
    scope = indexed(mem)
    unlike = np.zeros(DIMENSION, dtype=np.float32)
    unlike[0] = 1.0
    odd = mem.save("a memory unlike every other", user_id="u", vector=unlike).memory_id
    assert mem.nearest(unlike, user_id="u", top_k=1)[0][0].memory_id == odd
    assert scope.best(scope.rows, unlike, None, scope.rows.size, 1) is not None  # answered by the index
    assert len(scope.outliers) >= 1
    scope.save(scope.cache.seq)  # the file holds the memory, and its outliers say so
    mem.close()

    reader = open_store(db)
    assert reader.nearest(unlike, user_id="u", top_k=1)[0][0].memory_id == odd
    loaded = indexed(reader)
    assert loaded.build_seconds is None  # read from the file, not built again
    assert loaded.best(loaded.rows, unlike, None, loaded.rows.size, 1) is not None
    reader.close()


def saved_index(db: Path, seed: int) -> Path:
    """The index file of a store of `ROWS` clustered memories, built, saved and closed."""
    mem, _ = filled(db, clustered(ROWS, seed=seed))
    indexed(mem)
    mem.close()
    (saved,) = index_files(db)
    return saved


def outliers_of(index_file: Path) -> Path:
    return index_file.with_name(index_file.stem + ".outliers.npz")


def built_again(db: Path) -> bool:
    """Whether a process opening `db` builds the index again rather than reading its file."""
    mem = open_store(db)
    try:
        return indexed(mem).build_seconds is not None
    finally:
        mem.close()


def test_an_index_file_without_its_outliers_is_built_again(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    outliers = outliers_of(saved_index(db, seed=17))
    assert outliers.exists()
    outliers.unlink()
    assert built_again(db)
    (rebuilt,) = index_files(db)
    assert outliers_of(rebuilt).exists()


def test_an_index_file_beside_the_outliers_of_another_build_is_built_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes saving one scope at once can leave one's index file beside the other's
    outliers; built from rows in another order, their cells and codes differ. Such a pair is not read."""
    db = tmp_path / "m.db"
    saved = saved_index(db, seed=18)
    first_build = saved.read_bytes()
    saved.unlink()
    sample = _ann._training_sample
    with monkeypatch.context() as other_order:  # another process holds the rows in another order
        other_order.setattr(_ann, "_training_sample", lambda parts, n: sample(parts, n)[::-1][::2])
        assert built_again(db)
    (second,) = index_files(db)
    assert second.name == saved.name  # the same scope at the same change count
    second.write_bytes(first_build)  # the first build's index beside the second's outliers
    assert built_again(db)


def test_an_outliers_file_saved_before_fingerprints_is_read(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    outliers = outliers_of(saved_index(db, seed=19))
    with np.load(outliers) as kept:
        loss_limit, rows = kept["loss_limit"], kept["outliers"]
    with open(outliers, "wb") as out:
        np.savez(out, loss_limit=loss_limit, outliers=rows)
    assert not built_again(db)


def test_an_index_file_saved_before_its_search_was_measured_is_measured_when_read(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    outliers = outliers_of(saved_index(db, seed=44))
    with np.load(outliers) as kept:
        written_then = {name: kept[name] for name in ("loss_limit", "outliers", "fingerprint")}
    with open(outliers, "wb") as out:
        np.savez(out, **written_then)
    mem = open_store(db)
    scope = indexed(mem)
    assert scope.build_seconds is None  # read, not built again
    assert scope.cells_read >= _ann.PROBES and scope.found >= _ann.TARGET_FOUND
    mem.close()
    (saved,) = index_files(db)
    with np.load(outliers_of(saved)) as kept:  # and saved with its measure when the store closes
        assert int(kept["cells_read"]) == scope.cells_read and int(kept["margin"]) == scope.margin


def test_proposed_rows_are_mapped_to_the_slots_holding_them_after_deletes_and_saves(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=15)
    mem, ids = filled(tmp_path / "m.db", vectors)
    scope = indexed(mem)
    block = scope.rows
    assert isinstance(block, _ScopeBlock)
    before = block.rowids[:block.size].copy()
    for memory_id in ids[:40:2]:  # a delete moves the block's last row into the hole
        mem.delete(memory_id)
    mem.save_many([polymem.MemoryDraft(f"later {i}") for i in range(30)], user_id="u", vectors=clustered(30, seed=16))
    mem.nearest(vectors[0], user_id="u", top_k=1)  # the cache reads the changes
    labels = np.concatenate([before, block.rowids[:block.size], [-1, 10**9]]).astype(np.int64)
    held = {int(rowid): slot for slot, rowid in enumerate(block.rowids[:block.size].tolist())}
    assert scope._slots(block, labels).tolist() == [held.get(int(label), -1) for label in labels]
    mem.close()


def test_a_filter_is_applied_exactly_to_what_the_index_proposes(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=6)
    mem = open_store(tmp_path / "m.db")
    mem.save_many([polymem.MemoryDraft(f"memory {i}", category="odd" if i % 2 else "even")
                   for i in range(ROWS)], user_id="u", vectors=vectors)
    indexed(mem)
    for query in clustered(10, seed=7):
        found = mem.nearest(query, user_id="u", top_k=10, category="odd")
        assert len(found) == 10
        assert {record.category for record, _ in found} == {"odd"}
    mem.close()


def test_a_second_process_sees_the_first_ones_writes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    vectors = clustered(ROWS, seed=8)
    mem, _ = filled(db, vectors)
    indexed(mem)
    assert index_files(db)  # saved for the next process
    newcomer = clustered(1, seed=9)[0]
    np.save(tmp_path / "newcomer.npy", newcomer)
    script = textwrap.dedent(f"""
        import numpy as np, polymem
        from polymem import _ann
        from tests.test_ann_index import VectorTable, indexes
        _ann.ANN_ROWS = 3_000
        mem = polymem.open("sqlite:///{db}", embedder=VectorTable())
        vector = np.load("{tmp_path / 'newcomer.npy'}")
        mem.nearest(vector, user_id="u", top_k=1)  # loads the index file the first process wrote
        assert all(s.ready for s in indexes(mem).scopes.values()), "the saved index was not loaded"
        mem.save("written by the second process", user_id="u", vector=vector)
        assert mem.nearest(vector, user_id="u", top_k=1)[0][0].content == "written by the second process"
        mem.close()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parent.parent)
    assert mem.nearest(newcomer, user_id="u", top_k=1)[0][0].content == "written by the second process"
    mem.close()


@pytest.mark.parametrize("damage", ["truncated", "deleted"])
def test_a_damaged_or_missing_index_file_is_rebuilt(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "m.db"
    mem, _ = filled(db, clustered(ROWS, seed=10))
    indexed(mem)
    mem.close()
    (saved,) = index_files(db)
    if damage == "truncated":  # as by a crash mid-copy
        saved.write_bytes(saved.read_bytes()[:1000])
    else:
        saved.unlink()
    mem = open_store(db)
    indexed(mem)
    (rebuilt,) = index_files(db)
    assert faiss.read_index(str(rebuilt)).ntotal == ROWS
    mem.close()


def test_small_scopes_are_searched_exactly_without_an_index(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    vectors = clustered(2_000, seed=12)
    mem, ids = filled(db, vectors)
    for query in clustered(5, seed=13):
        found = [record.memory_id for record, _ in mem.nearest(query, user_id="u", top_k=10)]
        assert found == [ids[i] for i in np.argsort(-(vectors @ query))[:10]]
    indexes(mem).wait(10)
    assert not indexes(mem).scopes
    assert not index_files(db)
    mem.close()


# -- a recall over every user of a namespace: the span's index -------------------------------------------
def spread(path: Path, vectors: np.ndarray, users: int, namespace: str = "default",
           clock: FakeClock | None = None) -> tuple[polymem.Memory, list[str]]:
    """The vectors saved over `users` users (row i for user i % users), none of whom reaches the threshold."""
    mem = polymem.open(f"sqlite:///{path}", embedder=VectorTable(), clock=clock or FakeClock(), namespace=namespace)
    ids = [""] * len(vectors)
    for user in range(users):
        rows = range(user, len(vectors), users)
        for i, record in zip(rows, mem.save_many([polymem.MemoryDraft(f"memory {namespace} {i}") for i in rows],
                                                 user_id=f"u{user}", vectors=vectors[list(rows)])):
            ids[i] = record.memory_id
    return mem, ids


def span_indexed(mem: polymem.Memory) -> _ann.ScopeIndex:
    """The namespace's index over every user, built (the first recall over every user starts it)."""
    mem.nearest(np.ones(DIMENSION, dtype=np.float32), user_id=None, top_k=1)
    indexes(mem).wait(120)
    (scope,) = [s for key, s in indexes(mem).scopes.items() if key[3]]
    assert scope.ready
    return scope


def test_a_recall_over_every_user_reads_one_index_of_the_namespace(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=20)
    mem, ids = spread(tmp_path / "m.db", vectors, users=4)  # 1,500 rows a user: no user's scope has an index
    scope = span_indexed(mem)
    assert not [key for key in indexes(mem).scopes if not key[3]]
    assert isinstance(scope.rows, _ann.Span)
    assert scope.rows.best(clustered(1, seed=21)[0], 0, 10) is not None  # answered by the index
    shares = []
    for query in clustered(40, seed=22):
        exact = {ids[i] for i in np.argsort(-(vectors @ query))[:10]}
        found = mem.nearest(query, user_id=None, top_k=10)
        by_id = dict(zip(ids, vectors))
        for record, similarity in found:  # exact similarities
            assert similarity == pytest.approx(float(by_id[record.memory_id] @ query), abs=1e-5)
        shares.append(len(exact & {record.memory_id for record, _ in found}) / 10)
    assert np.mean(shares) >= 0.95
    mem.close()


def test_a_recall_over_every_user_never_returns_a_deleted_or_another_namespaces_memory(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    vectors = clustered(ROWS, seed=23)
    mem, _ = spread(db, vectors, users=3)
    other, _ = spread(db, vectors, users=3, namespace="other")  # the same vectors: the best matches there
    others = {record.memory_id for record in other.list(limit=ROWS)}
    span_indexed(mem)
    span_indexed(other)
    queries = vectors[:30]
    deleted = set()
    for query in queries:  # each query's own best match, and the next best, are deleted
        for record, _ in mem.nearest(query, user_id=None, top_k=2):
            mem.delete(record.memory_id)
            deleted.add(record.memory_id)
    for query in queries:
        found = {record.memory_id for record, _ in mem.nearest(query, user_id=None, top_k=10)}
        assert len(found) == 10
        assert not found & deleted
        assert not found & others
    mem.close()
    other.close()


def test_a_memory_saved_after_the_build_is_found_by_a_recall_over_every_user(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    mem, _ = spread(db, clustered(ROWS, seed=24), users=3)
    span_indexed(mem)
    assert index_files(db)  # saved for the next process
    newcomer = clustered(1, seed=25)[0]
    writer = open_store(db)  # another store on the file: this process learns of its write from the file
    writer.save("written by another store, for a new user", user_id="newcomer", vector=newcomer)
    writer.close()
    found = mem.nearest(newcomer, user_id=None, top_k=1)
    assert found[0][0].content == "written by another store, for a new user"
    mem.close()
    reopened = open_store(db)
    scope = span_indexed(reopened)
    assert scope.build_seconds is None  # read from its file, not built again
    assert reopened.nearest(newcomer, user_id=None, top_k=1)[0][0].content == "written by another store, for a new user"
    reopened.close()


def test_a_row_proposed_twice_over_every_user_is_measured_once(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    vectors = clustered(ROWS, seed=30)
    mem, ids = spread(db, vectors, users=3)
    other, _ = spread(db, vectors[:50], users=1, namespace="other")
    scope = span_indexed(mem)
    mem.update(ids[8], content="re-embedded: the index holds its old entry and its new one")
    with sqlite3.connect(db) as conn:
        rowid = {memory_id: r for memory_id, r in conn.execute("SELECT memory_id, rowid FROM memories")}
        foreign = conn.execute("SELECT rowid FROM memories WHERE namespace = 'other'").fetchone()[0]
    proposed = np.array([rowid[ids[8]], rowid[ids[9]], rowid[ids[8]], -1, foreign, rowid[ids[9]]], dtype=np.int64)
    found, _, _ = scope.rows._places(proposed)
    assert found.tolist() == [rowid[ids[8]], rowid[ids[9]]]
    query = np.array(VectorTable().embed(["anything"])[0], dtype=np.float32)
    nearest = [record.memory_id for record, _ in mem.nearest(query, user_id=None, top_k=10)]
    assert nearest[0] == ids[8] and len(set(nearest)) == 10
    mem.close()
    other.close()


def test_a_recall_over_every_user_never_returns_an_expired_memory(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    vectors = clustered(ROWS, seed=26)
    clock = FakeClock()
    mem, _ = spread(db, vectors, users=3, clock=clock)
    span_indexed(mem)
    queries = clustered(10, seed=27)
    expiring = {mem.save(f"expires soon {i}", user_id="u9", vector=query,
                         expire_at=clock.now + timedelta(minutes=1)).memory_id for i, query in enumerate(queries)}
    before = [{record.memory_id for record, _ in mem.nearest(query, user_id=None, top_k=10)} for query in queries]
    assert all(found & expiring for found in before)  # the best matches while they live
    clock.advance(minutes=2)
    for query in queries:
        found = {record.memory_id for record, _ in mem.nearest(query, user_id=None, top_k=10)}
        assert len(found) == 10
        assert not found & expiring
    mem.close()


def test_a_query_first_reads_the_same_number_of_cells_however_large_the_index() -> None:
    assert _ann.probes(632) == _ann.probes(2_000) == _ann.PROBES
    assert _ann.probes(20) == 20  # never more cells than the index has


def test_cells_lie_as_close_to_their_rows_as_faisss_own_k_means_puts_them() -> None:
    """Over five draws of the starting rows (one draw may land in a poorer local optimum than
    another, for either)."""
    vectors = clustered(ROWS, seed=24)

    def closeness(centres: np.ndarray) -> float:
        return float((vectors @ centres.T).max(axis=1).mean())

    ours, theirs = [], []
    for seed in range(5):
        centres = _ann.spherical_kmeans(vectors, 64, seed=seed)
        np.testing.assert_allclose(np.linalg.norm(centres, axis=1), 1.0, rtol=1e-5)
        ours.append(closeness(centres))
        kmeans = faiss.Kmeans(DIMENSION, 64, niter=10, spherical=True, seed=seed, min_points_per_centroid=16)
        kmeans.train(vectors)
        theirs.append(closeness(kmeans.centroids))
    assert np.mean(ours) >= np.mean(theirs) - 0.005


def test_k_means_with_more_cells_than_distinct_rows_gives_every_cell_a_centre() -> None:
    """Cells left empty take half of the largest one: every centre is a unit vector, none is lost."""
    rows = np.repeat(np.eye(DIMENSION, dtype=np.float32)[:3], 20, axis=0)
    centres = _ann.spherical_kmeans(rows, 6)
    assert centres.shape == (6, DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(centres, axis=1), 1.0, rtol=1e-5)
    assert set(_ann._nearest_cells(centres, rows).tolist()) <= set(range(6))
    assert len(set(_ann._nearest_cells(centres, np.eye(DIMENSION, dtype=np.float32)[:3]).tolist())) == 3


def test_an_index_is_built_on_one_faiss_thread_leaving_the_callers_threads_alone(tmp_path: Path) -> None:
    """faiss's OpenMP threads spin on busy cores: the background build uses one, for itself only.
    In a child process where OpenMP's default is two threads (`make test` sets one for itself)."""
    script = textwrap.dedent(f"""
        from pathlib import Path
        import faiss
        from polymem import _ann
        from tests.test_ann_index import ROWS, clustered, filled, indexed

        seen = []

        class Watched(_ann._Filling):
            def __init__(self, vectors, cells):
                seen.append(faiss.omp_get_max_threads())  # in the build's thread
                super().__init__(vectors, cells)

        _ann.ANN_ROWS, _ann._Filling = 3_000, Watched
        before = faiss.omp_get_max_threads()
        assert before == 2, before
        mem, _ = filled(Path("{tmp_path / 'm.db'}"), clustered(ROWS, seed=26))
        indexed(mem)
        assert seen == [1], seen
        assert faiss.omp_get_max_threads() == before
        mem.close()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parent.parent,
                   env={**os.environ, "OMP_NUM_THREADS": "2"})


def test_a_built_index_holds_the_codes_faiss_itself_gives_the_rows() -> None:
    """The build codes the rows itself, a chunk at a time, and lays them out for fast scan: the
    index answers as one faiss filled with its own `add` does, to the last bit of every product."""
    vectors = clustered(ROWS, seed=21)
    ids = np.arange(ROWS, dtype=np.int64) * 3 + 1
    filling = _ann._Filling(vectors[:4_000], 64)
    by_faiss = faiss.IndexIVFPQFastScan(filling.plain)  # the same trained cells and codes, still empty
    by_faiss.add_with_ids(vectors, ids)
    filling.add(vectors[:2_500], ids[:2_500])
    filling.add(vectors[2_500:], ids[2_500:])
    built, held, _ = filling.index()
    assert isinstance(built, faiss.IndexIVFPQFastScan) and built.ntotal == ROWS
    np.testing.assert_array_equal(held, ids)
    queries = clustered(20, seed=22)
    built.nprobe = by_faiss.nprobe = 64  # every cell: every row's product compared
    found, expected = built.search(queries, ROWS), by_faiss.search(queries, ROWS)
    for got, got_ids, want, want_ids in zip(*found, *expected):
        assert dict(zip(got_ids.tolist(), got.tolist())) == dict(zip(want_ids.tolist(), want.tolist()))


def test_a_built_index_gives_each_row_the_code_loss_of_its_cell() -> None:
    vectors = clustered(ROWS, seed=23)
    filling = _ann._Filling(vectors[:4_000], 64)
    filling.add(vectors, np.arange(ROWS, dtype=np.int64))
    built, _, losses = filling.index()
    cells = built.quantizer.assign(vectors, 1).ravel()
    np.testing.assert_array_equal(losses, _ann.code_losses(built, vectors, cells))


def test_a_larger_scope_is_split_into_more_cells_of_at_least_32_sampled_rows() -> None:
    assert _ann.cell_count(100_000) == 632
    assert _ann.cell_count(1_000_000) == 2_000
    assert _ann.cell_count(10_000_000) == _ann.TRAINING_ROWS // 32
    assert _ann.cell_count(100) == 16


def test_cells_are_trained_on_a_random_sample_not_on_every_kth_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ann, "TRAINING_ROWS", 1_000)
    # rows saved in a repeating pattern of 4: every 4th row would all be of the first kind
    first = SimpleNamespace(matrix=np.arange(2_000, dtype=np.float32)[:, None] % 4, rowids=np.arange(2_000),
                            size=2_000)
    second = SimpleNamespace(matrix=np.arange(2_000, dtype=np.float32)[:, None] % 4,
                             rowids=np.arange(2_000, 4_000), size=2_000)
    sample = _ann._training_sample([first, second], 4_000)
    assert len(sample) == 1_000
    kinds = np.bincount(sample[:, 0].astype(int), minlength=4) / len(sample)
    assert kinds.min() > 0.2
    assert np.array_equal(sample, _ann._training_sample([first, second], 4_000))  # the same for the same rows


def test_an_index_saved_with_too_few_cells_is_rebuilt_with_more(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "m.db"
    wanted = _ann.cell_count(ROWS)
    with monkeypatch.context() as older:  # as an earlier version built it
        older.setattr(_ann, "cell_count", lambda rows: 16)
        mem, _ = filled(db, clustered(ROWS, seed=13))
        indexed(mem)
        mem.close()
    (saved,) = index_files(db)
    assert faiss.read_index(str(saved)).nlist == 16
    mem = open_store(db)
    indexed(mem)
    (rebuilt,) = index_files(db)
    assert faiss.read_index(str(rebuilt)).nlist == wanted
    mem.close()


@pytest.mark.parametrize("earlier", ["scalar", "rabitq"])
def test_an_index_of_an_earlier_kind_is_replaced_by_one_of_fast_scan_codes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, earlier: str) -> None:
    db = tmp_path / "m.db"

    class AsEarlierVersionsBuiltIt:
        """An index of an earlier kind, filled by faiss, without outliers."""

        def __init__(self, vectors: np.ndarray, cells: int) -> None:
            quantizer = faiss.IndexFlatIP(vectors.shape[1])
            quantizer.add(vectors[:cells])
            if earlier == "scalar":
                self.built = faiss.IndexIVFScalarQuantizer(quantizer, vectors.shape[1], cells,
                                                           faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
            else:
                self.built = faiss.IndexIVFRaBitQ(quantizer, vectors.shape[1], cells, faiss.METRIC_INNER_PRODUCT,
                                                  True, 2)
            self.built.train(vectors)
            self.built.nprobe = _ann.probes(cells)
            self.ids: list[np.ndarray] = []

        def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
            self.built.add_with_ids(vectors, ids)
            self.ids.append(ids)

        def index(self) -> tuple[faiss.Index, np.ndarray, np.ndarray]:
            ids = np.concatenate(self.ids)
            return self.built, ids, np.zeros(len(ids), dtype=np.float32)

    with monkeypatch.context() as older:
        older.setattr(_ann, "_Filling", AsEarlierVersionsBuiltIt)
        mem, _ = filled(db, clustered(ROWS, seed=14))
        indexed(mem)
        mem.close()
    (saved,) = index_files(db)
    assert not isinstance(faiss.read_index(str(saved)), faiss.IndexIVFPQFastScan)
    mem = open_store(db)
    indexed(mem)
    (rebuilt,) = index_files(db)  # the same name: the older file is not left behind
    assert rebuilt.name == saved.name
    index = faiss.read_index(str(rebuilt))
    assert isinstance(index, faiss.IndexIVFPQFastScan) and index.d == index.pq.M
    assert index.ntotal == ROWS
    mem.close()


def test_an_index_is_trained_again_once_a_quarter_of_its_rows_are_deleted(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=40)
    mem, ids = filled(tmp_path / "m.db", vectors)
    scope = indexed(mem)
    first = scope.index
    mem.nearest(vectors[0], user_id="u", top_k=1)  # a search with nothing deleted yet: nothing to do
    for memory_id in ids[: ROWS // 4 + 1]:
        mem.delete(memory_id)
    indexed(mem)  # the next search finds a quarter of the entries dead and starts the build
    assert scope.index is not first
    assert (scope.trained_rows, scope.dead) == (ROWS - ROWS // 4 - 1, 0)
    mem.close()


def test_an_index_over_every_user_is_trained_again_once_the_namespace_is_four_times_larger(tmp_path: Path) -> None:
    users = 10  # each user's scope stays under the threshold: only the namespace's index
    mem, _ = spread(tmp_path / "m.db", clustered(ROWS, seed=41), users=users)
    scope = span_indexed(mem)
    first = scope.index
    mem.nearest(clustered(1, seed=43)[0], user_id=None, top_k=1)  # a search before the growth: nothing to do
    more = clustered(3 * ROWS + users, seed=42)
    for user in range(users):
        rows = range(user, len(more), users)
        mem.save_many([polymem.MemoryDraft(f"later memory {i}") for i in rows], user_id=f"u{user}",
                      vectors=more[list(rows)])
    span_indexed(mem)  # the next search finds the namespace grown fourfold and starts the build
    assert scope.index is not first
    assert scope.trained_rows == 4 * ROWS + users
    mem.close()


def test_a_closed_store_lets_go_of_its_indexes_at_once(tmp_path: Path) -> None:
    """A scope's index and its rows refer to one another: closing the store frees them without
    waiting for Python's cyclic collection."""
    mem, _ = filled(tmp_path / "m.db", clustered(ROWS, seed=21))
    scope = weakref.ref(indexed(mem))
    gc.disable()
    try:
        mem.close()
        assert scope() is None
    finally:
        gc.enable()


def labelled_spread(path: Path, vectors: np.ndarray, users: int) -> tuple[polymem.Memory, list[tuple[str, str, str | None]]]:
    """`spread`, every eighth memory a task (the others facts), every other one of agent "a":
    (memory_id, category, agent_id) of each row."""
    mem = polymem.open(f"sqlite:///{path}", embedder=VectorTable(), clock=FakeClock())
    rows: list[tuple[str, str, str | None]] = [("", "", None)] * len(vectors)
    for user in range(users):
        for agent in ("a", None):
            mine = [i for i in range(user, len(vectors), users) if (i % 2 == 0) == (agent == "a")]
            drafts = [polymem.MemoryDraft(f"memory {i}", category="task" if i % 8 == 0 else "fact") for i in mine]
            for i, record in zip(mine, mem.save_many(drafts, user_id=f"u{user}", agent_id=agent,
                                                     vectors=vectors[mine])):
                rows[i] = (record.memory_id, record.category, agent)
    return mem, rows


def exact_top(vectors: np.ndarray, rows: list[tuple[str, str, str | None]], query: np.ndarray,
              keep: Callable[[tuple[str, str, str | None]], bool]) -> set[str]:
    kept = [i for i, row in enumerate(rows) if keep(row)]
    return {rows[kept[j]][0] for j in np.argsort(-(vectors[kept] @ query))[:10]}


def test_a_recall_over_every_user_of_an_agent_or_category_most_memories_have_is_answered_by_the_namespaces_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = clustered(ROWS, seed=40)
    mem, rows = labelled_spread(tmp_path / "m.db", vectors, users=4)
    span_indexed(mem)
    searched_block_by_block: list[int] = []
    block_best = _ScopeBlock.best
    monkeypatch.setattr(_ScopeBlock, "best", lambda block, *args: (searched_block_by_block.append(1),
                                                                   block_best(block, *args))[1])
    shares = []
    for query in clustered(30, seed=41):
        for asked, keep in (({"category": "fact"}, lambda row: row[1] == "fact"),
                            ({"agent_id": "a"}, lambda row: row[2] == "a")):
            found = mem.nearest(query, user_id=None, top_k=10, **asked)
            assert len(found) == 10 and all(keep((r.memory_id, r.category, r.agent_id)) for r, _ in found)
            shares.append(len(exact_top(vectors, rows, query, keep) & {r.memory_id for r, _ in found}) / 10)
    assert np.mean(shares) >= 0.95
    assert searched_block_by_block == []  # every one answered by the index over every user
    mem.close()


def test_a_recall_over_every_user_of_a_category_few_memories_have_finds_the_nearest_of_them(tmp_path: Path) -> None:
    vectors = clustered(ROWS, seed=42)
    mem, rows = labelled_spread(tmp_path / "m.db", vectors, users=4)
    span_indexed(mem)
    for query in clustered(20, seed=43):
        found = mem.nearest(query, user_id=None, top_k=10, category="task")
        assert {r.memory_id for r, _ in found} == exact_top(vectors, rows, query, lambda row: row[1] == "task")
    mem.close()
