"""Rerank and query rewriting through the service: the plug-ins live in the server, the options travel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


class KeywordReranker:
    def __init__(self, word: str) -> None:
        self.word = word

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if self.word in text else 0.1 for text in texts]


class ListRewriter:
    def rewrite(self, query: str, count: int) -> list[str]:
        return ["dog"][:count]


@pytest.mark.parametrize("mode", ["asgi-async", "loopback-sync"])
async def test_a_service_with_a_reranker_and_rewriter_applies_them_to_remote_recalls(deploy: Any, mode: str) -> None:
    d = deploy(reranker=KeywordReranker("fish"), query_rewriter=ListRewriter())
    mem = d.client(mode)
    try:
        for text in ("Ann has a dog named Rex", "Ann's pet fish is called Bubbles", "pet insurance is costly"):
            await _maybe(mem.save(text, user_id="ann"))
        hits = await _maybe(mem.recall("pet", user_id="ann", explain=True))
        plain = await _maybe(mem.recall("pet", user_id="ann", rerank=False, rewrite=0))
    finally:
        await _maybe(mem.close())
    assert hits[0].memory.content == "Ann's pet fish is called Bubbles"
    assert hits[0].explanation["rerank"]["relevance"] == 0.9
    dog = next(h for h in hits if h.memory.content == "Ann has a dog named Rex")
    assert dog.explanation["query"] == {"text": "dog", "variant": 1}
    assert "Ann has a dog named Rex" not in [h.memory.content for h in plain]


async def _maybe(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
