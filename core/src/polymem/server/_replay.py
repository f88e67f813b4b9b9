"""Audit replay: what a recall gave the agent, reconstructed from the audit log and the store.

Each recall's audit entry records what it returned (`detail["returned"]`: memory id, version,
score and the SHA-256 of the content given). Replaying the entry takes each memory's version
from its history (deleted memories keep theirs; purged ones are gone for good) and checks its
content against the recorded digest, and the entry itself against the hash chain: a past
decision of an agent can be reconstructed, and shown to be what the agent saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import InvalidInput, NotFoundError
from .._models import MemoryRecord, RecallHit
from ._audit import AuditLog, sha256_text


def returned(hits: Sequence[RecallHit]) -> list[dict[str, Any]]:
    """What a recall gave its caller, as its audit entry records it."""
    return [{"memory_id": h.memory.memory_id, "version": h.memory.version, "score": h.score,
             "content_sha256": sha256_text(h.memory.content)} for h in hits]


def recall_entry(log: AuditLog, seq: int, namespace: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The recall entry `seq` and the problems the hash chain shows up to and at it; with `namespace`,
    an entry of another namespace is answered as one that does not exist."""
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise InvalidInput(f"an audit entry is named by its sequence number, got {seq!r}")
    entry = next((e for e in log.entries() if e["seq"] == seq), None)
    if entry is None or (namespace is not None and entry["namespace"] != namespace):
        raise NotFoundError(f"no audit entry {seq}" + ("" if namespace is None else f" in namespace {namespace!r}"))
    if entry["action"] != "recall" or not entry["detail"] or "returned" not in entry["detail"]:
        raise InvalidInput(f"audit entry {seq} is a {entry['action']!r}, not a recall that recorded what it returned")
    report = log.verify()
    problems = [{"seq": s, "problem": p} for s, p in report.problems if s <= seq]
    return entry, problems


def replay(entry: dict[str, Any], problems: list[dict[str, Any]],
           histories: Mapping[str, Sequence[MemoryRecord]]) -> dict[str, Any]:
    """The replay of a recall entry, given the history of each memory it returned (empty: purged).

    Each memory's `state`: `verified` (that version, with the content digest recorded),
    `altered` (the stored version's content differs from what was given), `missing_version`
    or `purged`."""
    memories = []
    for given in entry["detail"]["returned"]:
        versions = histories.get(given["memory_id"], ())
        version = next((v for v in versions if v.version == given["version"]), None)
        if not versions:
            state = "purged"
        elif version is None:
            state = "missing_version"
        elif sha256_text(version.content) != given["content_sha256"]:
            state = "altered"
        else:
            state = "verified"
        memories.append({**given, "state": state, "memory": None if version is None else version.to_dict()})
    return {"entry": entry, "chain_ok": not problems, "problems": problems, "memories": memories,
            "verified": not problems and all(m["state"] == "verified" for m in memories)}
