"""The calibrated relevance through the service: the default threshold applies to remote recalls alike."""

from __future__ import annotations

from typing import Any

import pytest

from polymem import ScoringPolicy

OTHER = ["Ann's sister lives in Lisbon", "Ann works as a nurse at night", "Ann plays chess with Bo on Fridays",
         "Ann is allergic to peanuts", "Ann has a cat named Pixel", "Ann bought a new bicycle"]


@pytest.mark.parametrize("mode", ["asgi-async", "loopback-sync"])
async def test_a_remote_recall_injects_nothing_for_the_best_of_weak_matches(deploy: Any, mode: str) -> None:
    mem = deploy().client(mode)
    question = "When did Ann visit the Louvre museum in Paris?"
    try:
        for text in OTHER:
            await _maybe(mem.save(text, user_id="ann"))
        await _maybe(mem.save("Bo visited the Louvre museum in Paris", user_id="bo"))  # words the store knows
        default = await _maybe(mem.recall(question, user_id="ann"))
        ranked = await _maybe(mem.recall(question, user_id="ann", min_relevance=0))
        await _maybe(mem.save("Ann visited the Louvre museum in Paris in May", user_id="ann"))
        found = await _maybe(mem.recall(question, user_id="ann"))
    finally:
        await _maybe(mem.close())
    assert default == [] and ranked  # "Ann" alone matched: the best of a weak lot
    assert max(h.relevance for h in ranked) < ScoringPolicy().min_relevance
    assert [h.memory.content for h in found] == ["Ann visited the Louvre museum in Paris in May"]
    assert found[0].relevance == pytest.approx(1.0)


async def _maybe(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
