"""Rerank and query rewriting by a chat model: the prompts and the parsing, written once.

A framework adapter only says how to ask its chat model for a reply (`ChatModel`:
`complete(system, prompt) -> str`, and `acomplete` where the model is async); the
prompt, the parsing of the answer and what a bad answer means live here, so every
framework's model reranks and rewrites alike.

>>> class Echo:  # a chat model that scores the first passage high, the second low
...     def complete(self, system: str, prompt: str) -> str:
...         return "[9, 1]"
>>> ChatReranker(Echo()).rerank("colour?", ["Ann likes blue", "Ann has a dog"])
[0.9, 0.1]
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ._loop import LoopThread

RERANK_SYSTEM = """You judge how relevant stored memories are to a query.
Rate every numbered memory from 0 (unrelated) to 10 (answers the query directly).
Answer with JSON only: a list of numbers, one per memory, in the order given."""

REWRITE_SYSTEM = """You rewrite a search query over an assistant's long-term memory into other
phrasings that could find the same memories: synonyms, the likely wording of the stored
statement, the entities and time it refers to. Answer with JSON only: a list of strings."""


@runtime_checkable
class ChatModel(Protocol):
    """A chat model asked once: a system instruction and a user prompt in, the reply's text out.

    Define `acomplete` too (a coroutine of the same signature) where the model is async:
    an `AsyncMemory` then awaits it on its own loop."""

    def complete(self, system: str, prompt: str) -> str: ...


class AsyncChatModel:
    """Base of a `ChatModel` whose model is async only: define `acomplete`; `complete` runs it
    to completion on one private loop (`LoopThread`), so sync stores can use it too."""

    def __init__(self) -> None:
        self._loop = LoopThread(f"polymem-{type(self).__name__}")

    async def acomplete(self, system: str, prompt: str) -> str:
        """The reply's text to `system` and `prompt`."""
        raise NotImplementedError

    def complete(self, system: str, prompt: str) -> str:
        """`acomplete`, waited for from sync code."""
        return self._loop.run(lambda: self.acomplete(system, prompt))


def rerank_prompt(query: str, texts: Sequence[str]) -> str:
    """The user prompt asking to rate `texts` against `query`."""
    numbered = "\n".join(f"[{i}] {' '.join(text.split())}" for i, text in enumerate(texts, 1))
    return f"Query: {query}\n\nMemories:\n{numbered}\n\nRate the {len(texts)} memories."


def parse_scores(reply: str, count: int) -> list[float]:
    """The reply's ratings as relevances in [0, 1] (a 0–10 rating divided by 10, clamped).

    Raises `ValueError` unless the reply holds a JSON list of `count` numbers (code fences
    and words around it allowed), or an object whose "scores" is one."""
    payload = _json_in(reply)
    if isinstance(payload, dict):
        payload = payload.get("scores")
    if not isinstance(payload, list) or len(payload) != count or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in payload):
        raise ValueError(f"expected a JSON list of {count} ratings, got {reply[:200]!r}")
    return [min(1.0, max(0.0, float(x) / 10.0)) for x in payload]


def rewrite_prompt(query: str, count: int) -> str:
    """The user prompt asking for `count` rewrites of `query`."""
    return f"Query: {query}\n\nWrite {count} different rewrites."


def parse_variants(reply: str, query: str, count: int) -> list[str]:
    """At most `count` distinct rewrites from the reply, none equal to `query`.

    A JSON list of strings is read as such; any other reply, one rewrite a line
    (list markers and quotes stripped)."""
    try:
        payload = _json_in(reply)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        payload = payload.get("queries") or payload.get("variants")
    if isinstance(payload, list) and all(isinstance(x, str) for x in payload):
        lines = payload
    else:
        lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip("\"'") for line in reply.splitlines()]
    seen = {" ".join(query.casefold().split())}
    variants = []
    for line in lines:
        key = " ".join(line.casefold().split())
        if key and key not in seen:
            seen.add(key)
            variants.append(" ".join(line.split()))
    return variants[:count]


def _json_in(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    body = fenced.group(1) if fenced else text
    start = min((i for i in (body.find("["), body.find("{")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError(f"no JSON in {text[:200]!r}")
    try:
        return json.JSONDecoder().raw_decode(body[start:])[0]
    except json.JSONDecodeError as exc:
        raise ValueError(f"no JSON in {text[:200]!r}") from exc


async def _acomplete(chat: ChatModel, system: str, prompt: str) -> str:
    twin = getattr(chat, "acomplete", None)
    if inspect.iscoroutinefunction(twin):
        reply: str = await twin(system, prompt)
        return reply
    import asyncio  # here, where a loop runs: a synchronous process never imports it

    return await asyncio.to_thread(chat.complete, system, prompt)


class ChatReranker:
    """A `Reranker` that asks a chat model to rate each candidate from 0 to 10.

    Give it to `polymem.open(..., reranker=...)`. Each adapter builds one on its
    framework's model (`polymem_langchain.ChatModelReranker(llm)`, …). A reply that is
    not a list of one rating per memory raises `ValueError`: recall then keeps its own
    order and logs a warning."""

    SYSTEM = RERANK_SYSTEM

    def __init__(self, chat: ChatModel, *, system: str = RERANK_SYSTEM) -> None:
        self.chat = chat
        self.system = system

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance in [0, 1] per text (polymem's `Reranker` protocol)."""
        return parse_scores(self.chat.complete(self.system, rerank_prompt(query, texts)), len(texts))

    async def arerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """Async `rerank`."""
        return parse_scores(await _acomplete(self.chat, self.system, rerank_prompt(query, texts)), len(texts))


class ChatQueryRewriter:
    """A `QueryRewriter` that asks a chat model for other phrasings of a query.

    Give it to `polymem.open(..., query_rewriter=...)`; recall searches the query and
    its variants and keeps each memory's best score."""

    SYSTEM = REWRITE_SYSTEM

    def __init__(self, chat: ChatModel, *, system: str = REWRITE_SYSTEM) -> None:
        self.chat = chat
        self.system = system

    def rewrite(self, query: str, count: int) -> list[str]:
        """At most `count` rewrites of `query` (polymem's `QueryRewriter` protocol)."""
        return parse_variants(self.chat.complete(self.system, rewrite_prompt(query, count)), query, count)

    async def arewrite(self, query: str, count: int) -> list[str]:
        """Async `rewrite`."""
        return parse_variants(await _acomplete(self.chat, self.system, rewrite_prompt(query, count)), query, count)
