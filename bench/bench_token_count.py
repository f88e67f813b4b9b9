"""How `approx_token_count` (the working-memory window's default when the framework's tokenizer
is unknown: cl100k_base, from the ranks polymem ships) compares with tiktoken's own encodings,
and what it costs to load and per call.

    python bench/bench_token_count.py [--rounds 5] [--data locomo10.json] [--tiktoken-cache DIR]

The references are tiktoken's cl100k_base and o200k_base, read offline from a directory holding
their BPE files (tiktoken downloads them otherwise, which polymem must never do at run time): `--tiktoken-cache`,
else `TIKTOKEN_CACHE_DIR`, else the copy llama-index-core ships. Texts: LoCoMo's dialog turns,
and a few kinds agents also keep (code, JSON tool results, Chinese, figures). Prints, per kind,
the tokens of each counter, the mean relative difference of polymem's count (signed: below 0
counts too few, which lets a window overflow for a model of that encoding) and its mean absolute
relative difference, then the time to load polymem's encoding and the median time per call of
each counter, alternated round by round, with the machine's load."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from polymem import approx_token_count
from polymem._text import _cl100k

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("POLYMEM_LOCOMO", ROOT.parent / "shared" / "bench-data" / "locomo10.json"))

CODE = '''def merge(a: list[int], b: list[int]) -> list[int]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i]); i += 1
        else:
            out.append(b[j]); j += 1
    return out + a[i:] + b[j:]'''
JSON_RESULT = json.dumps({"results": [{"id": f"doc-{n}", "title": f"Quarterly report {n}", "score": 0.91 - n / 50,
                                       "url": f"https://example.com/reports/{n}?lang=en"} for n in range(6)]})
CHINESE = "我下周要去上海出差，请帮我预订靠窗的座位，并提醒我带上护照和充电器。会议在周三下午两点开始。"
FIGURES = "Revenue grew 12.5% to $3,482,190 in Q3 2025; costs were €1.2m, headcount 1,024 (+37), NPS 61."


def reference_encoders(cache: str | None) -> dict[str, Callable[[str], int]]:
    if cache is None:
        spec = importlib.util.find_spec("llama_index.core")
        if spec is None or spec.origin is None:
            raise SystemExit("no offline cl100k_base: pass --tiktoken-cache DIR or set TIKTOKEN_CACHE_DIR")
        cache = str(Path(spec.origin).parent / "_static" / "tiktoken_cache")
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    encodings = {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    return {name: (lambda text, e=e: len(e.encode_ordinary(text))) for name, e in encodings.items()}


def locomo_turns(path: Path) -> list[str]:
    out = []
    for sample in json.loads(path.read_text()):
        for key, session in sample["conversation"].items():
            if re.fullmatch(r"session_\d+", key):
                out += [f"{t['speaker']}: {t['text']}" for t in session]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--tiktoken-cache", default=os.environ.get("TIKTOKEN_CACHE_DIR"))
    args = parser.parse_args()
    _cl100k.cache_clear()
    start = time.perf_counter()
    approx_token_count("")
    load = time.perf_counter() - start
    references = reference_encoders(args.tiktoken_cache)
    kinds = {"LoCoMo turns": locomo_turns(args.data), "code": [CODE], "JSON tool result": [JSON_RESULT],
             "Chinese": [CHINESE], "figures": [FIGURES]}
    print("## Token counts: approx_token_count vs tiktoken (bench/bench_token_count.py)\n")
    print("| texts | reference | reference tokens | approx tokens | mean relative difference | mean absolute relative difference |")
    print("|---|---|---:|---:|---:|---:|")
    for name, texts in kinds.items():
        approx = [approx_token_count(t) for t in texts]
        for reference, count in references.items():
            real = [count(t) for t in texts]
            errors = [(a - r) / r for a, r in zip(approx, real) if r]
            print(f"| {name} ({len(texts):,}) | {reference} | {sum(real):,} | {sum(approx):,} | "
                  f"{statistics.mean(errors):+.1%} | {statistics.mean(abs(e) for e in errors):.1%} |")
    texts = kinds["LoCoMo turns"]
    bpe = references["o200k_base"]
    times: dict[str, list[float]] = {"approx_token_count": [], "tiktoken o200k_base": []}
    load_start = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, count in (("approx_token_count", approx_token_count), ("tiktoken o200k_base", bpe)):
            start = time.perf_counter()
            for text in texts:
                count(text)
            times[name].append((time.perf_counter() - start) / len(texts))
    load_end = os.getloadavg()[0]
    a, b = (statistics.median(v) * 1e6 for v in times.values())
    print(f"\nLoading polymem's encoding (first call in this process): {load * 1e3:.0f} ms. Per LoCoMo turn, median "
          f"of {args.rounds} alternated rounds: approx_token_count {a:.2f} µs, tiktoken o200k_base {b:.2f} µs "
          f"(ratio {a / b:.2f}); 1-min load average {load_start:.1f} at the start, "
          f"{load_end:.1f} at the end, on {os.cpu_count()} cores.")


if __name__ == "__main__":
    main()
