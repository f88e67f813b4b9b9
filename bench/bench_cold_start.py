"""Cold start: the whole `polymem recall` process on a store of N memories, as a user runs it.

Fills an SQLite file with N memories (real MiniLM vectors, 10 users) and then times, as separate
processes, `polymem recall "<query>" --user u0 --url <file>` (wall clock, and the process's own CPU
time, which a busy machine disturbs less) on:

- the ONNX fast path: a data folder (`POLYMEM_HOME`) holding the model `polymem model export` built,
  which the default embedder uses whenever it is there (torch is never imported);
- the torch path: an empty data folder, so the default embedder is sentence-transformers;
- lexical only (`--no-embedder`): the floor, Python and polymem's own import plus the search.

The three alternate run after run (the machine's busy moments hit them alike). Prints a table of
wall-clock seconds per process (median, min, max; target: the ONNX path <= 1 s at 10,000 memories)
with the machine's load, and appends it to bench/results/cold_start.md unless --no-record.

    python bench/bench_cold_start.py                            # 10,000 memories, 7 runs of each
    python bench/bench_cold_start.py --size 200 --runs 1 --no-record
    python bench/bench_cold_start.py --onnx-home ~/.local/share/polymem   # reuse an exported model
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


def timed(args: list[str], home: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process: on a busy machine the CPU time is the steadier figure."""
    env = {**os.environ, "POLYMEM_HOME": str(home)}
    env.pop("POLYMEM_EMBEDDER", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--onnx-home", help="a POLYMEM_HOME that already holds the exported model")
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
        paths = {"ONNX fast path (exported model present)": (recall, home),
                 "torch (sentence-transformers)": (recall, empty),
                 "lexical only (--no-embedder)": ([*recall, "--no-embedder"], empty)}
        for args, where in paths.values():  # warm the page cache and .pyc files once
            timed(args, where)
        load_before = os.getloadavg()[0]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
        for _ in range(opts.runs):
            for name, (args, where) in paths.items():
                times[name].append(timed(args, where))
        load_after = os.getloadavg()[0]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    onnx = statistics.median(wall for wall, _ in times[next(iter(paths))])
    lines = [
        f"### `polymem recall`, whole process, {opts.size:,} memories "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, polymem "
        f"{polymem.__version__}; {opts.runs} runs of each, alternating; 1-minute load average "
        f"{load_before:.1f} before, {load_after:.1f} after.",
        "",
        "| path | wall median s | wall min s | wall max s | CPU median s | wall vs ONNX |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, runs in times.items():
        walls = [wall for wall, _ in runs]
        median = statistics.median(walls)
        cpu = statistics.median(cpu for _, cpu in runs)
        lines.append(f"| {name} | {median:.2f} | {min(walls):.2f} | {max(walls):.2f} | {cpu:.2f} | "
                     f"{median / onnx:.1f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not opts.no_record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + text)


if __name__ == "__main__":
    main()
