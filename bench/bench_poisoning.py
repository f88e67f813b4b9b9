"""The write filter on the poisoning corpus: catch and false-positive rates per source and per style.

    python bench/bench_poisoning.py [--part heldout|dev]

Prints, for the held-out part (tests/data/poisoning/corpus.jsonl), the rates of the default
`RuleClassifier` per source and per style, the same without normalisation (raw text only), and
the time one classification takes on this machine (with its load average)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from polymem._guard import Rates, RuleClassifier, conversation_text, measure

CORPUS = Path(__file__).parents[1] / "tests" / "data" / "poisoning" / "corpus.jsonl"
SOURCES = ("user_input", "tool_result", "inference")


def _cell(rates: Rates) -> str:
    return (f"{rates.catch_rate:4.0%} ({rates.caught}/{rates.injections})" if rates.injections else "-").ljust(14) + \
        (f"{rates.false_positive_rate:4.0%} ({rates.false_positives}/{rates.benign})" if rates.benign else "-").ljust(14)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="heldout", choices=("heldout", "dev"))
    args = parser.parse_args()
    with CORPUS.open(encoding="utf-8") as f:
        items = [i for i in map(json.loads, f) if i["split"] == args.part]
    print(f"part: {args.part}  ({sum(i['label'] == 'injection' for i in items)} injections, "
          f"{sum(i['label'] == 'benign' for i in items)} benign)  load average {os.getloadavg()[0]:.1f}\n")
    for title, classifier in (("normalised (default)", RuleClassifier()),
                              ("raw text, no normalisation", RuleClassifier(normalize=False))):
        tables = {source: measure(classifier, items, source) for source in SOURCES}
        print(f"## {title}: catch rate, false-positive rate")
        print("style".ljust(18) + "".join(f"{s:<28}" for s in SOURCES))
        for style in sorted(tables[SOURCES[0]], key=lambda s: (s == "all", s)):
            print(style.ljust(18) + "".join(_cell(tables[s][style]) for s in SOURCES))
        print()
    classifier = RuleClassifier()
    texts = [i["text"] if isinstance(i["text"], str) else conversation_text(i["text"]) for i in items]
    rounds, cold, warm = 20, 0.0, 0.0
    for _ in range(rounds):  # alternate: a text seen for the first time, then again (cached)
        classifier._scored.cache_clear()
        start = time.perf_counter()
        for text in texts:
            classifier.classify(text, source="tool_result")
        middle = time.perf_counter()
        for text in texts:
            classifier.classify(text, source="tool_result")
        cold, warm = cold + middle - start, warm + time.perf_counter() - middle
    n = rounds * len(texts)
    print(f"classify: {cold / n * 1e6:.0f} us per memory first seen, {warm / n * 1e6:.1f} us again "
          f"(mean over {rounds} x {len(texts)}; load average {os.getloadavg()[0]:.1f})")

if __name__ == "__main__":
    main()
