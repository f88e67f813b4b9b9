"""Memory ids are unique per namespace, on PostgreSQL: a database written before (schema 10, ids
unique per database; rows written by polymem at that version, `tests/data/schema6/make_postgres.py`)
keeps every memory, version and tombstone through migration 11, and clones a namespace after."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

import polymem
from polymem._postgres import _schema, migrate, schema_version
from polymem.testing import local_embedder
from polymem.testing.backends import with_database

from ..test_namespace_ids import assert_clones, assert_kept

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
    assert_kept(lambda namespace: polymem.open(url, embedder=local_embedder(), namespace=namespace), expected)


def test_a_migrated_database_clones_a_namespace_into_another(schema10: Any) -> None:
    url, _ = schema10
    migrate(url)
    assert_clones(lambda namespace: polymem.open(url, embedder=local_embedder(), namespace=namespace))
