"""`PolymemMemory`: long-term memory for classic LangChain chains (`BaseMemory`)."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_classic.base_memory import BaseMemory
from langchain_classic.memory.utils import get_prompt_input_key
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import ConfigDict, Field, PrivateAttr

import polymem

from ._convert import to_polymem_messages
from ._stores import Forms, Plan, call


class PolymemMemory(BaseMemory):
    """Gives a chain the user's long-term memories and feeds each exchange back to polymem.

    `load_memory_variables` recalls the memories relevant to the input (under
    `input_key`, or the one input that is not a memory variable) and returns
    them under `memory_key`: one per line, or, with `return_messages=True`, as
    one `SystemMessage` each. `save_context` appends the exchange to the
    working-memory session `session_id` and distils it into long-term
    memories through the store's extractor (`mem.ingest`). `clear` empties the
    session's window; long-term memories stay.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    """A polymem store (`polymem.open(...)` or `polymem.open_async(...)`)."""
    user_id: str | None
    """Whose memories are recalled and written."""
    agent_id: str | None = None
    """The agent that writes (recall is not limited to it)."""
    session_id: str = Field(default_factory=lambda: f"langchain-{uuid.uuid4()}")
    """The working-memory session the exchanges go to."""
    memory_key: str = "history"
    input_key: str | None = None
    output_key: str | None = None
    return_messages: bool = False
    top_k: int = 5
    """How many memories to recall."""
    category: str | None = None
    """Only recall memories of this category, if set."""
    filter: dict[str, Any] | None = None
    """A polymem recall filter."""

    _forms: Forms = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._forms = Forms(self.store)

    def _session(self, store: Any) -> Any:
        return store.session(self.session_id, user_id=self.user_id, agent_id=self.agent_id, max_tokens=None)

    @property
    def memory_variables(self) -> list[str]:
        """The one key this memory fills."""
        return [self.memory_key]

    def _input(self, inputs: dict[str, Any]) -> str:
        key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        return str(inputs[key])

    def _output(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            return str(outputs[self.output_key])
        if len(outputs) == 1:
            return str(next(iter(outputs.values())))
        if "output" in outputs:
            return str(outputs["output"])
        raise ValueError(f"got multiple output keys {list(outputs)}; set output_key")

    def _load(self, inputs: dict[str, Any]) -> Plan[dict[str, Any]]:
        query = self._input(inputs)
        hits = (yield call("recall", query, user_id=self.user_id, top_k=self.top_k, category=self.category,
                           filter=self.filter)) if query.strip() else []
        if self.return_messages:
            value: Any = [SystemMessage(content=h.memory.content, id=h.memory.memory_id) for h in hits]
        else:
            value = polymem.render_memories(hits, template="{content}")
        return {self.memory_key: value}

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The memories relevant to the input, under `memory_key`."""
        return self._forms.sync.run(self._load(inputs))

    async def aload_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Async `load_memory_variables`."""
        return await self._forms.asynchronous.run(self._load(inputs))

    def _exchange(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> list[Any]:
        turn: list[BaseMessage] = [HumanMessage(content=self._input(inputs)), AIMessage(content=self._output(outputs))]
        return to_polymem_messages(turn)

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Append the exchange to the session and distil it into long-term memory."""
        store = self._forms.sync
        messages = self._session(store).add_messages(self._exchange(inputs, outputs))
        store.ingest(messages, user_id=self.user_id, agent_id=self.agent_id, session_id=self.session_id)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Async `save_context`."""
        store = self._forms.asynchronous
        messages = await self._session(store).add_messages(self._exchange(inputs, outputs))
        await store.ingest(messages, user_id=self.user_id, agent_id=self.agent_id, session_id=self.session_id)

    def clear(self) -> None:
        """Empty the session's window (the transcript and long-term memories stay)."""
        self._session(self._forms.sync).clear()

    async def aclear(self) -> None:
        """Async `clear`."""
        await self._session(self._forms.asynchronous).clear()
