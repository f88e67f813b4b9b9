"""`polymem serve` as a real process over loopback: startup, crash safety, graceful shutdown."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import polymem
from polymem.client import HttpMemory
from polymem.server._audit import AuditLog
from polymem.server._auth import AuthStore, Database
from polymem.testing.process import start_server


class Served:
    """A `polymem serve` process on an SQLite file, with one read-write token."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = tmp_path / "served.db"
        _, self.token = AuthStore(Database(f"{self.db}.auth.db")).create_token("load", "default", ["read", "write"])
        self.server = start_server(f"sqlite:///{self.db}", "--no-embedder", "--graceful-timeout", "10")
        self.url = self.server.url


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    served = Served(tmp_path)
    yield served
    served.server.stop()


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


def _run_load(served: Served, acknowledged: int, then: Callable[[], None]) -> list[tuple[str, str]]:
    """Four writers save until `acknowledged` saves were answered (however loaded the machine is), then
    `then()` runs while they go on writing for half a second more."""
    acked: list[tuple[str, str]] = []
    stop = threading.Event()
    threads = [threading.Thread(target=_load, args=(served.url, served.token, acked, stop, w)) for w in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < acknowledged and time.monotonic() < deadline:
        time.sleep(0.02)
    then()
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    return acked


def _stored(db: Path, acked: list[tuple[str, str]]) -> list[tuple[str, str]]:
    with polymem.open(f"sqlite:///{db}", embedder=None) as mem:
        return [(mid, content) for mid, content in acked if (rec := mem.get(mid)) is None or rec.content != content]


def test_the_cli_serves_the_protocol_over_loopback(served: Served) -> None:
    with HttpMemory(served.url, served.token) as mem:
        rec = mem.save("I like blue", user_id="ann")
        assert [h.memory.memory_id for h in mem.recall("blue", user_id="ann")] == [rec.memory_id]
        assert mem.embedder is None and mem.namespace == "default"


def test_kill_9_during_a_write_load_loses_no_acknowledged_save(served: Served) -> None:
    acked = _run_load(served, 20, lambda: served.server.signal(signal.SIGKILL))
    assert len(acked) >= 20
    assert _stored(served.db, acked) == []
    assert AuditLog(Database(f"{served.db}.auth.db")).verify().ok


def test_sigterm_finishes_in_flight_writes_and_exits_cleanly(served: Served) -> None:
    acked = _run_load(served, 20, lambda: served.server.signal(signal.SIGTERM))
    assert served.server.process.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after its shutdown
    assert "Traceback" not in served.server.stderr()
    assert len(acked) >= 20
    assert _stored(served.db, acked) == []
    log = AuditLog(Database(f"{served.db}.auth.db"))
    assert log.verify().ok
    saved = {e["memory_id"] for e in log.entries() if e["action"] == "save"}
    assert {mid for mid, _ in acked} <= saved  # every acknowledged write was audited before its answer


def test_a_server_whose_port_was_taken_before_it_bound_starts_again_on_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import httpx

    import polymem.testing.process as process

    with socket.socket() as taken:  # another process's listener on the port the server was given
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = process.free_port
        monkeypatch.setattr(process, "free_port", lambda: next(ports, None) or real_free_port())
        with process.serving(f"sqlite:///{tmp_path / 'm.db'}", "--no-embedder", "--no-auth") as server:
            assert server.port != taken.getsockname()[1]
            assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_a_loopback_server_whose_port_was_taken_before_it_bound_serves_on_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import httpx

    from polymem.server import Service, create_app

    from . import conftest

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = conftest.free_port
        monkeypatch.setattr(conftest, "free_port", lambda: next(ports, None) or real_free_port())
        server = conftest.LoopbackServer(create_app(Service(f"sqlite:///{tmp_path / 'm.db'}", embedder=None))).start()
        try:
            assert server.port != taken.getsockname()[1]
            assert httpx.get(f"{server.url}/healthz").status_code == 200
        finally:
            server.stop()
