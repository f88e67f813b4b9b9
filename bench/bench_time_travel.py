"""What `explain`, `as_of` and `valid_at` cost a recall: the ways alternated in one run.

Builds an SQLite store of N memories (vectors as in bench_core.py: real all-MiniLM-L6-v2
vectors of generated sentences, perturbed), spread over U users; then updates 1% and deletes
0.5% of them, so a recall `as_of` the moment before reads past versions and tombstones too.
Each round recalls one query five ways, in turn: plain, explain=True, as_of=before, as_of on
a copy of the store whose past versions have no vector (as versions kept before SQLite migration
10 have, and every version had before it), opened read-only so that it cannot keep the vectors it
embeds: its past versions are embedded again by the real model on every recall, as before, and
valid_at=before (what held in the world then: the memories updated since in their version of then). The query's embedding is precomputed (it would cost the same in each); any other text is
embedded by the real model. Prints p50/p99 per way, the ratios to plain, the texts embedded per
as_of recall, and the machine's load average before and after.

    python bench/bench_time_travel.py                          # 100k memories, 100 users and 1 user
    python bench/bench_time_travel.py --sizes 2000 --queries 10 --no-record
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import _results  # noqa: E402
from bench_core import QUERIES, percentile, sentences  # noqa: E402

import polymem  # noqa: E402
from polymem import MemoryDraft  # noqa: E402

WAYS = ("plain", "explain", "as_of", "as_of_unvectored", "valid_at")


def build(url: str, size: int, users: int, vectors: np.ndarray, texts: list[str], embedder: polymem.Embedder,
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
    embedder = _TableThenModel(real, dict(zip(QUERIES, np.array(real.embed(QUERIES), dtype=np.float32))))
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
                shutil.copy(Path(tmp) / "bench.db", Path(tmp) / "unvectored.db")
                with sqlite3.connect(Path(tmp) / "unvectored.db") as conn:
                    conn.execute("UPDATE memory_versions SET vector = NULL, vector_model = NULL")
                stores = {"kept": polymem.open(url, embedder=embedder),
                          "unvectored": polymem.open(f"sqlite:///{Path(tmp) / 'unvectored.db'}?mode=ro",
                                                      embedder=embedder)}
                for mem in stores.values():
                    mem.recall(QUERIES[0], user_id="u0")  # load the vector cache
                latency: dict[str, list[float]] = {way: [] for way in WAYS}
                embedded: dict[str, list[int]] = {way: [] for way in WAYS}
                for i in range(args.queries):
                    query, user = QUERIES[i % len(QUERIES)], f"u{i % users}"
                    for way in WAYS[i % len(WAYS):] + WAYS[:i % len(WAYS)]:  # each way first as often as the others
                        options = {"explain": {"explain": True}, "as_of": {"as_of": before},
                                   "as_of_unvectored": {"as_of": before}, "valid_at": {"valid_at": before}}.get(way, {})
                        mem = stores["unvectored" if way == "as_of_unvectored" else "kept"]
                        embedder.texts = 0
                        t0 = time.perf_counter()
                        mem.recall(query, user_id=user, top_k=10, **options)
                        latency[way].append(time.perf_counter() - t0)
                        embedded[way].append(embedder.texts)
                for mem in stores.values():
                    mem.close()
            plain = percentile(latency["plain"], 50)
            rows.append((size, users, *(x for way in WAYS for x in (percentile(latency[way], 50),
                                                                      percentile(latency[way], 99))),
                         *(percentile(latency[way], 50) / plain for way in WAYS[1:]),
                         *(float(np.mean(embedded[way])) for way in WAYS[2:4])))
            print(f"done {size} x {users} users", flush=True)
    load_after = os.getloadavg()
    header = ("| memories | users | plain p50 ms | plain p99 ms | explain p50 ms | explain p99 ms | as_of p50 ms "
              "| as_of p99 ms | as_of, versions without vectors p50 ms | as_of, versions without vectors p99 ms "
              "| valid_at p50 ms | valid_at p99 ms "
              "| explain / plain (p50) | as_of / plain (p50) | as_of without vectors / plain (p50) "
              "| valid_at / plain (p50) | texts embedded per as_of recall | the same, without vectors |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = ["| " + " | ".join([f"{s:,}", str(u), *(f"{x:.2f}" for x in times), *(f"{x:.2f}" for x in ratios),
                                *(f"{x:.0f}" for x in texts)]) + " |"
             for s, u, *rest in rows for times, ratios, texts in [(rest[:10], rest[10:14], rest[14:])]]
    load = (f"load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}, "
            f"after {', '.join(f'{x:.2f}' for x in load_after)}")
    text = "\n".join([header, *lines])
    print(text)
    print(load)
    if not args.no_record:
        _results.append("explain, as_of and valid_at", "bench_time_travel.py",
                        f"; {load}. {args.queries} recalls per way, alternated; top_k=10, one user's scope; query "
                        f"embedding precomputed, other texts embedded by {embedder.model_id} ({type(real).__name__}); "
                        f"1% of memories updated and 0.5% deleted after the as_of (and valid_at) moment. "
                        f"polymem {polymem.__version__}.\n\n{text}")


class _TableThenModel:
    """The precomputed vectors of the queries; any other text embedded by the real model
    (`texts`: how many it embedded since last reset)."""

    def __init__(self, model: polymem.Embedder, table: dict[str, np.ndarray]) -> None:
        self.model, self.table, self.texts = model, table, 0
        self.model_id, self.dimension = model.model_id, model.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.table]
        if missing:
            self.texts += len(missing)
            fresh = dict(zip(missing, self.model.embed(missing)))
            return [fresh[t] if t in fresh else self.table[t].tolist() for t in texts]
        return [self.table[t].tolist() for t in texts]


if __name__ == "__main__":
    main()
