"""The benchmark scripts still run (tiny sizes; the real runs are `make bench`)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_core_benchmark_runs_on_a_tiny_store() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_core.py"), "--sizes", "300", "--queries", "5",
                          "--synthetic", "400", "--no-record"], capture_output=True, text=True, check=True,
                         timeout=600).stdout
    assert "| 300 | 1 |" in out and "| 300 | 100 |" in out
    synthetic_row = next(line for line in out.splitlines() if line.startswith("| 400 |"))
    assert synthetic_row.endswith("| 1.00 | 0.0 |")  # a small scope is searched exactly: no index built


def test_autogen_benchmark_runs_and_reports_chroma_as_not_measured_without_chromadb() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_autogen.py"), "--smoke"],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    assert "| 200 | PolymemMemory" in out and "| 200 | ListMemory" in out
    if importlib.util.find_spec("chromadb") is None:
        assert "ChromaDBVectorMemory | – |" in out and "not measured" in out


def test_the_date_benchmark_scores_the_patterns_and_reports_dateparser_as_not_measured_without_it() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_dates.py")], capture_output=True, text=True,
                         check=True, timeout=600).stdout
    assert "| polymem patterns | 28/28 | 12/15 |" in out
    if importlib.util.find_spec("dateparser") is None:
        assert "| dateparser search_dates | not measured" in out
