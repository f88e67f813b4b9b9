"""bench_locomo.py and bench_alternatives.py still work (tiny sizes; the real runs are `make bench`).

The comparison runs with whatever alternatives the running interpreter has: the stores it
lacks must be reported as not measured, never crash the run. LoCoMo itself is not in the
repository (its licence forbids it), so the quality script runs on a tiny conversation in
LoCoMo's format written here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parents[1]
BENCH = ROOT / "bench"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(args: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "POLYMEM_BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


TINY_LOCOMO = [{
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey kitten called Pixel last week."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I am training for the Berlin marathon."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister works as a nurse in Lisbon.",
             "blip_caption": "a photo of a hospital"},
        ],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "I finished the marathon in four hours."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Pixel keeps knocking my plants over."},
            {"speaker": "Bo", "dia_id": "D2:3", "text": "We should cook paella together soon."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ann's kitten?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "How long did Bo's marathon take?", "answer": "four hours", "evidence": ["D1:2; D2:1"],
         "category": 1},
        {"question": "When did Ann adopt the kitten?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What does Ann's brother do?", "evidence": ["D1:3"], "category": 5,
         "adversarial_answer": "nurse"},
        {"question": "Where is the evidence?", "answer": "none", "evidence": [], "category": 3},
    ],
}]


def test_locomo_metrics() -> None:
    locomo = _module("bench_locomo")
    bm25 = locomo.BM25([["kitten", "pixel"], ["marathon", "berlin"], ["kitten", "plants", "pixel", "pixel"]])
    scores = bm25.scores(["pixel"])
    assert scores[1] == 0 and scores[0] > 0 and scores[2] > 0
    assert locomo.rrf([[0, 1, 2], [2, 1]])[:2] == [2, 1]  # in both lists beats first in one
    assert locomo.score(["D1:2", "D1:1", "D2:1"], frozenset({"D1:1", "D2:1"})) == \
        {"R@1": 0.0, "R@5": 1.0, "R@10": 1.0, "MRR": 0.5}
    assert locomo.parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"


def test_locomo_runs_on_a_tiny_conversation(tmp_path: Path) -> None:
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    out = _run([str(BENCH / "bench_locomo.py"), "--data", str(data), "--no-record", "--calibration", "--json",
                str(tmp_path / "q.json")], tmp_path)
    assert "1 dropped" in out and "4 questions" in out
    assert "(a) probes with nothing injected" in out  # one conversation: no probes, the answerable ones only
    figures = json.loads((tmp_path / "q.json").read_text())
    for method in ("BM25", "dense (MiniLM cosine)", "RRF(BM25, dense), k=60", "polymem default",
                   "polymem no decay/reinforce"):
        assert 0.0 <= figures[method]["all"]["MRR"] <= 1.0 and figures[method]["all"]["n"] == 4
    assert figures["polymem default"]["4"]["R@1"] == 1.0  # "Pixel" finds its turn


def test_the_rerank_bench_runs_on_a_tiny_conversation_and_the_oracle_finds_the_evidence(tmp_path: Path) -> None:
    data = tmp_path / "tiny_locomo.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    out = _run([str(BENCH / "bench_rerank.py"), "--data", str(data), "--no-record"], tmp_path)
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in out.splitlines() if line.startswith("| ")}
    assert float(rows["oracle rewriter, 2 variants"][3]) == 1.0  # MRR: the evidence's own words find it first
    assert float(rows["oracle reranker, rerank_top 20 (default)"][3]) >= float(rows["no rerank, no rewrite"][3])


def test_alternatives_degrade_to_what_is_installed(tmp_path: Path) -> None:
    alternatives = _module("bench_alternatives")
    out = _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4",
                "--repeats", "2", "--base", "40", "--in-process", "--no-record", "--plot", str(tmp_path / "p.png"),
                "--json", str(tmp_path / "rows.json")], tmp_path)
    rows = {r["store"]: r for r in json.loads((tmp_path / "rows.json").read_text())}
    for store in alternatives.STORES:
        if store.missing():
            assert store.label in out.split("Not measured")[1]
        else:
            assert store.name in rows, out
            assert rows[store.name]["recall_p50"] > 0 and rows[store.name]["n_recalls"] >= 5
            assert rows[store.name]["save_per_s"] > 0
            found = rows[store.name]["exact_found"]
            assert found is None if not store.searches else 0.0 <= found <= 1.0
    assert "polymem, embedded (SQLite file)" in out and "Targets for polymem (SQLite) at 200" in out
    assert rows["numpy"]["exact_found"] == 1.0
    assert rows["polymem-sqlite"]["exact_found"] == 1.0  # its vector search is exact
    assert rows["polymem-sqlite"]["nearest_p50"] > 0  # its vector search alone, timed beside its recall
    assert rows["numpy"]["nearest_p50"] is None  # its recall is its vector search
    assert (tmp_path / "p.png").exists() == (importlib.util.find_spec("matplotlib") is not None)


def test_alternatives_report_the_load_the_pace_of_python_and_the_stolen_cpu_time_during_the_run(
        tmp_path: Path) -> None:
    out = _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4",
                "--repeats", "2", "--base", "40", "--only", "numpy", "--no-record"], tmp_path)
    conditions = re.search(r"during the run: highest 1-min load average [0-9.]+; "
                           r"a 1,000,000-step Python loop in ([0-9]+)(-[0-9]+)? ms \(([0-9]+) samples\); "
                           r"[0-9]+ % of CPU time stolen by the host", out)
    assert conditions, out
    assert int(conditions[3]) >= 4  # before the size, before each of the two passes, and at the end


def test_conditions_time_the_python_loop_only_when_asked_and_describe_it() -> None:
    results = _module("_results")
    conditions = results.Conditions()
    conditions.sample()
    conditions.sample(pace=False)
    assert len(conditions.paces) == 1 and conditions.paces[0] > 0 and len(conditions.loads) == 2
    assert "1,000,000-step Python loop in" in conditions.describe() and "(1 sample)" in conditions.describe()


def test_the_machine_phrase_names_the_python_installation_that_ran() -> None:
    phrase = _module("_results").machine()
    assert phrase.endswith(f"Python {sys.version.split()[0]} from {sys.base_prefix}")


def test_steal_is_the_share_of_cpu_time_stolen_between_the_first_and_the_last_sample() -> None:
    conditions = _module("_results").Conditions()
    conditions._ticks = [(1_000, 40), (1_100, 45), (1_400, 100)]  # (all ticks, stolen ticks) since boot
    assert conditions.steal_percent == 15.0  # 60 of 400
    assert "15 % of CPU time stolen by the host" in conditions.describe()
    conditions._ticks = conditions._ticks[:1]
    assert conditions.steal_percent is None


def test_alternatives_without_record_leave_the_recorded_plot_alone(tmp_path: Path) -> None:
    recorded = BENCH / "alternatives_latency.png"
    before = recorded.read_bytes() if recorded.exists() else None
    out = _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4",
                "--repeats", "1", "--base", "40", "--only", "numpy", "--in-process", "--no-record"], tmp_path)
    assert (recorded.read_bytes() if recorded.exists() else None) == before
    assert "![latency" not in out  # no link to a plot RESULTS.md would not show


def test_a_recorded_run_of_one_size_leaves_the_recorded_plot_alone() -> None:
    alternatives = _module("bench_alternatives")
    recorded = argparse.Namespace(plot=None, no_record=False)
    one_size = [{"size": 100_000, "store": "numpy"}, {"size": 100_000, "store": "chroma"}]
    assert alternatives.plot_target(recorded, one_size) is None
    assert alternatives.plot_target(recorded, [*one_size, {"size": 10_000, "store": "numpy"}]) == \
        BENCH / "alternatives_latency.png"
    assert alternatives.plot_target(argparse.Namespace(plot="p.png", no_record=False), one_size) == Path("p.png")


def test_alternatives_start_from_the_kept_stores_with_store_cache(tmp_path: Path) -> None:
    args = [str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4", "--repeats", "1",
            "--base", "40", "--only", "polymem-sqlite", "numpy", "--no-record", "--plot", str(tmp_path / "p.png"),
            "--store-cache", str(tmp_path / "kept")]
    runs = []
    for run in range(2):
        _run([*args, "--json", str(tmp_path / f"rows{run}.json")], tmp_path)
        runs.append({r["store"]: r for r in json.loads((tmp_path / f"rows{run}.json").read_text())})
    assert runs[0]["polymem-sqlite"]["load_per_s"] > 0  # loaded, then kept
    assert runs[1]["polymem-sqlite"]["load_per_s"] is None  # a copy of the kept store
    assert runs[1]["polymem-sqlite"]["exact_found"] == 1.0  # the first run's saves are not in the copy
    assert runs[1]["numpy"]["load_per_s"] > 0  # nothing to reopen: loaded every time
    assert [p.name.split("-")[:2] for p in (tmp_path / "kept").iterdir()] == [["polymem", "sqlite"]]


def test_a_store_reopened_from_its_files_reports_its_first_recall(tmp_path: Path) -> None:
    _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4", "--repeats", "1",
          "--base", "40", "--only", "polymem-sqlite", "numpy", "--no-record", "--plot", str(tmp_path / "p.png"),
          "--store-cache", str(tmp_path / "kept"), "--json", str(tmp_path / "rows.json")], tmp_path)
    rows = {r["store"]: r for r in json.loads((tmp_path / "rows.json").read_text())}
    assert rows["polymem-sqlite"]["first_recall_s"] > 0  # loaded, kept, and reopened before its first recall
    assert rows["numpy"]["first_recall_s"] is None  # nothing to reopen


def test_the_kept_store_holds_the_index_its_first_recall_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from polymem import _ann

    alternatives = _module("bench_alternatives")
    monkeypatch.setattr(_ann, "ANN_ROWS", 3_000)
    data, kept, rng = tmp_path / "data", tmp_path / "kept", np.random.default_rng(0)
    data.mkdir()
    np.savez(data / "vectors.npz", base=alternatives.unit_rows(rng.normal(size=(40, 384)).astype(np.float32)),
             queries=alternatives.unit_rows(rng.normal(size=(5, 384)).astype(np.float32)))
    (data / "meta.json").write_text(json.dumps({"model_id": "bench-test-model"}))
    first = alternatives.Trial("polymem-sqlite", 3_000, data, 5, 2, 1, kept)  # loads, keeps, warms: builds
    first.store.close()
    first.discard()
    built_note = alternatives.PolymemSQLite.note
    alternatives.PolymemSQLite.note = ""
    [copy] = kept.iterdir()
    assert list((copy / "memory.db.ann").glob("*.faiss"))
    second = alternatives.Trial("polymem-sqlite", 3_000, data, 5, 2, 1, kept)  # a copy of the kept store
    try:
        scopes = list(second.store.mem.backend.indexes.scopes.values())
        assert second.load_s is None and scopes
        assert all(s.index is not None and s.build_seconds is None for s in scopes)  # read from its file
        assert alternatives.PolymemSQLite.note.startswith(built_note.split(" (")[0])
    finally:
        second.store.close()
        second.discard()


def _timed_between(tmp_path: Path, *options: str) -> dict[str, list[float]]:
    rows = tmp_path / "rows.json"
    _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "6", "--saves", "4", "--repeats", "1",
          "--base", "40", "--only", "polymem-sqlite", "numpy", "--no-record", "--json", str(rows), *options], tmp_path)
    return {r["store"]: r["timed_between"] for r in json.loads(rows.read_text())}


@pytest.mark.parametrize("turn", ["1", "3"])
def test_alternatives_time_the_stores_in_turn(tmp_path: Path, turn: str) -> None:
    spans = _timed_between(tmp_path, "--turn", turn)
    (polymem_from, polymem_to), (numpy_from, numpy_to) = spans["polymem-sqlite"], spans["numpy"]
    assert polymem_from < numpy_to and numpy_from < polymem_to  # each timed while the other was


def test_alternatives_time_one_store_at_a_time_when_asked(tmp_path: Path) -> None:
    spans = sorted(_timed_between(tmp_path, "--one-at-a-time").values())
    assert spans[0][1] < spans[1][0]


def test_mcp_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    if importlib.util.find_spec("mcp") is None:
        return  # the MCP server is an extra (polymem[mcp])
    out = _run([str(BENCH / "bench_mcp.py"), "--size", "200", "--queries", "5", "--no-record"], tmp_path)
    for path in ("direct call", "MCP stdio", "HTTP API", "MCP streamable HTTP"):
        assert path in out, out
    verdicts = [line for line in out.splitlines() if ": overhead " in line and "target ≤ 2 ms" in line]
    assert [v.split(": overhead")[0] for v in verdicts] == [
        "MCP stdio (polymem mcp, SDK client)", "MCP stdio (polymem mcp, raw JSON-RPC client: lines on its pipes, orjson)"]


def test_durability_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = _run([str(BENCH / "bench_durability.py"), "--rounds", "2", "--saves", "5", "--dir", str(tmp_path)], tmp_path)
    assert "| normal |" in out and "| full |" in out and "normal / full =" in out


def test_time_travel_bench_alternates_plain_explain_and_as_of_at_a_tiny_size(tmp_path: Path) -> None:
    out = _run([str(BENCH / "bench_time_travel.py"), "--sizes", "300", "--users", "3", "--queries", "3",
                "--no-record"], tmp_path)
    row = next(line for line in out.splitlines() if line.startswith("| 300 |"))
    assert len(row.split("|")) == 20 and "load average" in out


def test_alternatives_measure_the_mapped_file_pages_within_a_stores_peak_memory(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    _run([str(BENCH / "bench_alternatives.py"), "--sizes", "200", "--queries", "5", "--saves", "4", "--repeats", "1",
          "--base", "40", "--only", "polymem-sqlite", "--no-record", "--json", str(rows)], tmp_path)
    polymem = {r["store"]: r for r in json.loads(rows.read_text())}["polymem-sqlite"]
    assert polymem["mapped_mb"] >= 0.0  # SQLite maps its file: its pages are resident in the process


def test_the_report_names_the_stores_whose_peak_memory_counts_mapped_file_pages() -> None:
    alternatives = _module("bench_alternatives")
    row = {"size": 100_000, "note": None, "load_per_s": None, "save_p50": 1.0, "save_p99": 2.0, "save_per_s": 900.0,
           "recall_p50": 3.0, "recall_p99": 6.0, "recall_per_s": 300.0, "exact_found": 0.98, "disk_mb": 270.0}
    rows = [{**row, "store": "polymem-sqlite", "peak_mb": 850.0, "mapped_mb": 258.0},
            {**row, "store": "numpy", "peak_mb": 300.0, "mapped_mb": 0.4}]
    args = argparse.Namespace(queries=200, saves=100, budget=60.0, repeats=3, one_at_a_time=False, in_process=False,
                              turn=1, users=1)
    out = alternatives.render(rows, {}, {}, [], args)
    mapped = next(line for line in out.splitlines() if line.startswith("`peak MB` counts the pages of files mapped"))
    assert "polymem, embedded (SQLite file) 258 MB at 100,000" in mapped
    assert "numpy" not in mapped  # below MAPPED_NOTE_MB: libraries loaded late, not a mapped store


def test_the_report_gives_polymems_vector_search_alone_against_the_alternatives_recall() -> None:
    alternatives = _module("bench_alternatives")
    row = {"size": 100_000, "note": None, "load_per_s": None, "save_p50": 1.0, "save_p99": 2.0, "save_per_s": 900.0,
           "recall_p99": 6.0, "recall_per_s": 300.0, "exact_found": 0.98, "disk_mb": 270.0, "peak_mb": 300.0,
           "mapped_mb": 0.0}
    rows = [{**row, "store": "polymem-sqlite", "recall_p50": 3.0, "nearest_p50": 1.5},
            {**row, "store": "chroma", "recall_p50": 2.0, "nearest_p50": None}]
    args = argparse.Namespace(queries=200, saves=100, budget=60.0, repeats=3, one_at_a_time=False, in_process=False,
                              turn=1, users=1)
    out = alternatives.render(rows, {}, {}, [], args)
    alone = next(line for line in out.splitlines() if line.startswith("polymem's vector search alone at 100,000"))
    assert "p50 1.50 ms" in alone and "Chroma used directly (PersistentClient, HNSW)'s recall 2.00 ms (0.75× of it)" in alone
    assert "NOT met" in out  # the target stays the recall's
