"""Appending a benchmark's table to bench/RESULTS.md, stamped with the date and the machine, and
what the machine was doing while the benchmark ran (`Conditions`)."""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).parent / "RESULTS.md"
# The steps of the reference loop (`python_pace_ms`): 40-70 ms a try on the machine of 2026-12-06.
PACE_STEPS = 1_000_000


def machine() -> str:
    """The machine in one phrase: architecture, cores, and Python with where it is installed (two
    builds of one version run pure Python at different speeds: a distribution's optimized build,
    a pyenv build without `--enable-optimizations`)."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()} from {sys.base_prefix}"


def load_average() -> str:
    """The 1/5/15-minute load averages, as `a / b / c`."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def python_pace_ms(tries: int = 3) -> float:
    """The fastest of `tries` runs of a fixed pure-Python loop (`PACE_STEPS` additions), in ms.

    polymem's recall is mostly Python: its figures move with this one from machine to machine and
    from hour to hour on a shared machine, where a store written in native code moves less. A
    table that records it can be compared with another run's."""
    best = math.inf
    for _ in range(tries):
        start = time.perf_counter()
        total = 0
        for step in range(PACE_STEPS):
            total += step
        best = min(best, time.perf_counter() - start)
    return best * 1000


def cpu_ticks() -> tuple[int, int] | None:
    """(CPU time of every core, the part of it the host gave to others: steal), in clock ticks
    since boot, from /proc/stat; None where there is no /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already counted in user, nice]
    return sum(fields[:8]), fields[7] if len(fields) > 7 else 0


class Conditions:
    """What the machine was doing while a benchmark ran: the highest 1-minute load average, the pace
    of a fixed Python loop (`python_pace_ms`) at each sample, and the share of CPU time the host
    took back (steal) from the first sample to the last."""

    def __init__(self) -> None:
        self.loads: list[float] = []
        self.paces: list[float] = []
        self._ticks: list[tuple[int, int]] = []

    def sample(self, pace: bool = True) -> None:
        """Note the load (and, with `pace`, time the reference loop) now."""
        if hasattr(os, "getloadavg"):
            self.loads.append(os.getloadavg()[0])
        if pace:
            self.paces.append(python_pace_ms())
        ticks = cpu_ticks()
        if ticks is not None:
            self._ticks.append(ticks)

    @property
    def steal_percent(self) -> float | None:
        """The share of CPU time stolen between the first and the last sample (None: not known)."""
        if len(self._ticks) < 2 or self._ticks[-1][0] == self._ticks[0][0]:
            return None
        return 100 * (self._ticks[-1][1] - self._ticks[0][1]) / (self._ticks[-1][0] - self._ticks[0][0])

    def describe(self) -> str:
        """One phrase: `highest 1-min load average 1.2; a 1,000,000-step Python loop in 61-66 ms (6
        samples); 3 % of CPU time stolen by the host`."""
        parts = []
        if self.loads:
            parts.append(f"highest 1-min load average {max(self.loads):.1f}")
        if self.paces:
            low, high = min(self.paces), max(self.paces)
            span = f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"
            parts.append(f"a {PACE_STEPS:,}-step Python loop in {span} ms ({len(self.paces)} "
                         f"sample{'s' if len(self.paces) > 1 else ''})")
        if (steal := self.steal_percent) is not None:
            parts.append(f"{steal:.0f} % of CPU time stolen by the host")
        return "; ".join(parts)


def append(title: str, script: str, body: str) -> None:
    """Append a section `## <title> (bench/<script>) — <UTC time>` holding `body` (which names its
    conditions after `Machine: <machine()>`) to RESULTS.md."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with RESULTS.open("a") as out:
        out.write(f"\n## {title} (bench/{script}) — {stamp}\n\nMachine: {machine()}{body}\n")
