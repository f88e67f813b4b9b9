"""langgraph-checkpoint-sqlite's store tests with `PolymemStore` in place of `SqliteStore`, on each backend
(see SOURCE.md)."""

from collections.abc import Iterator
from importlib.metadata import version

import pytest
from packaging.version import Version

from polymem.testing.backends import Backend

from ._swap import BACKEND

# Each file imports what its own release has: 3.1.2's runs from langgraph-checkpoint-sqlite 3.1.2 on,
# 2.0.11's (the release the lowest supported langgraph, 1.0.0, installs) below that.
_LATEST = Version(version("langgraph-checkpoint-sqlite")) >= Version("3.1.2")
collect_ignore = ["test_store_2_0_11.py" if _LATEST else "test_store.py"]

EXPECTED_FAILURES: dict[str, str] = {
    "test_vector_store_initialization": "reads SqliteStore's own `index_config['text_fields']` (PolymemStore's "
                                        "`index_config` has LangGraph's `fields`) and its vector tables through "
                                        "`store.conn`",
    "test_scores": "compares the score with the query's raw cosine to the item; PolymemStore's score is polymem's "
                   "recall score (cosine blended with text match and the memory's live score)",
    "test_embed_with_path": "compares score values: SqliteStore keeps one vector per indexed field and scores an "
                            "item by its best field's cosine; PolymemStore embeds the fields as one text and scores "
                            "with polymem's recall score (the orders the test checks hold)",
}

NOT_APPLICABLE: dict[str, str] = {
    "test_nonnull_migrations": "checks SqliteStore's own SQL migrations",
    "test_escape_glob_literal": "checks a SqliteStore SQL helper",
    "test_namespace_match_pattern": "checks a SqliteStore SQL helper",
    "test_list_namespaces_prefix_uses_indexable_condition": "checks the SQL SqliteStore generates",
}


@pytest.fixture(autouse=True)
def stores_on_backend(backend: Backend) -> Iterator[None]:
    """Each store the test opens is a polymem store on this run's backend."""
    BACKEND.append(backend)
    yield
    BACKEND.pop()
