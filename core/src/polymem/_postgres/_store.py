"""What the sync and the async store share: everything but the connection."""

from __future__ import annotations

import builtins
from collections.abc import Generator, Sequence
from typing import Any

from .._backend import Candidate, SearchRequest
from .._errors import PolymemError
from .._storage import Batch, Insert
from .._text import check_language, language_of
from ._cache import DEFAULT_VECTOR_CACHE_MB, ScopeWrites, TermStatistics, VectorCache, cached_rows
from ._driver import _import_psycopg, run_plan_sync, split_url, vector_dumper
from ._indexes import IndexBuilder, unbuilt_secondary_indexes, unbuilt_vector_indexes
from ._plans import Plans, search_statements
from ._schema import migrate
from ._sql import PgPlan, Q

# A search as batches of statements to run side by side: yields a batch, receives its results
# (in the batch's order), returns the candidates and the scope to copy into the vector cache.
SearchDone = tuple[builtins.list[Candidate], tuple[str, str, str] | None]
SearchFlow = Generator[builtins.list[Q], builtins.list[Any], SearchDone]


class PostgresStore:
    """`PostgresBackend` and `AsyncPostgresBackend` without their connections: the URL's
    options, the plans, the vector cache, the migration on open, the vector type's dumper,
    and the search's logic (`_search_flow`), which each store only drives."""

    def __init__(self, url: str, *, auto_migrate: bool) -> None:
        psycopg = _import_psycopg()
        self.conninfo, self.url, self._options = split_url(url)
        self.plans = Plans()
        if "ef_search" in self._options:
            self.plans.ef_search = int(self._options["ef_search"])
        self.vector_cache = VectorCache(
            int(float(self._options.get("vector_cache_mb", DEFAULT_VECTOR_CACHE_MB)) * 2**20))
        self.index_builder = IndexBuilder(self.conninfo)
        if auto_migrate:
            migrate(url)  # in `?language=`, if the URL names one
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            info = psycopg.types.TypeInfo.fetch(conn, "vector")
            if info is None:
                raise PolymemError("the pgvector extension is missing; run polymem migrate")
            self._dumper = vector_dumper(info.oid)
            migrated = conn.execute("SELECT to_regclass('polymem_meta') IS NOT NULL").fetchone()[0]
            analyzer = conn.execute("SELECT value FROM polymem_meta WHERE key = 'analyzer'").fetchone() \
                if migrated else None
            self.language = language_of(analyzer[0] if analyzer else None)
            if "language" in self._options and check_language(self._options["language"]) != self.language:
                raise PolymemError(f"the store's full text is in {self.language}, not {self._options['language']}: "
                                   "migrate it to that language (polymem migrate with ?language= in the URL)")
            # Indexes an import left for later, or a build that died: built now, in the background.
            if auto_migrate and (run_plan_sync(conn, unbuilt_secondary_indexes())
                                 or run_plan_sync(conn, unbuilt_vector_indexes())):
                self.index_builder.request()

    def build_vector_indexes(self, timeout: float | None = None) -> bool:
        """Build the vector indexes a large import left for later (or a build that died left
        invalid), concurrently, in the background, and wait up to `timeout` seconds (None: until
        they are built; 0: not at all). True when no build is left. A large import starts this
        itself; until an index is valid, recall is exact (and slower over every user)."""
        self.index_builder.request()
        return self.index_builder.wait(timeout)

    def _held(self, batch: Batch) -> ScopeWrites | None:
        """The vector cache's hold on the scopes the batch's (first) insert writes to."""
        insert = next((op for op in batch.ops if isinstance(op, Insert)), None)
        return None if insert is None else self.vector_cache.writes_for(insert.items)

    def _batch(self, batch: Batch, held: ScopeWrites | None) -> PgPlan[builtins.list[Any]]:
        """The batch as one plan (which the store runs in one transaction); each operation is the
        plan of its name, with its fields as arguments."""
        results: builtins.list[Any] = []
        first_insert = True
        for op in batch.ops:
            if isinstance(op, Insert):
                results.append((yield from self.plans.insert(op.items, op.now, held if first_insert else None)))
                first_insert = False
            else:
                results.append((yield from getattr(self.plans, op.method)(*op.args())))
        return results

    def document_frequencies(self, namespace: str, terms: Sequence[str],
                             user_id: str | None = None) -> tuple[int, dict[str, int]]:
        """As the search weighs terms: the planner's statistics (a term not among the common ones
        counts as rare), the table's for every user."""
        statistics = self.plans.term_statistics
        docs = statistics.documents(terms)
        return statistics.rows, docs if user_id is None else {t: n for t, n in docs.items() if n}

    def _pool_sizes(self, min_size: int, max_size: int | None) -> tuple[int, int]:
        return (int(self._options.get("pool_min_size", min_size)),
                int(self._options.get("pool_max_size", max_size or 10)))

    def _search_flow(self, request: SearchRequest) -> SearchFlow:
        """Vector and full-text candidates side by side, merged when both are back. A recall
        scoped to one user whose vectors this process holds (`VectorCache`) takes its vector
        candidates from the copy, checked against the scope's stamp; a scope not yet copied is
        returned for the store to load in the background."""
        if self.plans.term_statistics.due():
            (row,) = yield [TermStatistics.STATEMENT]
            self.plans.term_statistics.update(row)
        statements, key, entry = search_statements(self.plans, self.vector_cache, request)
        results = yield statements
        load = None
        if key is not None:
            if entry is not None:
                rows = cached_rows(results[0], entry)
                if rows is None:  # written to since the copy: this time in SQL
                    self.vector_cache.drop(key, entry.stamp)
                    (rows,) = yield [self.plans.search_statements(request)[0]]
                    entry = None
                results[0] = rows
            if entry is None and self.vector_cache.claim(key):
                load = key
        return self.plans.merge_search(results), load
