"""`PolymemChatCompletionContext`: an agent's model context kept in polymem working memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from autogen_core import Component
from autogen_core.model_context import ChatCompletionContext, ChatCompletionContextState
from autogen_core.models import LLMMessage
from pydantic import BaseModel, Field
from typing_extensions import Self

import polymem

from . import _convert, _store


class PolymemChatCompletionContextConfig(BaseModel):
    """The declarative form of `PolymemChatCompletionContext`."""

    url: str
    session_id: str
    user_id: str
    agent_id: str | None = None
    namespace: str | None = None
    async_store: bool = False
    max_tokens: int | None = Field(default=None, ge=1)
    overflow: Literal["drop", "summarize"] = "drop"
    keep_last: int = Field(default=0, ge=0)
    initial_messages: list[LLMMessage] | None = None


class PolymemChatCompletionContext(ChatCompletionContext, Component[PolymemChatCompletionContextConfig]):
    """A `ChatCompletionContext` whose messages live in a polymem working-memory session.

    `AssistantAgent(model_context=PolymemChatCompletionContext(mem, session_id=..., user_id=...))`
    persists every message the agent sees or writes (user turns, answers, tool
    calls and results) as it happens, so a conversation continues in another
    process, or in another framework reading the same session. Messages
    convert losslessly (see `to_polymem_messages`).

    The window is polymem's: `max_tokens=None` (default) keeps everything, as
    AutoGen's `UnboundedChatCompletionContext` does; `max_tokens` is a hard
    limit, as `TokenLimitedChatCompletionContext`'s `token_limit` is: the
    oldest messages are dropped or, with `overflow="summarize"`, folded into
    a running summary that comes back as the first system message. Tool
    results whose call fell out of the window are not returned.

    Of the system messages `PolymemMemory.update_context` adds, only the
    latest is returned: earlier recalls stay in the transcript but are not
    re-sent on every turn.

    `initial_messages` seed a session that has never held a message; `clear()`
    (what `agent.on_reset` calls) empties the window, keeping the transcript.

    Args:
        memory: a polymem store, or a URL to open (without an embedding model:
            working memory needs none); a store opened here is closed by `close()`.
        session_id, user_id, agent_id: the session and whom it belongs to.
        max_tokens, overflow: polymem's window (see `mem.session`); a
            summarizing window uses the store's summarizer, so pass a store
            opened with one (e.g. `ChatCompletionSummarizer`).
        keep_last: the newest messages that stay even past `max_tokens`
            (default 0: the limit is hard).
        initial_messages: seed messages for a brand-new session.
    """

    component_type = "chat_completion_context"
    component_provider_override = "polymem_autogen.PolymemChatCompletionContext"
    component_config_schema = PolymemChatCompletionContextConfig

    def __init__(
        self,
        memory: Any = None,
        *,
        session_id: str,
        user_id: str,
        agent_id: str | None = None,
        max_tokens: int | None = None,
        overflow: Literal["drop", "summarize"] = "drop",
        keep_last: int = 0,
        initial_messages: list[LLMMessage] | None = None,
    ) -> None:
        super().__init__(initial_messages)
        self._owned = memory is None or isinstance(memory, str)
        # Working memory needs no embedding model: a store opened here skips loading one.
        self._mem = polymem.open(memory, embedder=None) if self._owned else memory
        self._amem = self._mem.to_async()
        described = _store.describe(self._mem)
        del described["embedder"]
        self._settings = PolymemChatCompletionContextConfig(
            **described,
            session_id=session_id,
            user_id=user_id,
            agent_id=agent_id,
            max_tokens=max_tokens,
            overflow=overflow,
            keep_last=keep_last,
            initial_messages=initial_messages,
        )
        self._session: Any = None

    @property
    def session_id(self) -> str:
        return self._settings.session_id

    @property
    def store(self) -> Any:
        """The underlying polymem store."""
        return self._mem

    async def session(self) -> Any:
        """The polymem session behind this context (opened, and seeded, on first use)."""
        if self._session is None:
            s = self._settings
            ses = self._amem.session(s.session_id,
                user_id=s.user_id,
                agent_id=s.agent_id,
                max_tokens=s.max_tokens,
                overflow=s.overflow,
                keep_last=s.keep_last,
            )
            info = await ses.info() if s.initial_messages else None
            if s.initial_messages and (info is None or info.message_count == 0):
                await ses.add_messages(_convert.to_polymem_messages(s.initial_messages))
            self._session = ses
        return self._session

    async def add_message(self, message: LLMMessage) -> None:
        """Append `message` to the session (written through immediately)."""
        await (await self.session()).add_messages(_convert.llm_to_polymem(message))

    async def get_messages(self) -> list[LLMMessage]:
        """The session's window as AutoGen messages, oldest first."""
        stored = await (await self.session()).messages()
        recalls = [i for i, m in enumerate(stored) if _convert.is_recalled_memories(m)]
        if len(recalls) > 1:
            stale = set(recalls[:-1])
            stored = [m for i, m in enumerate(stored) if i not in stale]
        return _convert.drop_orphan_results(_convert.from_polymem_messages(stored))

    async def clear(self) -> None:
        """Empty the window and its summary; the transcript keeps every message."""
        await (await self.session()).clear()

    async def save_state(self) -> Mapping[str, Any]:
        """The window's messages, as AutoGen's own contexts save them."""
        return ChatCompletionContextState(messages=await self.get_messages()).model_dump()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Make the window exactly the saved messages."""
        messages = ChatCompletionContextState.model_validate(state).messages
        await (await self.session()).replace(_convert.to_polymem_messages(messages))

    async def close(self) -> None:
        """Close the store if this context opened it."""
        if self._owned:
            await self._amem.close()

    def _to_config(self) -> PolymemChatCompletionContextConfig:
        return self._settings.model_copy()

    @classmethod
    def _from_config(cls, config: PolymemChatCompletionContextConfig) -> Self:
        mem = _store.reopen(config.url, namespace=config.namespace, embedder="none", async_store=config.async_store)
        self = cls(
            mem,
            session_id=config.session_id,
            user_id=config.user_id,
            agent_id=config.agent_id,
            max_tokens=config.max_tokens,
            overflow=config.overflow,
            keep_last=config.keep_last,
            initial_messages=config.initial_messages,
        )
        self._owned = True
        return self
