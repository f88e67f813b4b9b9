"""Is detecting the language of each memory and query worth it, instead of one language per store?

    python bench/bench_language_detection.py [--data locomo10.json]

A store stems its full text in one language (`polymem.open(..., language=...)`). Detecting it per
text instead would stem each memory in its own language, and each query in the one detected for
it: a query detected wrongly is stemmed wrongly and misses the memories it asks about. This
measures, with langdetect (a port of Google's language-detection; `pip install langdetect`, a
benchmark-only dependency, seeded for repeatable answers), how often LoCoMo's English questions
and dialog turns are detected as English, by length in words, and what a detection costs
beside `terms()` of the same text. Prints a table with the machine's load."""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from pathlib import Path

from polymem._text import terms

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("POLYMEM_LOCOMO", ROOT.parent / "shared" / "bench-data" / "locomo10.json"))
LENGTHS = ((1, 4), (5, 8), (9, 15), (16, 10_000))


def texts(path: Path) -> dict[str, list[str]]:
    questions, turns = [], []
    for sample in json.loads(path.read_text()):
        questions += [q["question"] for q in sample["qa"]]
        for key, session in sample["conversation"].items():
            if re.fullmatch(r"session_\d+", key):
                turns += [t["text"] for t in session]
    return {"questions": questions, "dialog turns": turns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0

    def language(text: str) -> str:
        try:
            return str(detect(text))
        except LangDetectException:
            return "none"

    load_start = os.getloadavg()[0]
    print("## Per-text language detection on English text (bench/bench_language_detection.py)\n")
    print("| texts | words | count | detected English | most frequent wrong answers |\n|---|---|---:|---:|---|")
    detect_times: list[float] = []
    terms_times: list[float] = []
    for kind, items in texts(args.data).items():
        for low, high in LENGTHS:
            subset = [t for t in items if low <= len(t.split()) <= high]
            if not subset:
                continue
            answers = []
            for text in subset:
                start = time.perf_counter()
                answers.append(language(text))
                detect_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                terms(text)
                terms_times.append(time.perf_counter() - start)
            wrong: dict[str, int] = {}
            for answer in answers:
                if answer != "en":
                    wrong[answer] = wrong.get(answer, 0) + 1
            top = ", ".join(f"{k} {v}" for k, v in sorted(wrong.items(), key=lambda kv: -kv[1])[:4])
            share = answers.count("en") / len(answers)
            words = f"{low}–{high}" if high < 10_000 else f"{low}+"
            print(f"| {kind} | {words} | {len(subset):,} | {share:.1%} | {top} |")
    load_end = os.getloadavg()[0]
    print(f"\nPer text, median: detection {statistics.median(detect_times) * 1e6:.0f} µs, terms() "
          f"{statistics.median(terms_times) * 1e6:.0f} µs; 1-min load average {load_start:.1f} at the start, "
          f"{load_end:.1f} at the end, on {os.cpu_count()} cores.")


if __name__ == "__main__":
    main()
