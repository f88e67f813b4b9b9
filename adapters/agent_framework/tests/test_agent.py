"""Through Agent Framework's own agent loop (`Agent`, `WorkflowBuilder`) with a scripted chat client."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from agent_framework import Agent, AgentSession, Content, Message, WorkflowBuilder, tool
from polymem_af_scripted import ScriptedChatClient, call

from polymem_agent_framework import RECALL_HEADER, PolymemContextProvider, PolymemHistoryProvider

HERE = Path(__file__).resolve().parent
SRC = [str(HERE.parents[2] / "core" / "src"), str(HERE.parent / "src")]


def recall_messages(client: ScriptedChatClient, request: int = 0) -> list[str]:
    return [text for text in client.prompt_texts(request) if text.startswith(RECALL_HEADER)]


async def test_agent_answers_with_the_users_recalled_memories_in_its_prompt(semantic: Any) -> None:
    semantic.save("Alice is allergic to peanuts", user_id="alice", category="fact")
    semantic.save("Bob likes peanut butter", user_id="bob", category="preference")
    client = ScriptedChatClient("Try a chickpea curry: no peanuts.")
    agent = Agent(client, "You are a chef.", name="chef",
                  context_providers=[PolymemContextProvider(semantic, user_id="alice", remember="none")])

    response = await agent.run("What should I cook for Alice? Mind her food allergy.")

    (recalled,) = recall_messages(client)
    assert "1. [fact, just now] Alice is allergic to peanuts" in recalled
    assert "Bob" not in recalled
    assert response.text == "Try a chickpea curry: no peanuts."


async def test_nothing_relevant_adds_no_memory_message(semantic: Any) -> None:
    semantic.save("Alice is allergic to peanuts", user_id="alice")
    client = ScriptedChatClient("Use certbot.")
    agent = Agent(client, context_providers=[PolymemContextProvider(semantic, user_id="alice", remember="none")])
    await agent.run("How do I renew a TLS certificate for nginx?")
    assert recall_messages(client) == []


async def test_a_turn_is_captured_into_the_users_session_and_distilled(lexical: Any) -> None:
    agent = Agent(ScriptedChatClient("Noted, Oslo it is."), name="planner",
                  context_providers=[PolymemContextProvider(lexical, user_id="alice")])
    session = agent.create_session(session_id="trip-1")

    await agent.run("I live in Oslo and I prefer window seats.", session=session)

    transcript = lexical.session("trip-1", user_id="alice").transcript()
    assert [(m.role, m.content) for m in transcript] == [
        ("user", "I live in Oslo and I prefer window seats."), ("assistant", "Noted, Oslo it is.")]
    memories = lexical.list(user_id="alice")
    assert memories and all(m.agent_id == "planner" and m.session_id == "trip-1" for m in memories)
    assert any("Oslo" in m.content for m in memories)


async def test_user_turns_policy_saves_user_messages_tagged_with_the_agent(lexical: Any) -> None:
    agent = Agent(ScriptedChatClient("Sure."), name="planner",
                  context_providers=[PolymemContextProvider(lexical, user_id="alice", remember="user_turns")])
    await agent.run("My passport expires in March 2027.")
    (memory,) = lexical.list(user_id="alice")
    assert (memory.content, memory.source) == ("My passport expires in March 2027.", "user_input")
    assert memory.metadata["written_by"] == "agent_framework:planner"


async def test_history_provider_gives_the_next_run_the_conversation(lexical: Any) -> None:
    client = ScriptedChatClient("Hi Alice.", "You said your name is Alice.")
    agent = Agent(client, context_providers=[PolymemHistoryProvider(lexical, user_id="alice")])
    session = agent.create_session(session_id="chat-1")

    await agent.run("My name is Alice.", session=session)
    await agent.run("What is my name?", session=session)

    assert client.prompt_texts(1) == ["My name is Alice.", "Hi Alice.", "What is my name?"]
    assert len(lexical.session("chat-1", user_id="alice").transcript()) == 4


async def test_tool_calls_and_results_are_kept_in_the_history(lexical: Any) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}, 21 C"

    client = ScriptedChatClient(call("weather", "call-1", city="Oslo"), "It is sunny in Oslo.")
    agent = Agent(client, tools=[weather], context_providers=[PolymemHistoryProvider(lexical, user_id="alice")])
    await agent.run("Weather in Oslo?", session=agent.create_session(session_id="w"))

    stored = lexical.session("w", user_id="alice").transcript()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].tool_calls[0].name == "weather" and json.loads(stored[1].tool_calls[0].arguments) == {
        "city": "Oslo"}
    assert (stored[2].tool_call_id, stored[2].content) == ("call-1", "Sunny in Oslo, 21 C")
    reloaded = await PolymemHistoryProvider(lexical, user_id="alice").get_messages("w")
    assert [c.type for m in reloaded for c in m.contents] == ["text", "function_call", "function_result", "text"]


async def test_both_providers_on_one_store_write_each_message_once(lexical: Any) -> None:
    providers = [PolymemHistoryProvider(lexical, user_id="alice"),
                 PolymemContextProvider(lexical, user_id="alice", remember="none")]
    agent = Agent(ScriptedChatClient("One.", "Two."), context_providers=providers)
    session = agent.create_session(session_id="s")
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    assert [m.content for m in lexical.session("s", user_id="alice").transcript()] == [
        "first", "One.", "second", "Two."]


async def test_history_provider_keeps_data_uri_and_usage_contents_exactly(lexical: Any) -> None:
    reply = Message("assistant", [Content.from_text("Here is the chart."),
                                  Content.from_data(data=b"\x89PNG\r\n", media_type="image/png"),
                                  Content.from_uri(uri="https://example.com/report.pdf", media_type="application/pdf"),
                                  Content.from_usage(usage_details={"input_token_count": 12, "output_token_count": 5})],
                    author_name="analyst", additional_properties={"trace": {"id": 7}})
    agent = Agent(ScriptedChatClient(reply), context_providers=[PolymemHistoryProvider(lexical, user_id="alice")])
    response = await agent.run("Chart please", session=agent.create_session(session_id="c"))

    stored = await PolymemHistoryProvider(lexical, user_id="alice").get_messages("c")
    assert [m.to_dict() for m in stored] == [m.to_dict() for m in [Message("user", ["Chart please"]),
                                                                   *response.messages]]


def test_a_conversation_resumes_in_another_process(db_url: str) -> None:
    script = textwrap.dedent(f"""
        import asyncio, json, sys
        sys.path[:0] = {SRC!r} + [{str(HERE)!r}]
        import polymem
        from agent_framework import Agent
        from scripted import ScriptedChatClient
        from polymem_agent_framework import PolymemHistoryProvider

        async def main(text, reply):
            client = ScriptedChatClient(reply)
            history = PolymemHistoryProvider({db_url!r}, user_id="alice")
            agent = Agent(client, context_providers=[history])
            await agent.run(text, session=agent.create_session(session_id="support-42"))
            await history.aclose()
            print(json.dumps(client.prompt_texts()))

        asyncio.run(main(sys.argv[1], sys.argv[2]))
    """)

    def run(text: str, reply: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", script, text, reply], capture_output=True, text=True,
                              timeout=120, check=True)
        return list(json.loads(done.stdout.strip().splitlines()[-1]))

    assert run("My order number is 4711.", "Thanks, noted.") == ["My order number is 4711."]
    assert run("What is my order number?", "4711.") == [
        "My order number is 4711.", "Thanks, noted.", "What is my order number?"]


async def test_two_agents_in_a_workflow_share_the_users_memory(semantic: Any) -> None:
    semantic.save("Alice's sister Berit is allergic to shellfish", user_id="alice", category="fact")
    planner_client = ScriptedChatClient("Dinner for Berit: a three-course menu.")
    chef_client = ScriptedChatClient("Starter: tomato soup. No shellfish anywhere.")
    planner = Agent(planner_client, name="planner",
                    context_providers=[PolymemContextProvider(semantic, user_id="alice", remember="user_turns")])
    chef = Agent(chef_client, name="chef",
                 context_providers=[PolymemContextProvider(semantic, user_id="alice", remember="none")])
    workflow = WorkflowBuilder(start_executor=planner).add_edge(planner, chef).build()

    await workflow.run("Plan a dinner for my sister Berit's visit; she cannot eat shellfish.")

    for client in (planner_client, chef_client):
        (recalled,) = recall_messages(client)
        assert "Berit is allergic to shellfish" in recalled
    learned = [m for m in semantic.list(user_id="alice") if m.agent_id == "planner"]
    assert [m.content for m in learned] == ["Plan a dinner for my sister Berit's visit; she cannot eat shellfish."]
    assert any("dinner" in text.lower() for text in chef_client.prompt_texts())


async def test_a_serialised_session_carries_only_ids_and_resumes_from_the_store(semantic: Any, db_url: str) -> None:
    semantic.save("Alice's budget for Oslo is 1200 EUR", user_id="alice", category="fact")

    def agent(client: ScriptedChatClient) -> Agent:
        return Agent(client, context_providers=[PolymemHistoryProvider(db_url, user_id="alice"),
                                                PolymemContextProvider(semantic, user_id="alice", remember="none")])

    first = agent(ScriptedChatClient("Noted."))
    session = first.create_session(session_id="trip")
    await first.run("Plan my Oslo trip within my budget.", session=session)
    saved = json.dumps(session.to_dict())

    assert "Plan my Oslo trip" not in saved  # the conversation lives in polymem, not in the session
    client = ScriptedChatClient("Within 1200 EUR: yes.")
    second = agent(client)
    restored = AgentSession.from_dict(json.loads(saved))
    await second.run("Is the hotel affordable?", session=restored)
    assert client.prompt_texts()[:2] == ["Plan my Oslo trip within my budget.", "Noted."]
    assert restored.state["polymem"]["recalled"] == [m.memory_id for m in semantic.list(user_id="alice")]
