"""`PolymemChatMessageHistory`: a LangChain chat history kept in a polymem working-memory session."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

import polymem

from ._convert import to_langchain, to_polymem_messages
from ._stores import Forms, Store

if TYPE_CHECKING:
    from typing_extensions import Self


class PolymemChatMessageHistory(BaseChatMessageHistory):
    """The messages of one conversation, stored in a polymem session.

    Drop-in for `InMemoryChatMessageHistory` / `SQLChatMessageHistory`: use it
    under `RunnableWithMessageHistory` or as `chat_memory=` of the classic
    memories. Every message type round-trips exactly. `messages` is the
    session's window; removing from that list (`pop`, `remove`, `del`,
    `clear`) takes the message out of the window while polymem's transcript
    keeps it, so `ConversationSummaryBufferMemory.prune()` works as it does
    in memory. `clear()` empties the window; `transcript()` still has all.

    `max_tokens=None` (the default) leaves the window unbounded, so the
    LangChain memory on top decides what to keep; give a number to let
    polymem bound the window by tokens (`overflow="summarize"` folds the
    overflow into a running summary, shown first as a system message).
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        *,
        user_id: str | None,
        agent_id: str | None = None,
        max_tokens: int | None = None,
        ttl: timedelta | float | None = None,
        overflow: str = "drop",
        keep_last: int = 4,
    ) -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id
        self._converted: dict[str, BaseMessage] = {}
        self._forms = Forms(store)
        self._spec: dict[str, Any] = {"user_id": user_id, "agent_id": agent_id, "max_tokens": max_tokens,
                                      "ttl": ttl, "overflow": overflow, "keep_last": keep_last}
        self._async_session = self._forms.asynchronous.session(session_id, **self._spec)
        self._sync_session: polymem.Session | None = None

    @property
    def session(self) -> Any:
        """The underlying polymem session: an `AsyncSession` on an async store, else a `Session`."""
        return self._async_session if isinstance(self.store, polymem.AsyncMemory) else self._sync

    @property
    def _sync(self) -> polymem.Session:
        """The session on the store's sync form (made on first use)."""
        if self._sync_session is None:
            self._sync_session = self._forms.sync.session(self.session_id, **self._spec)
        return self._sync_session

    @property
    def messages(self) -> MessageWindow:
        """The session's window, oldest first, as LangChain messages."""
        return MessageWindow(self, self._sync.messages())

    @messages.setter
    def messages(self, messages: Sequence[BaseMessage]) -> None:
        """Make the window exactly `messages` (what leaves stays in the transcript)."""
        if isinstance(messages, MessageWindow) and messages._history is self:
            self._sync.replace(messages._records)
        else:
            self._sync.replace(to_polymem_messages(messages))

    async def aget_messages(self) -> MessageWindow:
        """Async `messages`."""
        return MessageWindow(self, await self._async_session.messages())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages to the session (one write)."""
        if messages:
            self._sync.add_messages(to_polymem_messages(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async `add_messages`."""
        if messages:
            await self._async_session.add_messages(to_polymem_messages(messages))

    def clear(self) -> None:
        """Empty the window (and any running summary); the transcript keeps every message."""
        self._sync.clear()

    async def aclear(self) -> None:
        """Async `clear`."""
        await self._async_session.clear()

    def transcript(self) -> list[BaseMessage]:
        """Every message this session ever held, including those out of the window."""
        return [to_langchain(m) for m in self._sync.transcript()]

    async def atranscript(self) -> list[BaseMessage]:
        """Async `transcript`."""
        return [to_langchain(m) for m in await self._async_session.transcript()]

    def _to_langchain(self, records: list[polymem.Message]) -> list[BaseMessage]:
        """Convert a window, reusing what the previous read converted (stored messages never change)."""
        cache = self._converted
        out = [m if (m := cache.get(r.message_id)) is not None else to_langchain(r) for r in records]
        self._converted = {r.message_id: m for r, m in zip(records, out)}
        return out

    def _evict(self, message_ids: list[str]) -> None:
        if message_ids:
            self._sync.evict(message_ids)

    def _append(self, messages: Sequence[BaseMessage]) -> list[polymem.Message]:
        return self._sync.add_messages(to_polymem_messages(messages)) if messages else []

    def __repr__(self) -> str:
        return f"PolymemChatMessageHistory(session_id={self.session_id!r}, user_id={self.user_id!r})"


class MessageWindow(list[BaseMessage]):
    """The list `messages` returns: a snapshot of the window whose edits reach the session.

    Removals (`pop`, `remove`, `del`, `clear`) evict the messages from the
    window, `append`/`extend`/`+=` add new ones; reordering or replacing
    (`insert`, item assignment, `sort`, `reverse`) rewrites the window.
    Slices and copies are plain lists.
    """

    __slots__ = ("_history", "_records")

    def __init__(self, history: PolymemChatMessageHistory, records: Iterable[polymem.Message]) -> None:
        self._history = history
        self._records: list[polymem.Message] = list(records)
        super().__init__(history._to_langchain(self._records))

    def _rewrite(self) -> None:
        session = self._history._sync
        session.replace(self._records)
        self._records = session.messages()  # ids change when the order did
        super().__init__(self._history._to_langchain(self._records))

    def pop(self, index: SupportsIndex = -1) -> BaseMessage:
        """Remove and return a message; it leaves the session's window."""
        i = range(len(self))[index]  # IndexError as list.pop would raise
        self._history._evict([self._records[i].message_id])
        del self._records[i]
        return super().pop(i)

    def remove(self, value: BaseMessage) -> None:
        """Remove the first message equal to `value` from the window."""
        self.pop(self.index(value))

    def clear(self) -> None:
        """Evict every message of this snapshot from the window."""
        self._history._evict([r.message_id for r in self._records])
        self._records.clear()
        super().clear()

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        positions = range(len(self))[index]
        gone = [positions] if isinstance(positions, int) else list(positions)
        self._history._evict([self._records[i].message_id for i in gone])
        for i in sorted(gone, reverse=True):
            del self._records[i]
        super().__delitem__(index)

    def append(self, message: BaseMessage) -> None:
        """Add a message to the session and to this list."""
        self.extend([message])

    def extend(self, messages: Iterable[BaseMessage]) -> None:
        """Add messages to the session and to this list."""
        new = list(messages)
        self._records.extend(self._history._append(new))
        super().extend(new)

    # `list.__iadd__` takes any iterable and `list.__add__` a list: typeshed's own `list` ignores
    # that mismatch, which mypy reports again on any override that keeps list's behaviour.
    def __iadd__(self, messages: Iterable[BaseMessage]) -> Self:  # type: ignore[override,misc]
        self.extend(messages)
        return self

    def insert(self, index: SupportsIndex, message: BaseMessage) -> None:
        """Insert a message; the window is rewritten in the new order."""
        self._records.insert(index, to_polymem_messages([message])[0])
        super().insert(index, message)
        self._rewrite()

    @overload
    def __setitem__(self, index: SupportsIndex, value: BaseMessage) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[BaseMessage]) -> None: ...
    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        if isinstance(index, slice):
            records = list(self._records)
            records[index] = to_polymem_messages(list(value))
            self._records = records
        else:
            self._records[index] = to_polymem_messages([value])[0]
        self._rewrite()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Sort, then rewrite the window in that order."""
        pairs = list(zip(list(self), self._records))
        key = kwargs.pop("key", None)
        reverse = kwargs.pop("reverse", False)

        def by(pair: tuple[BaseMessage, Any]) -> Any:  # as list.sort orders the messages themselves
            return key(pair[0]) if key else pair[0]

        pairs.sort(key=by, reverse=reverse)
        super().clear()
        super().extend(p[0] for p in pairs)
        self._records = [p[1] for p in pairs]
        self._rewrite()

    def reverse(self) -> None:
        """Reverse, then rewrite the window in that order."""
        super().reverse()
        self._records.reverse()
        self._rewrite()

    def __reduce__(self) -> Any:  # pickles and deep copies are plain lists
        return (list, (list(self),))
