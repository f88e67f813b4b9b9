"""`PolymemChatHistoryAgentThread`: an agent thread whose messages live in polymem."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterable
from typing import Any

from semantic_kernel.agents import ChatHistoryAgentThread
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.history_reducer.chat_history_reducer import ChatHistoryReducer
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.exceptions.agent_exceptions import AgentThreadOperationException

from . import _convert

if sys.version_info >= (3, 12):
    from typing import override  # pragma: no cover
else:
    from typing_extensions import override  # pragma: no cover


class PolymemChatHistoryAgentThread(ChatHistoryAgentThread):
    """A `ChatHistoryAgentThread` backed by a polymem working-memory session.

    The thread id is the session id, so a conversation resumes anywhere the
    store is reachable (another process, another machine behind the
    service), and frameworks sharing the store see the same messages:

        thread = PolymemChatHistoryAgentThread(store, user_id="alice", thread_id="support-42")
        reply = await agent.get_response(messages="Hello", thread=thread)

    `chat_history` works as in `ChatHistoryAgentThread`: its messages seed a
    session that has never held a message, and a `ChatHistoryReducer`
    (truncation, summarization) reduces the stored window when `reduce()` is
    called, writing the reduced messages back to the session.

    `max_tokens=None` (the default) keeps every message in the window and
    leaves reduction to Semantic Kernel; give a number to let polymem bound
    the window by tokens (`overflow="summarize"` folds the oldest messages
    into a summary). Further keywords go to `store.session(...)`.

    `delete()` forgets the session; with `consolidate_on_delete=True` it is
    first distilled into long-term memories by the store's extractor.
    """

    def __init__(
        self,
        store: Any,
        *,
        user_id: str,
        chat_history: ChatHistory | None = None,
        thread_id: str | None = None,
        agent_id: str | None = None,
        max_tokens: int | None = None,
        consolidate_on_delete: bool = False,
        **session_options: Any,
    ) -> None:
        thread_id = thread_id or f"thread_{uuid.uuid4().hex}"
        super().__init__(chat_history=chat_history, thread_id=thread_id)
        # semantic-kernel 1.28 kept `chat_history or ChatHistory()`: an empty reducer was replaced
        self._chat_history = chat_history if chat_history is not None else ChatHistory()
        self._id = thread_id  # semantic-kernel 1.28 kept it in `_thread_id` until create(); the session needs it now
        self._store = store.to_async()  # any store: its async form
        self._user_id = user_id
        self._agent_id = agent_id
        self._max_tokens = max_tokens
        self._consolidate_on_delete = consolidate_on_delete
        self._session_options = session_options
        self._session: Any = None
        self._seed = list(chat_history.messages) if chat_history is not None else []

    @property
    def user_id(self) -> str:
        """Whose conversation this is."""
        return self._user_id

    def __len__(self) -> int:
        """The number of messages last read or written through this thread object."""
        return len(self._chat_history)

    async def session(self) -> Any:
        """The polymem working-memory session behind this thread."""
        if self._session is None:
            if self._id is None:
                raise AgentThreadOperationException("The thread has been deleted.")
            session = self._store.session(
                self._id,
                user_id=self._user_id,
                agent_id=self._agent_id,
                max_tokens=self._max_tokens,
                **self._session_options,
            )
            if self._seed and not await session.info():
                await session.add_messages(_convert.to_polymem_all(self._seed))
            self._seed = []
            self._session = session
        return self._session

    @override
    async def _create(self) -> str:
        assert self._id is not None  # nosec: set in __init__, cleared only by delete()
        await self.session()
        return self._id

    @override
    async def _delete(self) -> None:
        session = await self.session()
        if self._consolidate_on_delete:
            await session.end(consolidate=True)
        else:
            await session.delete()
        self._chat_history.clear()
        self._session = None

    @override
    async def _on_new_message(self, new_message: str | ChatMessageContent) -> None:
        if isinstance(new_message, str):
            new_message = ChatMessageContent(role=AuthorRole.USER, content=new_message)
        # The same guard as ChatHistoryAgentThread: a message echoed back by its own thread is not stored twice.
        if new_message.metadata.get("thread_id") == self._id:
            return
        session = await self.session()
        await session.add_messages([_convert.to_polymem(new_message)])
        self._chat_history.add_message(new_message)

    @override
    async def get_messages(self) -> AsyncIterable[ChatMessageContent]:
        """The session's window as Semantic Kernel messages, oldest first.

        A running summary (when polymem folded old messages) comes first as a
        system message.
        """
        if self._is_deleted:
            raise AgentThreadOperationException("Cannot retrieve chat history, since the thread has been deleted.")
        if self._id is None:
            await self.create()
        session = await self.session()
        stored = await session.messages()
        messages = _convert.from_polymem_all(stored)
        self._chat_history.replace(messages)
        for message in messages:
            yield message

    @override
    async def reduce(self) -> ChatHistory | None:
        """Reduce the stored window with the thread's `ChatHistoryReducer`, if it has one.

        The reducer sees the session's window; what it returns replaces the
        window in the session (the transcript keeps every message). Returns
        the reducer, or None when there is no reducer or nothing to reduce.
        """
        if self._id is None:
            raise AgentThreadOperationException("Cannot reduce chat history, since the thread is not currently active.")
        if not isinstance(self._chat_history, ChatHistoryReducer):
            return None
        session = await self.session()
        stored = await session.messages()
        read = _convert.from_polymem_all(stored)
        self._chat_history.replace(read)
        reduced = await self._chat_history.reduce()
        if reduced is None:
            return None
        # Messages the reducer kept are the stored ones (same ids: only the rest leave the window);
        # what it wrote (a summary) is new.
        kept = {id(message): original for message, original in zip(read, stored)}
        await session.replace([kept.get(id(m)) or _convert.to_polymem(m) for m in reduced.messages])
        return reduced
