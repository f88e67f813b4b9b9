"""The SQLite store's in-process vector cache stays exact while memories are written between recalls."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import polymem
from polymem import _sqlite
from polymem._scan import APPROX_ROWS
from polymem._sqlite import _RowDirectory
from polymem.testing import FakeClock


class VectorTable:
    """An embedder for tests that only pass precomputed vectors."""

    model_id = "test/unit-vectors"
    dimension = 16

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * (self.dimension - 1) for _ in texts]


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, VectorTable.dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def nearest(mem: polymem.Memory, vector: np.ndarray) -> str:
    return mem.nearest(vector, user_id="u", top_k=1)[0][0].memory_id


def test_nearest_makes_its_records_from_the_rows_its_search_read(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(40, seed=4)
    mem.save_many([polymem.MemoryDraft(f"memory number {i}", metadata={"i": i}) for i in range(40)], user_id="u",
                  vectors=vectors)
    mem.nearest(vectors[0], user_id="u")  # the vector cache is loaded
    statements: list[str] = []
    connection = mem.backend._conn  # SQLite's own trace of the statements the store runs
    connection.set_trace_callback(statements.append)
    found = mem.nearest(vectors[7], user_id="u", top_k=5)
    connection.set_trace_callback(None)
    assert statements and not [s for s in statements if "m.memory_id IN" in s]  # no second read by id
    assert found[0][0].content == "memory number 7" and len(found) == 5
    assert [record for record, _ in found] == [mem.get(record.memory_id) for record, _ in found]
    mem.close()


def test_every_memory_saved_between_recalls_is_found_by_its_own_vector(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(300)
    ids = []
    for i, vector in enumerate(vectors):
        ids.append(mem.save(f"memory number {i}", user_id="u", vector=vector).memory_id)
        assert nearest(mem, vector) == ids[-1]
    assert [nearest(mem, v) for v in vectors] == ids
    mem.close()


def test_deleting_from_the_middle_keeps_every_other_memory_findable(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(200, seed=1)
    drafts = [polymem.MemoryDraft(f"memory number {i}") for i in range(200)]
    ids = [r.memory_id for r in mem.save_many(drafts, user_id="u", vectors=vectors)]
    nearest(mem, vectors[0])  # the cache is loaded before the deletes
    gone = set(ids[10:190:7])
    for memory_id in gone:
        mem.delete(memory_id)
    for memory_id, vector in zip(ids, vectors):
        if memory_id not in gone:
            assert nearest(mem, vector) == memory_id
    found = {record.memory_id for v in vectors for record, _ in mem.nearest(v, user_id="u", top_k=3)}
    assert not found & gone
    mem.close()


def test_re_embedded_content_replaces_the_old_vector_in_recall(tmp_path: Path) -> None:
    embedder = VectorTable()
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder, clock=FakeClock())
    old = unit_vectors(1, seed=2)[0]
    others = unit_vectors(50, seed=3)
    mem.save_many([polymem.MemoryDraft(f"other {i}") for i in range(50)], user_id="u", vectors=others)
    record = mem.save("the memory that moves", user_id="u", vector=old)
    assert nearest(mem, old) == record.memory_id
    mem.update(record.memory_id, content="the memory that moved")  # re-embedded by the store's embedder
    new = np.array(embedder.embed(["the memory that moved"])[0], dtype=np.float32)
    assert nearest(mem, new) == record.memory_id
    assert all(memory.memory_id != record.memory_id or similarity < 0.99
               for memory, similarity in mem.nearest(old, user_id="u", top_k=5))
    mem.close()


@pytest.mark.parametrize("share", [0.05, 0.5, 0.95], ids=["few-rows", "half", "most-rows"])
def test_an_agent_filter_returns_the_exact_nearest_among_that_agents_memories(tmp_path: Path, share: float) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(400, seed=3)
    agents = ["a" if i < share * 400 else "b" for i in range(400)]
    for agent in ("a", "b"):
        idx = [i for i, a in enumerate(agents) if a == agent]
        mem.save_many([polymem.MemoryDraft(f"memory number {i}") for i in idx], user_id="u", agent_id=agent,
                      vectors=vectors[idx])
    ids = {r.content: r.memory_id for r in mem.list(user_id="u", limit=1000)}
    for query in unit_vectors(20, seed=4):
        mine = [i for i, a in enumerate(agents) if a == "a"]
        expected = sorted(mine, key=lambda i: -float(vectors[i] @ query))[:5]
        got = [r.memory_id for r, _ in mem.nearest(query, user_id="u", agent_id="a", top_k=5)]
        assert got == [ids[f"memory number {i}"] for i in expected]
    mem.close()


def save_scope(mem: polymem.Memory, vectors: np.ndarray, agents: list[str]) -> dict[int, str]:
    """Saves `vectors` for user "u" under their agents; the memory id of each row."""
    ids: dict[int, str] = {}
    for agent in sorted(set(agents)):
        idx = [i for i, a in enumerate(agents) if a == agent]
        records = mem.save_many([polymem.MemoryDraft(f"memory number {i}") for i in idx], user_id="u",
                                agent_id=agent, vectors=vectors[idx])
        ids.update(zip(idx, (r.memory_id for r in records)))
    return ids


@pytest.mark.parametrize("share", [1.0, 0.5, 0.1], ids=["no-filter", "half", "tenth"])
def test_a_scope_past_the_int8_shortlist_size_still_ranks_by_exact_float32_products(
        tmp_path: Path, share: float) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    n = 2 * APPROX_ROWS
    vectors = unit_vectors(n, seed=5)
    agents = ["a" if i < share * n else "b" for i in range(n)]
    ids = save_scope(mem, vectors, agents)
    mine = [i for i, a in enumerate(agents) if a == "a"]
    for query in unit_vectors(10, seed=6):
        exact = vectors[mine] @ query
        expected = [mine[i] for i in np.argsort(-exact, kind="stable")[:10]]
        got = mem.nearest(query, user_id="u", agent_id="a", top_k=10)
        assert [r.memory_id for r, _ in got] == [ids[i] for i in expected]
        assert [s for _, s in got] == pytest.approx([float(vectors[i] @ query) for i in expected], abs=1e-6)
    mem.close()


def test_a_scope_past_the_int8_shortlist_size_ranks_exactly_after_deletes_and_saves_between_recalls(
        tmp_path: Path) -> None:
    """A delete moves the scope's last row into the hole, a save adds one at the end and an update
    re-embeds one in place: the int8 copy's packs (`_scan.PackedCodes`) of those places are made anew."""
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    n = 2 * APPROX_ROWS + 100
    vectors = unit_vectors(n + 40, seed=11)
    ids = dict(enumerate(save_scope(mem, vectors[:n], ["a"] * n).values()))
    nearest(mem, vectors[0])  # the cache and its packs are made before the writes
    for step, hole in enumerate(range(7, n, n // 20)):
        mem.delete(ids.pop(hole))
        last = max(ids)  # the row moved into the hole
        assert nearest(mem, vectors[last]) == ids[last]
        added = n + step
        ids[added] = mem.save(f"memory number {added}", user_id="u", agent_id="a", vector=vectors[added]).memory_id
        assert nearest(mem, vectors[added]) == ids[added]
    kept = sorted(ids)
    for query in unit_vectors(5, seed=12):
        exact = vectors[kept] @ query
        expected = [ids[kept[i]] for i in np.argsort(-exact, kind="stable")[:10]]
        assert [r.memory_id for r, _ in mem.nearest(query, user_id="u", top_k=10)] == expected
    moved = kept[len(kept) // 2]
    mem.update(ids[moved], content="re-embedded")  # by the store's embedder: along the first axis
    assert nearest(mem, np.eye(VectorTable.dimension, dtype=np.float32)[0]) == ids[moved]
    mem.close()


def test_rows_closer_together_than_int8_codes_can_tell_apart_are_still_ranked_exactly(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    n = 2 * APPROX_ROWS
    center = unit_vectors(1, seed=7)[0]
    vectors = center + np.random.default_rng(8).normal(0, 3e-3, size=(n, VectorTable.dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = save_scope(mem, vectors, ["a"] * n)
    exact = vectors @ center
    expected = [ids[i] for i in np.argsort(-exact, kind="stable")[:10]]
    assert [r.memory_id for r, _ in mem.nearest(center, user_id="u", top_k=10)] == expected
    mem.close()


def test_a_shortlist_of_a_seventh_of_the_scope_is_measured_from_its_own_rows_and_ranked_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~1,200 of 8,192 rows too close together for the int8 codes to tell apart: those rows are
    copied out and measured again, not every row of the scope."""
    import polymem._sqlite

    measured: list[int] = []
    original = polymem._sqlite.products

    def recorded(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
        measured.append(len(matrix))
        return original(matrix, query)

    monkeypatch.setattr(polymem._sqlite, "products", recorded)
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    n = 2 * APPROX_ROWS
    center = unit_vectors(1, seed=7)[0]
    vectors = unit_vectors(n, seed=9)
    close = np.random.default_rng(10).choice(n, 1200, replace=False)
    vectors[close] = center + np.random.default_rng(8).normal(0, 3e-3, size=(len(close), VectorTable.dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = save_scope(mem, vectors, ["a"] * n)
    exact = vectors @ center
    expected = [ids[i] for i in np.argsort(-exact, kind="stable")[:10]]
    measured.clear()
    got = mem.nearest(center, user_id="u", top_k=10)
    mem.close()
    assert [r.memory_id for r, _ in got] == expected
    assert [s for _, s in got] == pytest.approx(sorted(exact, reverse=True)[:10], abs=1e-6)
    assert measured and max(measured) < n // 4 and min(measured) >= 10


def test_a_process_reads_each_scope_when_first_searched_and_sees_later_writes_to_every_scope(tmp_path: Path) -> None:
    """Another process's writes reach this one's cache whether they land in a scope it has already
    read, one it has not read yet, or show up in an all-users search."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    writer = polymem.open(url, embedder=VectorTable(), clock=FakeClock())
    reader = polymem.open(url, embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(90, seed=3)
    owners = ["a"] * 30 + ["b"] * 30 + ["a"] * 15 + [None] * 15
    ids = [writer.save(f"memory number {i}", user_id=owners[i], vector=v).memory_id for i, v in enumerate(vectors[:30])]
    assert reader.nearest(vectors[0], user_id="a", top_k=1)[0][0].memory_id == ids[0]  # reads user a's vectors
    ids += [writer.save(f"memory number {i}", user_id=owners[i], vector=v).memory_id
            for i, v in enumerate(vectors[30:], start=30)]
    for memory_id, owner, vector in zip(ids, owners, vectors):
        assert reader.nearest(vector, user_id=owner, top_k=1)[0][0].memory_id == memory_id
        assert reader.nearest(vector, user_id=None, top_k=1)[0][0].memory_id == memory_id
    writer.delete(ids[40])
    assert ids[40] not in {r.memory_id for r, _ in reader.nearest(vectors[40], user_id="b", top_k=5)}
    writer.close()
    reader.close()


def test_a_scope_larger_than_one_read_finds_what_a_small_one_finds(tmp_path: Path) -> None:
    """A scope read for the first time is taken in chunks of `LOAD_ROWS` (its rows at once doubled a
    large store's peak memory): a user whose rows span several chunks, in a store whose every-user
    read spans more, finds each memory by its own vector, with its exact similarity."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    writer = polymem.open(url, embedder=VectorTable(), clock=FakeClock())
    size = 2 * _sqlite.LOAD_ROWS + 500
    vectors = unit_vectors(size, seed=5)
    owners = ["a", "b"]
    for owner in owners:
        mine = vectors[owners.index(owner)::2]
        writer.save_many([polymem.MemoryDraft(f"memory {owner} {i}") for i in range(len(mine))], user_id=owner,
                         vectors=mine)
    writer.close()
    reader = polymem.open(url, embedder=VectorTable(), clock=FakeClock())
    for i in range(0, size, 997):
        owner = owners[i % 2]
        for user in (owner, None):
            record, similarity = reader.nearest(vectors[i], user_id=user, top_k=1)[0]
            assert record.content == f"memory {owner} {i // 2}"
            assert similarity == pytest.approx(1.0, abs=1e-5)
    reader.close()


def test_a_namespace_read_after_one_of_its_users_holds_each_row_once(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(40, seed=11)
    ids = [mem.save(f"memory number {i}", user_id="ab"[i % 2], vector=v).memory_id for i, v in enumerate(vectors)]
    assert mem.nearest(vectors[0], user_id="a", top_k=1)[0][0].memory_id == ids[0]  # reads user a's rows
    for memory_id, vector in zip(ids, vectors):  # reads the namespace, user a's rows among them again
        assert mem.nearest(vector, user_id=None, top_k=1)[0][0].memory_id == memory_id
    cache = next(iter(mem.backend._caches.values()))
    assert sorted(block.size for block in cache.blocks.values()) == [20, 20]
    assert cache.directory.count == 40
    mem.close()


def test_a_namespace_read_after_its_user_takes_in_only_the_rows_no_block_held(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(30, seed=12)
    mem.save_many([polymem.MemoryDraft(f"memory number {i}") for i in range(30)], user_id="u", vectors=vectors)
    assert nearest(mem, vectors[0])  # reads user u's rows: all of the namespace's
    cache = next(iter(mem.backend._caches.values()))
    taken_out: list[int] = []
    forget = cache._forget
    cache._forget = lambda rowid: (taken_out.append(rowid), forget(rowid))[1]  # records, then forgets
    assert mem.nearest(vectors[3], user_id=None, top_k=1)[0][0].content == "memory number 3"
    assert taken_out == [] and cache.directory.count == 30
    mem.close()


def test_a_namespace_read_after_some_of_its_users_reads_the_other_users_rows_alone(tmp_path: Path) -> None:
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(9, seed=16)
    owners = ["u", "u", "u", "v", "v", "w", "w", None, None]  # (None: memories of no user)
    saved = [mem.save(f"memory number {i}", user_id=owner, vector=v).memory_id
             for i, (owner, v) in enumerate(zip(owners, vectors))]
    assert nearest(mem, vectors[0]) == saved[0]  # user u's rows read
    assert mem.nearest(vectors[5], user_id="w", top_k=1)[0][0].memory_id == saved[5]  # and user w's
    cache = next(iter(mem.backend._caches.values()))
    read: list[int] = []
    load = cache.load
    cache.load = lambda chunks, *scope: load(([read.append(row[0]) or row for row in chunk] for chunk in chunks),
                                             *scope)  # records each row read, then loads it
    for memory_id, vector in zip(saved, vectors):  # the namespace: every user's memories found
        assert mem.nearest(vector, user_id=None, top_k=1)[0][0].memory_id == memory_id
    assert len(read) == 4 and cache.directory.count == 9  # v's two and the two of no user
    mem.close()


def test_a_memory_another_process_re_embedded_after_its_users_read_is_found_by_the_namespace_by_its_new_vector(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    mem = polymem.open(url, embedder=VectorTable(), clock=FakeClock())
    old, new = unit_vectors(2, seed=14)
    saved = mem.save("a memory re-embedded elsewhere", user_id="u", vector=old)
    mem.save("another memory", user_id="u", vector=unit_vectors(1, seed=15)[0])
    assert nearest(mem, old) == saved.memory_id  # user u's rows read
    with polymem.open(url, embedder=VectorTable(), clock=FakeClock()) as other:
        other.backend.set_vectors("default", [(saved.memory_id, new)], VectorTable.model_id)
    found = mem.nearest(new, user_id=None, top_k=1)[0]
    assert found[0].memory_id == saved.memory_id and found[1] == pytest.approx(1.0)
    mem.close()


def test_a_row_counted_without_a_vector_and_read_with_one_is_no_longer_foreign() -> None:
    """A scope's first read takes in a row another process gave a vector of this model after the
    cache counted it among those without one."""
    cache = _sqlite._VectorCache(VectorTable.model_id, 0, {7: "default"}, 0)
    vector = unit_vectors(1, seed=7)[0].tobytes()
    cache.load([[(7, "default", "u", None, "fact", "active", None, VectorTable.model_id, vector, 0.5, 1_000_000,
                  None, 0)]], "default", "u", False, {"u": 1})
    assert cache.foreign == {} and cache.foreign_counts["default"] == 0
    assert cache.blocks[("default", "u")].size == 1


def test_a_scope_read_in_many_chunks_makes_each_users_arrays_once_and_as_large_as_their_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A namespace's first read counts each user's rows first: a user's block is made that large
    when its first rows come, not doubled as the next chunks come (which copied every row so far)."""
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    sizes = {"ann": 300, "bo": 130, "cy": 7}
    for seed, (user, size) in enumerate(sizes.items()):
        mem.save_many([polymem.MemoryDraft(f"{user} memory {i}") for i in range(size)], user_id=user,
                      vectors=unit_vectors(size, seed))
    mem.save("archived, not read", user_id="ann", vector=unit_vectors(1, 99)[0])
    mem.set_status(mem.list(user_id="ann", limit=1)[0].memory_id, "archived")
    monkeypatch.setattr(_sqlite, "LOAD_ROWS", 64)  # 437 rows in 7 chunks
    grown: list[tuple[str | None, int]] = []
    grow = _sqlite._ScopeBlock._grow
    monkeypatch.setattr(_sqlite._ScopeBlock, "_grow",
                        lambda block, dimension, needed: (grown.append((block.scope[1], needed)),
                                                          grow(block, dimension, needed))[1])
    assert mem.nearest(unit_vectors(1, 5)[0], user_id=None, top_k=3)
    blocks = {key[1]: block for cache in mem.backend._caches.values() for key, block in cache.blocks.items()}
    assert {user: (block.size, len(block.rowids)) for user, block in blocks.items()} == \
        {"ann": (300, 300), "bo": (130, 130), "cy": (7, 64)}  # (64: the least a block is made for)
    assert sorted(user for user, _ in grown) == ["ann", "bo", "cy"]
    mem.close()


def test_a_closed_store_lets_go_of_its_vectors_at_once(tmp_path: Path) -> None:
    """Blocks, their directory and their indexes refer to one another: closing the store frees
    them without waiting for Python's cyclic collection."""
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=FakeClock())
    vectors = unit_vectors(50, seed=13)
    mem.save_many([polymem.MemoryDraft(f"memory number {i}") for i in range(50)], user_id="u", vectors=vectors)
    assert nearest(mem, vectors[7]) and mem.nearest(vectors[7], user_id=None, top_k=1)  # both scopes read
    matrices = [weakref.ref(block.matrix) for cache in mem.backend._caches.values() for block in cache.blocks.values()]
    assert matrices
    gc.disable()
    try:
        mem.close()
        assert all(matrix() is None for matrix in matrices)
    finally:
        gc.enable()


class SmallReach(_RowDirectory):
    REACH = 64  # arrays cover rowids below 64, or 16 times the rows held


def test_the_row_directory_finds_rows_near_and_far_and_forgets_them() -> None:
    directory = SmallReach()
    directory.new_block(("default", "u"))
    directory.put(np.array([3, 10**12]), 0, np.array([0, 1]))  # the second far beyond the rows held: kept aside
    numbers, slots = directory.locate(np.array([3, 10**12, 7, -1, 10**13]))
    assert numbers.tolist() == [0, 0, -1, -1, -1] and slots.tolist() == [0, 1, -1, -1, -1]
    assert directory.pop(10**12) == (0, 1) and directory.get(10**12) is None
    assert directory.pop(3) == (0, 0) and directory.locate(np.array([3]))[0].tolist() == [-1]


@pytest.mark.parametrize("numbers", [[2, 2, 2], [2, -1, 2], [-1, 2, 2], [0, 3, 0, -1, 3], [-1, -1], []])
def test_the_row_directory_groups_located_rows_by_block_leaving_out_those_not_held(numbers: list[int]) -> None:
    located = np.array(numbers, dtype=np.int32)
    groups = _RowDirectory.by_block(located)
    assert [number for number, _ in groups] == sorted({n for n in numbers if n >= 0})
    for number, where in groups:
        assert where.tolist() == [n == number for n in numbers]


def test_rows_first_kept_aside_move_into_the_arrays_once_they_reach_them() -> None:
    directory = SmallReach()
    directory.new_block(("default", "u"))
    directory.put(500, 0, 0)  # beyond 64 with one row held
    assert directory.far
    for rowid in range(40):  # 41 rows held: the arrays reach 16 x 41 > 500
        directory.put(rowid, 0, rowid + 1)
    assert not directory.far
    assert directory.get(500) == (0, 0) and directory.locate(np.array([500, 39]))[1].tolist() == [0, 40]


def cached_row(rowid: int, category: str, importance: float, accessed: int | None) -> tuple[Any, ...]:
    """A row as `_ScopeBlock.put` takes it (`_CACHE_COLUMNS` order, vector as bytes)."""
    return (rowid, "default", "u", None, category, "active", None, None, unit_vectors(1, seed=rowid % 1000)[0].tobytes(),
            importance, 1_000_000 * rowid, accessed, rowid % 5)


def test_live_rows_are_read_alike_inside_the_arrays_beyond_them_and_after_moving_in() -> None:
    directory = SmallReach()
    block = directory.new_block(("default", "u"))
    block.put([cached_row(500, "event", 0.5, 7_000_000)])  # beyond 64 with one row held: kept aside
    block.put([cached_row(r, ["fact", "task"][r % 2], r / 100, None) for r in range(3)])
    asked = np.array([500, 1, 2, 45])  # 45: not held
    numbers, slots = directory.locate(asked)
    live, categories = directory.live_rows(asked, numbers, slots)
    assert categories == ["event", "task", "fact", None]
    assert live[0].tolist() == [0.5, 500_000_000.0, 7_000_000.0, 0.0] and live[1].tolist()[0] == 0.01
    assert np.isnan(live[3, 1]) and np.isnan(live[3, 2])
    block.put([cached_row(r, "task", 0.2, None) for r in range(3, 40)])  # 41 rows held: 500 is in reach
    assert not directory.far
    numbers, slots = directory.locate(asked)
    moved, categories = directory.live_rows(asked, numbers, slots)
    assert categories == ["event", "task", "fact", None] and moved[:3].tolist() == live[:3].tolist()


def test_bonuses_over_many_blocks_reach_each_rows_block_and_the_rows_by_rowid_alike() -> None:
    directory = SmallReach()
    blocks = [directory.new_block(("default", f"u{n}")) for n in range(3)]
    for n, block in enumerate(blocks):
        block.put([cached_row(r, "fact", 0.1, None) for r in range(n, 24, 3)])
    blocks[1].put([cached_row(900, "event", 0.5, None)])  # beyond the arrays' reach: kept aside
    assert directory.far
    untouched = {block.number: block.live.copy() for block in blocks}
    rowids = np.array([22, 4, 900, 2, 45, 9])  # 45: not held
    changed = np.array([[0.9, 8e6, 3], [0.8, 9e6, 4], [0.7, 1e7, 5], [0.6, 1.1e7, 6], [0.5, 1.2e7, 7], [0.4, 1.3e7, 8]])
    directory.touch(rowids, changed)
    numbers, slots = directory.locate(rowids)
    by_rowid, _ = directory.live_rows(rowids, numbers, slots)
    columns = [_sqlite._IMPORTANCE, _sqlite._ACCESSED, _sqlite._COUNT]
    for i in (0, 1, 2, 3, 5):
        in_block = directory.blocks[numbers[i]].live[slots[i]]
        assert in_block[columns].tolist() == by_rowid[i][columns].tolist() == changed[i].tolist()
        assert in_block[_sqlite._CREATED] == untouched[numbers[i]][slots[i]][_sqlite._CREATED]
        untouched[numbers[i]][slots[i]] = in_block
    assert all((block.live == untouched[block.number]).all() for block in blocks)  # no other row moved


def test_live_inputs_over_every_user_are_each_stored_rows_own(tmp_path: Path) -> None:
    clock = FakeClock()
    mem = polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=VectorTable(), clock=clock)
    vectors = unit_vectors(80, seed=5)
    ids = [mem.save(f"memory number {i}", user_id=f"u{i % 6}", category=["fact", "event", "task"][i % 3],
                    importance=(i % 10) / 10, vector=v).memory_id for i, v in enumerate(vectors)]
    for vector in vectors[:20]:  # recall bonuses: importances, access times and counts move
        mem.recall("memory", user_id=None, top_k=5, query_vector=vector)
        clock.advance(minutes=7)
    mem.delete(ids[7])
    mem.update(ids[8], content="memory number 8, said again")
    mem.backend.flush()
    mem.nearest(vectors[0], user_id=None)  # the cache takes in what changed
    with mem.backend._read() as conn:
        rowid_of = dict(conn.execute("SELECT memory_id, rowid FROM memories").fetchall())
    cache = next(iter(mem.backend._caches.values()))
    now = clock()
    assert ids[7] not in rowid_of  # deleted: its row went
    inputs = cache.live_inputs([*(rowid_of.get(i, -1) for i in ids), max(rowid_of.values()) + 100],
                               _sqlite.to_micros(now))
    for n, memory_id in enumerate(ids):
        record = mem.get(memory_id)
        if record is None:
            assert inputs.categories[n] is None and np.isnan(inputs.ages[n])
            continue
        assert inputs.categories[n] == record.category
        assert inputs.ages[n] == (now - (record.last_accessed_at or record.created_at)).total_seconds()
        assert (inputs.access_counts[n], inputs.importances[n]) == (record.access_count, record.importance)
    assert inputs.categories[-1] is None and np.isnan(inputs.ages[-1])
    assert any(mem.get(i).access_count for i in ids)
    mem.close()
