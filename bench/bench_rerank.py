"""What rerank and query rewriting can add to recall on LoCoMo, and what they cost per recall.

The data, the memories and the metrics are bench_locomo.py's (one memory per dialog turn, one
user per conversation, evidence recall@k and MRR). The plug-ins are stand-ins that bound the
possible gain, since no LLM or cross-encoder runs offline here:

- `oracle reranker`: knows the question's evidence turns and rates them 1, every other
  candidate 0: the best any reranker could do with the `rerank_top` candidates it is shown;
- `half oracle reranker`: knows every second evidence turn only (rates the rest 0): a good
  but imperfect reranker;
- `keyword rewriter`: one variant, the question's content words (question words, function
  words and punctuation dropped): what a cheap rewrite does;
- `oracle rewriter`: the evidence turns' own words as the variants (at most 2): the best any
  rewriter could write (it wrote the stored statements).

Every configuration is asked every question, in rotation (A, B, C, … for one question, then
the next), on one store with reinforcement off so that no recall changes what the next one
sees. The cost column is polymem's work per recall with a plug-in that answers at once
(fetching the records the reranker reads, one more search per variant): the model's own time
comes on top (a cross-encoder over 20 short texts, or one chat-model call).

    .venv/bin/python bench/bench_rerank.py                       # full LoCoMo (16k recalls), appends to RESULTS.md
    .venv/bin/python bench/bench_rerank.py --conversations 1 --max-questions 40 --no-record   # quick
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import polymem
from polymem import ScoringPolicy
from polymem.testing import FakeClock


def _locomo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_locomo", Path(__file__).with_name("bench_locomo.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_locomo"] = module
    spec.loader.exec_module(module)
    return module


locomo = _locomo()
_QUESTION_WORDS = {"what", "when", "where", "which", "who", "whom", "whose", "why", "how", "did", "does", "do",
                   "is", "are", "was", "were", "has", "have", "had", "would", "could", "can", "will", "the", "a",
                   "an", "of", "to", "in", "on", "for", "with", "and", "or", "by", "at", "as", "be", "it", "its",
                   "that", "this", "from", "about", "after", "before", "kind", "type", "some"}


class Oracle:
    """A stand-in reranker and rewriter that knows the current question's evidence."""

    def __init__(self) -> None:
        self.evidence: frozenset[str] = frozenset()
        self.ids_of: dict[str, set[str]] = {}  # a turn's text -> its dia_ids (texts repeat: "Thanks!")
        self.texts_of: dict[str, str] = {}  # dia_id -> text
        self.fraction = 1.0  # the share of the evidence it knows (every n-th turn)
        self.variants: list[str] = []

    def known(self) -> frozenset[str]:
        ordered = sorted(self.evidence)
        step = round(1 / self.fraction)
        return frozenset(ordered[::step])

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        known = self.known()
        return [1.0 if self.ids_of.get(text, set()) & known else 0.0 for text in texts]

    def rewrite(self, query: str, count: int) -> list[str]:
        return self.variants[:count]


def keywords(question: str) -> str:
    words = [w for w in re.findall(r"[\w']+", question) if w.casefold() not in _QUESTION_WORDS]
    return " ".join(words) or question


CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    # (name, recall options, what the stand-in knows)
    ("no rerank, no rewrite", {"rerank": False, "rewrite": 0}, ""),
    ("oracle reranker, rerank_top 10", {"rerank": True, "rerank_top": 10, "rewrite": 0}, "oracle"),
    ("oracle reranker, rerank_top 20 (default)", {"rerank": True, "rerank_top": 20, "rewrite": 0}, "oracle"),
    ("oracle reranker, rerank_top 50", {"rerank": True, "rerank_top": 50, "rewrite": 0}, "oracle"),
    ("half oracle reranker, rerank_top 20", {"rerank": True, "rerank_top": 20, "rewrite": 0}, "half"),
    ("keyword rewriter, 1 variant", {"rerank": False, "rewrite": 1}, "keywords"),
    ("oracle rewriter, 2 variants", {"rerank": False, "rewrite": 2}, "oracle-rewrite"),
    ("keyword rewriter + oracle reranker top 20", {"rerank": True, "rerank_top": 20, "rewrite": 1}, "keywords+oracle"),
]


def run(convs: Sequence[Any], vectors: dict[str, np.ndarray], table: Any, folder: Path,
        ) -> tuple[dict[str, dict[tuple[str, int], list[str]]], dict[str, list[float]]]:
    clock = FakeClock(datetime(2020, 1, 1, tzinfo=timezone.utc))
    oracle = Oracle()
    rankings: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(dict)
    seconds: dict[str, list[float]] = defaultdict(list)
    with polymem.open(f"sqlite:///{folder / 'rerank.db'}", embedder=table, clock=clock,
                      scoring=ScoringPolicy(reinforce=False), reranker=oracle, query_rewriter=oracle) as mem:
        locomo.fill(mem, clock, convs, vectors)
        for conv in convs:
            clock.now = conv.sessions[-1][0] + timedelta(days=1)
            oracle.ids_of = defaultdict(set)
            for t in conv.turns:
                oracle.ids_of[t.text].add(t.dia_id)
                oracle.texts_of[t.dia_id] = t.text
            for n, q in enumerate(conv.questions):
                oracle.evidence = q.evidence
                for name, options, knows in CONFIGS:
                    oracle.fraction = 0.5 if knows == "half" else 1.0
                    oracle.variants = [oracle.texts_of[d] for d in sorted(q.evidence)] \
                        if knows == "oracle-rewrite" else [keywords(q.text)]
                    t0 = time.perf_counter()
                    hits = mem.recall(q.text, user_id=conv.sample_id, top_k=locomo.DEPTH, **options)
                    seconds[name].append(time.perf_counter() - t0)
                    rankings[name][(conv.sample_id, n)] = [h.memory.metadata["dia_id"] for h in hits]
            print(f"done {conv.sample_id} ({len(conv.questions)} questions)", file=sys.stderr, flush=True)
    return rankings, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help=f"locomo10.json (default: {locomo.DEFAULT_DATA})")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--max-questions", type=int, default=None, help="only the first N questions of each")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    data = args.data or locomo.DEFAULT_DATA
    if not data.exists():
        print(f"LoCoMo not found at {data} (set POLYMEM_LOCOMO or pass --data): not measured")
        return 0
    load_start = os.getloadavg()[0]
    convs = locomo.load(data, args.conversations, args.max_questions)
    embedder, embed_name = locomo.make_embedder("torch")
    turn_texts = list(dict.fromkeys(t.text for c in convs for t in c.turns))
    queries = list(dict.fromkeys([q.text for c in convs for q in c.questions]
                                 + [keywords(q.text) for c in convs for q in c.questions]))
    tv, qv = locomo.embed_cached(embedder, turn_texts), locomo.embed_cached(embedder, queries)
    vectors = {t: tv[i] for i, t in enumerate(turn_texts)}
    table = locomo.VectorTable(embedder.model_id, embedder.dimension, turn_texts + queries, np.vstack([tv, qv]))
    with tempfile.TemporaryDirectory() as tmp:
        rankings, seconds = run(convs, vectors, table, Path(tmp))
    figures = {name: locomo.summarise(convs, ranked) for name, ranked in rankings.items()}
    text = render(figures, seconds, convs, embed_name, load_start, os.getloadavg()[0])
    print(text)
    if not args.no_record:
        with (Path(__file__).parent / "RESULTS.md").open("a") as out:
            out.write(text)
    return 0


def render(figures: dict[str, dict[str, dict[str, float]]], seconds: dict[str, list[float]], convs: Sequence[Any],
           embed_name: str, load_start: float, load_end: float) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_questions = sum(len(c.questions) for c in convs)
    base = statistics.median(seconds[CONFIGS[0][0]])
    lines = [f"\n## Rerank and query rewriting on LoCoMo (bench/bench_rerank.py) — {stamp}\n",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()} (1-min load "
             f"average {load_start:.1f} at the start, {load_end:.1f} at the end). all-MiniLM-L6-v2 via {embed_name} "
             f"(vectors precomputed). {n_questions:,} questions, each asked in every configuration in rotation, "
             "top_k 100, reinforcement off (decay on). Stand-ins bound the gain: the oracle reranker rates the "
             "evidence 1 and everything else 0; the half oracle knows every second evidence turn; the oracle "
             "rewriter's variants are the evidence turns' own words. Cost: polymem's time per recall with "
             "plug-ins that answer at once (the model's own time comes on top).\n",
             "| configuration | R@5 (all) | R@10 (all) | MRR (all) | R@5 (1–4) | R@10 (1–4) | MRR (1–4) "
             "| ms per recall (median) | × no rerank |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, _, _ in CONFIGS:
        a, b = figures[name]["all"], figures[name].get("1-4", figures[name]["all"])
        median = statistics.median(seconds[name])
        lines.append(f"| {name} | {a['R@5']:.3f} | {a['R@10']:.3f} | {a['MRR']:.3f} | {b['R@5']:.3f} | "
                     f"{b['R@10']:.3f} | {b['MRR']:.3f} | {median * 1000:.1f} | {median / base:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
