"""Subprocess workers for the multi-process and crash tests (real processes, one SQLite file)."""

from __future__ import annotations

import json
import sys
from collections import Counter

import polymem


def mixed(url: str, worker: int, count: int) -> None:
    """Save `count` memories and recall after each; print what recall returned (ids)."""
    returned: Counter[str] = Counter()
    with polymem.open(url, embedder=None) as mem:
        for i in range(count):
            mem.save(f"worker {worker} note {i} about shared topic zebra", user_id="shared",
                     idempotency_key=f"w{worker}-{i}")
            for hit in mem.recall("zebra topic", user_id="shared", top_k=5):
                returned[hit.memory.memory_id] += 1
    print(json.dumps(returned))


def writer(url: str) -> None:
    """Save forever, printing each acknowledged key; the test kills this process."""
    with polymem.open(url, embedder=None) as mem:
        i = 0
        while True:
            mem.save(f"acknowledged note {i}", user_id="crash", idempotency_key=f"k{i}",
                     metadata={"payload": "x" * 200})
            print(f"k{i}", flush=True)
            i += 1


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "mixed":
        mixed(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        writer(sys.argv[2])
