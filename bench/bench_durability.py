"""Save rate with `durability=normal` (WAL, synchronous=NORMAL, the default) and `durability=full`
(synchronous=FULL: the WAL is synced on every commit).

Rounds alternate A (normal) and B (full), each saving `--saves` memories one by one (one
transaction each) into its own fresh file, lexical mode (no embedding: the commit is what is
timed). Prints saves/s per round, the median of each, the ratio and the load average.

    python bench/bench_durability.py                   # 5 rounds of 500 saves
    python bench/bench_durability.py --rounds 2 --saves 50
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import polymem

MODES = ("normal", "full")


def save_rate(folder: Path, mode: str, saves: int, round_no: int) -> float:
    url = f"sqlite:///{folder / f'{mode}-{round_no}.db'}" + ("?durability=full" if mode == "full" else "")
    with polymem.open(url, embedder=None) as mem:
        mem.save("warm up the file", user_id="bench")
        start = time.perf_counter()
        for i in range(saves):
            mem.save(f"Fact number {i} of round {round_no}: the user visited city {i * 7 % 101}", user_id="bench")
        return saves / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--saves", type=int, default=500)
    parser.add_argument("--dir", help="folder for the files (default: a temporary folder; put it on the disk to measure)")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for round_no in range(args.rounds):
            order = MODES if round_no % 2 == 0 else MODES[::-1]  # alternate which goes first
            for mode in order:
                rates[mode].append(save_rate(Path(tmp), mode, args.saves, round_no))
    load_after = os.getloadavg()
    print("| durability | saves/s per round | median saves/s |\n|---|---|---|")
    for mode in MODES:
        per_round = ", ".join(f"{r:,.0f}" for r in rates[mode])
        print(f"| {mode} | {per_round} | {statistics.median(rates[mode]):,.0f} |")
    ratio = statistics.median(rates["normal"]) / statistics.median(rates["full"])
    print(f"\nnormal / full = {ratio:.2f}x; {args.rounds} rounds x {args.saves} saves, files in {args.dir or tempfile.gettempdir()}; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
