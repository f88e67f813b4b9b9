"""Through AutoGen's own agent loop: AssistantAgent and a team, with replayed models (no network)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import MemoryQueryEvent, TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall, Image
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import CreateResult, RequestUsage, SystemMessage
from PIL import Image as PILImage

import polymem
from polymem_autogen import (
    ChatCompletionExtractor,
    PolymemChatCompletionContext,
    PolymemMemory,
    RecalledMemoriesMessage,
)

pytestmark = pytest.mark.asyncio


def system_prompts(client: Any, call: int = 0) -> list[str]:
    """The system messages the model received in its `call`-th request."""
    return [m.content for m in client.create_calls[call]["messages"] if isinstance(m, SystemMessage)]


async def test_assistant_agent_answers_with_recalled_memories_in_its_prompt(semantic: Any, replay: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice")
    await memory.add(MemoryContent(content="Alice is allergic to peanuts", mime_type=MemoryMimeType.TEXT))
    await memory.add(MemoryContent(content="Alice's flight to Oslo leaves at 09:10", mime_type=MemoryMimeType.TEXT))
    client = replay("Try a chickpea curry: no peanuts.")
    agent = AssistantAgent("chef", model_client=client, memory=[memory])

    result = await agent.run(task="What should I cook for Alice? Mind her food allergy.")

    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert len(events) == 1 and events[0].content[0].content == "Alice is allergic to peanuts"
    (recall,) = [p for p in system_prompts(client) if p.startswith("Relevant memories")]
    assert "[fact, just now] Alice is allergic to peanuts" in recall
    assert result.messages[-1].content == "Try a chickpea curry: no peanuts."


async def test_agent_with_nothing_relevant_emits_no_memory_event(semantic: Any, replay: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice")
    await memory.add(MemoryContent(content="Alice is allergic to peanuts", mime_type=MemoryMimeType.TEXT))
    client = replay("Use certbot.")
    agent = AssistantAgent("ops", model_client=client, memory=[memory])
    result = await agent.run(task="How do I renew a TLS certificate for nginx?")
    assert not any(isinstance(m, MemoryQueryEvent) for m in result.messages)
    assert not any(p.startswith("Relevant memories") for p in system_prompts(client))


async def test_agent_conversation_persists_in_polymem_across_agent_instances(db_url: str, replay: Any) -> None:
    first_context = PolymemChatCompletionContext(db_url, session_id="trip", user_id="alice")
    first = AssistantAgent("planner", model_client=replay("Noted: Oslo on May 3."), model_context=first_context)
    await first.run(task="I fly to Oslo on May 3.")
    await first_context.close()

    client = replay("You fly on May 3.")
    second_context = PolymemChatCompletionContext(db_url, session_id="trip", user_id="alice")
    second = AssistantAgent("planner", model_client=client, model_context=second_context)
    await second.run(task="When do I fly?")
    await second_context.close()
    seen = [m.content for m in client.create_calls[0]["messages"] if not isinstance(m, SystemMessage)]
    assert seen == ["I fly to Oslo on May 3.", "Noted: Oslo on May 3.", "When do I fly?"]


async def test_tool_calls_and_results_of_an_agent_are_stored_and_restored_exactly(lexical: Any, replay: Any) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}, 21 °C"

    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="call_7", name="get_weather", arguments='{"city": "Oslo"}')],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
        thought="Checking the weather.",
    )
    context = PolymemChatCompletionContext(lexical, session_id="w", user_id="alice")
    agent = AssistantAgent(
        "helper",
        model_client=replay(call, "It is sunny, 21 °C.", tools=True),
        tools=[get_weather],
        model_context=context,
        reflect_on_tool_use=True,
    )
    await agent.run(task="Weather in Oslo?")
    in_memory = [m.model_dump() for m in await context.get_messages()]
    reopened = PolymemChatCompletionContext(lexical, session_id="w", user_id="alice")
    assert [m.model_dump() for m in await reopened.get_messages()] == in_memory
    assert [m.type for m in await reopened.get_messages()] == [
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "AssistantMessage",
    ]
    tool = lexical.session("w", user_id="alice").messages()[2]
    assert (tool.role, tool.tool_call_id, tool.content) == ("tool", "call_7", "Sunny in Oslo, 21 °C")


async def test_recalls_do_not_pile_up_in_a_persisted_context(semantic: Any, replay: Any) -> None:
    memory = PolymemMemory(semantic, user_id="alice")
    await memory.add(MemoryContent(content="Alice is allergic to peanuts", mime_type=MemoryMimeType.TEXT))
    client = replay("Noted.", "Still no peanuts.")
    agent = AssistantAgent(
        "chef",
        model_client=client,
        memory=[memory],
        model_context=PolymemChatCompletionContext(semantic, session_id="c", user_id="alice"),
    )
    await agent.run(task="Is satay OK for Alice, given her peanut allergy?")
    second = await agent.run(task="And peanut butter cookies for Alice?")
    assert any(isinstance(m, MemoryQueryEvent) for m in second.messages)
    prompt = client.create_calls[1]["messages"]
    recalls = [i for i, m in enumerate(prompt) if isinstance(m, RecalledMemoriesMessage)]
    assert recalls == [len(prompt) - 1]  # one recall: this turn's, right after the new question


async def test_team_run_is_captured_into_working_and_long_term_memory(semantic: Any, replay: Any) -> None:
    extracted = json.dumps([{"content": "The user is vegetarian", "category": "preference", "source": "user_input"}])
    store = polymem.open(semantic.url, embedder=semantic.embedder, extractor=ChatCompletionExtractor(replay(extracted)))
    memory = PolymemMemory(store, user_id="alice", session_id="dinner")
    team = RoundRobinGroupChat(
        [
            AssistantAgent("chef", model_client=replay("Mushroom risotto."), memory=[memory]),
            AssistantAgent("critic", model_client=replay("Add lemon."), memory=[memory]),
        ],
        termination_condition=MaxMessageTermination(3),
    )
    result = await team.run(task="I am vegetarian. Plan dinner.")

    records = await memory.capture(result)

    assert [r.content for r in records] == ["The user is vegetarian"]
    assert records[0].category == "preference" and records[0].session_id == "dinner"
    stored = store.session("dinner", user_id="alice").messages()
    assert [(m.role, m.name, m.content) for m in stored] == [
        ("user", "user", "I am vegetarian. Plan dinner."),
        ("assistant", "chef", "Mushroom risotto."),
        ("assistant", "critic", "Add lemon."),
    ]
    assert stored[1].metadata["autogen"]["chat"]["type"] == "TextMessage"
    store.close()


async def test_capture_skips_memory_query_events(lexical: Any) -> None:
    memory = PolymemMemory(lexical, user_id="alice", session_id="s")
    recalled = MemoryContent(content="Alice likes tea", mime_type=MemoryMimeType.TEXT)
    await memory.capture(
        [TextMessage(content="hello", source="user"), MemoryQueryEvent(content=[recalled], source="agent")],
        ingest=False,
    )
    assert [m.content for m in lexical.session("s", user_id="alice").messages()] == ["hello"]


async def test_agent_with_polymem_memory_and_context_saves_and_loads_its_component_config(
    lexical: Any, replay: Any
) -> None:
    memory = PolymemMemory(lexical, user_id="alice", agent_id="planner")
    await memory.add(MemoryContent(content="Alice booked the Thon Opera hotel", mime_type=MemoryMimeType.TEXT))
    agent = AssistantAgent(
        "planner",
        model_client=replay("The Thon Opera."),
        memory=[memory],
        model_context=PolymemChatCompletionContext(lexical.url, session_id="trip", user_id="alice"),
    )
    config = json.loads(agent.dump_component().model_dump_json())

    loaded = AssistantAgent.load_component(config)

    assert json.loads(loaded.dump_component().model_dump_json()) == config
    result = await loaded.run(task="Which hotel did Alice book?")
    recalled = [c.content for m in result.messages if isinstance(m, MemoryQueryEvent) for c in m.content]
    assert recalled == ["Alice booked the Thon Opera hotel"]
    stored = lexical.session("trip", user_id="alice").messages()
    assert [m.content for m in stored if m.role != "system"] == ["Which hotel did Alice book?", "The Thon Opera."]
    # the loaded agent's context and memory are polymem's again, each with a store of its own to close
    loaded_memory = loaded._memory
    assert isinstance(loaded.model_context, PolymemChatCompletionContext)
    assert loaded_memory is not None and isinstance(loaded_memory[0], PolymemMemory)
    for context in (agent.model_context, loaded.model_context):
        assert isinstance(context, PolymemChatCompletionContext)
        await context.close()
    await loaded_memory[0].close()


READER = """
import asyncio, json, sys
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent

async def main(config):
    agent = AssistantAgent.load_component(json.loads(config))
    result = await agent.run(task="Can I travel abroad next April with my current passport?")
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    prompt = [m.content for m in agent._model_client.create_calls[0]["messages"]]
    print(json.dumps({"recalled": [c.content for e in events for c in e.content], "prompt": prompt}))

asyncio.run(main(sys.argv[1]))
"""


async def test_a_memory_written_by_one_agent_is_recalled_by_another_in_a_second_process(
    tmp_path: Path, embedder: Any, replay: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    extracted = json.dumps([{"content": "Alice's passport expires in March 2026", "category": "fact"}])
    with polymem.open(url, embedder=embedder, extractor=ChatCompletionExtractor(replay(extracted))) as store:
        clerk_memory = PolymemMemory(store, user_id="alice", agent_id="clerk")
        clerk = AssistantAgent("clerk", model_client=replay("Noted."), memory=[clerk_memory])
        written = await clerk_memory.capture(await clerk.run(task="My passport expires in March 2026."))
        assert [r.content for r in written] == ["Alice's passport expires in March 2026"]
        advisor = AssistantAgent(
            "advisor",
            model_client=replay("Renew it first: it expires in March 2026."),
            memory=[PolymemMemory(store, user_id="alice", agent_id="advisor")],
        )
        config = advisor.dump_component().model_dump_json()

    seen = json.loads(_python(READER, config))

    assert seen["recalled"] == ["Alice's passport expires in March 2026"]
    assert any("Alice's passport expires in March 2026" in p for p in seen["prompt"] if isinstance(p, str))


def _python(code: str, arg: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), arg], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


async def test_capture_writes_tool_calls_and_results_as_tool_messages(lexical: Any, replay: Any) -> None:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="call_1", name="get_weather", arguments='{"city": "Oslo"}')],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )
    agent = AssistantAgent("helper", model_client=replay(call, tools=True), tools=[get_weather])
    memory = PolymemMemory(lexical, user_id="alice", session_id="s")
    await memory.capture(await agent.run(task="Weather in Oslo?"), ingest=False)
    stored = lexical.session("s", user_id="alice").messages()
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Weather in Oslo?"),
        ("assistant", ""),
        ("tool", "Sunny in Oslo"),
        ("assistant", "Sunny in Oslo"),
    ]
    assert [(c.id, c.name) for c in stored[1].tool_calls] == [("call_1", "get_weather")]
    assert stored[2].tool_call_id == "call_1"


async def test_the_token_budget_of_an_agents_context_is_a_hard_limit(lexical: Any, replay: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="budget", user_id="alice", max_tokens=40)
    client = replay(*[f"Answer number {i} with a few more words in it." for i in range(4)])
    agent = AssistantAgent("helper", model_client=client, model_context=context)
    for i in range(4):
        await agent.run(task=f"Question number {i} with a few more words in it?")
    seen = [m for m in client.create_calls[-1]["messages"] if not isinstance(m, SystemMessage)]
    assert sum(polymem.approx_token_count(m.content) for m in seen) <= 40
    assert seen[-1].content == "Question number 3 with a few more words in it?"
    assert len(seen) < 4  # four of these messages are over budget: none is kept past it


async def test_an_agent_recalls_an_image_it_was_given_as_memory(lexical: Any, replay: Any) -> None:
    image = Image.from_pil(PILImage.new("RGB", (2, 2), color=(0, 0, 255)))
    memory = PolymemMemory(lexical, user_id="alice")
    await memory.add(MemoryContent(content=image, mime_type=MemoryMimeType.IMAGE, metadata={"caption": "blue logo"}))
    agent = AssistantAgent("designer", model_client=replay("Blue it is."), memory=[memory])
    await agent.run(task="Which logo did I show you?")
    (found,) = (await memory.query("logo")).results
    assert isinstance(found.content, Image) and found.content.to_base64() == image.to_base64()
