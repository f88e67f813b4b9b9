"""Cold start: the whole `polymem recall` process on a store of N memories, as a user runs it.

Fills an SQLite file with N memories (real MiniLM vectors, 10 users) and then times, as separate
processes, `polymem recall "<query>" --user u0 --url <file>` (wall clock, and the process's own CPU
time, which a busy machine disturbs less) on:

- the ONNX fast path: a data folder (`POLYMEM_HOME`) holding the model `polymem model export` built,
  which the default embedder uses whenever it is there (torch is never imported);
- the torch path: an empty data folder, so the default embedder is sentence-transformers;
- lexical only (`--no-embedder`): the floor, Python and polymem's own import plus the search.

With `--baseline-src`, the ONNX path also runs on another source tree (say a checkout of main), so
a change is measured against what it changes, in the same run. Every process runs this tree's
polymem (`core/src` beside this script) unless it is the baseline's, and writes its .pyc files as
a user's would (PYTHONDONTWRITEBYTECODE is dropped).

The paths alternate run after run (the machine's busy moments hit them alike). Prints a table of
wall-clock seconds per process (median, min, max; target: the ONNX path <= 1 s at 10,000 memories)
and of CPU seconds, with the machine's load, and appends it to bench/results/cold_start.md unless
--no-record.

    python bench/bench_cold_start.py                            # 10,000 memories, 7 runs of each
    python bench/bench_cold_start.py --size 200 --runs 1 --no-record
    python bench/bench_cold_start.py --onnx-home ~/.local/share/polymem   # reuse an exported model
    python bench/bench_cold_start.py --baseline-src ../main/core/src --no-torch
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import polymem
from polymem._embedders import export_onnx_model

RESULTS = Path(__file__).parent / "results" / "cold_start.md"
SOURCES = Path(__file__).resolve().parents[1] / "core" / "src"
WORDS = ("blue red green coffee tea train paris berlin meeting invoice report dog cat piano guitar running "
         "swimming budget travel flight hotel doctor dentist birthday project deadline kyoto chocolate wine").split()


def polymem_command() -> list[str]:
    script = Path(sys.executable).parent / "polymem"
    return [str(script)] if script.exists() else [sys.executable, "-m", "polymem.cli"]


def onnx_home(given: str | None, scratch: Path) -> Path:
    """A data folder with the exported model: the one given, or one built here (once, ~1 minute)."""
    if given:
        home = Path(given).expanduser()
        if not (home / "models" / "all-MiniLM-L6-v2-onnx-int8" / "model.onnx").exists():
            sys.exit(f"no exported model under {home}; run `POLYMEM_HOME={home} polymem model export`")
        return home
    home = scratch / "onnx-home"
    print("exporting the ONNX model (once) …", file=sys.stderr, flush=True)
    export_onnx_model(home / "models" / "all-MiniLM-L6-v2-onnx-int8")
    return home


def fill(path: Path, size: int, home: Path) -> None:
    rng = random.Random(7)
    embedder = polymem.OnnxEmbedder(home / "models" / "all-MiniLM-L6-v2-onnx-int8")
    with polymem.open(f"sqlite:///{path}", embedder=embedder) as mem:
        for start in range(0, size, 1000):
            for user in range(10):
                drafts = [polymem.MemoryDraft(content=f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)))
                          for i in range(start + user, min(size, start + 1000), 10)]
                if drafts:
                    mem.save_many(drafts, user_id=f"u{user}")


def timed(args: list[str], home: Path, sources: Path = SOURCES) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process: on a busy machine the CPU time is the steadier figure."""
    env = {**os.environ, "POLYMEM_HOME": str(home), "PYTHONPATH": str(sources)}
    env.pop("POLYMEM_EMBEDDER", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _commit(tree: Path) -> str:
    """The short commit of the checkout holding `tree` (and `+changes` when it has uncommitted ones)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True).stdout.strip()

    return (git("rev-parse", "--short", "HEAD") or "?") + ("+changes" if git("status", "--porcelain", ".") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--onnx-home", help="a POLYMEM_HOME that already holds the exported model")
    parser.add_argument("--baseline-src", type=Path, help="another tree's core/src: run the ONNX path on it too")
    parser.add_argument("--no-torch", action="store_true", help="leave out the torch path (10-70 s a run)")
    parser.add_argument("--no-record", action="store_true", help=f"print only; do not append to {RESULTS.name}")
    opts = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="polymem-cold-"))
    try:
        home = onnx_home(opts.onnx_home, scratch)
        empty = scratch / "empty-home"
        empty.mkdir()
        store = scratch / "store.db"
        fill(store, opts.size, home)
        recall = [*polymem_command(), "recall", "which meetings are in berlin", "--user", "u0", "--url",
                  f"sqlite:///{store}"]
        paths = {"ONNX fast path (exported model present)": (recall, home, SOURCES)}
        if opts.baseline_src:
            paths[f"ONNX fast path, baseline `{opts.baseline_src}`"] = (recall, home, opts.baseline_src.resolve())
        if not opts.no_torch:
            paths["torch (sentence-transformers)"] = (recall, empty, SOURCES)
        paths["lexical only (--no-embedder)"] = ([*recall, "--no-embedder"], empty, SOURCES)
        for args, where, sources in paths.values():  # warm the page cache and .pyc files once
            timed(args, where, sources)
        load_before = os.getloadavg()[0]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
        for _ in range(opts.runs):
            for name, (args, where, sources) in paths.items():
                times[name].append(timed(args, where, sources))
        load_after = os.getloadavg()[0]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first = times[next(iter(paths))]
    onnx, onnx_cpu = statistics.median(wall for wall, _ in first), statistics.median(cpu for _, cpu in first)
    lines = [
        f"### `polymem recall`, whole process, {opts.size:,} memories "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, polymem "
        f"{polymem.__version__} at {_commit(SOURCES)}"
        f"{f' (baseline at {_commit(opts.baseline_src)})' if opts.baseline_src else ''}; {opts.runs} runs of each, "
        "alternating; 1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after.",
        "",
        "| path | wall median s | wall min s | wall max s | CPU median s | CPU min s | wall vs ONNX | CPU vs ONNX |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, runs in times.items():
        walls = [wall for wall, _ in runs]
        median = statistics.median(walls)
        cpus = [cpu for _, cpu in runs]
        cpu = statistics.median(cpus)
        lines.append(f"| {name} | {median:.2f} | {min(walls):.2f} | {max(walls):.2f} | {cpu:.2f} | {min(cpus):.2f} | "
                     f"{median / onnx:.2f}x | {cpu / onnx_cpu:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not opts.no_record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + text)


if __name__ == "__main__":
    main()
