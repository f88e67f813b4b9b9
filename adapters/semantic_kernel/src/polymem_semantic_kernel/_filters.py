"""`PolymemMemoryFilter`: automatic capture and injection through kernel filters."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any
from xml.sax.saxutils import escape

from pydantic_core import to_jsonable_python
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.filters.auto_function_invocation.auto_function_invocation_context import (
    AutoFunctionInvocationContext,
)
from semantic_kernel.filters.filter_types import FilterTypes
from semantic_kernel.filters.prompts.prompt_render_context import PromptRenderContext
from semantic_kernel.kernel import Kernel

import polymem

from ._plugin import HIT_TEMPLATE

DEFAULT_HEADER = "Relevant long-term memories about the user (best first; they may be outdated):"


class PolymemMemoryFilter:
    """Records what happens in a kernel into polymem and brings memories back.

    Register it once on a kernel:

        PolymemMemoryFilter(store, user_id="alice").register(kernel)

    - **auto function invocation**: after the model calls a tool, its result
      is saved with `source="tool_result"` (tools of `exclude_plugins`, the
      memory plugin itself by default, are skipped), and the latest user turn
      of the chat with `source="user_input"`.
    - **prompt rendering**: before a prompt function's prompt reaches the
      model, memories relevant to its last user message are recalled and put
      in front of it (a system message in chat prompts), then that user
      message is saved with `source="user_input"`.

    Each user turn is saved once (an idempotency key per session and text).
    With `extract=True` turns go through the store's extractor
    (`store.ingest`) instead of being saved verbatim.
    """

    def __init__(
        self,
        store: Any,
        *,
        user_id: str,
        agent_id: str | None = None,
        session_id: str | None = None,
        top_k: int = 5,
        min_score: float = 0.0,
        inject: bool = True,
        capture_user_turns: bool = True,
        capture_tool_results: bool = True,
        extract: bool = False,
        exclude_plugins: tuple[str, ...] = ("memory",),
        turn_category: str = "event",
        tool_category: str = "event",
        max_chars: int = 2000,
        header: str = DEFAULT_HEADER,
    ) -> None:
        self._store = store.to_async()  # any store: its async form
        self._user_id = user_id
        self._agent_id = agent_id
        self._session_id = session_id
        self._top_k = top_k
        self._min_score = min_score
        self._inject = inject
        self._capture_user_turns = capture_user_turns
        self._capture_tool_results = capture_tool_results
        self._extract = extract
        self._exclude_plugins = frozenset(exclude_plugins)
        self._turn_category = turn_category
        self._tool_category = tool_category
        self._max_chars = max_chars
        self._header = header

    def register(self, kernel: Kernel) -> Kernel:
        """Add both filters to `kernel`; returns the kernel."""
        kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, self.on_auto_function_invocation)
        kernel.add_filter(FilterTypes.PROMPT_RENDERING, self.on_prompt_rendering)
        return kernel

    async def on_auto_function_invocation(
        self,
        context: AutoFunctionInvocationContext,
        next: Callable[[AutoFunctionInvocationContext], Awaitable[None]],
    ) -> None:
        """Auto-function-invocation filter: record the tool result and the user turn."""
        await next(context)
        if context.function.plugin_name in self._exclude_plugins:
            return
        if self._capture_user_turns and context.chat_history is not None:
            await self.record_user_turn(_last_user_text(context.chat_history))
        if self._capture_tool_results and context.function_result is not None:
            call = _function_call(context)
            await self.record_tool_result(
                context.function.fully_qualified_name,
                arguments=dict(context.arguments or {}),
                result=context.function_result.value,
                call_id=call.id if call is not None else None,
            )

    async def on_prompt_rendering(
        self,
        context: PromptRenderContext,
        next: Callable[[PromptRenderContext], Awaitable[None]],
    ) -> None:
        """Prompt-rendering filter: inject relevant memories, then record the user turn."""
        await next(context)
        rendered = context.rendered_prompt
        if not rendered:
            return
        query = _last_user_text(ChatHistory.from_rendered_prompt(rendered)) or rendered
        if self._inject:
            block = await self.memory_block(query)
            if block:
                if "<message" in rendered:
                    context.rendered_prompt = f'<message role="system">{escape(block)}</message>\n{rendered}'
                else:
                    context.rendered_prompt = f"{block}\n\n{rendered}"
        if self._capture_user_turns:
            await self.record_user_turn(query)

    async def memory_block(self, query: str) -> str | None:
        """The header plus the memories relevant to `query`, best first; None if none qualify."""
        hits = await self._store.recall(query, user_id=self._user_id, top_k=self._top_k)
        hits = [hit for hit in hits if hit.score >= self._min_score]
        return polymem.render_memories(hits, header=self._header, template=HIT_TEMPLATE) or None

    async def record_user_turn(self, text: str | None) -> None:
        """Save one user turn (`source="user_input"`), once per session and text."""
        if not text or not text.strip():
            return
        if self._extract:
            import polymem

            message = polymem.Message(role="user", content=text)
            await self._store.ingest([message],
                user_id=self._user_id,
                agent_id=self._agent_id,
                session_id=self._session_id,
            )
            return
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
        await self._store.save(self._clip(text),
            user_id=self._user_id,
            agent_id=self._agent_id,
            session_id=self._session_id,
            category=self._turn_category,
            source="user_input",
            idempotency_key=f"semantic-kernel:turn:{self._session_id or self._user_id}:{digest}",
        )

    async def record_tool_result(
        self, function: str, *, arguments: dict[str, Any], result: Any, call_id: str | None = None
    ) -> None:
        """Save one tool result (`source="tool_result"`)."""
        args = to_jsonable_python(arguments, fallback=str)
        text = result if isinstance(result, str) else json.dumps(to_jsonable_python(result, fallback=str))
        if not text.strip():
            return
        await self._store.save(self._clip(f"{function}({json.dumps(args, ensure_ascii=False)}) returned: {text}"),
            user_id=self._user_id,
            agent_id=self._agent_id,
            session_id=self._session_id,
            category=self._tool_category,
            source="tool_result",
            metadata={"function": function, "arguments": args, "call_id": call_id},
            idempotency_key=f"semantic-kernel:tool:{self._session_id or self._user_id}:{call_id}" if call_id else None,
        )

    def _clip(self, text: str) -> str:
        return text if len(text) <= self._max_chars else text[: self._max_chars - 1] + "…"


def _last_user_text(history: ChatHistory) -> str | None:
    for message in reversed(history.messages):
        if message.role == AuthorRole.USER and message.content:
            return message.content
    return None


def _function_call(context: AutoFunctionInvocationContext) -> FunctionCallContent | None:
    """The model's call behind this invocation (its id makes the tool result idempotent)."""
    call: FunctionCallContent | None = getattr(context, "function_call_content", None)
    if call is not None or context.chat_history is None:
        return call
    # Older semantic-kernel (1.28) has no `function_call_content`: the call is in the latest assistant message with calls.
    for message in reversed(context.chat_history.messages):
        calls = [item for item in message.items if isinstance(item, FunctionCallContent)]
        if calls:
            named = [c for c in calls if c.name == context.function.fully_qualified_name]
            if len(named) > 1:
                arguments = dict(context.arguments or {})
                named = [c for c in named if (c.to_kernel_arguments() or {}) == arguments] or named
            return named[0] if len(named) == 1 else None
    return None
