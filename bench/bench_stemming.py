"""What the full-text analyzer costs: the Snowball stemmer (PyStemmer, C; this tree's `_text`) (A)
against the hand-written Porter stemmer it replaced (`_text.py` of main at f74d947, read from git) (B),
alternated round by round in one process.

    python bench/bench_stemming.py [--rounds 7] [--data locomo10.json]

Two measures, on the words of LoCoMo's dialog turns (the text `bench_locomo.py` stores):
- `stem`: every distinct word once, through the stemmer alone (what a cache miss costs);
- `terms`: `terms()` over every turn, the per-word cache cleared first (what indexing a new store costs).
Prints the median per word / per turn of each, the ratio A / B, and the machine's load."""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polymem import _text

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("POLYMEM_LOCOMO", ROOT.parent / "shared" / "bench-data" / "locomo10.json"))
PORTER_COMMIT = "f74d947"  # the last main with the hand-written Porter stemmer


def porter_module() -> types.ModuleType:
    """`polymem._text` as it was with the hand-written Porter stemmer, loaded from git."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{PORTER_COMMIT}:core/src/polymem/_text.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType("porter_text")
    exec(compile(source, f"{PORTER_COMMIT}:_text.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    return module


def turns(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    out = []
    for sample in data:
        conv = sample["conversation"]
        for key, session in conv.items():
            if re.fullmatch(r"session_\d+", key):
                out += [f"{t['speaker']}: {t['text']}" for t in session]
    return out


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    porter = porter_module()
    texts = turns(args.data)
    words = sorted({w for t in texts for w in _text._TOKEN_RE.findall(t.casefold()) if w.isascii()})
    snowball = _text._stemmer(_text.DEFAULT_LANGUAGE)
    measures: dict[str, dict[str, list[float]]] = {"stem": {"A": [], "B": []}, "terms": {"A": [], "B": []}}
    load_start = os.getloadavg()[0]
    for _ in range(args.rounds):
        measures["stem"]["A"].append(timed(lambda: [snowball.stemWord(w) for w in words]) / len(words))
        measures["stem"]["B"].append(timed(lambda: [porter._stem(w) for w in words]) / len(words))
        _text._term.cache_clear()
        measures["terms"]["A"].append(timed(lambda: [_text.terms(t) for t in texts]) / len(texts))
        porter._term.cache_clear()
        measures["terms"]["B"].append(timed(lambda: [porter.terms(t) for t in texts]) / len(texts))
    load_end = os.getloadavg()[0]
    print(f"## Stemming: Snowball (PyStemmer) vs the hand-written Porter (bench/bench_stemming.py)\n\n"
          f"{len(words):,} distinct words, {len(texts):,} LoCoMo turns, {args.rounds} alternated rounds; "
          f"1-min load average {load_start:.1f} at the start, {load_end:.1f} at the end, on {os.cpu_count()} cores.\n")
    print("| measure | A: Snowball (median) | B: Porter (median) | A / B |\n|---|---:|---:|---:|")
    for name, unit in (("stem", "µs per word"), ("terms", "µs per turn")):
        a, b = (statistics.median(measures[name][k]) * 1e6 for k in ("A", "B"))
        print(f"| {name} ({unit}) | {a:.2f} | {b:.2f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
