"""Memory ids are unique per namespace, on SQLite: a file written before (schema 6, ids unique per
file) keeps every memory, version and tombstone through migration 7, and an id of another
namespace takes the very statements an unknown id does (no query path tells them apart)."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import polymem
from polymem._sqlite import MIGRATIONS
from polymem.testing import FakeClock, local_embedder

SCHEMA6 = Path(__file__).parent / "data" / "schema6"  # written by make.py there, with polymem at schema 6


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    shutil.copy(SCHEMA6 / "store.db", path)
    return path


def _open(path: Path, namespace: str, clock: FakeClock | None = None) -> polymem.Memory:
    return polymem.open(f"sqlite:///{path}", embedder=local_embedder(), namespace=namespace, clock=clock)


def test_the_fixture_is_a_schema_6_store() -> None:
    with sqlite3.connect(f"file:{SCHEMA6 / 'store.db'}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 6


def assert_kept(open_namespace: Callable[[str], polymem.Memory], expected: dict[str, Any]) -> None:
    """A migrated store reads back what the version that wrote it read (`expected.json`'s shape)."""
    then = datetime.fromisoformat(expected["then"])
    for namespace in ("default", "team-b"):
        with open_namespace(namespace) as mem:
            want = expected[namespace]
            assert [r.to_dict() for r in mem.list(status=None, limit=100)] == want["memories"]
            for memory_id, versions in want["histories"].items():
                assert [v.to_dict() for v in mem.history(memory_id)] == versions
            assert sorted(r.memory_id for r in mem.list(status=None, limit=100, as_of=then)) == want["as_of"]
    with open_namespace("default") as mem:
        assert mem.get(expected["deleted"]) is None
        assert mem.get(expected["deleted"], as_of=then).content == "The door code is 4512"
        assert mem.get_by_key("colour").content == "I like black now"
        assert mem.recall("which colour does she like?", user_id="ann")[0].memory.content == "I like black now"
        assert [m.content for m in mem.session("s1", user_id="ann").transcript()] == ["hello 你好"]


def assert_clones(open_namespace: Callable[[str], polymem.Memory]) -> None:
    """The migrated store's default namespace clones into another, and the two are independent."""
    with open_namespace("default") as mem, open_namespace("team-c") as clone:
        snapshot = io.BytesIO()
        count = mem.export_snapshot(snapshot)
        snapshot.seek(0)
        report = clone.import_snapshot(snapshot)
        assert (report.imported, report.duplicates) == (count, 0) and count == 2
        for rec in mem.list(limit=100):
            assert clone.get(rec.memory_id) == rec.replace(namespace="team-c")
            assert len(clone.history(rec.memory_id)) == len(mem.history(rec.memory_id))
        (black,) = [r for r in mem.list(limit=100) if r.content == "I like black now"]
        clone.update(black.memory_id, content="I like green")
        assert mem.get(black.memory_id) == black


def test_migration_keeps_every_memory_version_and_tombstone(migrated: Path) -> None:
    with _open(migrated, "default") as mem:
        assert mem.backend.schema_version() == len(MIGRATIONS)
    assert_kept(lambda namespace: _open(migrated, namespace), json.loads((SCHEMA6 / "expected.json").read_text()))
    with _open(migrated, "default") as mem:
        assert mem.backend.integrity_check() == "ok"


def test_a_migrated_store_clones_a_namespace_into_another(migrated: Path) -> None:
    assert_clones(lambda namespace: _open(migrated, namespace))


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _statements(path: Path, probe: Any) -> list[str]:
    """The SQL statements (ids and times blanked) one call runs on a store of `path`'s."""
    clock = FakeClock()
    with _open(path, "default", clock) as mem:
        seen: list[str] = []
        mem.backend._conn.set_trace_callback(seen.append)  # the connection every call of this store runs on
        try:
            probe(mem)
        except polymem.NotFoundError:
            pass
        mem.backend._conn.set_trace_callback(None)
    return [_UUID.sub("<id>", s) for s in seen]


@pytest.mark.parametrize("probe", [
    lambda mem, i: mem.get(i),
    lambda mem, i: mem.get(i, as_of=mem.now()),
    lambda mem, i: mem.history(i),
    lambda mem, i: mem.vectors([i]),
    lambda mem, i: mem.update(i, content="x"),
    lambda mem, i: mem.set_status(i, "archived"),
    lambda mem, i: mem.release(i),
    lambda mem, i: mem.delete(i),
    lambda mem, i: mem.purge(i),
], ids=["get", "get as_of", "history", "vectors", "update", "set_status", "release", "delete", "purge"])
def test_an_id_of_another_namespace_runs_the_statements_of_an_unknown_one(tmp_path: Path, probe: Any) -> None:
    path = tmp_path / "m.db"
    with _open(path, "team-b") as other:
        theirs = other.save("My PIN is 4321", user_id="bob")
        other.update(theirs.memory_id, content="My PIN is 9876")
    assert _statements(path, lambda mem: probe(mem, theirs.memory_id)) == _statements(
        path, lambda mem: probe(mem, str(uuid.uuid4())))
