"""A memory's live score over time, as the points of a small SVG plot drawn on the server.

Each point is `ScoringPolicy.live_score` (the scoring module's own function: decay from the
last access, plus the access bonus) of the version current at that moment. Access
bookkeeping is not versioned (docs/time-travel.md), so before a version's last access the
curve decays from the memory's creation. Past the present, the curve goes on as if the
memory were never used again, for one half-life of its category. Marks: each version, and each
recall that returned the memory (reinforcing it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..._models import MemoryRecord
from ..._scoring import ScoringPolicy

WIDTH, HEIGHT, PAD = 560, 160, 24
SAMPLES = 96


@dataclass(frozen=True)
class Mark:
    x: float
    y: float
    label: str


@dataclass(frozen=True)
class LivePlot:
    """What the template draws: polylines (`x,y x,y …`), version and access marks, axis labels."""

    past: str
    future: str
    versions: list[Mark]
    accesses: list[Mark]
    start: datetime
    now: datetime
    end: datetime
    now_x: float
    score_now: float
    width: int = WIDTH
    height: int = HEIGHT
    pad: int = PAD


def _version_at(versions: Sequence[MemoryRecord], at: datetime) -> MemoryRecord:
    current = versions[0]
    for version in versions[1:]:
        if version.updated_at <= at:
            current = version
    return current


def _score(policy: ScoringPolicy, versions: Sequence[MemoryRecord], at: datetime) -> float:
    record = _version_at(versions, at)
    if record.last_accessed_at is not None and record.last_accessed_at > at:
        record = dataclasses.replace(record, last_accessed_at=None)
    return policy.live_score(record, at)


def live_plot(policy: ScoringPolicy, versions: Sequence[MemoryRecord], now: datetime,
              recalled_at: Sequence[datetime] = ()) -> LivePlot:
    """The plot of `versions` (oldest first, the current one last) from the creation to one
    half-life past `now`, with a mark at each recall that returned the memory (each reinforced
    it; from the audit log), or else at its last use."""
    start = versions[0].created_at
    end = now + timedelta(days=policy.half_life(versions[-1].category))
    span = max((end - start).total_seconds(), 1.0)

    def x(at: datetime) -> float:
        return round(PAD + (WIDTH - 2 * PAD) * (at - start).total_seconds() / span, 1)

    def y(score: float) -> float:
        return round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * score, 1)

    def line(times: list[datetime]) -> str:
        return " ".join(f"{x(t)},{y(_score(policy, versions, t))}" for t in times)

    grid = [start + (end - start) * i / SAMPLES for i in range(SAMPLES + 1)]
    moments = sorted({*grid, *(v.updated_at for v in versions), now})
    past = [t for t in moments if t <= now]
    future = [t for t in moments if t >= now]
    marks = [Mark(x(v.updated_at), y(_score(policy, versions, v.updated_at)), f"v{v.version}") for v in versions]
    accessed = versions[-1].last_accessed_at
    uses = [(t, "recalled") for t in recalled_at] or (
        [] if accessed is None else [(accessed, f"last used ({versions[-1].access_count}×)")])
    accesses = [Mark(x(t), y(_score(policy, versions, t)), label) for t, label in uses]
    return LivePlot(line(past), line(future), marks, accesses, start, now, end, x(now),
                    _score(policy, versions, now))
