"""langchain-classic's memory tests with `chat_memory=PolymemChatMessageHistory(...)`, on each backend
(see SOURCE.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from polymem.testing.backends import Backend, store_in

from ._swap import polymem_history

_ALIAS = ("reads the turn's own messages from the chain's `chat_history` output, which was loaded before the turn: "
          "InMemoryChatMessageHistory hands out its internal list, appended to afterwards; PolymemChatMessageHistory "
          "hands out a snapshot of the stored window")
EXPECTED_FAILURES: dict[str, str] = {
    "test_simplea": _ALIAS,
    "test_fixed_message_response_when_docs_founda": _ALIAS,
    "test_fixed_message_response_when_no_docs_found": _ALIAS,
    "test_fixed_message_response_when_docs_found": _ALIAS,
}


@pytest.fixture(autouse=True)
def histories_on_backend(request: pytest.FixtureRequest, backend: Backend) -> Iterator[None]:
    """The memories the test builds keep their histories in one polymem store on this run's backend;
    a memory built at import (a `memory` parameter) gets a new session of it too, as if built here."""
    with store_in(backend.open(embedder=None)):
        callspec = getattr(request.node, "callspec", None)
        memory = callspec.params.get("memory") if callspec is not None else None
        if memory is not None:
            memory.chat_memory = polymem_history()
        yield
