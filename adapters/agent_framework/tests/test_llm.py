"""ChatClientExtractor and ChatClientSummarizer: polymem plug-ins answered by an Agent Framework chat client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_framework import Agent
from polymem_af_scripted import ScriptedChatClient

import polymem
from polymem_agent_framework import (
    ChatClientExtractor,
    ChatClientSummarizer,
    PolymemContextProvider,
    PolymemHistoryProvider,
)

CONVERSATION = [
    polymem.Message(role="user", content="I moved to Bergen and I'm vegetarian."),
    polymem.Message(role="assistant", content="Noted!", name="planner"),
]
ANSWER = json.dumps([
    {"content": "The user lives in Bergen", "category": "fact", "source": "user_input", "importance": 0.8,
     "entities": ["Bergen"]},
    {"content": "The user is vegetarian", "category": "preference", "source": "inference"},
])


def test_extractor_turns_the_models_json_into_memory_drafts() -> None:
    client = ScriptedChatClient(ANSWER)
    drafts = ChatClientExtractor(client).extract(CONVERSATION)
    assert drafts == [polymem.MemoryDraft("The user lives in Bergen", "fact", "user_input", 0.8, ("Bergen",)),
                      polymem.MemoryDraft("The user is vegetarian", "preference", "inference")]
    system, user = client.requests[0]
    assert (system.role, user.role) == ("system", "user") and "fact, preference, event, task" in system.text
    assert user.text.endswith("Conversation:\nuser: I moved to Bergen and I'm vegetarian.\nassistant (planner): Noted!")


def test_extractor_reads_the_array_inside_prose_and_skips_unusable_items() -> None:
    answer = 'Sure:\n```json\n[{"content": ""}, {"content": "x", "category": "gossip"}, {"content": "Likes tea"}]\n```'
    assert [d.content for d in ChatClientExtractor(ScriptedChatClient(answer)).extract(CONVERSATION)] == [
        "Likes tea"]


def test_an_answer_without_a_json_array_is_a_polymem_error() -> None:
    with pytest.raises(polymem.ModelAnswerError, match="JSON"):
        ChatClientExtractor(ScriptedChatClient("I cannot help with that.")).extract(CONVERSATION)


async def test_the_context_provider_distils_a_turn_with_the_chat_client_extractor(tmp_path: Path) -> None:
    store = polymem.open_async(f"sqlite:///{tmp_path / 'm.db'}", embedder=None,
                               extractor=ChatClientExtractor(ScriptedChatClient(ANSWER)))
    agent = Agent(ScriptedChatClient("Noted!"), name="planner",
                  context_providers=[PolymemContextProvider(store, user_id="alice")])
    await agent.run("I moved to Bergen and I'm vegetarian.")
    memories = await store.list(user_id="alice")
    assert sorted((m.content, m.category, m.agent_id) for m in memories) == [
        ("The user is vegetarian", "preference", "planner"), ("The user lives in Bergen", "fact", "planner")]
    await store.close()


async def test_the_summarizer_folds_old_turns_keeping_the_numbers(tmp_path: Path) -> None:
    summary = "Alice flies to Oslo on May 3 with 1200 EUR to spend."
    store = polymem.open_async(f"sqlite:///{tmp_path / 'm.db'}", embedder=None,
                               summarizer=ChatClientSummarizer(ScriptedChatClient(summary)))
    history = PolymemHistoryProvider(store, user_id="alice", max_tokens=55, overflow="summarize", keep_last=2)
    agent = Agent(ScriptedChatClient("Booked.", "Noted.", "Sure."), context_providers=[history])
    session = agent.create_session(session_id="trip")
    for text in ("I fly to Oslo on May 3.", "My budget is 1200 EUR.", "Find me a hotel near the station."):
        await agent.run(text, session=session)
    loaded = await history.get_messages("trip")
    assert loaded[0].role == "system" and summary in loaded[0].text
    assert await history.session("trip").summary == summary
    await store.close()
