"""autogen-agentchat's AssistantAgent tests with every agent's default model context a `PolymemChatCompletionContext`."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from importlib.metadata import version
from pathlib import Path

import pytest
from autogen_agentchat.agents import _assistant_agent
from packaging.version import Version

from polymem.testing.backends import Backend
from polymem_autogen import PolymemChatCompletionContext

# The tests of the release installed: autogen-agentchat 0.7.5's file from 0.7.5 on, 0.5.4's below.
LOWEST = Version(version("autogen-agentchat")) < Version("0.7.5")
collect_ignore = ["test_assistant_agent.py" if LOWEST else "test_assistant_agent_0_5_4.py"]

if LOWEST and "utils" not in sys.modules:  # 0.5.4's file does `from utils import FileLogHandler`
    _spec = importlib.util.spec_from_file_location("utils", Path(__file__).with_name("utils.py"))
    assert _spec is not None and _spec.loader is not None
    sys.modules["utils"] = _utils = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_utils)

EXPECTED_FAILURES: dict[str, str] = {}
_ANTHROPIC = ("calls Anthropic's API (needs ANTHROPIC_API_KEY and the network, neither reachable here); "
              "it tests Anthropic's client, and the same tool loops run above with the replay client")
NOT_APPLICABLE: dict[str, str] = {
    "TestAnthropicIntegration::test_anthropic_tool_call_loop_max_iterations_10": _ANTHROPIC,
    "TestAnthropicIntegration::test_anthropic_tool_call_loop_max_iterations_1_with_reflection": _ANTHROPIC,
    "TestAnthropicIntegration::test_anthropic_basic_text_response": _ANTHROPIC,
}


@pytest.fixture(autouse=True)
def default_context_is_polymem(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """`AssistantAgent(...)` without `model_context=` gets a polymem session on a real store, on each backend."""
    lexical = backend.open(embedder=None)
    # 0.5.4's tests build OpenAI clients with api_key="", which today's openai SDK refuses without some key.
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "test")

    def context() -> PolymemChatCompletionContext:
        return PolymemChatCompletionContext(lexical, session_id=str(uuid.uuid4()), user_id="peer")

    monkeypatch.setattr(_assistant_agent, "UnboundedChatCompletionContext", context)
