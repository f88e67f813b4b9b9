"""Plug-ins a test hands to `polymem serve --reranker/--rewriter` by `module:attr`."""

from __future__ import annotations

from collections.abc import Sequence


class FishReranker:
    """Memories about fish are what the user is after."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if "fish" in text else 0.1 for text in texts]


def dog_rewriter() -> object:
    """A factory: `--rewriter` calls it to make the rewriter."""

    class Dog:
        def rewrite(self, query: str, count: int) -> list[str]:
            return ["dog"][:count]

    return Dog()
