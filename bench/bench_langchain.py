"""LangChain chat histories side by side: polymem vs InMemoryChatMessageHistory vs SQLChatMessageHistory on SQLite.

One conversation of N messages per history, files in a temporary folder:

- add: latency of adding one message (`add_messages([m])`, what `add_message` does);
- read: latency of reading the whole history (`messages`) every 10 adds, and that
  latency divided by the number of messages read;
- the same through the async methods (`aadd_messages` / `aget_messages`), polymem's
  `AsyncMemory` against `SQLChatMessageHistory` in async mode (aiosqlite).

Target: polymem no slower than `SQLChatMessageHistory`. Prints a table and appends it to
bench/results/langchain.md. Run: `.venv/bin/python bench/bench_langchain.py [N]`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_community.chat_message_histories import SQLChatMessageHistory
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

import polymem
from polymem_langchain import PolymemChatMessageHistory

warnings.filterwarnings("ignore", category=DeprecationWarning)  # LangChain deprecates the classes users still use
RESULTS = Path(__file__).parent / "results" / "langchain.md"
READ_EVERY = 10


def conversation(n: int) -> list[BaseMessage]:
    lines = [
        "I need a hotel in Lyon for 3 nights from 12 May, under 120 EUR per night.",
        "Hotel Bellecour has a quiet double room at 110 EUR per night, breakfast included.",
        "Is there parking nearby, and how far is it from Part-Dieu station?",
        "Public parking 200 m away at 18 EUR per day; the station is 12 minutes by metro.",
    ]
    return [
        HumanMessage(f"[{i}] {lines[i % 4]}") if i % 2 == 0 else
        AIMessage(f"[{i}] {lines[i % 4]}", response_metadata={"model_name": "bench"},
                  usage_metadata={"input_tokens": 20, "output_tokens": 18, "total_tokens": 38})
        for i in range(n)
    ]


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def summary(name: str, adds: list[float], reads: list[tuple[float, int]]) -> dict[str, Any]:
    per_message = statistics.median(t / count for t, count in reads) * 1e6
    return {"name": name, "add": ms(adds), "read": ms([t for t, _ in reads]), "per_msg_us": per_message}


def run_sync(name: str, history: BaseChatMessageHistory, messages: list[BaseMessage]) -> dict[str, Any]:
    adds: list[float] = []
    reads: list[tuple[float, int]] = []
    for i, message in enumerate(messages, 1):
        start = time.perf_counter()
        history.add_messages([message])
        adds.append(time.perf_counter() - start)
        if i % READ_EVERY == 0:
            start = time.perf_counter()
            read = history.messages
            reads.append((time.perf_counter() - start, len(read)))
    assert list(history.messages) == messages, name
    return summary(name, adds, reads)


async def run_async(name: str, history: BaseChatMessageHistory, messages: list[BaseMessage]) -> dict[str, Any]:
    adds: list[float] = []
    reads: list[tuple[float, int]] = []
    for i, message in enumerate(messages, 1):
        start = time.perf_counter()
        await history.aadd_messages([message])
        adds.append(time.perf_counter() - start)
        if i % READ_EVERY == 0:
            start = time.perf_counter()
            read = await history.aget_messages()
            reads.append((time.perf_counter() - start, len(read)))
    assert list(await history.aget_messages()) == messages, name
    return summary(name, adds, reads)


def sql_history(path: Path, *, async_mode: bool = False) -> SQLChatMessageHistory:
    driver = "sqlite+aiosqlite" if async_mode else "sqlite"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SQLChatMessageHistory("bench", connection=f"{driver}:///{path}", async_mode=async_mode)


async def main(n: int) -> list[dict[str, Any]]:
    messages = conversation(n)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rows.append(run_sync("InMemoryChatMessageHistory (no persistence)", InMemoryChatMessageHistory(), messages))
        rows.append(run_sync("SQLChatMessageHistory (SQLite file)", sql_history(tmp / "sql.db"), messages))
        with polymem.open(f"sqlite:///{tmp / 'polymem.db'}", embedder=None) as mem:
            rows.append(run_sync("PolymemChatMessageHistory (SQLite file)",
                                 PolymemChatMessageHistory(mem, "bench", user_id="u"), messages))
        rows.append(await run_async("async SQLChatMessageHistory (aiosqlite file)",
                                    sql_history(tmp / "sql-async.db", async_mode=True), messages))
        async with polymem.open_async(f"sqlite:///{tmp / 'polymem-async.db'}", embedder=None) as amem:
            rows.append(await run_async("async PolymemChatMessageHistory (AsyncMemory, SQLite file)",
                                        PolymemChatMessageHistory(amem, "bench", user_id="u"), messages))
    return rows


def table(rows: list[dict[str, Any]], n: int) -> str:
    head = (
        f"### {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — {n} messages, read every {READ_EVERY}\n\n"
        f"python {platform.python_version()}, langchain-core {version('langchain-core')}, "
        f"langchain-community {version('langchain-community')}, polymem {version('polymem')}, "
        f"SQLAlchemy {version('sqlalchemy')}, {os.cpu_count()} CPUs\n\n"
        "| history | add p50 ms | add p95 ms | read p50 ms | read p95 ms | read µs/message |\n"
        "|---|---:|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['name']} | {r['add'][0]:.3f} | {r['add'][1]:.3f} | {r['read'][0]:.3f} | {r['read'][1]:.3f} "
        f"| {r['per_msg_us']:.1f} |\n"
        for r in rows
    )
    return head + body


def verdict(rows: list[dict[str, Any]]) -> str:
    by_name: Callable[[str], dict[str, Any]] = lambda prefix: next(r for r in rows if r["name"].startswith(prefix))  # noqa: E731
    ours, theirs = by_name("PolymemChatMessageHistory"), by_name("SQLChatMessageHistory")
    ok = ours["add"][0] <= theirs["add"][0] and ours["read"][0] <= theirs["read"][0]
    return (f"Target (p50 add and read no slower than SQLChatMessageHistory): {'met' if ok else 'NOT met'} — "
            f"add {ours['add'][0]:.3f} vs {theirs['add'][0]:.3f} ms, "
            f"read {ours['read'][0]:.3f} vs {theirs['read'][0]:.3f} ms.\n")


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    results = asyncio.run(main(count))
    report = table(results, count) + "\n" + verdict(results)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write(report + "\n")
