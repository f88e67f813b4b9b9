"""What the write filter and the read guard cost: saves, recalls and lists with the default
`RuleClassifier` (A) and with `classifier=None` (B), alternated in one run on SQLite files.

    python bench/bench_guard_cost.py [--memories 2000] [--rounds 5]

Lexical mode (no embedder), so the guard's share is not hidden behind the embedding model's.
Prints the median time per call of each and the ratio A / B, with the machine's load."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import polymem

SUBJECTS = ["My sister", "The client", "Our team", "My doctor", "My friend Li", "The user"]
VERBS = ["likes", "visited", "booked", "recommended", "cancelled", "asked about"]
OBJECTS = ["the museum", "green tea", "a flight to Lisbon", "the quarterly report", "Thai food", "the dentist"]


def _texts(n: int) -> list[str]:
    return [f"{SUBJECTS[i % 6]} {VERBS[i // 6 % 6]} {OBJECTS[i // 36 % 6]} (note {i})." for i in range(n)]


def _round(url: str, classifier: Any, texts: list[str]) -> dict[str, float]:
    with polymem.open(url, embedder=None, classifier=classifier) as mem:
        start = time.perf_counter()
        for text in texts:
            mem.save(text, user_id="ann", source="tool_result")
        save = (time.perf_counter() - start) / len(texts)
        start = time.perf_counter()
        for text in texts[:200]:
            mem.recall(text.split(" (")[0], user_id="ann")
        recall = (time.perf_counter() - start) / 200
        start = time.perf_counter()
        for _ in range(50):
            mem.list(user_id="ann", limit=100)
        listing = (time.perf_counter() - start) / 50
    return {"save": save, "recall": recall, "list 100": listing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = _texts(args.memories)
    times: dict[str, dict[str, list[float]]] = {"guarded": {}, "unguarded": {}}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):  # A, B, A, B…: the machine's load falls on both alike
            for name, classifier in (("guarded", "rules"), ("unguarded", None)):
                url = f"sqlite:///{Path(tmp) / f'{name}-{n}.db'}"
                for key, value in _round(url, classifier, texts).items():
                    times[name].setdefault(key, []).append(value)
    load = (load + os.getloadavg()[0]) / 2
    print(f"{args.memories} memories, {args.rounds} rounds; load average {load:.1f} on {os.cpu_count()} cores\n")
    print(f"{'call':<10}{'guarded (A)':>14}{'unguarded (B)':>16}{'A / B':>8}")
    for key in times["guarded"]:
        a, b = statistics.median(times["guarded"][key]), statistics.median(times["unguarded"][key])
        print(f"{key:<10}{a * 1e6:>11.0f} us{b * 1e6:>13.0f} us{a / b:>8.2f}")


if __name__ == "__main__":
    main()
