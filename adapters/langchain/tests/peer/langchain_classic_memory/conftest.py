"""langchain-classic's memory tests with `chat_memory=PolymemChatMessageHistory(...)` (see SOURCE.md)."""

_ALIAS = ("reads the turn's own messages from the chain's `chat_history` output, which was loaded before the turn: "
          "InMemoryChatMessageHistory hands out its internal list, appended to afterwards; PolymemChatMessageHistory "
          "hands out a snapshot of the stored window")
EXPECTED_FAILURES: dict[str, str] = {
    "test_simplea": _ALIAS,
    "test_fixed_message_response_when_docs_founda": _ALIAS,
    "test_fixed_message_response_when_no_docs_found": _ALIAS,
    "test_fixed_message_response_when_docs_found": _ALIAS,
}
