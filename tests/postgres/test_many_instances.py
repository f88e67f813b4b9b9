"""Four `polymem serve` processes on one PostgreSQL, driven at once by several clients:
every acknowledged write is there once, access counts are exact, history is consistent,
and the shared audit chain verifies."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import polymem
from polymem.testing.process import ServedProcess

INSTANCES = 4
CLIENTS = 8
SAVES = 20


def test_four_service_instances_share_one_postgresql_store(pg_url: str, tmp_path: Path) -> None:
    auth_db = tmp_path / "auth.db"
    servers = [ServedProcess(pg_url, "--auth-db", str(auth_db), "--no-auth", "--no-embedder")
               for _ in range(INSTANCES)]
    try:
        for server in servers:
            server.wait_ready()
        urls = [server.url for server in servers]
        with polymem.open(urls[0]) as first:
            shared = first.save("The shared counter note", user_id="ann", idempotency_key="shared")
        acknowledged: list[str] = []
        returned: Counter[str] = Counter()
        cas_wins: list[int] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def client(index: int) -> None:
            try:
                with polymem.open(urls[index % INSTANCES]) as mem:
                    for i in range(SAVES):
                        rec = mem.save(f"client {index} wrote note {i} on zebra {index * 100 + i}", user_id="ann",
                                       idempotency_key=f"c{index}-{i}")
                        with lock:
                            acknowledged.append(rec.memory_id)
                        if i % 4 == 0:
                            hits = mem.recall("zebra note", user_id="ann", top_k=5)
                            with lock:
                                returned.update(h.memory.memory_id for h in hits)
                        current = mem.get(shared.memory_id)
                        assert current is not None
                        try:
                            mem.update(shared.memory_id, metadata={"by": index, "i": i},
                                       expected_version=current.version)
                            with lock:
                                cas_wins.append(1)
                        except polymem.VersionConflictError:
                            pass
                    if index == 0:
                        mem.consolidate()
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not errors, errors[:3]
        assert returned and cas_wins  # not vacuous: recalls returned memories, some updates won
        for url in urls:
            with polymem.open(url) as mem:
                mem.flush()
        with polymem.open(urls[1]) as mem:
            stored = [r for r in mem.list(user_id="ann", limit=1000) if r.memory_id != shared.memory_id]
            assert sorted(r.memory_id for r in stored) == sorted(acknowledged)
            assert len(acknowledged) == len(set(acknowledged)) == CLIENTS * SAVES
            counts = {r.memory_id: r.access_count for r in stored}
            assert {k: v for k, v in counts.items() if v} == {k: v for k, v in returned.items() if k in counts}
            versions = [v.version for v in mem.history(shared.memory_id)]
            assert versions == list(range(1, 2 + len(cas_wins)))
    finally:
        for server in servers:
            server.process.terminate()
        for server in servers:
            server.stop(timeout=60)
    out = subprocess.run([sys.executable, "-m", "polymem.server", "audit", "verify", "--url", pg_url,
                          "--auth-db", str(auth_db)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
