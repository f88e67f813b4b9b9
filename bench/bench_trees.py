"""Two source trees of polymem, A (e.g. main) and B (a branch), on one core benchmark: runs
`bench/bench_core.py` with each tree first on PYTHONPATH, alternating A B A B… (the machine's
busy moments hit both alike), and prints each run's table row, then the median of each figure
per tree and the ratio B / A, with the 1-minute load average before and after each run.

    python bench/bench_trees.py --a /tmp/main/core/src --b core/src --rounds 3 --sizes 10000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
FIGURES = ["single saves/s", "batched import/s", "recall p50 ms", "recall p99 ms", "recall+embed p50 ms",
           "recall+embed p99 ms"]


def run(tree: str, sizes: list[str], queries: int) -> dict[tuple[str, str], list[float]]:
    """One bench_core run on `tree`: (memories, users) -> its figures."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(HERE / "bench_core.py"), "--sizes", *sizes, "--queries", str(queries),
                          "--no-record"], env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].replace(",", "").isdigit():
            rows[(cells[0], cells[1])] = [float(c.replace(",", "")) for c in cells[2:8]]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="source tree A (its core/src)")
    parser.add_argument("--b", required=True, help="source tree B (its core/src)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", nargs="+", default=["10000"])
    parser.add_argument("--queries", type=int, default=200)
    opts = parser.parse_args()
    results: dict[str, list[dict[tuple[str, str], list[float]]]] = {"A": [], "B": []}
    for n in range(opts.rounds):
        for name, tree in (("A", opts.a), ("B", opts.b)):
            before = os.getloadavg()[0]
            rows = run(tree, opts.sizes, opts.queries)
            results[name].append(rows)
            for (size, users), figures in rows.items():
                print(f"round {n + 1} {name}: {size} x {users} users: "
                      + ", ".join(f"{f} {v:,.2f}" for f, v in zip(FIGURES, figures))
                      + f" (load {before:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
    print(f"\nmedians over {opts.rounds} alternating runs each; A = {opts.a}, B = {opts.b}\n")
    print("| memories | users | figure | A | B | B / A |\n|---|---|---|---|---|---|")
    for key in results["A"][0]:
        for i, figure in enumerate(FIGURES):
            a = statistics.median(r[key][i] for r in results["A"])
            b = statistics.median(r[key][i] for r in results["B"])
            print(f"| {key[0]} | {key[1]} | {figure} | {a:,.2f} | {b:,.2f} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
