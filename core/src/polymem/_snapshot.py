"""Snapshots: a versioned JSONL file that export → import round-trips exactly.

```
{"format": "polymem-snapshot", "version": 2, "created_at": "...", "namespace": "...", "embedding_model": ..., "dimension": ...}
{"type": "memory", "record": {...}, "versions": [{...}, ...], "vector": [...] | null, "idempotency_key": ...}
{"type": "tombstone", "memory_id": "...", "user_id": ..., "deleted_at": "...", "versions": [{...}, ...]}
{"type": "session", "session_id": "...", "user_id": ..., "summary": ..., "messages": [{"message": {...}, "tokens": n, "in_window": true}]}
{"type": "end", "memories": N, "tombstones": T, "sessions": M}
```
A `tombstone` line is a deleted memory that was not purged: its versions, oldest first, so a
restored store answers `as_of` before the deletion as the original did. Version 1 files (no
tombstones, no `tombstones` count) still import. The `end` line makes truncation detectable;
a file is validated whole before anything is written, and then imported in one transaction.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from ._embedders import as_matrix
from ._engine import Engine, Plan, _sequence, check_label, embed_op
from ._errors import ContentRejectedError, InvalidInput, PolymemError, SnapshotError, SourceBlockedError
from ._guard import clean_metadata, flag_metadata
from ._models import STATUSES, ImportReport, MemoryRecord, Message, check_metadata
from ._storage import BlockedSources, ExportPage, ExportSessions, ExportTombstones, Flush, ImportRows
from ._text import content_hash, terms
from ._time import from_iso, to_iso

FORMAT = "polymem-snapshot"
VERSION = 2
READABLE = (1, 2)  # version 1: before tombstones


def _open_binary(target: str | Path | IO[bytes], mode: str) -> tuple[IO[bytes], bool]:
    if isinstance(target, (str, Path)):
        return open(target, mode + "b"), True  # noqa: SIM115 - closed by the caller
    if isinstance(target, io.TextIOBase):
        raise InvalidInput("give a path or a binary file (open(..., 'rb'/'wb'))")
    return target, False


def export_plan(engine: Engine, target: str | Path | IO[bytes], user_id: str | None,
                progress: Callable[[int], None] | None = None, include_quarantined: bool = False) -> Plan:
    """Write the snapshot; what the read guard withholds stays out unless `include_quarantined`."""
    check_label(user_id, "user_id", optional=True)
    yield from engine._visible([], include_quarantined)  # checks the argument
    blocked = {} if include_quarantined else (yield BlockedSources(engine.namespace))
    stream, owned = _open_binary(target, "w")
    try:
        yield Flush()
        page = yield ExportPage(engine.namespace, user_id, 0, 500)
        model, dimension = _vector_model(engine, page)
        header = {"format": FORMAT, "version": VERSION, "created_at": to_iso(engine.clock()),
                  "namespace": engine.namespace, "embedding_model": model, "dimension": dimension}
        stream.write(_line(header))
        count, after = 0, 0
        while page:
            written = 0
            for row in page:
                after = row.pop("cursor")
                if include_quarantined or not engine.guard.reasons(MemoryRecord.from_dict(row["record"]), blocked,
                                                                   classify=False):
                    stream.write(_line({"type": "memory", **row}))
                    written += 1
            count += written
            if progress:
                progress(len(page))
            page = yield ExportPage(engine.namespace, user_id, after, 500)
        tombstones = [t for t in (yield ExportTombstones(engine.namespace, user_id)) if t["versions"] and (
            include_quarantined or not engine.guard.reasons(MemoryRecord.from_dict(t["versions"][-1]), blocked,
                                                            classify=False))]
        for tombstone in tombstones:
            stream.write(_line({"type": "tombstone", **tombstone}))
        sessions = yield ExportSessions(engine.namespace, user_id)
        for session in sessions:
            stream.write(_line({"type": "session", **session}))
        stream.write(_line({"type": "end", "memories": count, "tombstones": len(tombstones),
                            "sessions": len(sessions)}))
        stream.flush()
    finally:
        if owned:
            stream.close()
    return count


def _vector_model(engine: Engine, page: list[dict[str, Any]]) -> tuple[str | None, int | None]:
    """The embedding model and dimension of the snapshot: the store's embedder's, else (a store opened
    without one, as `polymem export` does) those of the first exported row that carries a vector."""
    if engine.embedder is not None:
        return engine.embedder.model_id, engine.embedder.dimension
    for row in page:
        if row.get("vector") is not None:
            return row["record"].get("embedding_model"), len(row["vector"])
    return None, None


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def read_snapshot(source: str | Path | IO[bytes]) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Parse and validate a whole snapshot: (header, memories and tombstones, sessions); any problem
    raises SnapshotError with its line. A tombstone comes as a memory whose `record` is its last
    version, with its `deleted_at`."""
    stream, owned = _open_binary(source, "r")
    try:
        lines = list(_numbered(stream))
    finally:
        if owned:
            stream.close()
    if not lines:
        raise SnapshotError("snapshot is empty")
    header_no, header = lines[0]
    if header.get("format") != FORMAT:
        raise SnapshotError(f"line {header_no}: not a polymem snapshot (format={header.get('format')!r})")
    if header.get("version") not in READABLE:
        raise SnapshotError(f"line {header_no}: snapshot version {header.get('version')!r}; this polymem reads "
                            f"{' and '.join(map(str, READABLE))}")
    memories: list[dict[str, Any]] = []
    sessions: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    keys: dict[str, str] = {}
    memory_ids: set[str] = set()
    deleted = 0
    session_ids: set[str] = set()
    for number, obj in lines[1:]:
        if end is not None:
            raise SnapshotError(f"line {number}: content after the end line")
        kind = obj.get("type")
        try:
            if kind == "memory":
                record = _checked_record(MemoryRecord.from_dict(obj["record"]))
                versions = [_checked_record(MemoryRecord.from_dict(v)).to_dict() for v in obj.get("versions") or []]
                vector = obj.get("vector")
                if vector is not None and (not isinstance(vector, list) or not vector):
                    raise SnapshotError("vector must be a non-empty list")
                if vector is not None:
                    as_matrix([vector], None)
                key = check_label(obj.get("idempotency_key"), "idempotency_key", optional=True)
                if key is not None and keys.setdefault(key, record.memory_id) != record.memory_id:
                    raise SnapshotError(f"idempotency_key {key!r} is also memory {keys[key]}'s")
                memories.append({"record": record, "versions": versions, "vector": vector,
                                 "idempotency_key": key, "line": number})
            elif kind == "tombstone":
                memories.append(_checked_tombstone(obj))
                deleted += 1
            elif kind == "session":
                _check_session(obj)
                if obj["session_id"] in session_ids:
                    raise SnapshotError(f"session {obj['session_id']!r} appears twice")
                session_ids.add(obj["session_id"])
                sessions.append(obj)
            elif kind == "end":
                end = obj
            else:
                raise SnapshotError(f"unknown line type {kind!r}")
            if kind in ("memory", "tombstone"):
                if memories[-1]["record"].memory_id in memory_ids:
                    raise SnapshotError(f"memory {memories[-1]['record'].memory_id!r} appears twice")
                memory_ids.add(memories[-1]["record"].memory_id)
        except SnapshotError as exc:
            raise SnapshotError(f"line {number}: {exc}") from None
        except (PolymemError, KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"line {number}: invalid {kind} entry: {exc}") from None
    if end is None:
        raise SnapshotError(f"snapshot is truncated after line {lines[-1][0]} (no end line)")
    counted = (end.get("memories"), end.get("tombstones", 0), end.get("sessions"))
    if counted != (len(memories) - deleted, deleted, len(sessions)):
        raise SnapshotError(f"line {lines[-1][0]}: end line counts {counted[0]} memories, {counted[1]} tombstones "
                            f"and {counted[2]} sessions, the file holds {len(memories) - deleted}, {deleted} and "
                            f"{len(sessions)}")
    return header, memories, sessions


def _checked_tombstone(obj: dict[str, Any]) -> dict[str, Any]:
    """A tombstone line as an import row: its versions, the last one as its record, and its deletion time."""
    memory_id = check_label(obj.get("memory_id"), "memory_id")
    versions = [_checked_record(MemoryRecord.from_dict(v)) for v in _sequence(obj.get("versions"), "versions")]
    if not versions:
        raise SnapshotError(f"tombstone of {memory_id!r} has no versions")
    if any(v.memory_id != memory_id for v in versions):
        raise SnapshotError(f"tombstone of {memory_id!r} holds a version of another memory")
    deleted_at = from_iso(obj.get("deleted_at"), "deleted_at")
    if deleted_at is None:
        raise SnapshotError(f"tombstone of {memory_id!r} has no deleted_at")
    return {"record": versions[-1], "versions": [v.to_dict() for v in versions], "vector": None,
            "idempotency_key": None, "deleted_at": deleted_at}


def _checked_record(record: MemoryRecord) -> MemoryRecord:
    """A record as the engine would have stored it: labels, text, importance, status, metadata."""
    for what in ("memory_id", "namespace", "category", "source"):
        check_label(getattr(record, what), what)
    for what in ("user_id", "agent_id", "session_id", "embedding_model"):
        check_label(getattr(record, what), what, optional=True)
    check_label(record.content, "content")
    Engine._importance(record.importance)
    if record.status not in STATUSES:
        raise SnapshotError(f"status must be one of {', '.join(STATUSES)}, got {record.status!r}")
    check_metadata(record.metadata)
    for what in ("version", "access_count"):
        value = getattr(record, what)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise SnapshotError(f"{what} must be a non-negative integer, got {value!r}")
    return record


def _check_session(session: dict[str, Any]) -> None:
    check_label(session.get("session_id"), "session_id")
    check_label(session.get("user_id"), "user_id", optional=True)
    check_label(session.get("agent_id"), "agent_id", optional=True)
    for key in ("created_at", "updated_at"):
        if from_iso(session.get(key), key) is None:
            raise SnapshotError(f"session {session['session_id']!r} has no {key}")
    from_iso(session.get("expire_at"), "expire_at")
    summary = session.get("summary")
    if summary is not None and not isinstance(summary, str):
        raise SnapshotError("summary must be text or null")
    session.setdefault("messages", [])  # a session row without messages is an empty session
    for m in _sequence(session["messages"], "messages"):
        if not isinstance(m, dict) or not {"message", "tokens", "in_window"} <= m.keys():
            raise SnapshotError("a session message needs message, tokens and in_window")
        Message.from_dict(m["message"])
        if isinstance(m["tokens"], bool) or not isinstance(m["tokens"], int) or not 0 <= m["tokens"] < 2**31:
            raise SnapshotError(f"tokens must be a non-negative integer, got {m['tokens']!r}")
        if not isinstance(m["in_window"], bool):
            raise SnapshotError(f"in_window must be true or false, got {m['in_window']!r}")


def _numbered(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SnapshotError(f"line {number}: not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise SnapshotError(f"line {number}: expected a JSON object")
        if b"\\u" in raw:  # only an escape spells a lone surrogate, which no store can keep
            try:
                json.dumps(obj, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise SnapshotError(f"line {number}: holds text that is not valid Unicode "
                                    "(an escaped lone surrogate)") from None
        yield number, obj


def import_plan(engine: Engine, source: str | Path | IO[bytes],
                progress: Callable[[int], None] | None = None) -> Plan:
    header, memories, sessions = read_snapshot(source)
    model = engine.embedder.model_id if engine.embedder else None
    dim = engine.embedder.dimension if engine.embedder else None
    needs_embedding = []
    rows = []
    skipped: list[tuple[str, str]] = []
    blocked = yield BlockedSources(engine.namespace)
    for item in memories:
        # The file's word on trust is not believed: its flags go, and the filter judges anew.
        record: MemoryRecord = item["record"]
        record = record.replace(namespace=engine.namespace, metadata=clean_metadata(record.metadata))
        try:
            verdict = engine._check_write(record.content, record.source, blocked)
        except (SourceBlockedError, ContentRejectedError) as exc:
            skipped.append((record.memory_id, exc.code))
            continue
        if verdict is not None and verdict.flagged:
            action = engine.write_policy.action(record.source)
            record = record.replace(metadata=flag_metadata(record.metadata, verdict, action),
                                    status="blocked" if action == "quarantine" else record.status)
        versions = [{**v, "namespace": engine.namespace} for v in item["versions"]]
        if item.get("deleted_at") is not None:  # a deleted memory: its past alone, never recalled now nor embedded
            rows.append({**item, "record": record, "versions": [*versions[:-1], record.to_dict()]})
            continue
        vector = item["vector"]
        usable = vector is not None and model is not None and record.embedding_model == model and len(vector) == dim
        row = {"record": record, "versions": versions,
               "vector": np.asarray(vector, dtype=np.float32) if usable else None,
               "idempotency_key": item["idempotency_key"], "content_hash": content_hash(record.content),
               "terms": terms(record.content, language=engine.language),
               "screened": engine.screened_by if verdict is not None else None}
        if model is not None and not usable:
            needs_embedding.append(row)
        elif model is None:
            row["record"] = record.replace(embedding_model=None)
        rows.append(row)
    reembedded = 0
    for start in range(0, len(needs_embedding), 256):
        chunk = needs_embedding[start:start + 256]
        raw = yield embed_op([r["record"].content for r in chunk])
        matrix = as_matrix(raw, dim)
        for n, row in enumerate(chunk):
            row["vector"] = matrix[n]
            row["record"] = row["record"].replace(embedding_model=model)
        reembedded += len(chunk)
        if progress:
            progress(len(chunk))
    report: ImportReport = yield ImportRows(engine.namespace, rows, sessions, engine.clock())
    report.reembedded = reembedded
    report.skipped.extend(skipped)
    if progress:
        progress(len(rows) - reembedded)
    return report
