"""Two source trees of polymem, A (e.g. main) and B (a branch), on one core benchmark: runs
`bench/bench_core.py` with each tree first on PYTHONPATH, alternating A B A B… (the machine's
busy moments hit both alike), and prints each run's table row, then the median of each figure
per tree and the ratio B / A, with the 1-minute load average before and after each run.

    python bench/bench_trees.py --a /tmp/main/core/src --b core/src --rounds 3 --sizes 10000
    python bench/bench_trees.py --a /tmp/main/core/src --b core/src --micro --rounds 7   # saves, recalls alone
    python bench/bench_trees.py --postgres --a /tmp/old/core/src --b /tmp/new/core/src core/src --queries 100
    python bench/bench_trees.py --a /tmp/main/core/src --b core/src --sizes --synthetic 20000 100000  # vs numpy
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
FIGURES = ["single saves/s", "batched import/s", "recall p50 ms", "recall p99 ms", "recall+embed p50 ms",
           "recall+embed p99 ms"]
# bench_core's synthetic rows (one scope against numpy's exact search over the same vectors)
SYNTHETIC = ["polymem p50 ms", "polymem p99 ms", "numpy p50 ms", "numpy p99 ms", "p50 ratio to numpy",
             "polymem CPU p50 ms", "numpy CPU p50 ms", "CPU ratio to numpy"]


def run(tree: str, sizes: list[str], queries: int, synthetic: list[str]) -> dict[tuple[str, str], list[float]]:
    """One bench_core run on `tree`: (memories, users), or (memories, "synthetic"), -> its figures."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(HERE / "bench_core.py"), "--sizes", *sizes, "--queries", str(queries),
                          "--synthetic", *synthetic, "--no-record"], env=env, capture_output=True, text=True,
                         check=True).stdout
    rows = {}
    for line in out.splitlines():
        cells = [c.strip().rstrip("x") for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].replace(",", "").isdigit():
            rows[(cells[0], cells[1])] = [float(c.replace(",", "")) for c in cells[2:8]]
        elif len(cells) == 10 and cells[0].replace(",", "").isdigit():
            rows[(cells[0], "synthetic")] = [float(c.replace(",", "")) for c in cells[1:9]]
    return rows


# `--micro`: single saves and recalls (by a given query vector: no model) on a store of `--rows`
# memories of one user, timed in CPU seconds of the process (`time.process_time`) as well as wall
# time: on a loaded machine the wall time mostly measures the wait for a core.
MICRO = """
import sys, tempfile, time
import numpy as np
import polymem
rows, ops = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(7)
vectors = rng.normal(0, 1, (rows + 2 * ops + 2, 384)).astype(np.float32)
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)


class Fixed:  # the vectors are given: an embedder that is never asked
    model_id, dimension = "bench-384", 384

    def embed(self, texts):
        raise AssertionError("every vector is given")


with tempfile.TemporaryDirectory() as tmp:
    mem = polymem.open(f"sqlite:///{tmp}/m.db", embedder=Fixed())
    for start in range(0, rows, 5000):
        end = min(rows, start + 5000)
        mem.save_many([polymem.MemoryDraft(f"memory {i} about tea and trains") for i in range(start, end)],
                      user_id="u", vectors=vectors[start:end])
    out = []
    for name, op in (("save", lambda i: mem.save(f"single save {i} likes tea", user_id="u", vector=vectors[rows + i])),
                     ("recall", lambda i: mem.recall("tea trains", user_id="u", query_vector=vectors[rows + ops + 1 + i]))):
        op(0)
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(1, ops + 1):
            op(i)
        out.append(f"{name} {(time.process_time() - cpu) / ops * 1e6:.1f} {(time.perf_counter() - wall) / ops * 1e6:.1f}")
    mem.close()
print(";".join(out))
"""


def micro(tree: str, rows: int, ops: int) -> dict[str, tuple[float, float]]:
    """One micro run on `tree`: op -> (CPU microseconds, wall microseconds) per call."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", MICRO, str(rows), str(ops)], env=env, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    return {name: (float(cpu), float(wall)) for name, cpu, wall in (part.split() for part in out.split(";"))}


def main_micro(opts: argparse.Namespace) -> None:
    results: dict[str, list[dict[str, tuple[float, float]]]] = {"A": [], "B": []}
    loads = []
    for n in range(opts.rounds):
        for name, tree in (("A", opts.a), ("B", opts.b)):
            loads.append(os.getloadavg()[0])
            results[name].append(micro(tree, opts.rows, opts.ops))
            print(f"round {n + 1} {name}: {results[name][-1]} (load {loads[-1]:.2f})", flush=True)
    print(f"\nmedians over {opts.rounds} alternating runs each, {opts.rows:,} memories of one user, {opts.ops} calls "
          f"per run; 1-minute load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores; "
          f"A = {opts.a}, B = {opts.b}\n")
    print("| call | A CPU us | B CPU us | B / A CPU | A wall us | B wall us | B / A wall |\n|---|---|---|---|---|---|---|")
    for op in results["A"][0]:
        a_cpu, b_cpu = (statistics.median(r[op][0] for r in results[k]) for k in "AB")
        a_wall, b_wall = (statistics.median(r[op][1] for r in results[k]) for k in "AB")
        print(f"| {op} | {a_cpu:.1f} | {b_cpu:.1f} | {b_cpu / a_cpu:.3f} | {a_wall:.1f} | {b_wall:.1f} | "
              f"{b_wall / a_wall:.3f} |")


# `--postgres`: `bench_postgres.py --operations` (each PostgreSQL operation alone on a fresh store,
# its own embedded server) per tree and round; each figure's median per tree, its ratio to tree A's.
def postgres(tree: str, size: int, users: int, queries: int) -> dict[str, dict[str, float]]:
    """One `bench_postgres.py --operations` run on `tree`: operation -> {wall, cpu, server} seconds."""
    env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(HERE / "bench_postgres.py"), "--operations", "--sizes", str(size),
                          "--users", str(users), "--queries", str(queries)], env=env, capture_output=True, text=True,
                         check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("OPERATIONS "))
    figures: dict[str, dict[str, float]] = json.loads(line[len("OPERATIONS "):])
    return figures


def main_postgres(opts: argparse.Namespace) -> None:
    trees = [opts.a, *opts.b]
    results: dict[str, list[dict[str, dict[str, float]]]] = {tree: [] for tree in trees}
    loads = []
    for n in range(opts.rounds):
        for tree in trees if n % 2 == 0 else trees[::-1]:
            loads.append(os.getloadavg()[0])
            results[tree].append(postgres(tree, opts.size, opts.users, opts.queries))
            print(f"round {n + 1} {tree} (load {loads[-1]:.1f}): " + "; ".join(
                f"{op} " + "/".join(f"{v * 1e3:.2f}" for v in times.values())
                for op, times in results[tree][-1].items()) + " ms wall/cpu/server", flush=True)
    print(f"\nmedians over {opts.rounds} runs per tree (the order alternating), {opts.size:,} memories of "
          f"{opts.users} users, {opts.queries} one-user recalls and saves per run; 1-minute load "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores. Milliseconds per call (per memory for "
          "the imports); client = this process's CPU, server = the PostgreSQL backends' CPU. Ratios: tree / "
          f"A = {opts.a} (above 1: slower)\n")
    kinds = ("wall", "cpu", "server")
    print("| operation | time | " + " | ".join(trees) + " | " + " | ".join(f"{t} / A" for t in opts.b) + " |")
    print("|---" * (2 + 2 * len(trees) - 1) + "|")
    for op in results[opts.a][0]:
        for kind in kinds:
            medians = [statistics.median(r[op][kind] for r in results[tree]) * 1e3 for tree in trees]
            ratios = " | ".join(f"{m / medians[0]:.3f}" if medians[0] else "-" for m in medians[1:])
            label = {"wall": "wall", "cpu": "client CPU", "server": "server CPU"}[kind]
            print(f"| {op} | {label} | " + " | ".join(f"{m:.3f}" for m in medians) + f" | {ratios} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="source tree A (its core/src)")
    parser.add_argument("--b", required=True, nargs="+", help="source tree B (its core/src); with --postgres, "
                        "several")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", nargs="*", default=["10000"])
    parser.add_argument("--synthetic", nargs="*", default=[], help="bench_core's synthetic sizes (vs numpy)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--micro", action="store_true", help="time single saves and recalls alone (CPU and wall)")
    parser.add_argument("--rows", type=int, default=10_000, help="--micro: memories in the store")
    parser.add_argument("--ops", type=int, default=500, help="--micro: calls of each kind per run")
    parser.add_argument("--postgres", action="store_true", help="bench_postgres.py --operations per tree")
    parser.add_argument("--size", type=int, default=10_000, help="--postgres: memories")
    parser.add_argument("--users", type=int, default=100, help="--postgres: users")
    opts = parser.parse_args()
    if opts.postgres:
        main_postgres(opts)
        return
    opts.b = opts.b[0]
    if opts.micro:
        main_micro(opts)
        return
    results: dict[str, list[dict[tuple[str, str], list[float]]]] = {"A": [], "B": []}
    for n in range(opts.rounds):
        for name, tree in (("A", opts.a), ("B", opts.b)):
            before = os.getloadavg()[0]
            rows = run(tree, opts.sizes, opts.queries, opts.synthetic)
            results[name].append(rows)
            for (size, users), figures in rows.items():
                names = SYNTHETIC if users == "synthetic" else FIGURES
                print(f"round {n + 1} {name}: {size} x {users}: "
                      + ", ".join(f"{f} {v:,.2f}" for f, v in zip(names, figures))
                      + f" (load {before:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
    print(f"\nmedians over {opts.rounds} alternating runs each; A = {opts.a}, B = {opts.b}\n")
    print("| memories | users | figure | A | B | B / A |\n|---|---|---|---|---|---|")
    for key in results["A"][0]:
        for i, figure in enumerate(SYNTHETIC if key[1] == "synthetic" else FIGURES):
            a = statistics.median(r[key][i] for r in results["A"])
            b = statistics.median(r[key][i] for r in results["B"])
            print(f"| {key[0]} | {key[1]} | {figure} | {a:,.2f} | {b:,.2f} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
