"""Importers: bring what the frameworks already persisted into polymem, losing nothing.

>>> import json, pathlib, tempfile, polymem
>>> from polymem.importers import import_file
>>> path = pathlib.Path(tempfile.mkdtemp()) / "chat_store.json"
>>> _ = path.write_text(json.dumps({"class_name": "SimpleChatStore", "store": {"ann": [
...     {"role": "user", "additional_kwargs": {}, "blocks": [{"block_type": "text", "text": "I like blue."}]}]}}))
>>> with polymem.open("memory://", embedder=None) as mem:
...     report = import_file(mem, "llamaindex-simple-chat-store", path)
...     again = import_file(mem, "llamaindex-simple-chat-store", path)
...     [m.content for m in mem.session("ann", user_id="ann").transcript()], report.imported, again.duplicates
(['I like blue.'], 1, 1)

Formats (`FORMATS`), read directly from their files, no framework needed:

| format | file | becomes |
|---|---|---|
| `llamaindex-simple-chat-store` | `SimpleChatStore.persist()` JSON | one session per key (key = user unless `user_id`) |
| `langchain-json` | `messages_to_dict` JSON (`FileChatMessageHistory`) | one session (`session_id`, else the file name) |
| `langchain-sql` | SQLite file with `SQLChatMessageHistory`'s table | one session per `session_id` |
| `autogen-state` | `agent.save_state()` / `team.save_state()` JSON | one session per assistant agent's model context |
| `semantic-kernel-chat-history` | `ChatHistory.serialize()` JSON | one session |
| `agent-framework-session` | `AgentSession.to_dict()` JSON (in-memory history) | one session per history provider |
| `agent-framework-file-history` | a `FileHistoryProvider` JSON Lines file | one session (`session_id`, else the file name) |
| `autogen-list-memory` | `ListMemory.dump_component()` JSON | long-term memories |
| `mem0` | mem0 `Memory.get_all()` JSON | long-term memories, with their times |
| `polymem-snapshot` | a polymem JSONL snapshot | `Memory.import_snapshot` |

Messages keep every field the framework's polymem adapter keeps, so the adapter
reads an imported history back as the framework persisted it. With
`extract=True` (the default) the store's extractor also distils the imported
user messages into long-term memories (`Memory.ingest`), so every framework's
agent recalls them. Importing the same file again adds nothing: message and
memory ids are derived from the source (format, key, position, content).
Long-term memories go in through `import_snapshot` (validated whole, one
transaction, re-embedded with the store's model).
"""

from __future__ import annotations

import inspect
import io
import json
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import InvalidInput
from .._models import ImportReport, MemoryRecord, Message
from .._plan import adrive, drive
from .._scoring import ScoringPolicy
from ._formats import READERS, MemoryData, Options, Parsed

FORMATS: tuple[str, ...] = (*sorted(READERS), "polymem-snapshot")
"""Every format `import_file` reads."""

_IDS = uuid.UUID("6f0d8a4e-59a3-4c1e-9a57-0b1d0c9e2f11")

__all__ = ["FORMATS", "FileImportReport", "aimport_file", "import_file"]


@dataclass
class FileImportReport(ImportReport):
    """An `ImportReport` for one file: `imported` counts messages and memories taken from it,
    `duplicates` those already in the store, `extracted` the memories distilled from imported
    messages, `skipped` each entry left out with its reason."""

    format: str = ""
    source: str = ""
    messages: int = 0
    memories: int = 0
    extracted: int = 0


def _message_id(namespace: str, fmt: str, session_id: str, index: int, message: Message) -> str:
    name = "\0".join((namespace, fmt, session_id, str(index), message.role, message.content))
    return str(uuid.uuid5(_IDS, name))


def _snapshot(items: list[MemoryData], fmt: str, namespace: str, now: datetime, scoring: ScoringPolicy) -> bytes:
    """The memories as a polymem snapshot, so the core imports them whole and re-embeds them."""
    lines = [{"format": "polymem-snapshot", "version": 1, "created_at": now.isoformat(), "namespace": namespace,
              "embedding_model": None, "dimension": None}]
    for item in items:
        key = f"{fmt}:{item.key}"
        created = item.created_at or now
        record = MemoryRecord(
            memory_id=str(uuid.uuid5(_IDS, "\0".join((namespace, item.user_id or "", key)))),
            content=item.content, category=item.category, source=item.source,
            importance=scoring.base_score(item.source) if item.importance is None else float(item.importance),
            user_id=item.user_id, agent_id=item.agent_id, session_id=item.session_id, namespace=namespace,
            created_at=created, updated_at=item.updated_at or created, entities=item.entities,
            metadata=item.metadata)
        lines.append({"type": "memory", "record": record.to_dict(), "versions": [record.to_dict()], "vector": None,
                      "idempotency_key": key})
    lines.append({"type": "end", "memories": len(items), "sessions": 0})
    return b"".join((json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8") for line in lines)


Step = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _plan(mem: Any, fmt: str, parsed: Parsed, report: FileImportReport, extract: bool,
          progress: Callable[[int], None] | None) -> Generator[Step, Any, FileImportReport]:
    """What an import does, as calls on the store; `import_file` / `aimport_file` drive it."""
    namespace = mem.namespace
    for data in parsed.sessions:
        session = mem.session(data.session_id, user_id=data.user_id, agent_id=data.agent_id, max_tokens=None)
        transcript = yield session.transcript, (), {}
        stored = {m.message_id for m in transcript}
        fresh = []
        for index, message in enumerate(data.messages):
            message = message.replace(message_id=_message_id(namespace, fmt, data.session_id, index, message))
            if message.message_id in stored:
                report.duplicates += 1
            else:
                fresh.append(message)
        if fresh:
            yield session.add_messages, (fresh,), {}
            report.sessions += 1
            report.messages += len(fresh)
            if extract:
                records = yield mem.ingest, (fresh,), {"user_id": data.user_id, "agent_id": data.agent_id,
                                                       "session_id": data.session_id}
                report.extracted += len(records)
        if progress:
            progress(len(data.messages))
    if parsed.memories:
        engine = getattr(mem, "engine", None)
        scoring = engine.scoring if engine is not None else ScoringPolicy()
        now = mem.now() if hasattr(mem, "now") else datetime.now(timezone.utc)
        snapshot = io.BytesIO(_snapshot(parsed.memories, fmt, namespace, now, scoring))
        done: ImportReport = yield mem.import_snapshot, (snapshot,), {"progress": progress}
        report.memories += done.imported
        report.duplicates += done.duplicates
        report.reembedded += done.reembedded
        report.skipped.extend(done.skipped)
    report.imported = report.messages + report.memories
    return report


def _prepare(mem: Any, fmt: str, path: str | Path, user_id: str | None, agent_id: str | None,
             session_id: str | None, table: str) -> tuple[Parsed | None, FileImportReport]:
    if fmt not in FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r}; choose one of {', '.join(FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no such file: {path}")
    report = FileImportReport(format=fmt, source=str(path))
    if fmt == "polymem-snapshot":
        return None, report
    parsed = READERS[fmt](path, Options(user_id, agent_id, session_id, table))
    report.skipped.extend(parsed.skipped)
    return parsed, report


def _snapshot_report(report: FileImportReport, done: ImportReport) -> FileImportReport:
    report.imported, report.memories, report.duplicates = done.imported, done.imported, done.duplicates
    report.reembedded, report.sessions, report.skipped = done.reembedded, done.sessions, list(done.skipped)
    return report


def import_file(mem: Any, format: str, path: str | Path, *, user_id: str | None = None,  # noqa: A002
                agent_id: str | None = None, session_id: str | None = None, extract: bool = True,
                table: str = "message_store", progress: Callable[[int], None] | None = None) -> FileImportReport:
    """Import one file a framework persisted into `mem` (a `polymem.Memory` or the HTTP client).

    `user_id` owns what is imported (formats keyed by user or session default to that key);
    `agent_id` tags it; `session_id` names the session of single-conversation formats (default:
    the file name); `table` is the SQL table for `langchain-sql`. `progress(n)` is called as items
    are done. Unreadable files raise `InvalidInput`; unreadable entries are skipped and listed.
    """
    parsed, report = _prepare(mem, format, path, user_id, agent_id, session_id, table)
    if parsed is None:
        return _snapshot_report(report, mem.import_snapshot(Path(path), progress=progress))
    return drive(_plan(mem, format, parsed, report, extract, progress), _call)


def _call(step: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]) -> Any:
    func, args, kwargs = step
    return func(*args, **kwargs)


async def _acall(step: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]) -> Any:
    result = _call(step)
    return await result if inspect.isawaitable(result) else result


async def aimport_file(mem: Any, format: str, path: str | Path, *, user_id: str | None = None,  # noqa: A002
                       agent_id: str | None = None, session_id: str | None = None, extract: bool = True,
                       table: str = "message_store",
                       progress: Callable[[int], None] | None = None) -> FileImportReport:
    """`import_file` for a `polymem.AsyncMemory` (or the async HTTP client)."""
    parsed, report = _prepare(mem, format, path, user_id, agent_id, session_id, table)
    if parsed is None:
        return _snapshot_report(report, await mem.import_snapshot(Path(path), progress=progress))
    return await adrive(_plan(mem, format, parsed, report, extract, progress), _acall)
