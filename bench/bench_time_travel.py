"""What `explain` and `as_of` cost a recall: plain, explain and as_of recalls alternated in one run.

Builds an SQLite store of N memories (vectors as in bench_core.py: real all-MiniLM-L6-v2
vectors of generated sentences, perturbed), spread over U users; then updates 1% and deletes
0.5% of them, so a recall `as_of` the moment before reads past versions and tombstones too.
Each round recalls one query three ways, in turn (plain, explain=True, as_of=before), the
query's embedding precomputed (it would cost the same in each). Prints p50/p99 per way, the
ratios to plain, and the machine's load average before and after.

    python bench/bench_time_travel.py                          # 100k memories, 100 users and 1 user
    python bench/bench_time_travel.py --sizes 2000 --queries 10 --no-record
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import _results  # noqa: E402
from bench_core import QUERIES, TableEmbedder, percentile, sentences  # noqa: E402

import polymem  # noqa: E402
from polymem import MemoryDraft  # noqa: E402

WAYS = ("plain", "explain", "as_of")


def build(url: str, size: int, users: int, vectors: np.ndarray, texts: list[str], embedder: TableEmbedder,
          rng: random.Random) -> datetime:
    """Fill the store; change some memories afterwards; the moment before the changes."""
    mem = polymem.open(url, embedder=embedder)
    ids: list[str] = []
    for u in range(users):
        mine = np.arange(u, size, users)
        for start in range(0, len(mine), 5000):
            idx = mine[start:start + 5000]
            saved = mem.save_many([MemoryDraft(texts[i]) for i in idx], user_id=f"u{u}", vectors=vectors[idx])
            ids.extend(r.memory_id for r in saved)
    before = datetime.now(timezone.utc)
    time.sleep(0.01)
    changed = rng.sample(ids, max(1, size // 100) + max(1, size // 200))
    split = max(1, size // 100)
    for memory_id in changed[:split]:
        mem.update(memory_id, content=f"revised note {memory_id[:8]} about green tea")
    for memory_id in changed[split:]:
        mem.delete(memory_id)
    mem.close()
    return before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--users", type=int, nargs="+", default=[100, 1])
    parser.add_argument("--queries", type=int, default=60, help="recalls per way")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args()
    rng = random.Random(11)
    try:
        real: polymem.Embedder = polymem.OnnxEmbedder()
    except polymem.PolymemError:
        real = polymem.SentenceTransformerEmbedder()
    dim = real.dimension
    revised = [f"revised note {i} about green tea" for i in range(4)]
    table = {q: np.array(v, dtype=np.float32) for q, v in zip(QUERIES + revised, real.embed(QUERIES + revised))}
    # The as_of recall embeds past versions whose content changed since: the bench's embedder
    # must answer for any text, so unknown texts get the vector of a revised note.
    fallback = table[revised[0]]
    embedder = TableEmbedder(real.model_id, _Defaulting(table, fallback), dim)
    base_texts = sentences(3000, rng)
    base = np.array(real.embed(base_texts), dtype=np.float32)
    load_before = os.getloadavg()
    rows = []
    for size in args.sizes:
        texts = sentences(size, rng)
        noise = np.random.default_rng(size).normal(0, 0.04, (size, dim)).astype(np.float32)
        vectors = base[np.arange(size) % len(base)] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for users in args.users:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite:///{Path(tmp) / 'bench.db'}"
                before = build(url, size, users, vectors, texts, embedder, rng)
                mem = polymem.open(url, embedder=embedder)
                mem.recall(QUERIES[0], user_id="u0")  # load the vector cache
                latency: dict[str, list[float]] = {way: [] for way in WAYS}
                for i in range(args.queries):
                    query, user = QUERIES[i % len(QUERIES)], f"u{i % users}"
                    for way in WAYS[i % 3:] + WAYS[:i % 3]:  # each way first as often as the others
                        options = {"explain": {"explain": True}, "as_of": {"as_of": before}}.get(way, {})
                        t0 = time.perf_counter()
                        mem.recall(query, user_id=user, top_k=10, **options)
                        latency[way].append(time.perf_counter() - t0)
                mem.close()
            plain = percentile(latency["plain"], 50)
            rows.append((size, users, *(x for way in WAYS for x in (percentile(latency[way], 50),
                                                                      percentile(latency[way], 99))),
                         percentile(latency["explain"], 50) / plain, percentile(latency["as_of"], 50) / plain))
            print(f"done {size} x {users} users", flush=True)
    load_after = os.getloadavg()
    header = ("| memories | users | plain p50 ms | plain p99 ms | explain p50 ms | explain p99 ms | as_of p50 ms "
              "| as_of p99 ms | explain / plain (p50) | as_of / plain (p50) |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {s:,} | {u} | {a:.2f} | {b:.2f} | {c:.2f} | {d:.2f} | {e:.2f} | {f:.2f} | {g:.2f} | {h:.1f} |"
             for s, u, a, b, c, d, e, f, g, h in rows]
    load = (f"load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}, "
            f"after {', '.join(f'{x:.2f}' for x in load_after)}")
    text = "\n".join([header, *lines])
    print(text)
    print(load)
    if not args.no_record:
        _results.append("explain and as_of", "bench_time_travel.py",
                        f"; {load}. {args.queries} recalls per way, alternated; top_k=10, one user's scope; query "
                        f"embedding precomputed; 1% of memories updated and 0.5% deleted after the as_of moment. "
                        f"polymem {polymem.__version__}.\n\n{text}")


class _Defaulting(dict[str, np.ndarray]):
    def __init__(self, table: dict[str, np.ndarray], fallback: np.ndarray) -> None:
        super().__init__(table)
        self.fallback = fallback

    def __missing__(self, key: str) -> np.ndarray:
        return self.fallback


if __name__ == "__main__":
    main()
