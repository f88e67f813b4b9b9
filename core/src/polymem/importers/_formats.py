"""Readers of what the frameworks persisted: each returns sessions and memories, nothing is written here."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._errors import InvalidInput
from .._models import Message
from ._messages import (
    UnsupportedMessage,
    from_agent_framework,
    from_autogen,
    from_langchain,
    from_llamaindex,
    from_semantic_kernel,
)


@dataclass
class SessionData:
    """One conversation to become a working-memory session (its transcript)."""

    session_id: str
    user_id: str | None
    agent_id: str | None
    messages: list[Message]


@dataclass
class MemoryData:
    """One long-term memory; `key` names it in its source (it makes the import idempotent)."""

    key: str
    content: str
    user_id: str | None
    agent_id: str | None = None
    session_id: str | None = None
    category: str = "fact"
    source: str = "import"
    importance: float | None = None
    entities: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class Parsed:
    sessions: list[SessionData] = field(default_factory=list)
    memories: list[MemoryData] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    table: str


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path}: not a JSON file ({exc})") from None


def _user(options: Options, fallback: str | None, what: str) -> str:
    user = options.user_id or fallback
    if not user:
        raise InvalidInput(f"{what} does not say whose memory it is: give user_id (--user)")
    return user


def _messages(entries: Any, convert: Callable[[Any], Any], label: str, parsed: Parsed) -> list[Message]:
    out: list[Message] = []
    for n, entry in enumerate(entries or ()):
        try:
            converted = convert(entry)
        except (UnsupportedMessage, KeyError, TypeError, AttributeError) as exc:
            parsed.skipped.append((f"{label} message {n}", str(exc) or type(exc).__name__))
            continue
        out.extend(converted if isinstance(converted, list) else [converted])
    return out


# -- chat histories -----------------------------------------------------------------------------

def llamaindex_simple_chat_store(path: Path, options: Options) -> Parsed:
    """`SimpleChatStore.persist()`: {"store": {key: [ChatMessage...]}, "class_name": "SimpleChatStore"}.
    One session per key; the key is also the user unless `user_id` is given."""
    data = _load_json(path)
    store = data.get("store") if isinstance(data, dict) else None
    if not isinstance(store, dict):
        raise InvalidInput(f"{path}: not a LlamaIndex SimpleChatStore file (no 'store' object)")
    parsed = Parsed()
    for key, entries in store.items():
        messages = _messages(entries, from_llamaindex, f"key {key!r}", parsed)
        parsed.sessions.append(SessionData(key, _user(options, key, "a chat store key"), options.agent_id, messages))
    return parsed


def langchain_json(path: Path, options: Options) -> Parsed:
    """LangChain's `messages_to_dict` output (what `FileChatMessageHistory` writes): a list of
    {"type", "data"}; or an object mapping session ids to such lists."""
    data = _load_json(path)
    groups = data if isinstance(data, dict) and "type" not in data else {options.session_id or path.stem: data}
    parsed = Parsed()
    for session_id, entries in groups.items():
        if not isinstance(entries, list):
            raise InvalidInput(f"{path}: session {session_id!r} is not a list of LangChain message dicts")
        messages = _messages(entries, from_langchain, f"session {session_id!r}", parsed)
        parsed.sessions.append(SessionData(session_id, _user(options, session_id, "a LangChain history"),
                                           options.agent_id, messages))
    return parsed


def langchain_sql(path: Path, options: Options) -> Parsed:
    """langchain-community's `SQLChatMessageHistory` table in an SQLite file (default `message_store`:
    id, session_id, message). One session per `session_id`, in insertion order."""
    if not options.table.replace("_", "").isalnum():
        raise InvalidInput(f"not a table name: {options.table!r}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute(f"SELECT session_id, message FROM {options.table} ORDER BY id").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{path}: cannot read table {options.table!r} ({exc})") from None
    grouped: dict[str, list[Any]] = {}
    parsed = Parsed()
    for n, (session_id, raw) in enumerate(rows, start=1):
        if options.session_id and session_id != options.session_id:
            continue
        try:
            grouped.setdefault(str(session_id), []).append(json.loads(raw))
        except (TypeError, json.JSONDecodeError) as exc:
            parsed.skipped.append((f"row {n}", f"message is not JSON ({exc})"))
    for session_id, entries in grouped.items():
        messages = _messages(entries, from_langchain, f"session {session_id!r}", parsed)
        parsed.sessions.append(SessionData(session_id, _user(options, session_id, "a LangChain history"),
                                           options.agent_id, messages))
    return parsed


def _agent_states(state: Mapping[str, Any], name: str) -> list[tuple[str, Mapping[str, Any]]]:
    kind = state.get("type")
    if kind == "AssistantAgentState" or "llm_context" in state:
        return [(name, state)]
    if kind == "ChatAgentContainerState" or "agent_state" in state:
        return _agent_states(state.get("agent_state") or {}, name)
    if kind == "TeamState" or "agent_states" in state:
        out: list[tuple[str, Mapping[str, Any]]] = []
        for agent, inner in (state.get("agent_states") or {}).items():
            if isinstance(inner, Mapping):
                out.extend(_agent_states(inner, agent))
        return out
    if kind == "SocietyOfMindAgentState" and isinstance(state.get("inner_team_state"), Mapping):
        return _agent_states(state["inner_team_state"], name)
    return []


def autogen_state(path: Path, options: Options) -> Parsed:
    """An AgentChat saved state (`await agent.save_state()` / `team.save_state()` as JSON): each
    assistant agent's model context becomes a session `<session>` (one agent) or `<session>/<agent>`."""
    data = _load_json(path)
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: not an AutoGen saved state (expected a JSON object)")
    base = options.session_id or path.stem
    states = _agent_states(data, "")
    if not states:
        raise InvalidInput(f"{path}: no agent model context in this AutoGen state (type {data.get('type')!r})")
    parsed = Parsed()
    for agent, state in states:
        session_id = f"{base}/{agent}" if agent else base
        entries = ((state.get("llm_context") or {}).get("messages")) or []
        messages = _messages(entries, from_autogen, f"agent {agent or base!r}", parsed)
        parsed.sessions.append(SessionData(session_id, _user(options, None, "an AutoGen state"),
                                           options.agent_id or agent or None, messages))
    return parsed


def semantic_kernel_chat_history(path: Path, options: Options) -> Parsed:
    """A Semantic Kernel `ChatHistory` serialisation (`serialize()` / `store_chat_history_to_file`):
    {"messages": [ChatMessageContent...]}, one session."""
    data = _load_json(path)
    entries = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: not a Semantic Kernel ChatHistory (no 'messages' list)")
    parsed = Parsed()
    session_id = options.session_id or path.stem
    messages = _messages(entries, from_semantic_kernel, f"history {session_id!r}", parsed)
    parsed.sessions.append(SessionData(session_id, _user(options, None, "a Semantic Kernel ChatHistory"),
                                       options.agent_id, messages))
    return parsed


def agent_framework_session(path: Path, options: Options) -> Parsed:
    """An Agent Framework `AgentSession.to_dict()` as JSON: the messages its history providers keep in
    the session state (`InMemoryHistoryProvider`: `state[source_id]["messages"]`) become the session
    `<session_id>` (one provider) or `<session_id>/<source_id>`."""
    data = _load_json(path)
    state = data.get("state") if isinstance(data, dict) else None
    if not isinstance(state, dict) or not isinstance(data.get("session_id"), str):
        raise InvalidInput(f"{path}: not an Agent Framework session (no 'session_id' and 'state')")
    histories = [(source, value["messages"]) for source, value in state.items()
                 if isinstance(value, dict) and isinstance(value.get("messages"), list)]
    parsed = Parsed()
    base = options.session_id or data["session_id"]
    for source, entries in histories:
        session_id = base if len(histories) == 1 else f"{base}/{source}"
        messages = _messages(entries, from_agent_framework, f"history {source!r}", parsed)
        parsed.sessions.append(SessionData(session_id, _user(options, None, "an Agent Framework session"),
                                           options.agent_id, messages))
    return parsed


def agent_framework_file_history(path: Path, options: Options) -> Parsed:
    """A `FileHistoryProvider` session file (JSON Lines, one `Message.to_dict()` a line): one session,
    `session_id`, else the file name."""
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{n}: not a JSON Lines history file ({exc})") from None
    parsed = Parsed()
    session_id = options.session_id or path.stem
    messages = _messages(entries, from_agent_framework, f"history {session_id!r}", parsed)
    parsed.sessions.append(SessionData(session_id, _user(options, None, "an Agent Framework history file"),
                                       options.agent_id, messages))
    return parsed


# -- long-term memories -------------------------------------------------------------------------

_RESERVED = ("category", "source", "importance", "entities")


def autogen_list_memory(path: Path, options: Options) -> Parsed:
    """An AutoGen `ListMemory` component config (`memory.dump_component()` as JSON), or a list of them.
    Each `MemoryContent` becomes a memory, as `polymem_autogen.PolymemMemory.add` would store it."""
    data = _load_json(path)
    configs = data if isinstance(data, list) else [data]
    parsed = Parsed()
    user = _user(options, None, "an AutoGen ListMemory")
    for config in configs:
        inner = config.get("config", config) if isinstance(config, dict) else None
        if not isinstance(inner, dict) or not isinstance(inner.get("memory_contents"), list):
            raise InvalidInput(f"{path}: not an AutoGen ListMemory config (no config.memory_contents)")
        name = str(inner.get("name") or "default_list_memory")
        for n, item in enumerate(inner["memory_contents"]):
            label = f"{name} item {n}"
            mime = str(item.get("mime_type") or "text/plain")
            value = item.get("content")
            if mime.startswith("image/") or not isinstance(value, (str, dict, list)):
                parsed.skipped.append((label, f"{mime} content is not text (describe it in text and add that)"))
                continue
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":")) if mime == "application/json" \
                and not isinstance(value, str) else (value if isinstance(value, str) else json.dumps(value))
            if not text.strip():
                parsed.skipped.append((label, "empty content"))
                continue
            metadata = dict(item.get("metadata") or {})
            fields = {key: metadata.pop(key) for key in _RESERVED if key in metadata}
            if mime != "text/plain":
                metadata["mime_type"] = mime
            metadata["imported_from"] = {"format": "autogen-list-memory", "memory": name, "index": n}
            parsed.memories.append(MemoryData(
                key=f"{name}/{n}", content=text, user_id=user, agent_id=options.agent_id,
                category=str(fields.get("category", "fact")), source=str(fields.get("source", "import")),
                importance=fields.get("importance"), entities=tuple(fields.get("entities") or ()), metadata=metadata))
    return parsed


def _mem0_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(timezone.utc) if parsed.tzinfo is not None else None


def mem0(path: Path, options: Options) -> Parsed:
    """mem0's `Memory.get_all()` output as JSON: {"results": [...]} (v1.1) or a bare list (v1.0).
    Each entry (id, memory, hash, metadata, created_at, updated_at, user_id, agent_id, run_id, ...)
    becomes a memory with its times; mem0's own fields are kept under metadata["mem0"]."""
    data = _load_json(path)
    entries = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: not a mem0 get_all() export (no 'results' list)")
    parsed = Parsed()
    for n, entry in enumerate(entries):
        label = f"entry {n}" + (f" ({entry.get('id')})" if isinstance(entry, dict) and entry.get("id") else "")
        if not isinstance(entry, dict) or not isinstance(entry.get("memory"), str) or not entry["memory"].strip():
            parsed.skipped.append((label, "no memory text"))
            continue
        user = options.user_id or entry.get("user_id")
        if not user:
            parsed.skipped.append((label, "no user_id in the entry; give user_id (--user)"))
            continue
        metadata = dict(entry.get("metadata") or {})
        category = metadata.pop("category", None) or next(iter(entry.get("categories") or ()), None) or "fact"
        own = {k: v for k, v in entry.items() if k not in ("memory", "metadata", "user_id", "agent_id", "score")
               and v is not None}
        created, updated = _mem0_time(entry.get("created_at")), _mem0_time(entry.get("updated_at"))
        metadata["mem0"] = own
        parsed.memories.append(MemoryData(
            key=str(entry.get("id") or entry.get("hash") or n), content=entry["memory"], user_id=str(user),
            agent_id=options.agent_id or entry.get("agent_id"), session_id=entry.get("run_id"),
            category=str(category), metadata=metadata, created_at=created, updated_at=updated or created))
    return parsed


READERS: dict[str, Callable[[Path, Options], Parsed]] = {
    "agent-framework-file-history": agent_framework_file_history,
    "agent-framework-session": agent_framework_session,
    "autogen-list-memory": autogen_list_memory,
    "autogen-state": autogen_state,
    "langchain-json": langchain_json,
    "langchain-sql": langchain_sql,
    "llamaindex-simple-chat-store": llamaindex_simple_chat_store,
    "mem0": mem0,
    "semantic-kernel-chat-history": semantic_kernel_chat_history,
}
