"""langgraph-checkpoint's store tests with `PolymemStore` in place of `InMemoryStore`, on each backend (see SOURCE.md)."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version

import pytest
from packaging.version import Version

from polymem.testing.backends import Backend

from ._swap import BACKEND

# Each file imports what its own release has: 4.3.2's runs from langgraph-checkpoint 4.3 on, 2.1.2's
# (the release the lowest supported langgraph, 1.0.0, installs) below that.
collect_ignore = ["test_store_2_1_2.py" if Version(version("langgraph-checkpoint")) >= Version("4.3") else "test_store.py"]

EXPECTED_FAILURES: dict[str, str] = {
    "test_embed_with_path": "compares score values: InMemoryStore keeps one vector per indexed field and scores "
                            "an item by its best field's cosine; PolymemStore embeds the fields as one text and "
                            "scores with polymem's recall score (the order the test checks holds)",
}


@pytest.fixture(autouse=True)
def stores_on_backend(backend: Backend) -> Iterator[None]:
    """Each store the test builds is a new polymem store on this run's backend."""
    BACKEND.append(backend)
    yield
    BACKEND.pop()
