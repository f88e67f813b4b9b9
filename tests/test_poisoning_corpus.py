"""The write filter on the poisoning corpus (tests/data/poisoning): the held-out part's figures.

The held-out part was written after the rules' last change and run once (see
tests/data/poisoning/build_corpus.py for how the split came about); bench/bench_poisoning.py
prints the per-style table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polymem._guard import RuleClassifier, measure

CORPUS = Path(__file__).parent / "data" / "poisoning" / "corpus.jsonl"
SOURCES = ["user_input", "tool_result", "inference", "tool:web"]


def _part(split: str) -> list[dict[str, Any]]:
    with CORPUS.open(encoding="utf-8") as f:
        return [item for item in map(json.loads, f) if item["split"] == split]


def test_the_corpus_is_broad_and_its_held_out_part_covers_every_style() -> None:
    dev, held_out = _part("dev"), _part("heldout")
    assert len(dev) >= 300 and len(held_out) >= 90
    styles = {(i["label"], i["style"]) for i in dev}
    assert {(i["label"], i["style"]) for i in held_out} == styles
    assert {"multilingual", "obfuscated", "encoded", "split", "exfiltration", "tool_call"} <= {s for _, s in styles}


@pytest.mark.parametrize("source", SOURCES)
def test_the_filter_catches_85_percent_of_held_out_injections_at_5_percent_false_positives(source: str) -> None:
    rates = measure(RuleClassifier(), _part("heldout"), source)["all"]
    assert rates.catch_rate >= 0.85, rates
    assert rates.false_positive_rate <= 0.05, rates


@pytest.mark.parametrize("source", SOURCES)
def test_the_filter_flags_no_benign_memory_of_the_held_out_part_in_any_style(source: str) -> None:
    by_style = measure(RuleClassifier(), [i for i in _part("heldout") if i["label"] == "benign"], source)
    assert {style: r.false_positives for style, r in by_style.items() if r.false_positives} == {}
