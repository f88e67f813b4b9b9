"""Validity read from the text, through the service: the server's extractor dates what the client ingests."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import polymem
from polymem.testing import FakeClock

FEBRUARY, APRIL = datetime(2026, 2, 15, tzinfo=timezone.utc), datetime(2026, 4, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("mode", ["asgi-async", "loopback-sync"])
async def test_an_ingested_switch_closes_the_old_preference_at_the_date_it_names(deploy: Any, mode: str) -> None:
    clock = FakeClock(datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc))
    mem = deploy(clock=clock).client(mode)
    try:
        await _maybe(mem.save("My favourite colour is blue", user_id="ann", category="preference"))
        clock.advance(days=59)  # March 10th
        (black,) = await _maybe(mem.ingest([polymem.Message("user", "My favourite colour is black since March 1st.")],
                                           user_id="ann"))
        await _maybe(mem.consolidate())
        february = await _maybe(mem.recall("favourite colour", user_id="ann", valid_at=FEBRUARY))
        april = await _maybe(mem.recall("favourite colour", user_id="ann", valid_at=APRIL))
    finally:
        await _maybe(mem.close())
    assert black.metadata["valid_from"] == "2026-03-01T00:00:00+00:00"
    assert [h.memory.content for h in february] == ["My favourite colour is blue"]
    assert [h.memory.content for h in april] == ["My favourite colour is black since March 1st."]


async def test_a_drafts_validity_travels_over_http(deploy: Any) -> None:
    mem = deploy().client("asgi-async")
    try:
        (saved,) = await mem.save_many([polymem.MemoryDraft("I live in Oslo", valid_from=FEBRUARY, valid_to=APRIL)],
                                       user_id="ann")
    finally:
        await mem.close()
    assert (saved.metadata["valid_from"], saved.metadata["valid_to"]) == (FEBRUARY.isoformat(), APRIL.isoformat())


async def _maybe(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
