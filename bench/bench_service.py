"""Benchmark: the polymem service over loopback vs the embedded store, in the same run.

Starts `polymem serve` (uvicorn, one process) on a fresh SQLite file in lexical
mode (the query embedding would dominate both sides equally; see DESIGN.md),
then drives it with N concurrent clients (threads, one httpx connection each)
doing saves, then recalls. The embedded figures come from the same number of
threads sharing one `polymem.open()` store on another file. Prints a table
and appends it to bench/results/service.md.

    .venv/bin/python bench/bench_service.py [--clients 8] [--ops 200] [--seed-memories 2000]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

import polymem
from polymem.client import HttpMemory
from polymem.server._auth import AuthStore, Database
from polymem.testing.process import free_port

WORDS = ("blue red green coffee tea train paris berlin meeting invoice report dog cat piano guitar "
         "running swimming budget travel flight hotel doctor dentist birthday project deadline").split()


def sentence(rng: random.Random, i: int) -> str:
    return f"Note {i}: the user mentioned " + " ".join(rng.choice(WORDS) for _ in range(8))


def drive(clients: int, ops: int, make: Callable[[int], Any], op: Callable[[Any, int, int], Any]) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)

    def worker(w: int) -> None:
        target = make(w)
        mine = []
        barrier.wait()
        for i in range(ops):
            start = time.perf_counter()
            op(target, w, i)
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {"rps": len(latencies) / elapsed, "p50": statistics.median(latencies) * 1000,
            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ops", type=int, default=200, help="operations per client per phase")
    parser.add_argument("--seed-memories", type=int, default=2000, help="memories stored before recalls")
    args = parser.parse_args()
    rng = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    served_db, embedded_db = tmp / "served.db", tmp / "embedded.db"
    _, token = AuthStore(Database(f"{served_db}.auth.db")).create_token("bench", "default", ["read", "write"])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "polymem.server", "serve", "--url", f"sqlite:///{served_db}",
                               "--port", str(port), "--no-embedder", "--rate", "0"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        seed = [sentence(rng, i) for i in range(args.seed_memories)]
        queries = [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(64)]
        rows: list[tuple[str, str, dict[str, float]]] = []

        embedded = polymem.open(f"sqlite:///{embedded_db}", embedder=None)
        with HttpMemory(url, token) as loader:
            for i, text in enumerate(seed):
                user = f"user{i % args.clients}"
                embedded.save(text, user_id=user)
                loader.save(text, user_id=user)

        def save_op(target: Any, w: int, i: int) -> Any:
            return target.save(f"worker {w} op {i}: " + sentence(rng, i), user_id=f"user{w}")

        def recall_op(target: Any, w: int, i: int) -> Any:
            return target.recall(queries[(w * 31 + i) % len(queries)], user_id=f"user{w}", top_k=10)

        for name, op in (("save", save_op), ("recall", recall_op)):
            rows.append((name, "embedded", drive(args.clients, args.ops, lambda w: embedded, op)))
            opened: list[HttpMemory] = []

            def make(w: int, opened: list[HttpMemory] = opened) -> HttpMemory:
                opened.append(HttpMemory(url, token))
                return opened[-1]

            rows.append((name, "service", drive(args.clients, args.ops, make, op)))
            for c in opened:
                c.close()
        embedded.close()
    finally:
        server.terminate()
        server.wait(30)

    header = (f"\n## {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — {args.clients} concurrent clients × "
              f"{args.ops} ops, {args.seed_memories} seeded memories, lexical mode\n\n"
              f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"load average {os.getloadavg()[0]:.1f} at the end of the run.\n\n"
              "| operation | store | requests/s | p50 ms | p99 ms |\n|---|---|---:|---:|---:|\n")
    table = header + "".join(f"| {op} | {store} | {r['rps']:.0f} | {r['p50']:.2f} | {r['p99']:.2f} |\n"
                             for op, store, r in rows)
    print(table)
    results = Path(__file__).parent / "results" / "service.md"
    if not results.exists():
        results.write_text("# polymem service benchmark (bench/bench_service.py)\n\nThe service over loopback "
                           "(uvicorn, one process; auth, write filter, read guard and audit log on) next to the "
                           "embedded SQLite store driven by the same threads.\n")
    with results.open("a") as handle:
        handle.write(table)


if __name__ == "__main__":
    main()
