"""Several processes on one SQLite file; a writer killed mid-stream."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polymem

WORKER = str(Path(__file__).parent / "helpers" / "worker.py")


def test_four_processes_share_one_file_without_errors_or_lost_writes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    polymem.open(url, embedder=None).close()  # create the schema once
    procs = [subprocess.Popen([sys.executable, WORKER, "mixed", url, str(w), "40"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(4)]
    returned: Counter[str] = Counter()
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        returned.update(json.loads(out))
    with polymem.open(url, embedder=None) as mem:
        records = mem.list(user_id="shared", limit=1000)
        assert len(records) == 160
        assert {r.metadata.get("x") for r in records} == {None}
        counts = {r.memory_id: r.access_count for r in records}
    assert {k: v for k, v in counts.items() if v} == dict(returned)


def test_killed_writer_loses_no_acknowledged_save_and_leaves_a_sound_file(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    url = f"sqlite:///{db}"
    proc = subprocess.Popen([sys.executable, WORKER, "writer", url], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 300 and time.monotonic() < deadline:
        acknowledged.append(proc.stdout.readline().strip())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(acknowledged) >= 300
    with polymem.open(url, embedder=None) as mem:
        assert mem.backend.integrity_check() == "ok"  # type: ignore[attr-defined]
        stored = {r.content for r in mem.list(user_id="crash", limit=10_000)}
    assert {f"acknowledged note {k[1:]}" for k in acknowledged} <= stored
