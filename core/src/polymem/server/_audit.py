"""The append-only, hash-chained audit log, keyed with a server secret.

Each entry records who (token id), did what, to which memory, with the
SHA-256 of the content involved, when (UTC) and in which request. Its `hash`
is SHA-256 over the previous entry's hash and the entry's own fields, so
editing, removing or reordering any entry breaks the chain at that point and
`verify()` says where.

A chain alone cannot tell a shorter or a recomputed chain from the real one.
With the audit key (kept outside the database: `POLYMEM_AUDIT_KEY`,
`POLYMEM_AUDIT_KEY_FILE`, else a `<auth db>.audit-key` file created beside it),
every entry also carries `mac` = HMAC-SHA256(key, hash), and a signed
checkpoint of the head (seq, hash, time, MAC) is written every
`CHECKPOINT_EVERY` entries or `CHECKPOINT_SECONDS`, and on shutdown.
`anchor()` returns the signed head to keep elsewhere (an external log);
`verify(anchor=...)` checks it. What each detects is in docs/audit.md.

>>> from polymem.server._auth import Database
>>> log = AuditLog(Database(":memory:"))
>>> _ = log.append("tok1", "save", "default", memory_id="m1", content="I like blue")
>>> log.verify().ok
True
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import InvalidInput
from ._auth import Database, utc_now_iso

GENESIS = "0" * 64
_FIELDS = ("seq", "at", "actor", "action", "namespace", "memory_id", "refs", "content_sha256", "request_id", "detail")
_TEXT = (*_FIELDS[1:], "prev_hash", "hash", "mac")
# A signed checkpoint of the head after this many entries, or this long, since the last one.
CHECKPOINT_EVERY = 256
CHECKPOINT_SECONDS = 300.0


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(prev_hash: str, entry: dict[str, Any]) -> str:
    body = json.dumps([entry[k] for k in _FIELDS], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


def load_audit_key(db_path: str, *, create: bool) -> bytes | None:
    """The server's audit key: `POLYMEM_AUDIT_KEY` (the secret itself), else the file
    `POLYMEM_AUDIT_KEY_FILE` names, else `<auth db>.audit-key` beside the database (created,
    mode 0600, when `create`); an in-process database gets a key of its own."""
    if os.environ.get("POLYMEM_AUDIT_KEY"):
        return os.environ["POLYMEM_AUDIT_KEY"].encode()
    named = os.environ.get("POLYMEM_AUDIT_KEY_FILE")
    if db_path == ":memory:" and not named:
        return secrets.token_bytes(32) if create else None
    path = Path(named or f"{db_path}.audit-key")
    if not path.exists():
        if not create:
            return None
        if named:  # a new key would fail every MAC written so far
            raise InvalidInput(f"POLYMEM_AUDIT_KEY_FILE names {path}, which does not exist")
        _publish_new_key(path)
    key = path.read_bytes().strip()
    if not key:
        raise InvalidInput(f"the audit key file {path} is empty")
    return key


def _publish_new_key(path: Path) -> None:
    """Write a fresh key beside `path` and link it into place, so that processes starting
    together all read one complete key: the first link wins, the others read the winner's."""
    fd, staged = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(staged, path)
    finally:
        os.unlink(staged)


def _mac(key: bytes, *parts: Any) -> str:
    return hmac.new(key, "\n".join(str(p) for p in parts).encode(), hashlib.sha256).hexdigest()


@dataclass
class VerifyReport:
    """The outcome of `AuditLog.verify()`; `problems` are (seq, what was wrong)."""

    ok: bool
    entries: int
    head: str
    problems: list[tuple[int, str]] = field(default_factory=list)
    keyed: bool = False
    checkpoints: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "head": self.head, "keyed": self.keyed,
                "checkpoints": self.checkpoints,
                "problems": [{"seq": s, "problem": p} for s, p in self.problems]}


class AuditLog:
    """Appends and checks the audit chain (table `audit` of the auth database)."""

    def __init__(self, db: Database, key: bytes | None = None, *, create_key: bool = True) -> None:
        self.db = db
        self.key = key if key is not None else load_audit_key(db.path, create=create_key)
        self._last_checkpoint = time.monotonic()

    def append(self, actor: str, action: str, namespace: str | None, *, memory_id: str | None = None,
               refs: Sequence[str] = (), content: str | None = None, request_id: str | None = None,
               detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write one entry (its own transaction; chained to the last entry, whoever wrote it)."""
        entry: dict[str, Any] = {
            "at": utc_now_iso(), "actor": actor, "action": action, "namespace": namespace, "memory_id": memory_id,
            "refs": json.dumps(list(refs)) if refs else None, "content_sha256": sha256_text(content),
            "request_id": request_id,
            "detail": json.dumps(detail, ensure_ascii=False, sort_keys=True, default=str) if detail else None,
        }
        with self.db.write() as conn:
            last = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
            entry["seq"] = 1 if last is None else last[0] + 1
            prev = GENESIS if last is None else last[1]
            entry["prev_hash"], entry["hash"] = prev, entry_hash(prev, entry)
            entry["mac"] = None if self.key is None else _mac(self.key, entry["hash"])
            conn.execute(f"INSERT INTO audit ({', '.join(_FIELDS)}, prev_hash, hash, mac) VALUES "
                         f"({', '.join('?' * (len(_FIELDS) + 3))})",
                         [entry[k] for k in _FIELDS] + [entry["prev_hash"], entry["hash"], entry["mac"]])
            if self.key is not None:
                since = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM audit_checkpoints").fetchone()[0]
                if (entry["seq"] - since >= CHECKPOINT_EVERY
                        or time.monotonic() - self._last_checkpoint >= CHECKPOINT_SECONDS):
                    self._write_checkpoint(conn, entry["seq"], entry["hash"])
        return entry

    def _write_checkpoint(self, conn: sqlite3.Connection, seq: int, head: str) -> dict[str, Any]:
        assert self.key is not None
        at = utc_now_iso()
        signed = {"seq": seq, "hash": head, "at": at, "mac": _mac(self.key, seq, head, at)}
        conn.execute("INSERT INTO audit_checkpoints(seq, hash, at, mac) VALUES (?, ?, ?, ?)",
                     (seq, head, at, signed["mac"]))
        self._last_checkpoint = time.monotonic()
        return signed

    def checkpoint(self) -> dict[str, Any] | None:
        """Sign the current head into `audit_checkpoints` (on shutdown); None if unkeyed or empty."""
        if self.key is None:
            return None
        try:
            with self.db.write() as conn:
                last = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
                done = conn.execute("SELECT MAX(seq) FROM audit_checkpoints").fetchone()[0]
                if last is None or done == last[0]:
                    return None
                return self._write_checkpoint(conn, last[0], last[1])
        except sqlite3.DatabaseError:  # a damaged log: shutting down goes on, `verify` reports it
            return None

    def anchor(self) -> dict[str, Any]:
        """The signed head, to keep outside this machine: {"seq", "hash", "at", "mac"}."""
        with self.db.read() as conn:
            last = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, head, at = (0, GENESIS, utc_now_iso()) if last is None else (last[0], last[1], utc_now_iso())
        return {"seq": seq, "hash": head, "at": at, "mac": None if self.key is None else _mac(self.key, seq, head, at)}

    def entries(self, *, memory_id: str | None = None, limit: int | None = None, namespace: str | None = None,
                action: str | None = None, before: int | None = None,
                newest_first: bool = False) -> list[dict[str, Any]]:
        """Entries oldest first (or newest first); with `memory_id`, those that name it (including
        recalls that returned it); `namespace`, `action`, `before` (a sequence number) narrow them."""
        sql = f"SELECT {', '.join(_FIELDS)}, prev_hash, hash FROM audit"
        where: list[str] = []
        params: list[Any] = []
        if memory_id is not None:
            where.append("(memory_id = ? OR instr(refs, ?) > 0)")
            params += [memory_id, json.dumps(memory_id)]
        for clause, value in (("namespace = ?", namespace), ("action = ?", action), ("seq < ?", before)):
            if value is not None:
                where.append(clause)
                params.append(value)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY seq DESC" if newest_first else " ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self.db.read() as conn:
            rows = conn.execute(sql, params).fetchall()
        out = []
        for row in rows:
            entry = dict(zip((*_FIELDS, "prev_hash", "hash"), row))
            entry["refs"] = json.loads(entry["refs"]) if entry["refs"] else []
            entry["detail"] = json.loads(entry["detail"]) if entry["detail"] else None
            out.append(entry)
        return out

    def _stored(self) -> tuple[list[tuple[dict[str, Any], list[str]]], list[tuple[Any, ...]]] | str:
        """Every entry as text (with what could not be read as text), and the checkpoints; or why not."""
        columns = ", ".join(f"typeof({c}), CAST({c} AS BLOB)" for c in _TEXT)
        try:
            with self.db.read() as conn:
                rows = conn.execute(f"SELECT seq, {columns} FROM audit ORDER BY rowid").fetchall()
                checkpoints = conn.execute("SELECT seq, hash, at, mac FROM audit_checkpoints ORDER BY seq").fetchall()
        except sqlite3.DatabaseError as exc:
            return f"the audit log cannot be read ({exc}): its table was dropped or damaged"
        out = []
        for row in rows:
            entry: dict[str, Any] = {"seq": row[0]}
            damage = []
            for i, name in enumerate(_TEXT):
                kind, raw = row[1 + 2 * i], row[2 + 2 * i]
                if kind == "null":
                    entry[name] = None
                    continue
                if kind != "text":
                    damage.append(f"field {name} holds a {kind.upper()}, not text")
                try:
                    entry[name] = bytes(raw).decode("utf-8")
                except UnicodeDecodeError:
                    damage.append(f"field {name} is not valid UTF-8")
                    entry[name] = bytes(raw).decode("utf-8", "replace")
            out.append((entry, damage))
        return out, checkpoints

    def verify(self, anchor: str | dict[str, Any] | None = None) -> VerifyReport:
        """Re-hash the chain; report every break (edited, removed, reordered, inserted, forged entries),
        every checkpoint the chain no longer matches, and an anchored head that is missing."""
        stored = self._stored()
        if isinstance(stored, str):
            return VerifyReport(False, 0, GENESIS, [(1, stored)], keyed=self.key is not None)
        rows, checkpoints = stored
        problems: list[tuple[int, str]] = []
        prev, expected_seq = GENESIS, 1
        hashes: dict[int, str] = {}
        for entry, damage in rows:
            seq = entry["seq"]
            problems += [(seq, f"{what} (entry edited)") for what in damage]
            if seq != expected_seq:
                problems.append((seq, f"sequence jumps from {expected_seq - 1} to {seq} (entry removed or reordered)"))
            if entry["prev_hash"] != prev:
                problems.append((seq, "does not chain to the entry before it (removed, inserted or reordered)"))
            if not damage and entry_hash(entry["prev_hash"] or "", entry) != entry["hash"]:
                problems.append((seq, "content does not match its hash (entry edited)"))
            if self.key is not None:
                if entry["mac"] is None:
                    problems.append((seq, "has no MAC: written without the audit key (forged?)"))
                elif not hmac.compare_digest(entry["mac"], _mac(self.key, entry["hash"])):
                    problems.append((seq, "MAC does not match: rewritten or forged without the audit key"))
            elif entry["mac"] is not None and not problems:
                problems.append((seq, "entries carry MACs but no audit key was found to check them "
                                      "(POLYMEM_AUDIT_KEY or POLYMEM_AUDIT_KEY_FILE)"))
            hashes[seq] = entry["hash"]
            prev, expected_seq = entry["hash"], seq + 1
        signed = [dict(zip(("seq", "hash", "at", "mac"), c)) for c in checkpoints]
        if anchor is not None:
            signed.append(_parse_anchor(anchor, hashes))
        for point in signed:
            problems += self._check_signed(point, hashes)
        return VerifyReport(not problems, len(rows), prev, problems, keyed=self.key is not None,
                            checkpoints=len(checkpoints))

    def _check_signed(self, point: dict[str, Any], hashes: dict[int, str]) -> list[tuple[int, str]]:
        seq, what = point["seq"], "the anchor" if point.get("anchor") else f"the checkpoint of {point['at']}"
        signed = point.get("mac") is not None and self.key is not None  # without the key, only its hash is checked
        if signed and not hmac.compare_digest(str(point["mac"]), _mac(self.key or b"", seq, point["hash"], point["at"])):
            return [(seq, f"{what} is not signed by this server's audit key (forged or altered)")]
        if seq == 0:
            return []
        if seq not in hashes:
            return [(seq, f"missing, though {what} covers it (entries removed from the end)")]
        if hashes[seq] != point["hash"]:
            return [(seq, f"differs from {what} (the chain was rewritten and recomputed)")]
        return []


def _parse_anchor(anchor: str | dict[str, Any], hashes: dict[int, str]) -> dict[str, Any]:
    """An anchor: the JSON `anchor()` wrote (or its text), or a bare head hash (found anywhere in the chain)."""
    if isinstance(anchor, str) and not anchor.lstrip().startswith("{"):
        seq = next((s for s, h in hashes.items() if h == anchor), max(hashes, default=0) + 1)
        return {"seq": seq, "hash": anchor, "at": None, "mac": None, "anchor": True}
    try:
        data = json.loads(anchor) if isinstance(anchor, str) else dict(anchor)
        return {"seq": int(data["seq"]), "hash": str(data["hash"]), "at": data.get("at"), "mac": data.get("mac"),
                "anchor": True}
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"not an audit anchor: {exc}") from None
