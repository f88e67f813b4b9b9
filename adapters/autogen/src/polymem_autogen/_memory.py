"""`PolymemMemory`: an AutoGen `Memory` component over a polymem store."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from autogen_core import CancellationToken, Component
from autogen_core.memory import Memory, MemoryContent, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel, Field
from typing_extensions import Self

import polymem

from . import _convert, _store


class PolymemMemoryConfig(BaseModel):
    """The declarative form of `PolymemMemory` (what `dump_component()` writes).

    It names the store by its connection descriptor (`mem.url`, which holds
    no secrets) and the scope; a custom embedder object cannot be written
    down, so a store reopened from config uses polymem's default embedder
    (`embedder="auto"`) or none.
    """

    url: str
    user_id: str
    agent_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None
    embedder: _store.EmbedderChoice = "auto"
    async_store: bool = False
    name: str | None = None
    top_k: int = Field(default=5, ge=1)
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    query_messages: int = Field(default=3, ge=1)
    category: str | None = None
    filter: dict[str, Any] | None = None
    source: str = "user_input"


class PolymemMemory(Memory, Component[PolymemMemoryConfig]):
    """polymem long-term memory for AutoGen agents: `AssistantAgent(memory=[PolymemMemory(...)])`.

    Before each model call the agent calls `update_context`, which recalls
    what polymem holds about the recent messages and adds one system message
    listing those memories (best first, with category and age). `add` and
    `query` store and search `MemoryContent`; `capture` writes a finished run
    into working memory and distils it into long-term memories.

    Args:
        memory: a polymem store (`polymem.open(...)` or `polymem.open_async(...)`)
            or a URL to open. A store passed in stays open on `close()`; one
            opened here is closed by it.
        user_id: whose memories these are (required: polymem scopes every memory).
        agent_id: the writing agent, recorded on `add` and `capture`. Recall is
            not limited to it, so agents of one user share what they learn;
            pass `filter={"agent_id": ...}` for a private memory.
        session_id: the working-memory session `capture` writes to.
        top_k: how many memories `update_context` and `query` return at most.
        min_relevance: recall hits less relevant than this (polymem's
            `RecallHit.relevance`, 0..1) are not injected by `update_context`;
            None (the default) keeps polymem's own rule of what is relevant,
            shared by every adapter. `query` applies none (as `ListMemory`).
        query_messages: how many recent conversation messages form the query.
        category, filter: restrict recall (see polymem's filter syntax).
        source: the source recorded on `add` (polymem scores by source).
        name: this memory's name in AutoGen.
    """

    component_type = "memory"
    component_provider_override = "polymem_autogen.PolymemMemory"
    component_config_schema = PolymemMemoryConfig

    def __init__(
        self,
        memory: Any = None,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        top_k: int = 5,
        min_relevance: float | None = None,
        query_messages: int = 3,
        category: str | None = None,
        filter: dict[str, Any] | None = None,
        source: str = "user_input",
        name: str | None = None,
    ) -> None:
        self._owned = memory is None or isinstance(memory, str)
        self._mem = polymem.open(memory) if self._owned else memory
        self._amem = self._mem.to_async()  # AutoGen's methods are async: any store's async form
        self._settings = PolymemMemoryConfig(
            **_store.describe(self._mem),
            user_id=user_id,
            agent_id=agent_id,
            session_id=session_id,
            name=name,
            top_k=top_k,
            min_relevance=min_relevance,
            query_messages=query_messages,
            category=category,
            filter=filter,
            source=source,
        )

    # ------------------------------------------------------------------ properties

    @property
    def name(self) -> str:
        """This memory's name in AutoGen (default: `polymem`)."""
        return self._settings.name or "polymem"

    @property
    def store(self) -> Any:
        """The underlying polymem store (`polymem.Memory` or `polymem.AsyncMemory`)."""
        return self._mem

    @property
    def user_id(self) -> str:
        return self._settings.user_id

    @property
    def agent_id(self) -> str | None:
        return self._settings.agent_id

    @property
    def session_id(self) -> str | None:
        return self._settings.session_id

    # ------------------------------------------------------------------ Memory

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add one system message with the memories relevant to the recent messages; return them.

        This is where polymem decides what reaches the prompt: only memories
        it judges relevant (or above `min_relevance`) are added, and nothing
        (an empty result) when none is. A context with no text yet has
        nothing to judge by: it gets the `top_k` newest memories.
        """
        messages = await model_context.get_messages()
        recent = [
            text for m in messages if not isinstance(m, SystemMessage) and (text := _convert.message_text(m).strip())
        ][-self._settings.query_messages :]
        if recent:
            # Newest first: if the embedder truncates a long query, the oldest text goes.
            found: list[Any] = await self._recall("\n".join(reversed(recent)))
            header = _convert.RECALL_HEADER
        else:
            s = self._settings
            found = list(await self._amem.list(user_id=self.user_id, category=s.category, filter=s.filter,
                                               limit=s.top_k))
            header = _convert.NEWEST_HEADER
        if not found:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        await model_context.add_message(_convert.recall_message(found, self._now(), header=header))
        return UpdateContextResult(memories=MemoryQueryResult(results=[_convert.to_content(m) for m in found]))

    async def query(
        self,
        query: str | MemoryContent = "",
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The `top_k` memories best matching `query`, best first (as many as the scope holds, up to `top_k`).

        Like `ListMemory.query`, it applies no relevance cut (`min_relevance=0`):
        memories matching nothing come last. Each result's metadata has
        `score` and `memory_id`. Keywords `top_k`, `category`, `filter` and
        `min_relevance` override the memory's settings for this call.
        """
        text = query if isinstance(query, str) else _convert.content_to_save(query)[0]
        kwargs.setdefault("min_relevance", 0.0)
        hits = await self._recall(text, **kwargs)
        return MemoryQueryResult(results=[_convert.to_content(h) for h in hits])

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        """Save `content` as a long-term memory of this memory's user (and agent).

        Text, markdown and JSON are stored as text; images and bytes whole
        (base64 in metadata, under a text stand-in) and `query` returns them
        as they were. The metadata keys `category`, `source`, `importance`
        and `entities` set those polymem fields.
        """
        text, kwargs = _convert.content_to_save(content)
        kwargs.setdefault("source", self._settings.source)
        await self._amem.save(text,
            user_id=self.user_id,
            agent_id=self.agent_id,
            session_id=self.session_id,
            **kwargs,
        )

    async def clear(self) -> None:
        """Delete the long-term memories this memory writes: its user's (and agent's, if set)."""
        # polymem has no bulk delete yet: page through the scope and delete one by one.
        while True:
            page = await self._amem.list(user_id=self.user_id, agent_id=self.agent_id, status="active", limit=100
            )
            if not page:
                return
            for record in page:
                await self._amem.delete(record.memory_id)

    async def close(self) -> None:
        """Close the store if this memory opened it (a store passed in stays open)."""
        if self._owned:
            await self._amem.close()

    # ------------------------------------------------------------------ writing conversations

    async def capture(
        self,
        run: Any,
        *,
        session_id: str | None = None,
        ingest: bool = True,
        user_source: str = "user",
    ) -> list[polymem.MemoryRecord]:
        """Write an AgentChat run into polymem: `await memory.capture(await agent.run(task=...))`.

        `run` is a `TaskResult` or a sequence of AgentChat messages. The chat
        messages and tool calls go to the working-memory session (`session_id`,
        else this memory's, else a fresh one kept for later calls); with
        `ingest=True` the store's extractor distils them into long-term
        memories, which are returned.
        """
        messages = _convert.task_messages_to_polymem(getattr(run, "messages", run), user_source=user_source)
        if not messages:
            return []
        sid = session_id or self.session_id
        if sid is None:
            sid = f"autogen-{uuid.uuid4()}"
            self._settings.session_id = sid
        ses = self._amem.session(sid, user_id=self.user_id, agent_id=self.agent_id, max_tokens=None)
        await ses.add_messages(messages)
        if not ingest:
            return []
        return list(
            await self._amem.ingest(messages, user_id=self.user_id, agent_id=self.agent_id, session_id=sid
            )
        )

    # ------------------------------------------------------------------ helpers

    async def _recall(self, text: str, **overrides: Any) -> list[polymem.RecallHit]:
        settings = self._settings
        hits: Sequence[polymem.RecallHit] = await self._amem.recall(text,
            user_id=overrides.pop("user_id", self.user_id),
            top_k=overrides.pop("top_k", settings.top_k),
            category=overrides.pop("category", settings.category),
            filter=overrides.pop("filter", settings.filter),
            min_relevance=overrides.pop("min_relevance", settings.min_relevance),
            **overrides,
        )
        return list(hits)

    def _now(self) -> datetime:
        return self._mem.now()  # the store's clock, so ages agree with its scores

    # ------------------------------------------------------------------ Component

    def _to_config(self) -> PolymemMemoryConfig:
        return self._settings.model_copy()

    @classmethod
    def _from_config(cls, config: PolymemMemoryConfig) -> Self:
        mem = _store.reopen(
            config.url, namespace=config.namespace, embedder=config.embedder, async_store=config.async_store
        )
        self = cls(
            mem,
            user_id=config.user_id,
            agent_id=config.agent_id,
            session_id=config.session_id,
            top_k=config.top_k,
            min_relevance=config.min_relevance,
            query_messages=config.query_messages,
            category=config.category,
            filter=config.filter,
            source=config.source,
            name=config.name,
        )
        self._owned = True
        return self
