"""The schema: `MIGRATIONS`, an ordered list (version = position) applied and recorded by
`migrate()`, and the full-text rebuild a migration runs when the stored tsv is of another
analyzer or format."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from .._text import analyzer_id, check_language, language_of, terms
from ._driver import _import_psycopg, run_plan_sync, split_url
from ._sql import MAINTENANCE_SETTINGS, TSV_FORMAT, PgPlan, Q, tsvector_literal

MIGRATIONS: builtins.list[str] = [
    # 1: records, versions, full text, vector index registry
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE polymem_memories (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        memory_id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, session_id TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        category TEXT NOT NULL,
        source TEXT NOT NULL,
        importance DOUBLE PRECISION NOT NULL,
        entities TEXT[] NOT NULL DEFAULT '{}',
        metadata TEXT NOT NULL DEFAULT '{}',
        metadata_j JSONB GENERATED ALWAYS AS (metadata::jsonb) STORED,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        last_accessed_at TIMESTAMPTZ,
        access_count INTEGER NOT NULL DEFAULT 0,
        expire_at TIMESTAMPTZ,
        embedding_model TEXT,
        vector vector,
        version INTEGER NOT NULL DEFAULT 1,
        status TEXT NOT NULL DEFAULT 'active',
        idempotency_key TEXT,
        tsv TSVECTOR NOT NULL
    );
    CREATE UNIQUE INDEX polymem_memories_idempotency ON polymem_memories (namespace, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE INDEX polymem_memories_scope ON polymem_memories (namespace, user_id, status, created_at);
    CREATE INDEX polymem_memories_recent ON polymem_memories (namespace, status, created_at);
    CREATE INDEX polymem_memories_hash ON polymem_memories (namespace, content_hash);
    CREATE INDEX polymem_memories_models ON polymem_memories (namespace, embedding_model) WHERE status = 'active';
    CREATE INDEX polymem_memories_novector ON polymem_memories (namespace)
        WHERE status = 'active' AND vector IS NULL;
    CREATE INDEX polymem_memories_tsv ON polymem_memories USING gin (tsv);
    CREATE TABLE polymem_memory_versions (
        memory_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (memory_id, version)
    );
    CREATE TABLE polymem_vector_indexes (
        model_id TEXT PRIMARY KEY,
        dimension INTEGER NOT NULL,
        index_name TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    """,
    # 2: working memory
    """
    CREATE TABLE polymem_sessions (
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT, agent_id TEXT,
        summary TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        expire_at TIMESTAMPTZ,
        PRIMARY KEY (namespace, session_id)
    );
    CREATE INDEX polymem_sessions_expire ON polymem_sessions (namespace, expire_at) WHERE expire_at IS NOT NULL;
    CREATE TABLE polymem_session_messages (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        namespace TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        message TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        in_window BOOLEAN NOT NULL DEFAULT true
    );
    CREATE INDEX polymem_session_messages_session ON polymem_session_messages (namespace, session_id, id);
    """,
    # 3: room on each page, so recall bookkeeping (access count, last access, importance: no
    # indexed column) updates rows in place (HOT) instead of inserting into every index, HNSW included
    """
    ALTER TABLE polymem_memories SET (fillfactor = 80);
    """,
    # 4: per-user exact vector search reads one btree, not the heap: per model, a covering index on
    # the scope holding the vectors (`vector_index_statements`), built here for the models already registered
    # (every new model gets one with its HNSW index). Recall bookkeeping stays a HOT update (no indexed
    # column changes); vacuum runs sooner so index-only scans find pages marked all-visible. Rows up
    # to 4000 bytes stay whole in the heap (a 384-d row is ~2.1 KB: by default about half of them had
    # their vector moved to TOAST, one more index probe and page per row read or written).
    """
    DO $$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT model_id, dimension, index_name FROM polymem_vector_indexes LOOP
            IF 2560 - 4 * r.dimension >= 256 THEN
                EXECUTE format(
                    'CREATE INDEX IF NOT EXISTS %I ON polymem_memories (namespace, user_id) '
                    'INCLUDE (id, expire_at, vector) WHERE embedding_model = %L AND status = ''active'' '
                    'AND vector IS NOT NULL AND length(namespace) + length(user_id) <= %s',
                    'polymem_scan_' || substr(r.index_name, length('polymem_hnsw_') + 1),
                    r.model_id, (2560 - 4 * r.dimension) / 4);
            END IF;
        END LOOP;
    END $$;
    ALTER TABLE polymem_memories SET (autovacuum_vacuum_scale_factor = 0.02,
                                      autovacuum_vacuum_insert_scale_factor = 0.02, toast_tuple_target = 4000);
    """,
    # 5: settings of the store itself (the analyzer that built the full text: `_migrate_plan`)
    """
    CREATE TABLE polymem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 6: a stamp per (namespace, user) that changes, in the same transaction, whenever a row of that
    # scope is inserted or deleted or changes status, vector, model, expiry or owner: a process holding
    # a copy of a user's vectors (`VectorCache`) checks it in the very statement that uses the copy.
    # Stamps come from a sequence, so a value is never given twice. Statement triggers with transition
    # tables: one upsert per statement and scope (in scope order, so writers lock stamps alike), none
    # for recall bookkeeping (it changes no watched column).
    """
    CREATE SEQUENCE polymem_stamp_seq;
    CREATE TABLE polymem_scope_stamps (
        namespace TEXT NOT NULL,
        user_id TEXT NOT NULL,
        stamp BIGINT NOT NULL,
        PRIMARY KEY (namespace, user_id)
    );
    INSERT INTO polymem_scope_stamps (namespace, user_id, stamp)
        SELECT namespace, user_id, nextval('polymem_stamp_seq')
        FROM (SELECT DISTINCT namespace, user_id FROM polymem_memories WHERE user_id IS NOT NULL) s;
    CREATE FUNCTION polymem_stamp_scopes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO polymem_scope_stamps AS s (namespace, user_id, stamp)
            SELECT namespace, user_id, nextval('polymem_stamp_seq')
            FROM (SELECT DISTINCT namespace, user_id FROM new_rows WHERE user_id IS NOT NULL ORDER BY 1, 2) x
            ON CONFLICT (namespace, user_id) DO UPDATE SET stamp = excluded.stamp;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE polymem_scope_stamps s SET stamp = nextval('polymem_stamp_seq')
            FROM (SELECT DISTINCT namespace, user_id FROM old_rows WHERE user_id IS NOT NULL ORDER BY 1, 2) x
            WHERE s.namespace = x.namespace AND s.user_id = x.user_id;
        ELSE
            INSERT INTO polymem_scope_stamps AS s (namespace, user_id, stamp)
            SELECT namespace, user_id, nextval('polymem_stamp_seq') FROM (
                SELECT DISTINCT x.namespace, x.user_id
                FROM old_rows o JOIN new_rows n ON n.id = o.id,
                     LATERAL (VALUES (o.namespace, o.user_id), (n.namespace, n.user_id)) AS x(namespace, user_id)
                WHERE x.user_id IS NOT NULL
                  AND ((o.namespace, o.user_id, o.status, o.embedding_model, o.expire_at)
                       IS DISTINCT FROM (n.namespace, n.user_id, n.status, n.embedding_model, n.expire_at)
                       OR o.vector IS DISTINCT FROM n.vector)
                ORDER BY 1, 2) c
            ON CONFLICT (namespace, user_id) DO UPDATE SET stamp = excluded.stamp;
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION polymem_stamp_all() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE polymem_scope_stamps SET stamp = nextval('polymem_stamp_seq');
        RETURN NULL;
    END $$;
    CREATE TRIGGER polymem_stamp_insert AFTER INSERT ON polymem_memories
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_update AFTER UPDATE ON polymem_memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_delete AFTER DELETE ON polymem_memories
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_scopes();
    CREATE TRIGGER polymem_stamp_truncate AFTER TRUNCATE ON polymem_memories
        FOR EACH STATEMENT EXECUTE FUNCTION polymem_stamp_all();
    """,
    # 7: the full text's scope lexemes carry weight A (`TSV_FORMAT` 2). The rank's query never holds
    # a scope lexeme, so a tsv written before (everything weight D) ranks exactly alike: an existing
    # store is marked format 2 without a rebuild (at 1M rows one blocks reads for minutes).
    """
    INSERT INTO polymem_meta (key, value) VALUES ('tsv_format', '2') ON CONFLICT (key) DO NOTHING;
    """,
    # 8: the full-text index takes each write at once. With GIN's pending list (the default) every
    # full-text query also read the list linearly, up to 4 MB of not-yet-merged entries after a
    # batch of saves: a rare term cost 5.5 ms at 10k rows instead of under 1 ms (measured).
    """
    ALTER INDEX polymem_memories_tsv SET (fastupdate = off);
    SELECT gin_clean_pending_list('polymem_memories_tsv'::regclass);
    """,
    # 9: deleted memories keep a tombstone (and their versions) for `as_of`, until purged
    """
    CREATE TABLE IF NOT EXISTS polymem_memory_tombstones (
        memory_id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        user_id TEXT,
        deleted_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX IF NOT EXISTS polymem_memory_tombstones_scope ON polymem_memory_tombstones (namespace, user_id, deleted_at);
    """,
    # 10: quarantined sources, kept with the memories so every process on the store honours them
    """
    CREATE TABLE IF NOT EXISTS polymem_blocked_sources (
        namespace TEXT NOT NULL,
        source TEXT NOT NULL,
        reason TEXT,
        blocked_at TIMESTAMPTZ NOT NULL,
        blocked_by TEXT,
        PRIMARY KEY (namespace, source)
    );
    """,
    # 11: a memory is known by (namespace, memory_id): the same id in two namespaces is two
    # independent memories (a namespace can be cloned by importing its snapshot; an id of another
    # namespace answers as an unknown one). Versions take their memory's namespace.
    """
    ALTER TABLE polymem_memory_versions ADD COLUMN namespace TEXT;
    UPDATE polymem_memory_versions v SET namespace = COALESCE(
        (SELECT m.namespace FROM polymem_memories m WHERE m.memory_id = v.memory_id),
        (SELECT t.namespace FROM polymem_memory_tombstones t WHERE t.memory_id = v.memory_id),
        v.record::jsonb ->> 'namespace', '');
    ALTER TABLE polymem_memory_versions ALTER COLUMN namespace SET NOT NULL;
    ALTER TABLE polymem_memory_versions DROP CONSTRAINT polymem_memory_versions_pkey;
    ALTER TABLE polymem_memory_versions ADD PRIMARY KEY (namespace, memory_id, version);
    ALTER TABLE polymem_memory_tombstones DROP CONSTRAINT polymem_memory_tombstones_pkey;
    ALTER TABLE polymem_memory_tombstones ADD PRIMARY KEY (namespace, memory_id);
    ALTER TABLE polymem_memories DROP CONSTRAINT polymem_memories_memory_id_key;
    ALTER TABLE polymem_memories ADD CONSTRAINT polymem_memories_id UNIQUE (namespace, memory_id);
    """,
    # 12: the memories written since a moment, found without reading the scope (`as_of`)
    """
    CREATE INDEX IF NOT EXISTS polymem_memories_written ON polymem_memories (namespace, updated_at);
    """,
    # 13 (as_of2): a version keeps the vector its row held when it was replaced or deleted (and that
    # vector's model), so a recall `as_of` does not embed an older content again. Versions replaced
    # before this have none: their content is embedded when a past recall needs it.
    """
    ALTER TABLE polymem_memory_versions ADD COLUMN IF NOT EXISTS vector vector;
    ALTER TABLE polymem_memory_versions ADD COLUMN IF NOT EXISTS vector_model TEXT;
    """,
    # 14: the memories declaring a validity of their own (metadata `valid_from` / `valid_to`), which
    # a recall or list `valid_at` reads in their version of that time: found without reading the
    # scope (the filter compiler writes the same condition for `$exists` of a plain key)
    """
    CREATE INDEX IF NOT EXISTS polymem_memories_valid_from ON polymem_memories (namespace, user_id, created_at)
        WHERE metadata_j ? 'valid_from';
    CREATE INDEX IF NOT EXISTS polymem_memories_valid_to ON polymem_memories (namespace, user_id, created_at)
        WHERE metadata_j ? 'valid_to';
    """,
]

_MIGRATION_LOCK = 0x706F6C796D656D  # "polymem": one migrator at a time


def _migrate_plan(report: dict[str, Any] | None = None, language: str | None = None) -> PgPlan[builtins.list[int]]:
    """Apply the pending migrations; re-index the full text if it was built by another analyzer,
    or in another language than `language` (None: the stored one's, English for a new store)."""
    yield Q("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,), "none")
    yield Q("CREATE TABLE IF NOT EXISTS polymem_schema_migrations (version INTEGER PRIMARY KEY, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())", None, "none")
    done = {r[0] for r in (yield Q("SELECT version FROM polymem_schema_migrations"))}
    applied = []
    for version, script in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        yield Q(script, None, "none")
        yield Q("INSERT INTO polymem_schema_migrations (version) VALUES (%s)", (version,), "none")
        applied.append(version)
    meta = dict((yield Q("SELECT key, value FROM polymem_meta WHERE key IN ('analyzer', 'tsv_format')")))
    wanted = analyzer_id(language or language_of(meta.get("analyzer")))
    if meta.get("analyzer") != wanted or meta.get("tsv_format") != TSV_FORMAT:
        # full text built by another analyzer or in another language, or written in another format
        rows = yield from rebuild_tsv(language_of(wanted))
        if report is not None:
            report["tsv_rebuilt"] = rows
        yield Q("INSERT INTO polymem_meta (key, value) VALUES ('analyzer', %s), ('tsv_format', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (wanted, TSV_FORMAT), "none")
    return applied


_REBUILD_BATCH = 20_000


def _stage_tsv(rows: Sequence[Sequence[Any]], language: str) -> Q:
    return Q("COPY polymem_tsv_stage (id, content, tsv) FROM STDIN (FORMAT BINARY)",
             [(r[0], r[3], tsvector_literal(r[1], r[2], terms(r[3], language=language))) for r in rows], "copy",
             ("int8", "text", "text"))


def rebuild_tsv(language: str) -> PgPlan[int]:
    """Write every row's tsv again (`_migrate_plan`, in its transaction, under its lock), set-based.

    The new tsv strings are computed in Python batch by batch and COPYed into a staging table
    while the store stays in use. Then, with the table locked: rows written since (new ones, or
    whose content changed) are staged again, the indexes an UPDATE of every row would have to
    maintain (all but the constraints': GIN, HNSW, covering scan, btrees) are dropped, one
    UPDATE joins the staging table, and the indexes are built again, with a generous
    maintenance_work_mem and parallel workers. The statement trigger stamping scopes
    (migration 6) is off for that UPDATE: the tsv is none of the columns it watches.
    Returns the number of rows rewritten."""
    from psycopg import sql

    yield Q("CREATE TEMP TABLE polymem_tsv_stage (id BIGINT PRIMARY KEY, content TEXT NOT NULL, tsv TEXT NOT NULL) "
            "ON COMMIT DROP", None, "none")
    last = 0
    while batch := (yield Q("SELECT id, namespace, user_id, content FROM polymem_memories WHERE id > %s "
                            "ORDER BY id LIMIT %s", (last, _REBUILD_BATCH))):
        last = batch[-1][0]
        yield _stage_tsv(batch, language)
    yield Q("LOCK TABLE polymem_memories IN ACCESS EXCLUSIVE MODE", None, "none")
    changed = yield Q("SELECT m.id, m.namespace, m.user_id, m.content FROM polymem_memories m "
                      "LEFT JOIN polymem_tsv_stage s ON s.id = m.id WHERE s.content IS DISTINCT FROM m.content")
    if changed:
        yield Q("DELETE FROM polymem_tsv_stage WHERE id = ANY(%s)", ([r[0] for r in changed],), "none")
        yield _stage_tsv(changed, language)
    if last == 0 and not changed:
        return 0
    yield Q("ANALYZE polymem_tsv_stage", None, "none")
    indexes = yield Q(
        "SELECT c.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'polymem_memories'::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid) ORDER BY c.relname")
    for name, _ in indexes:
        yield Q(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)), None, "none")
    yield Q("ALTER TABLE polymem_memories DISABLE TRIGGER polymem_stamp_update", None, "none")
    count = yield Q("UPDATE polymem_memories m SET tsv = s.tsv::tsvector FROM polymem_tsv_stage s WHERE m.id = s.id",
                    None, "rowcount")
    yield Q("ALTER TABLE polymem_memories ENABLE TRIGGER polymem_stamp_update", None, "none")
    yield Q(MAINTENANCE_SETTINGS, {"local": True}, "none")
    for _, definition in indexes:
        yield Q(definition, None, "none")
    return int(count)


def migrate(url: str) -> builtins.list[int]:
    """Apply the pending schema migrations to the database at `url`; returns their numbers.

    Safe to run from several processes at once (an advisory lock serialises them).
    """
    psycopg = _import_psycopg()
    conninfo, _, options = split_url(url)
    language = check_language(options["language"]) if "language" in options else None
    report: dict[str, Any] = {}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        with conn.transaction():
            applied = run_plan_sync(conn, _migrate_plan(report, language))
        if report.get("tsv_rebuilt"):
            # Every row was rewritten: mark the pages all-visible again (index-only scans of the
            # covering scan indexes need it) and refresh the statistics.
            conn.execute("VACUUM (ANALYZE) polymem_memories")
    return applied


def schema_version(url: str) -> int:
    psycopg = _import_psycopg()
    conninfo, _, _ = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('polymem_schema_migrations') IS NOT NULL").fetchone()
        if not row[0]:
            return 0
        return int(conn.execute("SELECT COALESCE(max(version), 0) FROM polymem_schema_migrations").fetchone()[0])
