"""Appending a benchmark's table to bench/RESULTS.md, stamped with the date and the machine."""

from __future__ import annotations

import os
import platform
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).parent / "RESULTS.md"


def machine() -> str:
    """The machine in one phrase: architecture, cores and Python."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def load_average() -> str:
    """The 1/5/15-minute load averages, as `a / b / c`."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def append(title: str, script: str, body: str) -> None:
    """Append a section `## <title> (bench/<script>) — <UTC time>` holding `body` (which names its
    conditions after `Machine: <machine()>`) to RESULTS.md."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with RESULTS.open("a") as out:
        out.write(f"\n## {title} (bench/{script}) — {stamp}\n\nMachine: {machine()}{body}\n")
