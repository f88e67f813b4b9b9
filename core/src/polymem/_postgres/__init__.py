"""PostgreSQL + pgvector: the scale-out backend (`polymem.open("postgresql://...")`).

Every method is written once, as a *plan*: a generator that yields `Q`
statements and receives their results. `PostgresBackend` drives plans over a
psycopg connection pool, `AsyncPostgresBackend` over psycopg's native async
pool; each plan runs in one transaction, retried on a serialization failure or
deadlock.

- Vectors are pgvector `vector` columns; each embedding model gets its own
  partial HNSW index (`(vector::vector(dim)) WHERE embedding_model = '<model>'`),
  so vector spaces never mix. A recall scoped to one user is exact (HNSW with a
  per-user filter drops rows): an index-only scan of the model's covering btree
  `(namespace, user_id) INCLUDE (id, expire_at, vector)`, where a user's vectors
  sit side by side (models up to 576 dimensions; above, and for keys too long
  for a btree entry, the same exact scan goes through the heap). A recall over
  every user uses HNSW with `hnsw.iterative_scan`.
- A process may hold copies of busy users' vectors (`VectorCache`, 512 MB by
  default, `vector_cache_mb=` in the URL): numpy picks the candidates, and the
  statement fetching them checks the user's stamp (bumped by triggers in the
  writing transaction), so a copy is never used once the user's rows changed.
  A save made by the process itself keeps its copy current: the insert locks the
  user's stamp, so the copy as of the stamp before it plus the new rows is the
  scope after it (`VectorCache.catch_up`); writes of other processes make the
  copy stale, and it is loaded again in the background.
- The vector and full-text candidates are two statements run side by side.
- Full text is a `tsvector` of the terms `_text.terms()` computes (CJK bigrams
  included), written position by position with no dictionary, plus a scope
  lexeme so a per-user search intersects posting lists instead of filtering
  (weighted A, which the rank weighs 0, and left out of the ranked query).
- Every read-modify-write is a transaction: updates lock the row
  (`SELECT ... FOR UPDATE`, then compare-and-set on `version`), idempotent saves
  take transaction-scoped advisory locks on their keys, reinforcement is one
  atomic `UPDATE` per row in a fixed order, applied off the read path.
- The schema is `MIGRATIONS`, an ordered list applied and recorded by `migrate()`.

The package, by concern: `_sql` (statements, values, tsvector, the filter
compiler), `_schema` (migrations, the full-text rebuild), `_cache` (the vector
cache, term statistics), `_plans` (every operation as a plan), `_indexes` (vector and secondary
indexes built after a large import, concurrently, in the background), `_driver`
(connections, the two plan drivers), `_store` (what both stores share), `_sync`
and `_async` (the stores).

    >>> mem = polymem.open("postgresql://user@host/db")      # doctest: +SKIP
"""

from ._async import AsyncPostgresBackend
from ._cache import (
    DEFAULT_VECTOR_CACHE_MB,
    MAX_SHORTLIST,
    ScopeVectors,
    ScopeWrites,
    TermStatistics,
    VectorCache,
    cacheable,
    cached_rows,
    cached_statement,
    scope_load_statement,
    scope_vectors,
)
from ._driver import retryable, run_plan_async, run_plan_sync, session_settings, split_url, vector_dumper
from ._indexes import IndexBuilder, build_vector_indexes, unbuilt_vector_indexes
from ._plans import ANALYZE_ROWS, SAVE_LOCKS, Plans, Staged, search_statements, session_dict, stage_import
from ._schema import MIGRATIONS, migrate, rebuild_tsv, schema_version
from ._sql import (
    MAINTENANCE_SETTINGS,
    RANK_WEIGHTS,
    TSV_FORMAT,
    PgPlan,
    Q,
    build_lock,
    compile_filter_pg,
    index_name,
    namespace_lexeme,
    rank_tsquery_literal,
    record_values,
    row_to_record,
    scan_index_name,
    scan_key_chars,
    scope_lexeme,
    tsquery_literal,
    tsvector_literal,
    vector_bytes,
    vector_from_bytes,
    vector_index_statements,
)
from ._sync import PostgresBackend

__all__ = [
    "ANALYZE_ROWS",
    "DEFAULT_VECTOR_CACHE_MB",
    "MAINTENANCE_SETTINGS",
    "MAX_SHORTLIST",
    "MIGRATIONS",
    "RANK_WEIGHTS",
    "SAVE_LOCKS",
    "TSV_FORMAT",
    "AsyncPostgresBackend",
    "IndexBuilder",
    "PgPlan",
    "Plans",
    "PostgresBackend",
    "Q",
    "ScopeVectors",
    "ScopeWrites",
    "Staged",
    "TermStatistics",
    "VectorCache",
    "build_lock",
    "build_vector_indexes",
    "cacheable",
    "cached_rows",
    "cached_statement",
    "compile_filter_pg",
    "index_name",
    "migrate",
    "namespace_lexeme",
    "rank_tsquery_literal",
    "rebuild_tsv",
    "record_values",
    "retryable",
    "row_to_record",
    "run_plan_async",
    "run_plan_sync",
    "scan_index_name",
    "scan_key_chars",
    "schema_version",
    "scope_lexeme",
    "scope_load_statement",
    "scope_vectors",
    "search_statements",
    "session_dict",
    "session_settings",
    "split_url",
    "stage_import",
    "tsquery_literal",
    "tsvector_literal",
    "unbuilt_vector_indexes",
    "vector_bytes",
    "vector_dumper",
    "vector_from_bytes",
    "vector_index_statements",
]
