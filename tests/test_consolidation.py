"""Consolidation compares only the pairs that can matter, and decides as comparing every pair did."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import polymem
import polymem._engine as engine
import polymem._neighbours as neighbours
from polymem._consolidation import CONSOLIDATION_STEPS, similarity
from polymem._engine import RuleContradictionJudge, same_facts
from polymem._models import MemoryRecord
from polymem._neighbours import Neighbours
from polymem._text import content_hash
from polymem.testing import FakeClock, local_embedder

THINGS = ["colour", "food", "drink", "band", "city", "sport", "book", "film"]
VALUES = ["blue", "black", "pizza", "green tea", "coffee", "jazz", "Leeds", "tennis", "Dune", "Alien", "red", "sushi"]
FACTS = ["I love hiking in the mountains", "My sister works as a nurse", "I have a dog called Rex",
         "I am learning Spanish", "The team meeting is at 3pm on Mondays", "I ride my bike to work",
         "I am allergic to peanuts", "My flat is on the fourth floor", "I play the piano badly"]
CHANGES = ["I switched to {v} these days", "I now prefer {v}", "I no longer like {v}", "Actually I started liking {v}"]


def corpus(size: int, seed: int = 7) -> list[tuple[str, str]]:
    """(content, category): slot statements that change value, change markers, near-duplicates
    (punctuation, a word more), same-looking facts with other numbers, and unrelated facts."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    while len(out) < size:
        kind = rng.random()
        if kind < 0.3:
            out.append((f"My favourite {rng.choice(THINGS)} is {rng.choice(VALUES)}", "preference"))
        elif kind < 0.45:
            out.append((rng.choice(CHANGES).format(v=rng.choice(VALUES)), "preference"))
        elif kind < 0.7:
            fact = rng.choice(FACTS)
            out.append((rng.choice([fact, fact + ".", fact + "!", fact + " really", fact.replace("I ", "I really ", 1)]),
                        "fact"))
        elif kind < 0.8:
            out.append((f"The team meeting is at {rng.randint(1, 12)}pm on {rng.choice(['Mondays', 'Fridays'])}", "fact"))
        else:
            out.append((f"{rng.choice(FACTS)} and {rng.choice(VALUES)} {rng.randint(1, 99)}", "fact"))
    return out


def every_pair(members: Sequence[tuple[MemoryRecord, np.ndarray | None]], judge: Any,
               merge_similarity: float) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The decisions of comparing every pair in Python (the algorithm before candidate pairs)."""
    merged: dict[str, list[str]] = {}
    superseded: dict[str, str] = {}
    kept: list[tuple[MemoryRecord, np.ndarray | None]] = []
    for record, vector in members:
        index = next((i for i, (older, older_vector) in enumerate(kept)
                      if content_hash(older.content) == content_hash(record.content)
                      or (similarity(older, older_vector, record, vector) >= merge_similarity
                          and same_facts(older.content, record.content))), None)
        if index is None:
            kept.append((record, vector))
        else:
            merged.setdefault(kept[index][0].memory_id, []).append(record.memory_id)
    live: list[tuple[MemoryRecord, np.ndarray | None]] = []
    for record, vector in kept:
        scored = sorted(((similarity(o, ov, record, vector), i) for i, (o, ov) in enumerate(live)), reverse=True)
        index = next((i for sim, i in scored if judge.supersedes(live[i][0], record, sim)), None)
        if index is None:
            live.append((record, vector))
            continue
        older = live[index][0]
        superseded[older.memory_id] = record.memory_id
        live[index] = (dataclasses.replace(older, content=record.content), vector)
    return merged, superseded


class EveryPairJudge:
    """A judge that says nothing about which pairs it could accept (so every pair is asked)."""

    def __init__(self) -> None:
        self.rule = RuleContradictionJudge()

    def supersedes(self, older: MemoryRecord, newer: MemoryRecord, similarity: float) -> bool:
        return self.rule.supersedes(older, newer, similarity)


def filled_store(path: Path, size: int, *, embedder: Any, judge: Any = None, lexical_share: float = 0.0) -> Any:
    clock = FakeClock()
    rng = random.Random(3)
    contents = corpus(size)
    drafts = [{"content": c, "category": cat, "user_id": "ann"} for c, cat in contents]
    url = f"sqlite:///{path}"
    if lexical_share:  # a share written by a process without the model
        lexical = [d for d in drafts if rng.random() < lexical_share]
        with polymem.open(url, clock=clock, embedder=None) as mem:
            for draft in lexical:
                mem.save(**draft)
        drafts = [d for d in drafts if d not in lexical]
    mem = polymem.open(url, clock=clock, embedder=embedder, judge=judge)
    for draft in drafts:
        clock.advance(minutes=1)
        mem.save(**draft)
    return mem


def expected(mem: Any, judge: Any) -> tuple[dict[str, list[str]], dict[str, str]]:
    model_id = mem.engine.embedder.model_id if mem.engine.embedder else None
    rows: list[tuple[MemoryRecord, np.ndarray | None]] = []
    for user_id in mem.backend.active_users(mem.engine.namespace):
        rows += mem.backend.active_page(mem.engine.namespace, user_id, model_id, None, 10**9)[0]
    groups: dict[Any, list[tuple[MemoryRecord, np.ndarray | None]]] = {}
    for record, vector in rows:
        groups.setdefault((record.user_id, record.agent_id, record.category), []).append((record, vector))
    merged: dict[str, list[str]] = {}
    superseded: dict[str, str] = {}
    for members in groups.values():
        m, s = every_pair(members, judge, mem.engine.scoring.merge_similarity)
        merged.update(m)
        superseded.update(s)
    return merged, superseded


@pytest.mark.parametrize("path", ["exact", "index"])
def test_consolidation_decides_as_comparing_every_pair(path: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "index":
        monkeypatch.setattr(neighbours, "EXACT_UP_TO", 0)
    mem = filled_store(tmp_path / "m.db", 400, embedder=local_embedder())
    merged, superseded = expected(mem, RuleContradictionJudge())
    assert merged and superseded  # the corpus exercises both passes
    report = mem.consolidate()
    assert report.merged == merged
    assert report.superseded == superseded


def test_a_judge_that_names_no_candidates_is_asked_about_every_pair(tmp_path: Path) -> None:
    judge = EveryPairJudge()
    mem = filled_store(tmp_path / "m.db", 150, embedder=local_embedder(), judge=judge)
    merged, superseded = expected(mem, judge)
    report = mem.consolidate()
    assert (report.merged, report.superseded) == (merged, superseded)


def test_memories_without_vectors_are_compared_by_their_terms(tmp_path: Path) -> None:
    mem = filled_store(tmp_path / "m.db", 200, embedder=local_embedder(), lexical_share=0.3)
    merged, superseded = expected(mem, RuleContradictionJudge())
    report = mem.consolidate()
    assert (report.merged, report.superseded) == (merged, superseded)


def test_consolidation_reports_three_steps_per_memory(tmp_path: Path) -> None:
    mem = filled_store(tmp_path / "m.db", 120, embedder=local_embedder())
    active = mem.stats()["by_status"]["active"]
    steps: list[int] = []
    mem.consolidate(progress=steps.append)
    assert sum(steps) == CONSOLIDATION_STEPS * active


def test_consolidation_reads_a_scope_in_pages_and_reports_each(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "CONSOLIDATION_PAGE", 40)
    mem = filled_store(tmp_path / "m.db", 200, embedder=local_embedder())
    merged, superseded = expected(mem, RuleContradictionJudge())
    active = mem.stats()["by_status"]["active"]
    reads: list[int] = []
    page = mem.backend.active_page
    monkeypatch.setattr(mem.backend, "active_page", lambda *args: reads.append(1) or page(*args))
    steps: list[int] = []
    report = mem.consolidate(progress=steps.append)
    assert (report.merged, report.superseded) == (merged, superseded)
    assert len(reads) == active // 40 + 1  # until a page comes back short
    assert steps[:active // 40] == [40] * (active // 40)  # each page read is a step, before any other


def test_an_index_reports_progress_while_it_is_built() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((6000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    steps: list[int] = []
    Neighbours(vectors, 10, exact_up_to=0, exact_rows=[3, 5], progress=steps.append)
    assert sum(steps) == 6000
    assert len(steps) >= neighbours._ROUNDS + 2 * 3  # k-means rounds, chunks added, chunks searched


def test_an_index_finds_the_exact_nearest_rows() -> None:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((40, 64)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, 3000)] + 0.3 * rng.standard_normal((3000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact, approximate = Neighbours(vectors, 10, exact_up_to=10_000), Neighbours(vectors, 10, exact_up_to=0)
    found = np.mean([len(set(exact.ids[i]) & set(approximate.ids[i])) / 10 for i in range(3000)])
    assert found >= 0.95
    assert all(list(exact.above(i, 0.8)) == sorted(exact.above(i, 0.8), key=lambda p: -p[1]) for i in range(50))


def drawn_at_random_with_planted_pairs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """8,000 unit vectors drawn at random (64 dimensions: no near neighbours to speak of) and 160
    pairs among them made near-duplicates (cosine 0.94-0.97)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((8000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = rng.choice(8000, (160, 2), replace=False)
    noise = rng.standard_normal((160, 64)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors[pairs[:, 1]] = 0.95 * vectors[pairs[:, 0]] + 0.31 * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_index_of_rows_drawn_at_random_finds_every_near_duplicate_pair_from_both_rows(seed: int) -> None:
    vectors, pairs = drawn_at_random_with_planted_pairs(seed)
    approximate = Neighbours(vectors, 10, exact_up_to=0)
    for a, b in pairs.tolist():
        assert b in {row for row, _ in approximate.above(a, 0.9)}
        assert a in {row for row, _ in approximate.above(b, 0.9)}


def test_a_row_found_by_its_own_search_and_by_the_others_is_listed_once() -> None:
    vectors, pairs = drawn_at_random_with_planted_pairs(3)
    approximate = Neighbours(vectors, 10, exact_up_to=0)
    for row in pairs.ravel()[:40].tolist():
        listed = [other for other, _ in approximate.above(row, 0.0)]
        assert len(listed) == len(set(listed))


@pytest.mark.parametrize(("language", "merged"), [("german", 1), ("english", 0)])
def test_memories_without_vectors_are_compared_by_their_terms_in_the_stores_language(
        tmp_path: Path, language: str, merged: int) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, language=language) as mem:
        mem.save("Die Kinder spielten im Garten", user_id="ann")
        mem.save("Das Kind spielt im Garten", user_id="ann")  # the same terms, once German is stemmed
        assert len(mem.consolidate().merged) == merged
