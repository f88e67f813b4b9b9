"""Consolidation at scale: seconds for N memories in one user's scope (and spread over users), and how
often the progress bar moves.

Memories are generated sentences whose vectors come from the real all-MiniLM-L6-v2 (a few thousand
embedded once, then perturbed so every memory has its own vector); a share of them are near-duplicates
of an earlier one (a full stop more, the vector barely moved), statements of a favourite thing that
change value, and statements with a change marker ("I switched to …"), so both passes have work.
Results are appended to bench/RESULTS.md with the machine, the date and the load.

    python bench/bench_consolidation.py                         # 100k in one scope
    python bench/bench_consolidation.py --sizes 1000000 --users 100
    python bench/bench_consolidation.py --sizes 2000 --no-record  # a quick smoke run
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import _results
import numpy as np

import polymem
from polymem import MemoryDraft

SUBJECTS = ["I", "My sister", "My manager", "Our team", "My friend Li", "My doctor", "The client"]
VERBS = ["likes", "visited", "booked", "bought", "recommended", "scheduled", "cancelled", "asked about"]
OBJECTS = ["blue shirts", "jazz concerts", "a trip to Kyoto", "green tea", "the quarterly report", "running shoes",
           "a flight to Berlin", "the budget review", "Italian wine", "a new laptop", "hiking boots", "a yoga class"]
THINGS = ["colour", "food", "drink", "band", "city", "sport", "book", "film"]
VALUES = ["blue", "black", "pizza", "green tea", "coffee", "jazz", "Leeds", "tennis", "Dune", "Alien", "sushi"]


def corpus(size: int, base: np.ndarray, rng: random.Random) -> tuple[list[str], np.ndarray]:
    gen = np.random.default_rng(size)
    texts: list[str] = []
    vectors = np.empty((size, base.shape[1]), dtype=np.float32)
    for i in range(size):
        kind = rng.random()
        if kind < 0.05 and i:
            j = rng.randrange(i)
            texts.append(texts[j] + ".")
            vectors[i] = vectors[j] + gen.normal(0, 0.002, base.shape[1])
            continue
        if kind < 0.08:
            texts.append(f"My favourite {rng.choice(THINGS)} is {rng.choice(VALUES)}")
        elif kind < 0.10:
            texts.append(f"I switched to {rng.choice(VALUES)} these days")
        else:
            texts.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {i})")
        vectors[i] = base[rng.randrange(len(base))] + gen.normal(0, 0.04, base.shape[1])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--users", type=int, default=1, help="spread each size over this many users")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args()
    rng = random.Random(7)
    real = polymem.SentenceTransformerEmbedder()
    base_texts = [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}" for _ in range(2000)]
    base = np.array(real.embed(base_texts), dtype=np.float32)
    rows = []
    for size in args.sizes:
        texts, vectors = corpus(size, base, rng)
        with tempfile.TemporaryDirectory() as tmp:
            mem = polymem.open(f"sqlite:///{Path(tmp) / 'bench.db'}", embedder=real)
            t0 = time.perf_counter()
            for u in range(args.users):
                mine = np.arange(u, size, args.users)
                for start in range(0, len(mine), 5000):
                    idx = mine[start:start + 5000]
                    mem.save_many([MemoryDraft(texts[i], category="fact") for i in idx], user_id=f"u{u}",
                                  vectors=vectors[idx])
            filled = time.perf_counter() - t0
            ticks: list[float] = []
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            report = mem.consolidate(progress=lambda done, ticks=ticks: ticks.append(time.perf_counter()))
            took = time.perf_counter() - t0
            mem.close()
        gaps = np.diff([t0, *ticks, t0 + took])
        rows.append((size, args.users, filled, took, float(gaps.max()), len(ticks),
                     sum(len(v) for v in report.merged.values()), len(report.superseded), load))
        print(f"done {size:,} x {args.users} users in {took:.1f} s", flush=True)
    header = ("| memories | users | fill s | consolidate s | longest progress gap s | progress calls | merged "
              "| superseded | load |\n|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {s:,} | {u} | {f:.0f} | {c:.1f} | {g:.2f} | {n:,} | {m:,} | {x:,} | {ld:.1f} |"
             for s, u, f, c, g, n, m, x, ld in rows]
    table_text = "\n".join([header, *lines])
    print(table_text)
    if not args.no_record:
        _results.append("Consolidation", "bench_consolidation.py",
                        f"; load is the 1-minute load average when consolidation started. "
                        f"polymem {polymem.__version__}.\n\n{table_text}")


if __name__ == "__main__":
    main()
