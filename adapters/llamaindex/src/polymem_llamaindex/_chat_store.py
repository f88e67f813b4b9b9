"""LlamaIndex chat stores kept in polymem working memory: one session per `chat_store_key`.

`PolymemChatStore` replaces `SimpleChatStore` (the store of `ChatMemoryBuffer`),
`PolymemAsyncChatStore` replaces `SQLAlchemyChatStore` (the store of `Memory`).
What LlamaIndex calls the messages of a key is the session's window; what
leaves the window (`ARCHIVED`) stays in the session's transcript, so the whole
conversation remains in polymem for every framework to read.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Generator, Iterable
from typing import Any, TypeVar

import fsspec
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import BaseModel, Field, PrivateAttr
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

import polymem
from polymem import Message
from polymem import operations as ops
from polymem.operations import Operation

from ._convert import from_polymem, from_polymem_all, keep_identity, to_polymem, to_polymem_all

T = TypeVar("T")
Store = polymem.Memory | polymem.AsyncMemory
Plan = Generator[Operation[Any], Any, T]
"""A chat store operation written once, yielding polymem operations (`store.run(plan)`)."""

_live: weakref.WeakValueDictionary[tuple[str, str], Any] = weakref.WeakValueDictionary()


def resolve_store(memory: Store | str | None, url: str | None = None, namespace: str | None = None) -> Store:
    """The store a component works on: the given one, a live one with that descriptor, or a newly opened one.

    The last store handed to a component wins its descriptor, so a component
    rebuilt in this process finds the store it was serialised from.
    """
    if memory is not None and not isinstance(memory, str):
        if not isinstance(memory, (polymem.Memory, polymem.AsyncMemory)):
            raise TypeError(
                f"expected a polymem.Memory, polymem.AsyncMemory or a store URL, got {type(memory).__name__}"
            )
        _live[(memory.url, memory.namespace)] = memory
        return memory
    target = memory if isinstance(memory, str) else url
    if not target:
        raise TypeError("give a polymem store (polymem.open(...)) or its URL")
    key = (target, namespace or "default")
    found = _live.get(key)
    if found is None:
        found = polymem.open(target, namespace=key[1])
        _live[key] = found
    return found


def run(store: Store, plan: Plan[T]) -> T:
    """Run a plan from synchronous code, on the store's sync form."""
    return store.to_sync().run(plan)


async def arun(store: Store, plan: Plan[T]) -> T:
    """Run a plan from asynchronous code, on the store's async form."""
    return await store.to_async().run(plan)


class PolymemBound(BaseModel):
    """The serialisable link to a polymem store: its URL and namespace, never the live object.

    Give the store itself (`polymem.open(...)`/`polymem.open_async(...)`) or its
    URL as the first argument; a component rebuilt from its dict in the same
    process reuses the live store, elsewhere it reopens the URL.
    """

    url: str = Field(description="The store's connection descriptor (`mem.url`).")
    namespace: str = Field(default="default", description="The store's namespace (tenant).")
    user_id: str | None = Field(default=None, description="Whose conversations these are.")
    agent_id: str | None = Field(default=None, description="Which agent writes them.")

    _store: Store = PrivateAttr()

    def __init__(self, memory: Store | str | None = None, /, **data: Any) -> None:
        store = resolve_store(memory, data.get("url"), data.get("namespace"))
        data["url"], data["namespace"] = store.url, store.namespace
        super().__init__(**data)
        self._store = store

    @property
    def memory(self) -> Store:
        """The live polymem store (`polymem.Memory` or `polymem.AsyncMemory`)."""
        return self._store

    def _session(self, key: str) -> ops.SessionSpec:
        return ops.SessionSpec.of(key, user_id=self.user_id, agent_id=self.agent_id, max_tokens=None)

    def _keys(self) -> Plan[list[str]]:
        infos = yield ops.Sessions.bind(user_id=self.user_id)
        return [info.session_id for info in infos]


class PolymemChatStore(PolymemBound, BaseChatStore):
    """A `BaseChatStore` whose keys are polymem sessions; a drop-in for `SimpleChatStore`.

    >>> import polymem
    >>> from llama_index.core.memory import ChatMemoryBuffer
    >>> from llama_index.core.llms import ChatMessage
    >>> store = PolymemChatStore(polymem.open("memory://", embedder=None), user_id="ann")
    >>> buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="ann-1", token_limit=1000)
    >>> buffer.put(ChatMessage(role="user", content="I live in Lyon."))
    >>> [m.content for m in buffer.get()]
    ['I live in Lyon.']
    """

    def __init__(self, memory: Store | str | None = None, /, **data: Any) -> None:
        # (a class of its own: a type checker would take a pydantic class's fields for its constructor)
        super().__init__(memory, **data)

    @classmethod
    def class_name(cls) -> str:
        return "PolymemChatStore"

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Make the key's messages exactly `messages` (the transcript keeps what leaves)."""
        run(self._store, _set(self._session(key), messages))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The key's messages, oldest first ([] for an unknown key)."""
        return run(self._store, _window(self._session(key)))

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append a message (or insert it at `idx`, as `SimpleChatStore` allows)."""
        run(self._store, _add(self._session(key), message, idx))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Forget the key's session; its messages, or None if there was none."""
        return run(self._store, _delete_session(self._session(key)))

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Forget the message at `idx`; it, or None if there is none."""
        return run(self._store, _delete_at(self._session(key), idx))

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Forget the newest message; it, or None if there is none."""
        return run(self._store, _delete_at(self._session(key), -1))

    def get_keys(self) -> list[str]:
        """Every session of `user_id` (of everyone when None), whichever framework wrote it."""
        return run(self._store, self._keys())

    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        await arun(self._store, _set(self._session(key), messages))

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        return await arun(self._store, _window(self._session(key)))

    async def async_add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        await arun(self._store, _add(self._session(key), message, idx))

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        return await arun(self._store, _delete_session(self._session(key)))

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        return await arun(self._store, _delete_at(self._session(key), idx))

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        return await arun(self._store, _delete_at(self._session(key), -1))

    async def aget_keys(self) -> list[str]:
        return await arun(self._store, self._keys())

    def persist(self, persist_path: str = "chat_store.json", fs: fsspec.AbstractFileSystem | None = None) -> None:
        """Write the link to the store and every key's messages to a JSON file, as
        `SimpleChatStore.persist` writes its messages (`store`: key -> messages)."""
        fs = fs or fsspec.filesystem("file")
        folder = os.path.dirname(persist_path)
        if folder and not fs.exists(folder):
            fs.makedirs(folder)
        messages = {key: [m.model_dump(mode="json") for m in self.get_messages(key)] for key in self.get_keys()}
        with fs.open(persist_path, "w", encoding="utf-8") as file:
            json.dump({**self.to_dict(), "store": messages}, file, ensure_ascii=False)

    @classmethod
    def from_persist_path(cls, persist_path: str = "chat_store.json", fs: fsspec.AbstractFileSystem | None = None,
                          memory: Store | str | None = None) -> PolymemChatStore:
        """The chat store `persist` wrote, on the same polymem store (or on `memory`); a key the
        store no longer holds (a `memory://` store in another process) gets its persisted messages
        back. A `SimpleChatStore` file is imported into `memory` (default: `polymem.open()`), and
        a missing file gives an empty chat store there, as `SimpleChatStore` gives an empty one."""
        fs = fs or fsspec.filesystem("file")
        data: dict[str, Any] = {}
        if fs.exists(persist_path):
            with fs.open(persist_path, "r", encoding="utf-8") as file:
                data = json.load(file)
            if isinstance(data, str):  # SimpleChatStore's older files hold its JSON as a string
                data = json.loads(data)
        if memory is None and not data.get("url"):
            memory = polymem.open()
        link = {k: data[k] for k in ("url", "namespace", "user_id", "agent_id") if data.get(k) is not None}
        store = cls(memory, **link)
        for key, messages in data.get("store", {}).items():
            if not store.get_messages(key):
                store.set_messages(key, [ChatMessage.model_validate(m) for m in messages])
        return store


class PolymemAsyncChatStore(PolymemBound, AsyncDBChatStore):
    """An `AsyncDBChatStore` on polymem; a drop-in for `SQLAlchemyChatStore` in `Memory`.

    `ACTIVE` messages are the session's window, `ARCHIVED` ones the rest of its
    transcript, so `archive_oldest_messages` moves messages out of the window
    and polymem keeps them. Differences from `SQLAlchemyChatStore`:
    `set_messages(ACTIVE)` keeps the archive, and `delete_message` takes an
    index into the active messages (polymem exposes no row ids).

    >>> import asyncio, polymem
    >>> from llama_index.core.memory import Memory
    >>> store = PolymemAsyncChatStore(polymem.open_async("memory://", embedder=None), user_id="ann")
    >>> memory = Memory.from_defaults(session_id="ann-1", chat_store=store)
    >>> memory.put(ChatMessage(role="user", content="hello"))
    >>> [m.content for m in memory.get()]
    ['hello']
    """

    def __init__(self, memory: Store | str | None = None, /, **data: Any) -> None:
        # (a class of its own: a type checker would take a pydantic class's fields for its constructor)
        super().__init__(memory, **data)

    @classmethod
    def class_name(cls) -> str:
        return "PolymemAsyncChatStore"

    async def get_messages(
        self,
        key: str,
        status: MessageStatus | None = MessageStatus.ACTIVE,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[ChatMessage]:
        """Messages with `status` (None: all), oldest first, then `offset` and `limit` applied."""
        messages = await arun(self._store, _by_status(self._session(key), status))
        start = offset or 0
        return from_polymem_all(messages[start : None if limit is None else start + limit])

    async def count_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE) -> int:
        """How many messages have `status` (None: all)."""
        return await arun(self._store, _count(self._session(key), status))

    async def add_message(self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE) -> None:
        await arun(self._store, _append(self._session(key), [message], status))

    async def add_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        await arun(self._store, _append(self._session(key), messages, status))

    async def set_messages(
        self, key: str, messages: list[ChatMessage], status: MessageStatus = MessageStatus.ACTIVE
    ) -> None:
        """`ACTIVE`: the window becomes `messages` (the archive stays). `ARCHIVED`: the session
        becomes only `messages`, archived, as in `SQLAlchemyChatStore`."""
        ses = self._session(key)
        if status == MessageStatus.ARCHIVED:
            await arun(self._store, _reset_archived(ses, messages))
        else:
            await arun(self._store, _set(ses, messages))

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Forget the active message at position `idx`; it, or None."""
        return await arun(self._store, _delete_at(self._session(key), idx))

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        """Forget the messages with `status`; None forgets the whole session."""
        ses = self._session(key)
        if status is None:
            await arun(self._store, _delete_session(ses))
        else:
            await arun(self._store, _forget_status(ses, status))

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Forget the oldest `n` active messages and return them."""
        return await arun(self._store, _oldest(self._session(key), n, forget=True))

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Move the oldest `n` active messages out of the window and return them."""
        return await arun(self._store, _oldest(self._session(key), n, forget=False))

    async def get_keys(self) -> list[str]:
        return await arun(self._store, self._keys())


# -- plans: each operation once, run by the store's sync or async form ----------------------------


def _raw(window: Iterable[Message]) -> list[Message]:
    """The window without polymem's running-summary message (it is no stored message)."""
    return [m for m in window if not m.metadata.get("polymem_summary")]


def _window(ses: ops.SessionSpec) -> Plan[list[ChatMessage]]:
    messages = yield ops.SessionMessages.bind(ses)
    return from_polymem_all(messages)


def _set(ses: ops.SessionSpec, messages: list[ChatMessage]) -> Plan[None]:
    current = yield ops.SessionMessages.bind(ses)
    wanted = keep_identity(_raw(current), to_polymem_all(messages))
    yield ops.SessionReplace.bind(ses, wanted)


def _add(ses: ops.SessionSpec, message: ChatMessage, idx: int | None) -> Plan[None]:
    new = to_polymem(message)
    if idx is None:
        yield ops.SessionAdd.bind(ses, [new])
        return
    window = _raw((yield ops.SessionMessages.bind(ses)))
    window.insert(idx, new)
    yield ops.SessionReplace.bind(ses, window)


def _append(ses: ops.SessionSpec, messages: list[ChatMessage], status: MessageStatus) -> Plan[None]:
    if not messages:
        return
    added = yield ops.SessionAdd.bind(ses, to_polymem_all(messages))
    if status == MessageStatus.ARCHIVED:
        yield ops.SessionEvict.bind(ses, [m.message_id for m in added])


def _delete_session(ses: ops.SessionSpec) -> Plan[list[ChatMessage] | None]:
    info = yield ops.SessionInfoOp.bind(ses)
    if info is None:
        return None
    messages = yield ops.SessionMessages.bind(ses)
    yield ops.SessionDelete.bind(ses)
    return from_polymem_all(messages)


def _delete_at(ses: ops.SessionSpec, idx: int) -> Plan[ChatMessage | None]:
    window = _raw((yield ops.SessionMessages.bind(ses)))
    if not -len(window) <= idx < len(window):
        return None
    target = window[idx]
    yield from _forget(ses, {target.message_id})
    return from_polymem(target)


def _by_status(ses: ops.SessionSpec, status: MessageStatus | None) -> Plan[list[Message]]:
    if status == MessageStatus.ACTIVE:
        window: list[Message] = yield ops.SessionMessages.bind(ses)
        return window
    transcript: list[Message] = yield ops.SessionTranscript.bind(ses)
    if status is None:
        return transcript
    in_window: list[Message] = yield ops.SessionMessages.bind(ses)
    active = {m.message_id for m in in_window}
    return [m for m in transcript if m.message_id not in active]


def _count(ses: ops.SessionSpec, status: MessageStatus | None) -> Plan[int]:
    info = yield ops.SessionInfoOp.bind(ses)
    if info is None:
        return 0
    if status == MessageStatus.ACTIVE:
        return int(info.window_count)
    if status == MessageStatus.ARCHIVED:
        return int(info.message_count - info.window_count)
    return int(info.message_count)


def _oldest(ses: ops.SessionSpec, n: int, *, forget: bool) -> Plan[list[ChatMessage]]:
    oldest = _raw((yield ops.SessionMessages.bind(ses)))[: max(n, 0)]
    if not oldest:
        return []
    ids = [m.message_id for m in oldest]
    if forget:
        yield from _forget(ses, set(ids))
    else:
        yield ops.SessionEvict.bind(ses, ids)
    return from_polymem_all(oldest)


def _forget_status(ses: ops.SessionSpec, status: MessageStatus) -> Plan[None]:
    doomed = yield from _by_status(ses, status)
    yield from _forget(ses, {m.message_id for m in _raw(doomed)})


def _reset_archived(ses: ops.SessionSpec, messages: list[ChatMessage]) -> Plan[None]:
    yield ops.SessionDelete.bind(ses)
    yield from _append(ses, messages, MessageStatus.ARCHIVED)


def _forget(ses: ops.SessionSpec, message_ids: set[str]) -> Plan[None]:
    """Remove messages from the transcript too (polymem has no call for it yet: rewrite the session)."""
    if not message_ids:
        return
    transcript = yield ops.SessionTranscript.bind(ses)
    window = yield ops.SessionMessages.bind(ses)
    in_window = {m.message_id for m in window}
    kept = [m for m in transcript if m.message_id not in message_ids]
    yield ops.SessionDelete.bind(ses)
    if kept:
        yield ops.SessionAdd.bind(ses, kept)
        archived = [m.message_id for m in kept if m.message_id not in in_window]
        if archived:
            yield ops.SessionEvict.bind(ses, archived)
