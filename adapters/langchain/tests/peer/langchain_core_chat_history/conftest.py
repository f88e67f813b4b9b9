"""langchain-core's chat history tests with `PolymemChatMessageHistory`, on each backend (see SOURCE.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from polymem.testing.backends import Backend, store_in

_EQUALITY = ("compares history objects with `==`, which for InMemoryChatMessageHistory is pydantic's field-by-field "
             "equality; PolymemChatMessageHistory is a handle on a stored session, compared by identity")
EXPECTED_FAILURES: dict[str, str] = {
    "test_chat_history_deprecated[InMemoryChatMessageHistory]": "checks the class docstring for LangChain's "
                                                                "deprecation notice of InMemoryChatMessageHistory",
    "test_input_messages": _EQUALITY,
    "test_input_messages_async": _EQUALITY,
    "test_using_custom_config_specs": _EQUALITY,
    "test_using_custom_config_specs_async": _EQUALITY,
}

NOT_APPLICABLE: dict[str, str] = {
    "test_chat_history_deprecated[BaseChatMessageHistory]": "checks langchain-core's own BaseChatMessageHistory "
                                                            "docstring",
}


@pytest.fixture(autouse=True)
def polymem_store(backend: Backend) -> Iterator[None]:
    """Each history the test builds is a session of one polymem store on this run's backend."""
    with store_in(backend.open(embedder=None)):
        yield
