"""semantic-kernel's ChatCompletionAgent tests with every `ChatHistoryAgentThread` a `PolymemChatHistoryAgentThread`.

The suite's own fixture (`kernel_with_ai_service`, from python/tests/unit/agents/chat_completion/conftest.py)
is rebuilt below of real parts: a real `Kernel` whose chat completion service is `ScriptedChatCompletion`, the
adapter's scripted service (tests/scripted.py), where the published fixture used `create_autospec`/`AsyncMock`.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.version import Version
from semantic_kernel.agents.chat_completion import chat_completion_agent
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


def _scripted() -> ModuleType:
    """tests/scripted.py, under the name tests/conftest.py loads it by (tests run with --import-mode=importlib)."""
    name = "polymem_sk_tests_scripted"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[2] / "scripted.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


ScriptedChatCompletion: Any = _scripted().ScriptedChatCompletion


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
def kernel_with_ai_service() -> tuple[Kernel, ScriptedChatCompletion]:
    """A real kernel with no plugins whose one chat completion service answers, by default, what the published
    fixture's mock did; a test sets `service.script` for other answers."""
    service = ScriptedChatCompletion([[ChatMessageContent(role=AuthorRole.SYSTEM, content="Processed Message")]])
    kernel = Kernel()
    kernel.add_service(service)
    return kernel, service
