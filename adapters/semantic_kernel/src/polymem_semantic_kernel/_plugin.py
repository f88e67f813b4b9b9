"""`PolymemPlugin`: long-term memory as kernel functions a model can call."""

from __future__ import annotations

from typing import Annotated, Any

from semantic_kernel.functions import kernel_function

import polymem

NO_MEMORIES = "No relevant memories found."


HIT_TEMPLATE = "{rank}. [{memory_id}] {content} ({category}, score {score:.2f})"
"""How `render_memories` lists a recalled memory for a Semantic Kernel model."""


def format_hits(hits: list[polymem.RecallHit]) -> str:
    """Recall hits as prompt-ready lines, in the order given (best first)."""
    return polymem.render_memories(hits, template=HIT_TEMPLATE, empty=NO_MEMORIES)


class PolymemPlugin:
    """Save, recall, update and forget long-term memories of one user.

    Add it to a kernel and let automatic function calling use it:

        kernel.add_plugin(PolymemPlugin(store, user_id="alice"), "memory")

    The functions are `save`, `recall`, `update` and `forget`. Every call is
    scoped to the plugin's `user_id`: a model can neither read nor change
    another user's memories. Recall sees what every agent saved about the
    user; saves are tagged with `agent_id` and `session_id`. Memories the model saves are
    recorded with `source` (default `"inference"`: the model wrote them).
    `store` is a `polymem.Memory` or `polymem.AsyncMemory`.
    """

    def __init__(
        self,
        store: Any,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        top_k: int = 5,
        source: str = "inference",
    ) -> None:
        self._store = store.to_async()  # any store: its async form
        self._user_id = user_id
        self._agent_id = agent_id
        self._session_id = session_id
        self._top_k = top_k
        self._source = source

    @kernel_function(
        name="save",
        description=(
            "Remember something durable about the user for future conversations: a fact, "
            "a preference, an event or a task. Save one short self-contained statement per call. "
            "Returns the new memory's id."
        ),
    )
    async def save(
        self,
        content: Annotated[str, "One short, self-contained statement to remember, e.g. 'The user prefers tea.'"],
        category: Annotated[str, "One of: fact, preference, event, task."] = "fact",
        importance: Annotated[float | None, "How important it is, from 0.0 to 1.0; omit if unsure."] = None,
    ) -> Annotated[str, "Confirmation with the memory id."]:
        """Save one memory for the plugin's user."""
        record = await self._store.save(content,
            user_id=self._user_id,
            agent_id=self._agent_id,
            session_id=self._session_id,
            category=category,
            source=self._source,
            importance=importance,
        )
        return f"Saved memory [{record.memory_id}]: {record.content}"

    @kernel_function(
        name="recall",
        description=(
            "Search long-term memory for what is known about the user that is relevant to a query. "
            "Returns the best matches first, each with its memory id."
        ),
    )
    async def recall(
        self,
        query: Annotated[str, "What to look for, in natural language, e.g. 'favourite drink'."],
        top_k: Annotated[int | None, "How many memories to return at most; omit for the default."] = None,
    ) -> Annotated[str, "Matching memories, one per line, best first."]:
        """Recall memories for the plugin's user, ordered by score."""
        hits = await self._store.recall(query, user_id=self._user_id, top_k=top_k or self._top_k
        )
        return format_hits(hits)

    @kernel_function(
        name="update",
        description=(
            "Correct or replace a memory that is outdated or wrong, by its memory id (from recall). "
            "Keeps the old version in the memory's history."
        ),
    )
    async def update(
        self,
        memory_id: Annotated[str, "The id of the memory to change, as shown by recall."],
        content: Annotated[str, "The corrected statement that replaces the memory's content."],
    ) -> Annotated[str, "Confirmation, or why nothing changed."]:
        """Replace one memory's content (a new version)."""
        if await self._own(memory_id) is None:
            return f"No memory [{memory_id}] to update."
        record = await self._store.update(memory_id, content=content)
        return f"Updated memory [{record.memory_id}] (version {record.version}): {record.content}"

    @kernel_function(
        name="forget",
        description="Delete a memory by its memory id (from recall), e.g. when the user asks to forget something.",
    )
    async def forget(
        self,
        memory_id: Annotated[str, "The id of the memory to delete, as shown by recall."],
    ) -> Annotated[str, "Confirmation, or why nothing was deleted."]:
        """Delete one memory of the plugin's user."""
        if await self._own(memory_id) is None or not await self._store.delete(memory_id):
            return f"No memory [{memory_id}] to forget."
        return f"Forgot memory [{memory_id}]."

    async def _own(self, memory_id: str) -> polymem.MemoryRecord | None:
        record = await self._store.get(memory_id)
        return record if record is not None and record.user_id == self._user_id else None
