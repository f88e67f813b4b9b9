"""langgraph-checkpoint's store tests with `PolymemStore` in place of `InMemoryStore` (see SOURCE.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ._swap import stores_in

EXPECTED_FAILURES: dict[str, str] = {
    "test_embed_with_path": "compares score values: InMemoryStore keeps one vector per indexed field and scores "
                            "an item by its best field's cosine; PolymemStore embeds the fields as one text and "
                            "scores with polymem's recall score (the order the test checks holds)",
}


@pytest.fixture(autouse=True)
def polymem_files(tmp_path: Path) -> Iterator[None]:
    """Each store the test builds is a polymem store on an SQLite file in tmp_path."""
    with stores_in(tmp_path):
        yield
