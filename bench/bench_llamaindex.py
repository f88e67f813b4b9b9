"""LlamaIndex chat stores side by side: polymem vs SimpleChatStore (persisted) vs SQLAlchemyChatStore on SQLite.

Measures, one conversation of N messages per store, all on files in a temporary folder:

- `ChatMemoryBuffer` rows (BaseChatStore): latency of one `put` (SimpleChatStore also
  `persist()`s, since it is durable only then) and of `get()` (token-limited window);
- `Memory` rows (AsyncDBChatStore): latency of one `aput` and of `aget()`;
- raw store rows (AsyncDBChatStore): `add_message` and `get_messages`.

Target: polymem no slower than `SQLAlchemyChatStore`. Prints a table and appends it to
bench/results/llamaindex.md. Run: `.venv/bin/python bench/bench_llamaindex.py [N]`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("POLYMEM_EMBEDDER", "none")  # chat stores never embed; keep model loading out of it

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

import polymem
from polymem_llamaindex import PolymemAsyncChatStore, PolymemChatStore

RESULTS = Path(__file__).parent / "results" / "llamaindex.md"
GET_EVERY = 10


def conversation(n: int) -> list[ChatMessage]:
    lines = [
        "I need a hotel in Lyon for 3 nights from 12 May, under 120 EUR per night.",
        "Hotel Bellecour has a quiet double room at 110 EUR per night, breakfast included.",
        "Is there parking nearby, and how far is it from Part-Dieu station?",
        "Public parking 200 m away at 18 EUR per day; the station is 12 minutes by metro.",
    ]
    return [
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content=f"[{i}] {lines[i % len(lines)]}")
        for i in range(n)
    ]


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def run_buffer(name: str, buffer: ChatMemoryBuffer, messages: list[ChatMessage], after_put: Callable[[], None]) -> dict:
    puts, gets = [], []
    for i, message in enumerate(messages, 1):
        start = time.perf_counter()
        buffer.put(message)
        after_put()
        puts.append(time.perf_counter() - start)
        if i % GET_EVERY == 0:
            start = time.perf_counter()
            buffer.get()
            gets.append(time.perf_counter() - start)
    assert len(buffer.get_all()) == len(messages)
    return {"name": name, "add": ms(puts), "get": ms(gets)}


async def run_async(name: str, put: Callable[[ChatMessage], Awaitable[None]], get: Callable[[], Awaitable[list]],
                    messages: list[ChatMessage]) -> dict:
    puts, gets = [], []
    for i, message in enumerate(messages, 1):
        start = time.perf_counter()
        await put(message)
        puts.append(time.perf_counter() - start)
        if i % GET_EVERY == 0:
            start = time.perf_counter()
            await get()
            gets.append(time.perf_counter() - start)
    return {"name": name, "add": ms(puts), "get": ms(gets)}


async def main(n: int) -> list[dict]:
    messages = conversation(n)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        limit = 1500  # ChatMemoryBuffer window: a few dozen messages, so get() trims

        simple = SimpleChatStore()
        path = str(tmp / "simple.json")
        buffer = ChatMemoryBuffer.from_defaults(chat_store=simple, chat_store_key="k", token_limit=limit)
        rows.append(run_buffer("ChatMemoryBuffer + SimpleChatStore (persist per put)", buffer, messages,
                               lambda: simple.persist(path)))

        with polymem.open(f"sqlite:///{tmp / 'polymem-sync.db'}", embedder=None) as mem:
            buffer = ChatMemoryBuffer.from_defaults(chat_store=PolymemChatStore(mem), chat_store_key="k",
                                                    token_limit=limit)
            rows.append(run_buffer("ChatMemoryBuffer + PolymemChatStore (SQLite file)", buffer, messages,
                                   lambda: None))

        sql = SQLAlchemyChatStore(table_name="bench", async_database_uri=f"sqlite+aiosqlite:///{tmp / 'sqla.db'}")
        memory = Memory.from_defaults(session_id="k", chat_store=sql)
        rows.append(await run_async("Memory + SQLAlchemyChatStore (aiosqlite file)", memory.aput, memory.aget,
                                    messages))
        sql2 = SQLAlchemyChatStore(table_name="bench", async_database_uri=f"sqlite+aiosqlite:///{tmp / 'sqla2.db'}")
        rows.append(await run_async("raw SQLAlchemyChatStore add_message / get_messages",
                                    lambda m: sql2.add_message("k", m), lambda: sql2.get_messages("k"), messages))

        for label, mem in (("sync polymem.Memory", polymem.open(f"sqlite:///{tmp / 'p1.db'}", embedder=None)),
                           ("polymem.AsyncMemory", polymem.open_async(f"sqlite:///{tmp / 'p2.db'}", embedder=None))):
            store = PolymemAsyncChatStore(mem)
            memory = Memory.from_defaults(session_id="k", chat_store=store)
            rows.append(await run_async(f"Memory + PolymemAsyncChatStore ({label})", memory.aput, memory.aget,
                                        messages))
            store2 = PolymemAsyncChatStore(mem)
            rows.append(await run_async(f"raw PolymemAsyncChatStore ({label})", lambda m, s=store2: s.add_message("k2", m),
                                        lambda s=store2: s.get_messages("k2"), messages))
    return rows


def table(rows: list[dict], n: int) -> str:
    head = (
        f"### {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — {n} messages, get every {GET_EVERY}\n\n"
        f"python {platform.python_version()}, llama-index-core {version('llama-index-core')}, "
        f"polymem {version('polymem')}, SQLAlchemy {version('sqlalchemy')}, aiosqlite {version('aiosqlite')}, "
        f"{os.cpu_count()} CPUs\n\n"
        "| store | add p50 ms | add p95 ms | get p50 ms | get p95 ms |\n|---|---:|---:|---:|---:|\n"
    )
    body = "".join(
        f"| {r['name']} | {r['add'][0]:.2f} | {r['add'][1]:.2f} | {r['get'][0]:.2f} | {r['get'][1]:.2f} |\n"
        for r in rows
    )
    return head + body


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    report = table(asyncio.run(main(count)), count)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write(report + "\n")
