"""Core speed on this machine: saves, batched import, recall latency (with and without the query embedding).

Recall is timed back to back from the first recall of each scope, and once a turn (each recall after
the last one's bonuses are written, as an agent recalls between model calls, with every scope read and
its approximate index built); and the first recall of the store opened again (its scope's vectors read
from the file, as a new process or a CLI call does, the query embedded; the median of three).

Builds stores of N memories (one user, and 100 users) from generated sentences
whose vectors come from the real all-MiniLM-L6-v2 (a few thousand embedded
once, then perturbed so every memory has its own vector), and prints a table.

Then the fixed cost of a recall on other data: synthetic vectors in 200 clusters with wide noise
(no shortlist prunes them well), and vectors drawn at random (no memory has near neighbours to
speak of: the approximate index must read many cells to find them), 8 random words per memory,
in one user's scope; each query is
timed alternately through polymem's recall (query vector given, no embedding) and numpy's exact
search over the same vectors (one matrix-vector product and a partial sort), in one process.
numpy's BLAS runs on one thread (OMP_NUM_THREADS=1 unless set otherwise, before numpy is
imported), as polymem's own products do: on a shared machine BLAS's idle threads spin and
make numpy's time (and the ratio) a measure of the load.
Results are appended to bench/RESULTS.md with the machine, the date and the load.

    python bench/bench_core.py                 # 10k and 100k; synthetic 20k and 100k
    python bench/bench_core.py --sizes 2000 --synthetic 2000   # quick smoke run
    python bench/bench_core.py --sizes --synthetic 20000       # the synthetic table only
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy: its BLAS reads this when it loads

import _results  # noqa: E402
import numpy as np  # noqa: E402

import polymem  # noqa: E402
from polymem import MemoryDraft  # noqa: E402

SUBJECTS = ["I", "My sister", "The user", "My manager", "Our team", "My friend Li", "My doctor", "The client"]
VERBS = ["likes", "prefers", "visited", "booked", "hates", "bought", "recommended", "scheduled", "cancelled", "asked about"]
OBJECTS = ["blue shirts", "jazz concerts", "a trip to Kyoto", "green tea", "the quarterly report", "a dentist appointment",
           "vegetarian food", "running shoes", "a flight to Berlin", "the budget review", "Italian wine", "a new laptop",
           "hiking boots", "the team offsite", "dark chocolate", "a yoga class", "the insurance renewal", "black coffee"]
WHEN = ["last week", "yesterday", "every Monday", "in March", "for the holidays", "this morning", "twice a month", ""]
QUERIES = ["What colours does the user like?", "When is the dentist appointment?", "What drinks does the user enjoy?",
           "Any travel plans?", "What food should I avoid?", "What did the manager schedule?",
           "Tell me about concerts", "Which shoes were bought?"]


def sentences(n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)}".strip()
            + f" (note {i})" for i in range(n)]


class TableEmbedder:
    """Returns precomputed query vectors: recall timed without the embedding model."""

    def __init__(self, model_id: str, table: dict[str, np.ndarray], dimension: int) -> None:
        self.model_id, self._table, self.dimension = model_id, table, dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._table[t].tolist() for t in texts]


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) * 1000


def clustered(size: int, dim: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """Unit vectors around `centres` with noise as wide as the centres themselves."""
    vectors = centres[rng.integers(0, len(centres), size)] + rng.normal(0, 1 / np.sqrt(dim), (size, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def synthetic(size: int, queries: int, data: str, dim: int = 384) -> tuple[float, ...]:
    """(polymem p50, polymem p99, numpy p50, numpy p99, polymem CPU p50, numpy CPU p50 in ms, load,
    share of numpy's exact top 10 that polymem's vector search finds, seconds the scope's approximate
    index took to build or 0) of one-scope recall, alternated. CPU time is the process's (every
    thread's): on a busy machine the wall clock also counts the waits for a core."""
    rng = np.random.default_rng(size)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), int(rng.integers(4, 9)))) for _ in range(5000)]
    centres = rng.normal(0, 1 / np.sqrt(dim), (200, dim))
    if data == "random":
        # (about the origin alone: unit vectors drawn at random)
        vectors, asked = (clustered(n, dim, rng, np.zeros((1, dim))) for n in (size, queries))
    else:
        vectors, asked = clustered(size, dim, rng, centres), clustered(queries, dim, rng, centres)
    texts = [" ".join(rng.choice(words, 8)) for _ in range(size)]
    questions = [" ".join(rng.choice(words, 4)) for _ in range(queries)]
    with tempfile.TemporaryDirectory() as tmp:
        mem = polymem.open(f"sqlite:///{Path(tmp) / 'bench.db'}", embedder=TableEmbedder("synthetic", {}, dim))
        for start in range(0, size, 5000):
            mem.save_many([MemoryDraft(t, category="fact") for t in texts[start:start + 5000]], user_id="u0",
                          vectors=vectors[start:start + 5000])
        mem.recall(questions[0], user_id="u0", query_vector=asked[0])  # load the vector cache
        # a scope of `ANN_ROWS` or more builds its approximate index in the background after its
        # first recall (recalls stay exact meanwhile): timed once it is built, as an agent that runs
        # on has it, and not against the build's thread
        indexes = mem.backend.indexes
        indexes.wait(3600)
        built = max((s.build_seconds or 0.0 for s in indexes.scopes.values()), default=0.0)
        row_of = {text: i for i, text in enumerate(texts)}
        ours, exact, ours_cpu, exact_cpu = [], [], [], []
        load = os.getloadavg()[0]
        for question, vector in zip(questions, asked):
            t0, c0 = time.perf_counter(), time.process_time()
            mem.recall(question, user_id="u0", top_k=10, query_vector=vector)
            t1, c1 = time.perf_counter(), time.process_time()
            sims = vectors @ vector
            top = np.argpartition(-sims, 10)[:10]
            top[np.argsort(-sims[top])]
            t2, c2 = time.perf_counter(), time.process_time()
            ours.append(t1 - t0)
            exact.append(t2 - t1)
            ours_cpu.append(c1 - c0)
            exact_cpu.append(c2 - c1)
        found = []
        for vector in asked:
            sims = vectors @ vector
            truth = set(np.argpartition(-sims, 10)[:10].tolist())
            got = {row_of[record.content] for record, _ in mem.nearest(vector, user_id="u0", top_k=10)}
            found.append(len(truth & got) / 10)
        mem.close()
    return (percentile(ours, 50), percentile(ours, 99), percentile(exact, 50), percentile(exact, 99),
            percentile(ours_cpu, 50), percentile(exact_cpu, 50), load, float(np.mean(found)), built)


def real_data(sizes: list[int], queries: int) -> tuple[list[tuple[Any, ...]], str]:
    """The rows of the main table (stores of real-embedding vectors), and the query embedder's name."""
    rng = random.Random(7)
    try:
        real = polymem.OnnxEmbedder()
        embed_name = "onnxruntime int8 (fast path)"
    except polymem.PolymemError:
        real = polymem.SentenceTransformerEmbedder()
        embed_name = "sentence-transformers (torch); run `polymem model export` for the fast path"
    model_id, dim = real.model_id, real.dimension
    base_texts = sentences(min(3000, max(sizes)), rng)
    base = np.array(real.embed(base_texts), dtype=np.float32)
    table = {q: np.array(v, dtype=np.float32) for q, v in zip(QUERIES, real.embed(QUERIES))}
    fast = TableEmbedder(model_id, table, dim)
    rows = []
    for size in sizes:
        texts = sentences(size, rng)
        noise = np.random.default_rng(size).normal(0, 0.04, (size, dim)).astype(np.float32)
        vectors = base[np.arange(size) % len(base)] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for users in (1, 100):
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{Path(tmp) / 'bench.db'}"
                mem = polymem.open(url, embedder=fast)
                # batched import: each user's memories in batches of up to 5,000, as an import
                # of per-user histories would send them
                t0 = time.perf_counter()
                for u in range(users):
                    mine = np.arange(u, size, users)
                    for start in range(0, len(mine), 5000):
                        idx = mine[start:start + 5000]
                        mem.save_many([MemoryDraft(texts[i], category="fact") for i in idx], user_id=f"u{u}",
                                      vectors=vectors[idx])
                import_rate = size / (time.perf_counter() - t0)
                # single saves with precomputed vectors
                n_single = 1000
                extra = np.random.default_rng(1).normal(0, 1, (n_single, dim)).astype(np.float32)
                t0 = time.perf_counter()
                for i in range(n_single):
                    mem.save(f"single save {i} likes tea", user_id=f"u{i % users}", vector=extra[i])
                save_rate = n_single / (time.perf_counter() - t0)
                # recall, excluding the embedding
                mem.recall(QUERIES[0], user_id="u0")  # load the vector cache
                lat = []
                for i in range(queries):
                    q = QUERIES[i % len(QUERIES)]
                    t0 = time.perf_counter()
                    mem.recall(q, user_id=f"u{i % users}", top_k=10)
                    lat.append(time.perf_counter() - t0)
                # recall once a turn, as an agent does between model calls: the last recall's
                # bonuses are written before the next recall (untimed); the scope's approximate
                # index, which the first recall of a large scope starts building, built first
                mem.backend.indexes.wait(3600)
                lat_turn = []
                for i in range(queries):
                    mem.flush()
                    t0 = time.perf_counter()
                    mem.recall(QUERIES[i % len(QUERIES)], user_id=f"u{i % users}", top_k=10)
                    lat_turn.append(time.perf_counter() - t0)
                mem.close()
                # the first recall of a store just opened: the scope's vectors read from the file
                # (its approximate index from its own), the query embedded; the median of 3 openings
                firsts = []
                for _ in range(3):
                    mem = polymem.open(url, embedder=real)
                    t0 = time.perf_counter()
                    mem.recall(QUERIES[0], user_id="u0")
                    firsts.append(time.perf_counter() - t0)
                    mem.close()
                first = percentile(firsts, 50)
                mem = polymem.open(url, embedder=real)
                mem.recall(QUERIES[0], user_id="u0")
                lat_e = []
                for i in range(queries):
                    q = QUERIES[i % len(QUERIES)] + f" {i}"
                    t0 = time.perf_counter()
                    mem.recall(q, user_id=f"u{i % users}", top_k=10)
                    lat_e.append(time.perf_counter() - t0)
                mem.close()
                size_mb = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
            rows.append((size, users, save_rate, import_rate, percentile(lat, 50), percentile(lat, 99),
                         percentile(lat_turn, 50), first, percentile(lat_e, 50), percentile(lat_e, 99),
                         size_mb))
            print(f"done {size} x {users} users", flush=True)
    return rows, embed_name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--synthetic", type=int, nargs="*", default=[20_000, 100_000],
                        help="sizes of the clustered synthetic scope timed against numpy's exact search")
    parser.add_argument("--data", nargs="*", choices=["clustered", "random"], default=["clustered", "random"],
                        help="the synthetic scopes' vectors: in 200 clusters with wide noise, or drawn at random")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args()
    conditions = _results.Conditions()
    conditions.sample()
    rows, embed_name = real_data(args.sizes, args.queries) if args.sizes else ([], "none (query vectors given)")
    synthetic_rows = []
    for size in args.synthetic:
        for data in args.data:
            conditions.sample()
            synthetic_rows.append((size, data, *synthetic(size, args.queries, data)))
            print(f"done synthetic {size} {data}", flush=True)
    conditions.sample()
    header = ("| memories | users | single saves/s | batched import/s | recall p50 ms | recall p99 ms "
              "| recall p50 ms, one a turn | first recall p50 ms, store just opened | recall+embed p50 ms "
              "| recall+embed p99 ms | file MB |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {s:,} | {u} | {a:,.0f} | {b:,.0f} | {c:.2f} | {d:.2f} | {t:.2f} | {o:,.0f} | {e:.2f} | {f:.2f} "
             f"| {g:.0f} |" for s, u, a, b, c, d, t, o, e, f, g in rows]
    table_text = "\n".join([header, *lines]) if rows else ""
    if synthetic_rows:
        table_text += ("\n\nSynthetic one-user scope (vectors in 200 clusters with wide noise, or drawn at random; "
                       "8 random words a memory), "
                       "alternating polymem recall (query vector given) and numpy exact search, numpy's BLAS on "
                       f"{os.environ['OMP_NUM_THREADS']} thread(s) (OMP_NUM_THREADS), timed once the scope's "
                       "approximate index (from 50,000 memories) is built; load is the 1-minute load average "
                       "when the queries started; `exact top-10 found`: the share of numpy's exact 10 nearest "
                       "that polymem's vector search alone (`nearest`) returns.\n\n"
                       "| memories | vectors | polymem p50 ms | polymem p99 ms | numpy p50 ms | numpy p99 ms | p50 ratio "
                       "| polymem CPU p50 ms | numpy CPU p50 ms | CPU ratio | load | exact top-10 found "
                       "| index built in s |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        table_text += "\n".join(f"| {s:,} | {k} | {a:.2f} | {b:.2f} | {c:.2f} | {d:.2f} | {a / c:.1f}x | {e:.2f} "
                                f"| {f:.2f} | {e / f:.1f}x | {ld:.1f} | {fd:.2f} | {bs:.1f} |"
                                for s, k, a, b, c, d, e, f, ld, fd, bs in synthetic_rows)
    print(f"During the run: {conditions.describe()}\n\n{table_text.lstrip()}")
    if not args.no_record:
        _results.append("Core", "bench_core.py",
                        f"; during the run: {conditions.describe()}. Query embedder: {embed_name}. "
                        f"{args.queries} queries per row, top_k=10, scoped to one "
                        f"user. polymem {polymem.__version__}.\n\n{table_text}")


if __name__ == "__main__":
    main()
