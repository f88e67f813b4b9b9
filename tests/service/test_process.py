"""`polymem serve` as a real process over loopback: startup, crash safety, graceful shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import polymem
from polymem.client import HttpMemory
from polymem.server._audit import AuditLog
from polymem.server._auth import AuthStore, Database

from .conftest import free_port


class ServerProcess:
    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "served.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        _, self.token = AuthStore(Database(f"{self.db}.auth.db")).create_token("load", "default", ["read", "write"])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "polymem.server", "serve", "--url", f"sqlite:///{self.db}", "--port",
             str(self.port), "--no-embedder", "--graceful-timeout", "10"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.05)
            assert self.proc.poll() is None, self.proc.stderr.read().decode() if self.proc.stderr else ""
        raise RuntimeError("polymem serve did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Any:
    proc = ServerProcess(tmp_path).start()
    yield proc
    proc.stop()


def _load(url: str, token: str, acked: list[tuple[str, str]], stop: threading.Event, worker: int) -> None:
    mem = HttpMemory(url, token, retries=0, timeout=5)
    n = 0
    while not stop.is_set() and n < 5000:
        content = f"worker {worker} fact {n}"
        try:
            rec = mem.save(content, user_id=f"u{worker}")
        except polymem.PolymemError:
            if stop.is_set():
                return
            time.sleep(0.01)
            continue
        acked.append((rec.memory_id, content))
        n += 1
    mem.close()


def _run_load(server: ServerProcess, seconds: float, then: Any) -> list[tuple[str, str]]:
    acked: list[tuple[str, str]] = []
    stop = threading.Event()
    threads = [threading.Thread(target=_load, args=(server.url, server.token, acked, stop, w)) for w in range(4)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    then()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    return acked


def _stored(db: Path, acked: list[tuple[str, str]]) -> list[tuple[str, str]]:
    with polymem.open(f"sqlite:///{db}", embedder=None) as mem:
        return [(mid, content) for mid, content in acked if (rec := mem.get(mid)) is None or rec.content != content]


def test_the_cli_serves_the_protocol_over_loopback(server: ServerProcess) -> None:
    with HttpMemory(server.url, server.token) as mem:
        rec = mem.save("I like blue", user_id="ann")
        assert [h.memory.memory_id for h in mem.recall("blue", user_id="ann")] == [rec.memory_id]
        assert mem.embedder is None and mem.namespace == "default"


def test_kill_9_during_a_write_load_loses_no_acknowledged_save(server: ServerProcess) -> None:
    assert server.proc is not None
    acked = _run_load(server, 1.5, lambda: os.kill(server.proc.pid, signal.SIGKILL))  # type: ignore[union-attr]
    assert len(acked) > 20
    assert _stored(server.db, acked) == []
    assert AuditLog(Database(f"{server.db}.auth.db")).verify().ok


def test_sigterm_finishes_in_flight_writes_and_exits_cleanly(server: ServerProcess) -> None:
    assert server.proc is not None
    acked = _run_load(server, 1.0, lambda: server.proc.send_signal(signal.SIGTERM))  # type: ignore[union-attr]
    assert server.proc.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after its shutdown
    assert b"Traceback" not in server.proc.stderr.read()  # type: ignore[union-attr]
    assert len(acked) > 10
    assert _stored(server.db, acked) == []
    log = AuditLog(Database(f"{server.db}.auth.db"))
    assert log.verify().ok
    saved = {e["memory_id"] for e in log.entries() if e["action"] == "save"}
    assert {mid for mid, _ in acked} <= saved  # every acknowledged write was audited before its answer
