"""Large LangGraph store values go into polymem whole (InMemoryStore takes any size)."""

from __future__ import annotations

import pytest

import polymem
from polymem_langchain import PolymemStore

LONG_NOTES = ("Meeting notes, item after item. " * 700)[:20_000] + " The staging database listens on port 5433."
ONE_MB = ("A 1 MB document, line after line. " * 31_000)[:1_000_000]


@pytest.mark.parametrize("text", [LONG_NOTES, ONE_MB], ids=["20k characters", "1 MB"])
def test_a_long_value_is_stored_and_read_back_whole(mem: polymem.Memory, text: str) -> None:
    store = PolymemStore(mem, user_id="ann")

    store.put(("docs", "ann"), "report", {"text": text})

    assert store.get(("docs", "ann"), "report").value == {"text": text}


def test_a_long_value_is_found_by_what_its_end_says(mem: polymem.Memory) -> None:
    store = PolymemStore(mem, user_id="ann")
    store.put(("docs", "ann"), "notes", {"text": LONG_NOTES})
    store.put(("docs", "ann"), "other", {"text": "Lunch is at noon."})

    hits = store.search(("docs", "ann"), query="staging database port")

    assert hits[0].key == "notes"
