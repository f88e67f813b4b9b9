"""Property-based tests: scoring laws and exact snapshot round trips."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polymem
from polymem import MemoryRecord, ScoringPolicy
from polymem.testing import FakeClock

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
categories = st.sampled_from(["fact", "preference", "event", "task", "custom"])


def record(importance: float, category: str, access_count: int = 0) -> MemoryRecord:
    return MemoryRecord(memory_id="m", content="x", category=category, source="user_input", importance=importance,
                        user_id="u", agent_id=None, session_id=None, namespace="default", created_at=T0,
                        updated_at=T0, access_count=access_count)


@given(st.floats(0, 1), categories, st.integers(0, 10_000), st.floats(0, 3650), st.floats(0, 3650))
def test_live_score_never_grows_with_idle_time(importance: float, category: str, count: int, a: float, b: float) -> None:
    policy = ScoringPolicy()
    rec = record(importance, category, count)
    early, late = sorted([a, b])
    assert policy.live_score(rec, T0 + timedelta(days=late)) <= policy.live_score(rec, T0 + timedelta(days=early))


@given(st.floats(0, 1), categories, st.integers(0, 10_000), st.floats(0, 36500))
def test_live_score_stays_in_unit_interval(importance: float, category: str, count: int, days: float) -> None:
    score = ScoringPolicy().live_score(record(importance, category, count), T0 + timedelta(days=days))
    assert 0.0 <= score <= 1.0


@given(st.floats(0.01, 1), categories)
def test_one_half_life_halves_the_base(importance: float, category: str) -> None:
    policy = ScoringPolicy()
    half = policy.half_life(category)
    score = policy.live_score(record(importance, category), T0 + timedelta(days=half))
    assert abs(score - importance / 2) < 1e-9


@given(st.integers(0, 1000))
def test_access_bonus_is_capped(count: int) -> None:
    rec = record(0.0, "fact", count)
    assert ScoringPolicy().live_score(rec, T0) == min(0.2, 0.01 * count)


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=80).filter(lambda s: s.strip())
memories = st.lists(st.tuples(text, categories, st.sampled_from(["ann", "bob", "李"]), st.floats(0, 1),
                              st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3)),
                    min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories)
def test_export_then_import_round_trips_exactly(items: list) -> None:  # type: ignore[type-arg]
    clock = FakeClock()
    with polymem.open("memory://", embedder=None, clock=clock) as source, \
            polymem.open("memory://", embedder=None, clock=clock) as target:
        for content, category, user, importance, metadata in items:
            source.save(content, user_id=user, category=category, importance=importance, metadata=metadata)
            clock.advance(seconds=1.5)
        buffer = io.BytesIO()
        source.export_snapshot(buffer)
        buffer.seek(0)
        target.import_snapshot(buffer)
        originals = sorted(source.list(limit=1000, status=None), key=lambda r: r.memory_id)
        copies = sorted(target.list(limit=1000, status=None), key=lambda r: r.memory_id)
        assert copies == originals


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=3, max_size=3),
                min_size=1, max_size=5))
def test_vectors_are_normalised_to_the_bits_numpy_gives(rows: list[list[float]]) -> None:
    import numpy as np

    from polymem._embedders import as_matrix

    matrix = np.asarray(rows, dtype=np.float32)
    expected = matrix / np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
    assert np.array_equal(as_matrix(rows, 3), expected)
