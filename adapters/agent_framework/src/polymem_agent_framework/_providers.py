"""`PolymemContextProvider` and `PolymemHistoryProvider`: Agent Framework's memory plug-ins over a polymem store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from agent_framework import AgentSession, ContextProvider, HistoryProvider, Message, SessionContext, SupportsAgentRun
from agent_framework._sessions import filter_new_messages

import polymem

from . import _convert

Remember = Literal["extract", "user_turns", "none"]
DEFAULT_SESSION_ID = "default"
"""The polymem session of a run that has no Agent Framework session id."""


class _Store:
    """The store a provider was given (or the URL it opened), in its async form."""

    def __init__(self, memory: Any) -> None:
        self.owned = isinstance(memory, str)
        self.store: Any = polymem.open(memory) if isinstance(memory, str) else memory
        if not isinstance(self.store, (polymem.Memory, polymem.AsyncMemory)):
            raise TypeError(f"expected a polymem store or a store URL, got {type(memory).__name__}")
        self.amem: polymem.AsyncMemory = self.store.to_async()

    async def append_new(self, session: Any, messages: Sequence[Message]) -> None:
        """Append to `session` the messages it does not already end with (the framework's own rule)."""
        stored = _convert.from_polymem_all(await session.messages())
        new = filter_new_messages(stored, list(messages))
        if new:
            await session.add_messages(_convert.to_polymem_all(new))


class PolymemHistoryProvider(HistoryProvider):
    """Conversation history kept in a polymem working-memory session: a drop-in for `InMemoryHistoryProvider`.

    The polymem session id is the Agent Framework session id, so a conversation
    resumes in another process (or on another machine behind `polymem serve`)
    from nothing but that id, and every framework sharing the store reads it:

        agent = Agent(client, context_providers=[PolymemHistoryProvider("sqlite:///memory.db", user_id="alice")])
        await agent.run("Hello", session=agent.create_session(session_id="support-42"))

    Messages are converted losslessly (see `to_polymem`). `max_tokens=None`
    (the default) keeps every message; a number lets polymem bound the window
    by tokens (`overflow="summarize"` folds the oldest messages into a summary).
    Further keywords go to `store.session(...)`; the flags are `HistoryProvider`'s,
    `skip_excluded` is `InMemoryHistoryProvider`'s.

    Args:
        memory: a polymem store (`polymem.open(...)` / `polymem.open_async(...)`) or a URL to open.
        user_id: whose conversations these are (polymem scopes every session).
        agent_id: recorded on the sessions this provider creates.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "polymem_history"

    def __init__(
        self,
        memory: Any,
        *,
        user_id: str,
        agent_id: str | None = None,
        source_id: str | None = None,
        max_tokens: int | None = None,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
        skip_excluded: bool = False,
        **session_options: Any,
    ) -> None:
        super().__init__(
            source_id or self.DEFAULT_SOURCE_ID,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self._store = _Store(memory)
        self.user_id = user_id
        self.agent_id = agent_id
        self.skip_excluded = skip_excluded
        self._session_options = {"max_tokens": max_tokens, **session_options}

    @property
    def store(self) -> Any:
        """The underlying polymem store."""
        return self._store.store

    def session(self, session_id: str | None) -> Any:
        """The polymem session (async handle) holding the conversation `session_id`."""
        return self._store.amem.session(session_id or DEFAULT_SESSION_ID, user_id=self.user_id,
                                        agent_id=self.agent_id, **self._session_options)

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """The conversation's messages, oldest first (a running summary first, if polymem keeps one).

        With `skip_excluded`, messages a `CompactionProvider` marked `_excluded` are left out.
        """
        messages = _convert.from_polymem_all(await self.session(session_id).messages())
        if self.skip_excluded:
            return [m for m in messages if not m.additional_properties.get("_excluded", False)]
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the messages the conversation does not already end with (a replayed transcript adds nothing)."""
        if messages:
            await self._store.append_new(self.session(session_id), messages)

    async def aclose(self) -> None:
        """Close the store if this provider opened it from a URL."""
        if self._store.owned:
            await self._store.amem.close()


class PolymemContextProvider(ContextProvider):
    """polymem long-term memory for Agent Framework agents: `Agent(client, context_providers=[PolymemContextProvider(...)])`.

    Before a run it recalls the user's memories relevant to the new messages
    and adds them as one user message, as the framework's own memory providers
    do (`RECALL_HEADER`, then one line per memory: rank, category, age). After
    the run it captures the turn (input and response messages) into the
    user's polymem session named by the Agent Framework session id, and
    writes long-term memories by `remember`:

    - `"extract"` (default): the store's extractor distils the turn (`ingest`);
    - `"user_turns"`: each user message is saved verbatim, `source="user_input"`;
    - `"none"`: nothing long-term (recall only).

    Memories are written with `agent_id` (default: the running agent's name)
    and, for saved turns, `metadata={"written_by": "agent_framework:<agent>"}`;
    polymem's write filter applies. Recall is not limited to one agent, so the
    agents of one user share what they learn.

    Args:
        memory: a polymem store (`polymem.open(...)` / `polymem.open_async(...)`) or a URL to open.
        user_id: whose memories these are.
        top_k, min_relevance, category, filter: how recall is done (polymem's meanings).
        capture: write each turn into the polymem session (deduplicated against
            what a `PolymemHistoryProvider` on the same store already wrote).
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "polymem"

    def __init__(
        self,
        memory: Any,
        *,
        user_id: str,
        agent_id: str | None = None,
        source_id: str | None = None,
        top_k: int = 5,
        min_relevance: float | None = None,
        category: str | None = None,
        filter: dict[str, Any] | None = None,
        remember: Remember = "extract",
        capture: bool = True,
    ) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID)
        if remember not in ("extract", "user_turns", "none"):
            raise polymem.InvalidInput("remember must be 'extract', 'user_turns' or 'none'")
        self._store = _Store(memory)
        self.user_id = user_id
        self.agent_id = agent_id
        self.top_k = top_k
        self.min_relevance = min_relevance
        self.category = category
        self.filter = filter
        self.remember: Remember = remember
        self.capture = capture

    @property
    def store(self) -> Any:
        """The underlying polymem store."""
        return self._store.store

    async def before_run(
        self, *, agent: SupportsAgentRun, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Add one user message listing the memories relevant to the new messages (none if nothing is relevant)."""
        query = "\n".join(m.text for m in reversed(context.input_messages) if m.text.strip())
        if not query:
            return
        hits = await self._store.amem.recall(query, user_id=self.user_id, top_k=self.top_k,
                                             min_relevance=self.min_relevance, category=self.category,
                                             filter=self.filter)
        if hits:
            state["recalled"] = [hit.memory.memory_id for hit in hits]
            text = _convert.recall_text(hits, self._store.store.now())
            context.extend_messages(self, [Message("user", [text])])

    async def after_run(
        self, *, agent: SupportsAgentRun, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Capture the turn into the user's session and, by `remember`, into long-term memory."""
        turn = [*context.input_messages, *(context.response.messages if context.response else ())]
        if not turn:
            return
        agent_id = self.agent_id or agent.name
        session_id = context.session_id or DEFAULT_SESSION_ID
        if self.capture:
            handle = self._store.amem.session(session_id, user_id=self.user_id, agent_id=agent_id, max_tokens=None)
            await self._store.append_new(handle, turn)
        if self.remember == "extract":
            await self._store.amem.ingest(_convert.to_polymem_all(turn), user_id=self.user_id, agent_id=agent_id,
                                          session_id=session_id)
        elif self.remember == "user_turns":
            for message in context.input_messages:
                if message.role == "user" and message.text.strip():
                    await self._store.amem.save(message.text, user_id=self.user_id, agent_id=agent_id,
                                                session_id=session_id, source="user_input",
                                                metadata={"written_by": f"agent_framework:{agent.name or 'agent'}"})

    async def aclose(self) -> None:
        """Close the store if this provider opened it from a URL."""
        if self._store.owned:
            await self._store.amem.close()
