"""Memory ids are unique per namespace, on PostgreSQL: a database written before (schema 10, ids
unique per database; rows written by polymem at that version, `tests/data/schema6/make_postgres.py`)
keeps every memory, version and tombstone through migration 11, and clones a namespace after."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

import polymem
from polymem._postgres import _schema, migrate, schema_version
from polymem.testing import local_embedder

from .conftest import with_database

DUMP = Path(__file__).parents[1] / "data" / "schema6" / "postgres.json"


@pytest.fixture
def schema10(pg_server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A database at schema 10 holding the rows polymem wrote at that version."""
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS schema10 WITH (FORCE)")
        conn.execute("CREATE DATABASE schema10")
    url = with_database(pg_server, "schema10")
    with monkeypatch.context() as patch:
        patch.setattr(_schema, "MIGRATIONS", _schema.MIGRATIONS[:10])
        migrate(url)
    dump = json.loads(DUMP.read_text())
    with psycopg.connect(url) as conn:
        for table, columns in dump["columns"].items():
            with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                copy.write(dump["tables"][table])
    yield url, dump["expected"]
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS schema10 WITH (FORCE)")


def test_migration_keeps_every_memory_version_and_tombstone(schema10: Any) -> None:
    url, expected = schema10
    assert schema_version(url) == 10
    assert migrate(url) == list(range(11, len(_schema.MIGRATIONS) + 1))
    then = datetime.fromisoformat(expected["then"])
    for namespace in ("default", "team-b"):
        with polymem.open(url, embedder=local_embedder(), namespace=namespace) as mem:
            want = expected[namespace]
            assert [r.to_dict() for r in mem.list(status=None, limit=100)] == want["memories"]
            for memory_id, versions in want["histories"].items():
                assert [v.to_dict() for v in mem.history(memory_id)] == versions
            assert sorted(r.memory_id for r in mem.list(status=None, limit=100, as_of=then)) == want["as_of"]
    with polymem.open(url, embedder=local_embedder()) as mem:
        assert mem.get(expected["deleted"]) is None
        assert mem.get(expected["deleted"], as_of=then).content == "The door code is 4512"
        assert mem.get_by_key("colour").content == "I like black now"
        assert mem.recall("which colour does she like?", user_id="ann")[0].memory.content == "I like black now"
        assert [m.content for m in mem.session("s1", user_id="ann").transcript()] == ["hello 你好"]


def test_a_migrated_database_clones_a_namespace_into_another(schema10: Any) -> None:
    url, _ = schema10
    migrate(url)
    with polymem.open(url, embedder=local_embedder()) as mem, \
            polymem.open(url, embedder=local_embedder(), namespace="team-c") as clone:
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
