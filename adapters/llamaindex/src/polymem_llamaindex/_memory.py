"""Long-term memory for LlamaIndex: a `Memory` block and a `ChatMemoryBuffer` drop-in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.llm import LLM
from llama_index.core.memory import BaseMemoryBlock, ChatMemoryBuffer
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY
from llama_index.core.storage.chat_store.base import BaseChatStore

from polymem import RecallHit, approx_token_count, render_memories
from polymem import operations as ops

from ._chat_store import Plan, PolymemBound, PolymemChatStore, Store, arun, run
from ._convert import text_of, to_polymem_all

DEFAULT_HEADER = "Long-term memories relevant to this conversation:"


class PolymemMemoryBlock(PolymemBound, BaseMemoryBlock[str]):
    """A `Memory` block backed by polymem long-term memory.

    Messages flushed out of `Memory`'s short-term queue are distilled by the
    store's extractor (`mem.ingest`) into memories of `user_id`; each `get`
    recalls the `top_k` memories relevant to the latest user message, whichever
    framework or agent wrote them.

    >>> import polymem
    >>> from llama_index.core.memory import Memory
    >>> mem = polymem.open("memory://", embedder=None)
    >>> _ = mem.save("Ann is allergic to peanuts.", user_id="ann", agent_id="langchain-agent")
    >>> memory = Memory.from_defaults(session_id="s1", memory_blocks=[PolymemMemoryBlock(mem, user_id="ann")])
    >>> memory.put(ChatMessage(role="user", content="Any peanuts in this satay?"))
    >>> "allergic to peanuts" in memory.get()[0].content
    True
    """

    def __init__(self, memory: Store | str | None = None, /, **data: Any) -> None:
        # (a class of its own: a type checker would take a pydantic class's fields for its constructor)
        super().__init__(memory, **data)

    name: str = Field(default="polymem", description="The block's name in the memory template.")
    priority: int = Field(default=1, description="Truncated (weakest memories first) before chat history.")
    top_k: int = Field(default=5, description="How many memories to recall per get.")

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memories relevant to the latest user message, one per line, best first."""
        query = _latest_user_text(messages or [])
        if not query:
            return ""
        hits = await arun(self._store, _recall(query, self.user_id, self.top_k))
        return render_memories(hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Distil messages that left short-term memory into long-term memories."""
        if not messages:
            return
        session_id = messages[0].additional_kwargs.get("session_id")
        await arun(self._store, _ingest(self, messages, session_id))

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the weakest memories (the last lines) until `tokens_to_truncate` are freed, as
        polymem counts tokens (cl100k_base, LlamaIndex's default tokenizer)."""
        lines = content.splitlines()
        budget = tokens_to_truncate
        while lines and budget > 0:
            budget -= max(1, approx_token_count(lines.pop()))
        return "\n".join(lines) or None


class PolymemMemory(ChatMemoryBuffer):
    """A `ChatMemoryBuffer` drop-in kept in polymem, which also injects long-term memories.

    The conversation lives in a polymem session (`chat_store_key`); `get` trims
    it to `token_limit` exactly as `ChatMemoryBuffer` does, after reserving room
    for one system message listing the `top_k` long-term memories relevant to
    `input` (or to the latest user message). With `ingest=True`, every user
    message `put` is also handed to polymem's extractor, so what the user tells
    a LlamaIndex agent is remembered for agents of every framework.
    `to_dict`/`from_dict` (and a workflow `Context`) keep only the store's URL.

    >>> import polymem
    >>> mem = polymem.open("memory://", embedder=None)
    >>> _ = mem.save("Ann prefers aisle seats.", user_id="ann")
    >>> memory = PolymemMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="ann-1")
    >>> memory.put(ChatMessage(role="user", content="Book me a seat on the Lyon train."))
    >>> [m.role.value for m in memory.get(input="which seats do I prefer?")]
    ['system', 'user']
    """

    chat_store: PolymemChatStore
    top_k: int = Field(default=5, description="Long-term memories injected per get (0: none).")
    ingest: bool = Field(default=True, description="Hand user messages to polymem's extractor on put.")
    header: str = Field(default=DEFAULT_HEADER, description="First line of the injected system message.")

    @classmethod
    def class_name(cls) -> str:
        return "PolymemMemory"

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], list[Any]] | None = None,
        *,
        memory: Store | str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        top_k: int = 5,
        ingest: bool = True,
        **kwargs: Any,
    ) -> PolymemMemory:
        """`ChatMemoryBuffer.from_defaults`, plus the polymem store (`memory`: a store or its URL)
        and whose conversation it is (`user_id`, `agent_id`). Without a store or a
        `PolymemChatStore`, polymem's default store (`polymem.open()`) is used."""
        if chat_store is None:
            if memory is None:
                import polymem

                memory = polymem.open()
            chat_store = PolymemChatStore(memory, user_id=user_id, agent_id=agent_id)
        elif not isinstance(chat_store, PolymemChatStore):
            raise TypeError(
                f"PolymemMemory keeps its messages in a PolymemChatStore, not a {type(chat_store).__name__}; "
                "pass memory=polymem.open(...) instead"
            )
        buffer = super().from_defaults(
            chat_history=chat_history,
            llm=llm,
            chat_store=chat_store,
            chat_store_key=chat_store_key,
            token_limit=token_limit,
            tokenizer_fn=tokenizer_fn,
            **kwargs,
        )
        return cls(
            token_limit=buffer.token_limit,
            tokenizer_fn=buffer.tokenizer_fn,
            chat_store=chat_store,
            chat_store_key=chat_store_key,
            top_k=top_k,
            ingest=ingest,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> PolymemMemory:
        """Rebuild from `to_dict()`: the store is found again by its URL."""
        data = {**data, **kwargs}
        data.pop("class_name", None)
        store = data.pop("chat_store")
        if isinstance(store, dict):
            store = PolymemChatStore.from_dict(store)
        return cls(chat_store=store, **data)

    @property
    def memory(self) -> Store:
        """The live polymem store."""
        return self.chat_store.memory

    def get(self, input: Any = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        """The trimmed conversation, preceded by a system message of the relevant long-term
        memories it does not already hold (a user message just ingested is not repeated).
        `input` may be a string or a message; anything else counts as none, as in `ChatMemoryBuffer`."""
        hits = self._long_term(input)
        while hits:
            recalled = ChatMessage(role="system", content=render_memories(hits, header=self.header))
            reserved = initial_token_count + self._token_count_for_messages([recalled])
            if reserved > self.token_limit:
                break
            window = super().get(input=input, initial_token_count=reserved, **kwargs)
            fresh = _not_in(hits, window)
            if len(fresh) == len(hits):
                return [recalled, *window]
            hits = fresh
        return super().get(input=input, initial_token_count=initial_token_count, **kwargs)

    def put(self, message: ChatMessage) -> None:
        super().put(message)
        if self._should_ingest(message):
            run(self.memory, _ingest(self.chat_store, [message], self.chat_store_key))

    async def aput(self, message: ChatMessage) -> None:
        await super().aput(message)
        if self._should_ingest(message):
            await arun(self.memory, _ingest(self.chat_store, [message], self.chat_store_key))

    def _should_ingest(self, message: ChatMessage) -> bool:
        return self.ingest and message.role.value == "user" and bool(text_of(message).strip())

    def _long_term(self, input: Any) -> list[RecallHit]:
        if self.top_k <= 0:
            return []
        given = input if isinstance(input, str) else text_of(input) if isinstance(input, ChatMessage) else ""
        query = given.strip() or _latest_user_text(self.get_all())
        if not query:
            return []
        return run(self.memory, _recall(query, self.chat_store.user_id, self.top_k))


def _not_in(hits: list[RecallHit], window: list[ChatMessage]) -> list[RecallHit]:
    """The hits whose content no message of the window already says."""
    said = [text_of(m).casefold() for m in window]
    return [h for h in hits if not any(h.memory.content.casefold().strip() in text for text in said)]


def _recall(query: str, user_id: str | None, top_k: int) -> Plan[list[RecallHit]]:
    hits: list[RecallHit] = yield ops.Recall.bind(query, user_id=user_id, top_k=top_k)
    return hits


def _ingest(owner: PolymemBound, messages: list[ChatMessage], session_id: str | None) -> Plan[Any]:
    converted = to_polymem_all(messages)
    return (yield ops.Ingest.bind(converted, user_id=owner.user_id, agent_id=owner.agent_id, session_id=session_id))


def _latest_user_text(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role.value == "user":
            text = text_of(message).strip()
            if text:
                return text
    return ""
