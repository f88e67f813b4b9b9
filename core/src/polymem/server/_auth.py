"""Tokens, grants and quarantined sources, in an SQLite file beside the store.

A token is shown once (`pm_<id>_<secret>`) and stored as the SHA-256 of its
secret; the secret is 256 random bits, so a plain hash is enough (no password
stretching needed). A token holds one grant per namespace it may use: the
permissions (`read`, `write`, `admin`), the users it may act for (None: every
user of the namespace) and the agent it writes as (None: any). The first
grant is the token's home namespace; more grants are explicit sharing.

>>> store = AuthStore(":memory:")
>>> info, secret = store.create_token("lc-agent", "acme", ["read", "write"], users=["ann"])
>>> store.authenticate(secret).grants["acme"].users
('ann',)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import InvalidInput, NotFoundError, PermissionDeniedError
from ._errors import AuthenticationError

PERMISSIONS = ("read", "write", "admin")

# Ordered migrations: version = position (STYLE 13).
MIGRATIONS: list[str] = [
    """
    CREATE TABLE tokens (
        token_id TEXT PRIMARY KEY, name TEXT NOT NULL, secret_sha256 TEXT NOT NULL,
        created_at TEXT NOT NULL, revoked_at TEXT
    );
    CREATE TABLE grants (
        token_id TEXT NOT NULL REFERENCES tokens(token_id), namespace TEXT NOT NULL,
        permissions TEXT NOT NULL, users TEXT, agent_id TEXT, position INTEGER NOT NULL,
        PRIMARY KEY (token_id, namespace)
    );
    CREATE TABLE blocked_sources (
        namespace TEXT NOT NULL, source TEXT NOT NULL, reason TEXT, blocked_at TEXT NOT NULL, blocked_by TEXT,
        PRIMARY KEY (namespace, source)
    );
    CREATE TABLE audit (
        seq INTEGER PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
        namespace TEXT, memory_id TEXT, refs TEXT, content_sha256 TEXT, request_id TEXT, detail TEXT,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL
    );
    CREATE INDEX audit_memory ON audit(memory_id)
    """,
    # 2: keyed audit: a MAC per entry and signed checkpoints of the head (see _audit.py)
    """
    ALTER TABLE audit ADD COLUMN mac TEXT;
    CREATE TABLE audit_checkpoints (
        seq INTEGER NOT NULL, hash TEXT NOT NULL, at TEXT NOT NULL, mac TEXT NOT NULL
    )
    """,
]


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def auth_db_for(store_url: str) -> str:
    """Default auth file: `<store file>.auth.db` beside an SQLite store; in-process otherwise."""
    if store_url.startswith("sqlite:///"):
        return store_url[len("sqlite:///"):] + ".auth.db"
    return ":memory:"


class Database:
    """One SQLite connection shared by threads under a lock (every call is short)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA busy_timeout = 30000")
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        with self.write() as conn:
            done = int(conn.execute("PRAGMA user_version").fetchone()[0])
            for version, script in enumerate(MIGRATIONS, start=1):
                if version > done:
                    for statement in script.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {version}")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A serialised write transaction (BEGIN IMMEDIATE: safe across processes too)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


@dataclass(frozen=True)
class Grant:
    """What a token may do in one namespace."""

    namespace: str
    permissions: frozenset[str]
    users: tuple[str, ...] | None = None
    agent_id: str | None = None

    def require(self, permission: str) -> None:
        if permission not in self.permissions and "admin" not in self.permissions:
            raise PermissionDeniedError(f"this token lacks {permission!r} permission in namespace {self.namespace!r}")

    def require_admin(self) -> None:
        """Namespace-wide operations need `admin` over every user of the namespace."""
        if "admin" not in self.permissions or self.users is not None:
            raise PermissionDeniedError(
                f"this operation needs an admin grant over every user of namespace {self.namespace!r}")

    def covers_user(self, user_id: str | None) -> bool:
        return self.users is None or user_id in self.users

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "permissions": sorted(self.permissions),
                "users": None if self.users is None else list(self.users), "agent_id": self.agent_id}


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: a token and its grants (the first is its home namespace)."""

    token_id: str
    name: str
    grants: dict[str, Grant] = field(default_factory=dict)
    home: str = "default"

    def grant(self, namespace: str | None) -> Grant:
        ns = namespace or self.home
        found = self.grants.get(ns)
        if found is None:
            raise PermissionDeniedError(f"this token has no grant on namespace {ns!r}")
        return found


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    name: str
    created_at: str
    revoked_at: str | None
    grants: tuple[Grant, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "name": self.name, "created_at": self.created_at,
                "revoked_at": self.revoked_at, "grants": [g.to_dict() for g in self.grants]}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _check_permissions(permissions: Sequence[str]) -> frozenset[str]:
    perms = frozenset(permissions)
    if not perms or not perms <= set(PERMISSIONS):
        raise InvalidInput(f"permissions must be a non-empty subset of {PERMISSIONS}, got {sorted(perms)}")
    return perms


class AuthStore:
    """Tokens, grants and blocked sources. Thread-safe; several processes may share the file."""

    def __init__(self, path: str | Path | Database) -> None:
        self.db = path if isinstance(path, Database) else Database(path)

    # -- tokens -------------------------------------------------------------------------------
    def create_token(self, name: str, namespace: str, permissions: Sequence[str] = ("read", "write"), *,
                     users: Sequence[str] | None = None, agent_id: str | None = None) -> tuple[TokenInfo, str]:
        """A new token with its home grant; returns its info and the secret (shown once)."""
        if not name or not namespace:
            raise InvalidInput("a token needs a name and a namespace")
        perms = _check_permissions(permissions)
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        with self.db.write() as conn:
            conn.execute("INSERT INTO tokens VALUES (?, ?, ?, ?, NULL)", (token_id, name, _sha(secret), utc_now_iso()))
            self._put_grant(conn, token_id, Grant(namespace, perms, None if users is None else tuple(users), agent_id))
        return self.get_token(token_id), f"pm_{token_id}_{secret}"

    @staticmethod
    def _put_grant(conn: sqlite3.Connection, token_id: str, grant: Grant) -> None:
        position = conn.execute("SELECT COUNT(*) FROM grants WHERE token_id = ?", (token_id,)).fetchone()[0]
        conn.execute(
            "INSERT INTO grants VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(token_id, namespace) DO UPDATE SET "
            "permissions = excluded.permissions, users = excluded.users, agent_id = excluded.agent_id",
            (token_id, grant.namespace, json.dumps(sorted(grant.permissions)),
             None if grant.users is None else json.dumps(list(grant.users)), grant.agent_id, position))

    def grant(self, token_id: str, namespace: str, permissions: Sequence[str] = ("read",), *,
              users: Sequence[str] | None = None, agent_id: str | None = None) -> TokenInfo:
        """Share a namespace with a token (or change its grant there)."""
        perms = _check_permissions(permissions)
        with self.db.write() as conn:
            if conn.execute("SELECT 1 FROM tokens WHERE token_id = ?", (token_id,)).fetchone() is None:
                raise NotFoundError(f"no token {token_id!r}")
            self._put_grant(conn, token_id, Grant(namespace, perms, None if users is None else tuple(users), agent_id))
        return self.get_token(token_id)

    def revoke(self, token_id: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
                               (utc_now_iso(), token_id))
            return cur.rowcount > 0

    def _grants(self, conn: sqlite3.Connection, token_id: str) -> tuple[Grant, ...]:
        rows = conn.execute("SELECT namespace, permissions, users, agent_id FROM grants WHERE token_id = ? "
                            "ORDER BY position", (token_id,)).fetchall()
        return tuple(Grant(ns, frozenset(json.loads(p)), None if u is None else tuple(json.loads(u)), a)
                     for ns, p, u, a in rows)

    def get_token(self, token_id: str) -> TokenInfo:
        with self.db.read() as conn:
            row = conn.execute("SELECT token_id, name, created_at, revoked_at FROM tokens WHERE token_id = ?",
                               (token_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no token {token_id!r}")
            return TokenInfo(row[0], row[1], row[2], row[3], grants=self._grants(conn, token_id))

    def list_tokens(self) -> list[TokenInfo]:
        with self.db.read() as conn:
            ids = [r[0] for r in conn.execute("SELECT token_id FROM tokens ORDER BY created_at, token_id")]
        return [self.get_token(i) for i in ids]

    def authenticate(self, token: str | None) -> Principal:
        """The principal of a bearer token; AuthenticationError if unknown or revoked."""
        if not token or not token.startswith("pm_") or len(token) < 20 or token[15:16] != "_":
            raise AuthenticationError("missing or malformed bearer token (Authorization: Bearer pm_…)")
        token_id, secret = token[3:15], token[16:]
        with self.db.read() as conn:
            row = conn.execute("SELECT name, secret_sha256, revoked_at FROM tokens WHERE token_id = ?",
                               (token_id,)).fetchone()
            if row is None or not hmac.compare_digest(row[1], _sha(secret)):
                raise AuthenticationError("unknown token")
            if row[2] is not None:
                raise AuthenticationError("this token was revoked")
            grants = self._grants(conn, token_id)
        return Principal(token_id, row[0], {g.namespace: g for g in grants}, grants[0].namespace if grants else "")

