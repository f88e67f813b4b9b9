"""An extractor, a summarizer, a reranker and a query rewriter backed by a Semantic Kernel chat completion service."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory

import polymem

SUMMARY_INSTRUCTIONS = (
    "You maintain the running summary of a conversation. Merge the previous summary and the new "
    "messages into one concise summary in plain prose. Keep every number, unit, name, date and "
    "decision exactly as written. Answer with the summary only."
)

EXTRACTION_INSTRUCTIONS = (
    "Extract durable memories about the user from the conversation: facts, preferences, events "
    "and tasks worth remembering in future conversations. Answer with a JSON array only, each "
    'element {"content": short self-contained statement, "category": "fact" | "preference" | '
    '"event" | "task", "source": "user_input" if the user stated it, otherwise "inference", '
    '"importance": number from 0 to 1, "entities": [names]}. Answer [] if nothing is worth keeping.'
)

_SOURCES = ("user_input", "inference")
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def transcript(messages: Sequence[polymem.Message]) -> str:
    """Messages as `role: content` lines, tool calls and results included."""
    lines = []
    for message in messages:
        who = f"{message.role} ({message.name})" if message.name else message.role
        text = message.content
        if message.tool_calls:
            calls = ", ".join(f"{call.name}({call.arguments})" for call in message.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        lines.append(f"{who}: {text}")
    return "\n".join(lines)


class _Chat(polymem.AsyncChatModel):
    """polymem's `ChatModel` on a chat completion service (async; sync calls run on one private loop)."""

    def __init__(self, service: ChatCompletionClientBase, settings: PromptExecutionSettings | None = None) -> None:
        super().__init__()
        self._service = service
        self._settings = settings or PromptExecutionSettings()

    async def acomplete(self, system: str, prompt: str) -> str:
        history = ChatHistory(system_message=system)
        history.add_user_message(prompt)
        reply = await self._service.get_chat_message_content(history, self._settings)
        return "" if reply is None else str(reply.content).strip()


class _ChatBacked:
    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        instructions: str,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        self._chat = _Chat(service, settings)
        self._instructions = instructions

    def _ask(self, prompt: str) -> str:
        return self._chat.complete(self._instructions, prompt)


class SemanticKernelReranker(polymem.ChatReranker):
    """polymem's `Reranker` on a chat completion service, which rates each candidate 0–10
    (the prompt and the parsing are polymem's).

        store = polymem.open(url, reranker=SemanticKernelReranker(service))
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        system: str = polymem.ChatReranker.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=system)


class SemanticKernelQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on a chat completion service.

        store = polymem.open(url, query_rewriter=SemanticKernelQueryRewriter(service))
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        system: str = polymem.ChatQueryRewriter.SYSTEM,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(_Chat(service, settings), system=system)


class SemanticKernelSummarizer(_ChatBacked):
    """polymem's `Summarizer` protocol on a chat completion service.

        store = polymem.open(url, summarizer=SemanticKernelSummarizer(service))

    polymem checks every summary and keeps the raw text when a number or unit
    was lost, so a weak model cannot silently drop facts.
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        instructions: str = SUMMARY_INSTRUCTIONS,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(service, instructions=instructions, settings=settings)

    def summarize(self, previous_summary: str | None, messages: Sequence[polymem.Message]) -> str:
        """The previous summary and the messages folded into one summary."""
        prompt = f"Previous summary:\n{previous_summary or '(none)'}\n\nNew messages:\n{transcript(messages)}"
        return self._ask(prompt)


class SemanticKernelExtractor(_ChatBacked):
    """polymem's `Extractor` protocol on a chat completion service.

        store = polymem.open(url, extractor=SemanticKernelExtractor(service))

    The model answers with a JSON array of memories; elements that are not
    objects with text content are skipped, unknown sources read as
    `inference`, and a reply that is not JSON yields no memories.
    """

    def __init__(
        self,
        service: ChatCompletionClientBase,
        *,
        instructions: str = EXTRACTION_INSTRUCTIONS,
        settings: PromptExecutionSettings | None = None,
    ) -> None:
        super().__init__(service, instructions=instructions, settings=settings)

    def extract(self, messages: Sequence[polymem.Message]) -> list[polymem.MemoryDraft]:
        """Memory drafts the model found in the messages."""
        if not messages:
            return []
        reply = _FENCE.sub("", self._ask(f"Conversation:\n{transcript(messages)}")).strip()
        try:
            items = json.loads(reply)
        except json.JSONDecodeError:
            return []
        if isinstance(items, dict):
            items = items.get("memories", [])
        return [draft for item in items if (draft := _draft(item)) is not None] if isinstance(items, list) else []


def _draft(item: Any) -> polymem.MemoryDraft | None:
    if not isinstance(item, dict) or not isinstance(item.get("content"), str) or not item["content"].strip():
        return None
    importance = item.get("importance")
    entities = item.get("entities") or ()
    return polymem.MemoryDraft(
        content=item["content"].strip(),
        category=str(item.get("category") or "fact"),
        source=item["source"] if item.get("source") in _SOURCES else "inference",
        importance=min(1.0, max(0.0, float(importance))) if isinstance(importance, (int, float)) else None,
        entities=tuple(str(e) for e in entities) if isinstance(entities, list) else (),
    )
