"""Moving from AutoGen or Semantic Kernel to Agent Framework: the same SQLite store, read unchanged."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Agent
from autogen_agentchat.agents import AssistantAgent
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.models.replay import ReplayChatCompletionClient
from semantic_kernel.contents import ChatMessageContent, FunctionCallContent, FunctionResultContent
from semantic_kernel.contents.utils.author_role import AuthorRole

import polymem
from polymem.testing import local_embedder
from polymem_agent_framework import RECALL_HEADER, PolymemContextProvider, PolymemHistoryProvider
from polymem_autogen import PolymemMemory
from polymem_semantic_kernel import PolymemChatHistoryAgentThread

_path = Path(__file__).resolve().parents[2] / "adapters" / "agent_framework" / "tests" / "scripted.py"
_spec = importlib.util.spec_from_file_location("polymem_af_scripted_cross", _path)
assert _spec is not None and _spec.loader is not None
_scripted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_scripted)
ScriptedChatClient = _scripted.ScriptedChatClient


@pytest.fixture
def semantic(tmp_path: Path) -> Iterator[Any]:
    with polymem.open(f"sqlite:///{tmp_path / 'memory.db'}", embedder=local_embedder()) as mem:
        yield mem


@pytest.fixture
def lexical(tmp_path: Path) -> Iterator[Any]:
    with polymem.open(f"sqlite:///{tmp_path / 'memory.db'}", embedder=None) as mem:
        yield mem


async def test_an_autogen_agents_memories_and_conversation_carry_over(semantic: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice", session_id="autogen-chat")
    await memory.add(MemoryContent(content="Alice is allergic to peanuts", mime_type=MemoryMimeType.TEXT))
    autogen_agent = AssistantAgent("chef", model_client=ReplayChatCompletionClient(["Noted: no peanuts."]),
                                   memory=[memory])
    await memory.capture(await autogen_agent.run(task="Remember my allergy, please."), ingest=False)

    client = ScriptedChatClient("A lentil stew, peanut-free.")
    agent = Agent(client, name="chef", context_providers=[
        PolymemHistoryProvider(semantic, user_id="alice"),
        PolymemContextProvider(semantic, user_id="alice", remember="none")])
    await agent.run("What can I cook tonight given my peanut allergy?",
                    session=agent.create_session(session_id="autogen-chat"))

    prompt = client.prompt_texts()
    assert prompt[:2] == ["Remember my allergy, please.", "Noted: no peanuts."]
    (recalled,) = [text for text in prompt if text.startswith(RECALL_HEADER)]
    assert "Alice is allergic to peanuts" in recalled


async def test_a_semantic_kernel_thread_resumes_as_an_agent_framework_session(lexical: Any) -> None:
    thread = PolymemChatHistoryAgentThread(lexical, user_id="ann", thread_id="support-7")
    for message in [
        ChatMessageContent(role=AuthorRole.USER, content="Where is order 4711?"),
        ChatMessageContent(role=AuthorRole.ASSISTANT, items=[
            FunctionCallContent(id="c1", function_name="track", plugin_name="orders", arguments='{"order": 4711}')]),
        ChatMessageContent(role=AuthorRole.TOOL, items=[
            FunctionResultContent(id="c1", function_name="track", plugin_name="orders", result="in Hamburg")]),
        ChatMessageContent(role=AuthorRole.ASSISTANT, content="It is in Hamburg."),
    ]:
        await thread.on_new_message(message)

    history = PolymemHistoryProvider(lexical, user_id="ann")
    loaded = await history.get_messages("support-7")
    assert [(m.role, m.text) for m in loaded] == [
        ("user", "Where is order 4711?"), ("assistant", ""), ("tool", ""), ("assistant", "It is in Hamburg.")]
    (call,) = loaded[1].contents
    (result,) = loaded[2].contents
    assert (call.type, call.call_id, call.name, call.arguments) == ("function_call", "c1", "orders-track",
                                                                   '{"order": 4711}')
    assert (result.type, result.call_id, result.result) == ("function_result", "c1", "in Hamburg")

    client = ScriptedChatClient("It should arrive tomorrow.")
    agent = Agent(client, context_providers=[history])
    await agent.run("When will it arrive?", session=agent.create_session(session_id="support-7"))
    assert client.prompt_texts()[-2:] == ["It is in Hamburg.", "When will it arrive?"]
    # Semantic Kernel still reads the whole conversation, the Agent Framework turn included.
    reread = [m.content async for m in PolymemChatHistoryAgentThread(lexical, user_id="ann",
                                                                      thread_id="support-7").get_messages()]
    assert reread[-2:] == ["When will it arrive?", "It should arrive tomorrow."]
