"""semantic-kernel's ChatCompletionAgent tests with every `ChatHistoryAgentThread` a `PolymemChatHistoryAgentThread`.

The suite's own fixture (`kernel_with_ai_service`) is vendored verbatim below from
python/tests/unit/agents/chat_completion/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from typing import Any
from unittest.mock import AsyncMock, create_autospec

import pytest
from packaging.version import Version
from semantic_kernel.agents.chat_completion import chat_completion_agent
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.utils.author_role import AuthorRole
from semantic_kernel.kernel import Kernel

from polymem.testing.backends import Backend
from polymem_semantic_kernel import PolymemChatHistoryAgentThread

# The tests of the release installed: python-1.44.1's file from 1.44.1 on, python-1.28.0's below.
LOWEST = Version(version("semantic-kernel")) < Version("1.44.1")
collect_ignore = ["test_chat_completion_agent.py" if LOWEST else "test_chat_completion_agent_1_28_0.py"]

EXPECTED_FAILURES: dict[str, str] = {}


_STORE: list[Any] = []  # the running test's store (set by the fixture below)


class ChatHistoryAgentThread(PolymemChatHistoryAgentThread):
    """`PolymemChatHistoryAgentThread` with `ChatHistoryAgentThread`'s constructor, on the running test's store.
    One class for the whole run: ChatHistoryChannel's pydantic schema keeps the class it first saw."""

    def __init__(self, chat_history: ChatHistory | None = None, thread_id: str | None = None) -> None:
        super().__init__(_STORE[-1], user_id="peer", chat_history=chat_history, thread_id=thread_id)


@pytest.fixture(autouse=True)
def threads_are_polymem(request: pytest.FixtureRequest, backend: Backend,
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`ChatHistoryAgentThread(...)`, in the tests and where the agent makes one, is a polymem thread
    on a real store, on each backend."""
    _STORE.append(backend.open(embedder=None))
    monkeypatch.setattr(request.module, "ChatHistoryAgentThread", ChatHistoryAgentThread)
    monkeypatch.setattr(chat_completion_agent, "ChatHistoryAgentThread", ChatHistoryAgentThread)
    yield
    _STORE.pop()


@pytest.fixture
def kernel_with_ai_service():
    kernel = create_autospec(Kernel)
    mock_ai_service_client = create_autospec(ChatCompletionClientBase)
    mock_prompt_execution_settings = create_autospec(PromptExecutionSettings)
    mock_prompt_execution_settings.function_choice_behavior = None
    kernel.select_ai_service.return_value = (mock_ai_service_client, mock_prompt_execution_settings)
    mock_ai_service_client.get_chat_message_contents = AsyncMock(
        return_value=[ChatMessageContent(role=AuthorRole.SYSTEM, content="Processed Message")]
    )
    kernel.plugins = {}  # Ensure plugins dict is initialized to avoid AttributeError during tests

    return kernel, mock_ai_service_client
