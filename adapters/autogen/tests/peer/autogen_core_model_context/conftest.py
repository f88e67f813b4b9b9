"""autogen-core's model context tests with `PolymemChatCompletionContext` swapped in (a real store, on each backend)."""

from __future__ import annotations

import uuid
from importlib.metadata import version
from typing import Any

import pytest
from packaging.version import Version

from polymem.testing.backends import Backend
from polymem_autogen import PolymemChatCompletionContext

# The tests of the release installed: autogen-core 0.7.5's file from 0.7.5 on, 0.5.4's below.
LOWEST = Version(version("autogen-core")) < Version("0.7.5")
collect_ignore = ["test_model_context.py" if LOWEST else "test_model_context_0_5_4.py"]

EXPECTED_FAILURES: dict[str, str] = {}  # both releases' files pass, 0.5.4's one-message-in-30-tokens test too

NOT_REPLACED: dict[str, str] = {
    "test_buffered_model_context": "BufferedChatCompletionContext windows by message count; polymem windows by tokens",
    "test_head_and_tail_model_context": "HeadAndTailChatCompletionContext keeps the first and last messages; "
    "polymem windows by tokens (optionally with a summary)",
}


@pytest.fixture(autouse=True)
def contexts_are_polymem(request: pytest.FixtureRequest, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unbounded and token-limited contexts in the test module are `PolymemChatCompletionContext`s."""
    lexical = backend.open(embedder=None)

    def unbounded(initial_messages: Any = None) -> PolymemChatCompletionContext:
        return PolymemChatCompletionContext(
            lexical, session_id=str(uuid.uuid4()), user_id="peer", initial_messages=initial_messages)

    def token_limited(model_client: Any, *, token_limit: int | None = None, tool_schema: Any = None,
                      initial_messages: Any = None) -> PolymemChatCompletionContext:
        # polymem counts tokens itself; without a limit, the stock class uses the model's whole window.
        return PolymemChatCompletionContext(lexical, session_id=str(uuid.uuid4()), user_id="peer",
                                            max_tokens=token_limit, initial_messages=initial_messages)

    monkeypatch.setattr(request.module, "UnboundedChatCompletionContext", unbounded)
    monkeypatch.setattr(request.module, "TokenLimitedChatCompletionContext", token_limited)
