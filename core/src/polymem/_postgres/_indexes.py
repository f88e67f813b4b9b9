"""The indexes a store lacks, built in the background without blocking writes.

A large import loads its rows with the model's vector indexes dropped (`Plans.defer_vector_indexes`),
into a small store also without the secondary indexes (`SECONDARY_INDEXES`: full text, recency,
models, write times; `Plans.defer_secondary_indexes`), and returns once they are committed;
`IndexBuilder` then builds the indexes with `CREATE INDEX CONCURRENTLY` on a thread and a connection
of its own, the secondary ones first. Until an index is valid the planner does not use it, so every
query stays right: recall exact per user through the scope's btree and the heap, over every user by
a scan. A build that died (process killed, connection lost, store closed) leaves an invalid index
behind; the next store to open finds it, drops it and builds it again. One process builds a model's
indexes at a time: the builder holds the model's advisory lock (`build_lock`) for its connection's
life, and `SECONDARY_BUILD_LOCK` while it builds the secondary ones.
"""

from __future__ import annotations

import builtins
import logging
import threading
from typing import Any

from ._driver import _import_psycopg, run_plan_sync
from ._sql import (
    MAINTENANCE_SETTINGS,
    SECONDARY_BUILD_LOCK,
    SECONDARY_INDEXES,
    PgPlan,
    Q,
    build_lock,
    vector_index_statements,
)

log = logging.getLogger("polymem")

_STATES = ("SELECT c.relname, x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
           "WHERE x.indrelid = 'polymem_memories'::regclass AND c.relname = ANY(%s)")


def unbuilt_vector_indexes() -> PgPlan[builtins.list[tuple[str, int]]]:
    """The registered models whose vector indexes are missing or invalid: (model, dimension)."""
    models = yield Q("SELECT model_id, dimension FROM polymem_vector_indexes ORDER BY model_id")
    out = []
    for model, dimension in models:
        names = [name for name, _ in vector_index_statements(model, dimension)]
        valid = dict((yield Q(_STATES, (names,))))
        if not all(valid.get(name) for name in names):
            out.append((model, int(dimension)))
    return out


def unbuilt_secondary_indexes() -> PgPlan[builtins.list[str]]:
    """The secondary indexes (`SECONDARY_INDEXES`) missing or invalid."""
    names = [name for name, _ in SECONDARY_INDEXES]
    valid = dict((yield Q(_STATES, (names,))))
    return [name for name in names if not valid.get(name)]


def build_secondary_indexes() -> PgPlan[int]:
    """Build the missing or invalid secondary indexes concurrently, unless another process is
    building them (or an import dropping them); ANALYZE first, for the planner meanwhile.
    Returns how many it built."""
    from psycopg import sql

    if not (yield from unbuilt_secondary_indexes()):
        return 0
    (mine,) = yield Q("SELECT pg_try_advisory_lock(%s)", (SECONDARY_BUILD_LOCK,), "one")
    if not mine:
        return 0
    names = [name for name, _ in SECONDARY_INDEXES]
    valid = dict((yield Q(_STATES, (names,))))
    built = 0
    for name, statement in SECONDARY_INDEXES:
        if valid.get(name):
            continue
        if built == 0:
            yield Q("ANALYZE polymem_memories", None, "none")
        if valid.get(name) is False:  # left invalid by a build that died
            yield Q(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)), None, "none")
        yield Q(statement, None, "none")
        built += 1
    # (a build that fails leaves the lock to the connection, which the builder then closes)
    yield Q("SELECT pg_advisory_unlock(%s)", (SECONDARY_BUILD_LOCK,), "none")
    return built


def build_vector_indexes() -> PgPlan[int]:
    """Build every missing or invalid index concurrently: the secondary ones
    (`build_secondary_indexes`), then the vector ones model by model, skipping a model another
    process is building; then VACUUM ANALYZE (statistics, and pages marked all-visible for the
    covering index's index-only scans). For an autocommit connection, which it keeps holding the
    models' build locks (they go with the connection). Returns how many indexes it built."""
    from psycopg import sql

    built = yield from build_secondary_indexes()
    for model, dimension in (yield from unbuilt_vector_indexes()):
        (mine,) = yield Q("SELECT pg_try_advisory_lock(%s)", (build_lock(model),), "one")
        if not mine:
            continue
        statements = vector_index_statements(model, dimension, concurrently=True)
        valid = dict((yield Q(_STATES, ([name for name, _ in statements],))))
        if built == 0 and not all(valid.get(name) for name, _ in statements):
            yield Q("ANALYZE polymem_memories", None, "none")  # the loaded rows, for the planner meanwhile
        for name, statement in statements:
            if valid.get(name) is False:  # left invalid by a build that died
                yield Q(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)), None, "none")
            if not valid.get(name):
                yield Q(statement, None, "none")
                built += 1
    if built:
        yield Q("VACUUM (ANALYZE) polymem_memories", None, "none")
    return built


class IndexBuilder:
    """Runs `build_vector_indexes` on a thread of its own, over a connection of its own.

    `request()` starts a build (or, while one runs, another round after it); `wait()` waits for
    the builds requested so far; `close()` cancels the running build (its invalid index is
    repaired at the next open) and waits for the thread."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._again = False
        self._conn: Any = None
        self._closed = False

    def request(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._thread is not None:
                self._again = True
                return
            self._thread = threading.Thread(target=self._run, name="polymem-pg-indexes", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: no limit) for the requested builds: True if none is left."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self._thread is None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.cancel_safe()
        self.wait(30)

    def _run(self) -> None:
        while self._build_once():
            pass

    def _build_once(self) -> bool:
        """One round of builds; True if another was requested meanwhile."""
        psycopg = _import_psycopg()
        try:
            with psycopg.connect(self._conninfo, autocommit=True) as conn:
                with self._lock:
                    self._again = False
                    self._conn = None if self._closed else conn
                if self._conn is not None:
                    conn.execute(MAINTENANCE_SETTINGS, {"local": False})
                    built = run_plan_sync(conn, build_vector_indexes())
                    if built:
                        log.info("polymem: %d vector index(es) built", built)
        except Exception as exc:  # noqa: BLE001 - a build that failed is retried at the next open
            if not self._closed:
                log.warning("polymem: building the vector indexes failed (retried when a store opens): %s", exc)
        with self._lock:
            self._conn = None
            if self._closed or not self._again:
                self._thread = None
                return False
            return True
