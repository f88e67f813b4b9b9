"""What the approximate index's settings cost and find, through the whole recall (#27 item 2):
the cells a query reads (`_ann.PROBES`, first) and the proposals measured exactly beyond those
wanted (`_ann.FETCH_MARGIN`, first), each index's own measure replaced by the setting, on a store
`bench_alternatives.py --store-cache` kept.

    python bench/bench_alternatives.py --sizes 1000000 --users 100 --only polymem-sqlite --store-cache DIR
    python bench/bench_ann_settings.py --store-cache DIR --size 1000000 --users 100 --settings 32:128 32:48 24:48

For each setting (`probes:margin`; the first is the baseline), on a copy of the kept store:
- recall p50, the settings alternated query by query in one process (blocks of 12 queries, so
  that no setting always follows the other), as `bench_alternatives` times recall;
- the share of the top 10 of the same recall run exactly (the index switched off) that the recall
  returns, and how many of the lists are the same;
- the share of the exact nearest 10 (numpy over every vector) that `nearest` returns, as
  `bench_alternatives` reports it.
Recall bonuses are off during the comparison of results, so that every recall of a query sees
the same store. Prints a table and appends it to bench/RESULTS.md (unless `--no-record`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _results  # noqa: E402
from bench_alternatives import (  # noqa: E402
    QUERIES,
    Lookup,
    PolymemSQLite,
    data_key,
    dataset,
    embed_cached,
    embedders,
    sentences,
    unit_rows,
)

K = 10


@contextlib.contextmanager
def exact_search(ann: Any) -> Iterator[None]:
    """Recalls with the approximate indexes switched off: every scope searched exactly."""
    saved = ann.Span.best, ann.ScopeIndex.best
    for owner in (ann.Span, ann.ScopeIndex):
        owner.best = lambda *_, **__: None
    try:
        yield
    finally:
        ann.Span.best, ann.ScopeIndex.best = saved


def parse_setting(text: str) -> tuple[int, int]:
    probes, margin = (int(part) for part in text.split(":"))
    return probes, margin


def kept_store(cache: Path, size: int, users: int, base: np.ndarray, qbase: np.ndarray, model_id: str) -> Path:
    """The folder `bench_alternatives` keeps the polymem store of this size, users and data in."""
    with tempfile.TemporaryDirectory() as data:
        np.savez(Path(data) / "vectors.npz", base=unit_rows(base), queries=unit_rows(qbase))
        (Path(data) / "meta.json").write_text(json.dumps({"model_id": model_id}))
        key = data_key(Path(data))
    folder = cache / f"polymem-sqlite-{size}-{users}u-{key}"
    if not (folder / "complete").exists():
        raise SystemExit(f"no kept store at {folder}: run bench_alternatives.py --sizes {size} --users {users} "
                         f"--only polymem-sqlite --store-cache {cache} first")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store-cache", type=Path, required=True, help="bench_alternatives' --store-cache folder")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=100, help="as the kept store was loaded (1: one scope)")
    parser.add_argument("--settings", nargs="+", default=["32:128", "32:48"], help="probes:margin, baseline first")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--base", type=int, default=3000, help="as bench_alternatives' --base")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    import polymem._ann as ann

    settings = [parse_setting(s) for s in args.settings]
    found = embedders()
    if not found:
        raise SystemExit("no local embedder: install polymem[local] or run `polymem model export`")
    model = found[-1][1]
    base = embed_cached(model, sentences(min(args.base, args.size), 3))
    qbase = embed_cached(model, QUERIES)
    kept = kept_store(args.store_cache, args.size, args.users, base, qbase, model.model_id)
    base, qbase = unit_rows(base), unit_rows(qbase)
    texts, vectors = sentences(args.size, 7), dataset(base, args.size, args.size)
    n = args.queries
    qtexts = [f"{QUERIES[i % len(QUERIES)]} #{i}" for i in range(n)]
    qvecs = unit_rows(qbase[np.arange(n) % len(qbase)]
                      + np.random.default_rng(5).normal(0, 0.02, (n, base.shape[1])).astype(np.float32))
    lookup = Lookup(model.model_id, base.shape[1])
    for t, v in zip([*texts, *qtexts], [*vectors, *qvecs]):
        lookup.table[t] = v

    folder = Path(tempfile.mkdtemp(prefix="pm-ann-settings-"))
    loads = [os.getloadavg()[0]]
    try:
        shutil.rmtree(folder)
        shutil.copytree(kept, folder)
        PolymemSQLite.users = args.users
        store = PolymemSQLite(folder, lookup)
        store.reopen()
        mem = store.mem
        store.warm(qtexts[0], qvecs[0])

        def use(setting: tuple[int, int]) -> None:
            """The setting in place of what each index measured when it was built (`_Calibration`)."""
            probes, margin = setting
            for scope in mem.backend.indexes.scopes.values():
                if scope.index is not None:
                    scope.index.nprobe = min(probes, scope.index.nlist)
                    scope.cells_read, scope.margin = scope.index.nprobe, margin

        latencies: list[list[float]] = [[] for _ in settings]
        for i in range(n):
            which = (i + i // 12) % len(settings)
            use(settings[which])
            t0 = time.perf_counter()
            store.recall(qtexts[i], qvecs[i])
            latencies[which].append(time.perf_counter() - t0)
        loads.append(os.getloadavg()[0])

        object.__setattr__(mem._transport.engine.scoring, "reinforce", False)
        # the kept store holds the loaded texts alone (bench_alternatives' saves went to its copies)
        shares: list[list[float]] = [[] for _ in settings]
        same = [0 for _ in settings]
        nearest: list[list[float]] = [[] for _ in settings]
        for text, vector in zip(qtexts, qvecs):
            with exact_search(ann):
                exact = [h.memory.memory_id for h in mem.recall(text, user_id=store.scope, top_k=K,
                                                                query_vector=vector)]
            sims = vectors @ vector
            truth = {texts[i] for i in np.argpartition(-sims, K)[:K]}
            for which, setting in enumerate(settings):
                use(setting)
                got = [h.memory.memory_id for h in mem.recall(text, user_id=store.scope, top_k=K, query_vector=vector)]
                shares[which].append(len(set(got) & set(exact)) / max(1, len(exact)))
                same[which] += got == exact
                near = {r.content for r, _ in mem.nearest(vector, user_id=store.scope, top_k=K)}
                nearest[which].append(len(near & truth) / K)
        loads.append(os.getloadavg()[0])
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    baseline = float(np.median(latencies[0]))
    lines = ["| probes | margin | recall p50 ms | vs first | top 10 of exact recall | same lists | "
             "exact nearest 10 found |", "|---|---|---|---|---|---|---|"]
    for (probes, margin), lat, share, alike, near in zip(settings, latencies, shares, same, nearest):
        p50 = float(np.median(lat))
        lines.append(f"| {probes} | {margin} | {p50 * 1000:.2f} | {p50 / baseline:.2f}x | {np.mean(share):.3f} | "
                     f"{alike}/{n} | {np.mean(near):.3f} |")
    scope = "over every user" if args.users > 1 else "in one scope"
    body = (f"; {args.size:,} memories {scope} ({args.users} users), {n} queries, settings alternated in one "
            f"process; load {min(loads):.1f}-{max(loads):.1f}.\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))
    if not args.no_record:
        _results.append("Approximate index settings", "bench_ann_settings.py", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
