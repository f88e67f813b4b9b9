"""The append-only, hash-chained audit log.

Each entry records who (token id), did what, to which memory, with the
SHA-256 of the content involved, when (UTC) and in which request. Its `hash`
is SHA-256 over the previous entry's hash and the entry's own fields, so
editing, removing or reordering any entry breaks the chain at that point and
`verify()` says where. Removing entries from the *end* leaves a valid shorter
chain: keep the head hash `verify()` prints somewhere else and pass it back
as `anchor` to detect that too.

>>> from polymem.server._auth import Database
>>> log = AuditLog(Database(":memory:"))
>>> _ = log.append("tok1", "save", "default", memory_id="m1", content="I like blue")
>>> log.verify().ok
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._auth import Database, utc_now_iso

GENESIS = "0" * 64
_FIELDS = ("seq", "at", "actor", "action", "namespace", "memory_id", "refs", "content_sha256", "request_id", "detail")


def sha256_text(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(prev_hash: str, entry: dict[str, Any]) -> str:
    body = json.dumps([entry[k] for k in _FIELDS], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


@dataclass
class VerifyReport:
    """The outcome of `AuditLog.verify()`; `problems` are (seq, what was wrong)."""

    ok: bool
    entries: int
    head: str
    problems: list[tuple[int, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "head": self.head,
                "problems": [{"seq": s, "problem": p} for s, p in self.problems]}


class AuditLog:
    """Appends and checks the audit chain (table `audit` of the auth database)."""

    def __init__(self, db: Database) -> None:
        self.db = db

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
            conn.execute(f"INSERT INTO audit ({', '.join(_FIELDS)}, prev_hash, hash) VALUES "
                         f"({', '.join('?' * (len(_FIELDS) + 2))})",
                         [entry[k] for k in _FIELDS] + [entry["prev_hash"], entry["hash"]])
        return entry

    def entries(self, *, memory_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Entries oldest first; with `memory_id`, those that name it (including recalls that returned it)."""
        sql = f"SELECT {', '.join(_FIELDS)}, prev_hash, hash FROM audit"
        params: list[Any] = []
        if memory_id is not None:
            sql += " WHERE memory_id = ? OR instr(refs, ?) > 0"
            params += [memory_id, json.dumps(memory_id)]
        sql += " ORDER BY seq"
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

    def verify(self, anchor: str | None = None) -> VerifyReport:
        """Re-hash the chain; report every break (edited, removed, reordered or inserted entries)."""
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {', '.join(_FIELDS)}, prev_hash, hash FROM audit ORDER BY rowid").fetchall()
        problems: list[tuple[int, str]] = []
        prev, expected_seq = GENESIS, 1
        for row in rows:
            entry = dict(zip((*_FIELDS, "prev_hash", "hash"), row))
            seq = entry["seq"]
            if seq != expected_seq:
                problems.append((seq, f"sequence jumps from {expected_seq - 1} to {seq} (entry removed or reordered)"))
            if entry["prev_hash"] != prev:
                problems.append((seq, "does not chain to the entry before it (removed, inserted or reordered)"))
            if entry_hash(entry["prev_hash"], entry) != entry["hash"]:
                problems.append((seq, "content does not match its hash (entry edited)"))
            prev, expected_seq = entry["hash"], seq + 1
        if anchor is not None and anchor != prev and not any(r[-1] == anchor for r in rows):
            problems.append((expected_seq, "the anchored head is missing (entries removed from the end)"))
        return VerifyReport(not problems, len(rows), prev, problems)
