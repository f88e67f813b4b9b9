"""Through LlamaIndex's own agent loop: `FunctionAgent` runs (mock LLM, real tools) on each polymem memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, JsonSerializer

import polymem
from polymem_llamaindex import PolymemAsyncChatStore, PolymemChatStore, PolymemMemory, PolymemMemoryBlock


def get_weather(city: str) -> str:
    """The weather forecast for a city."""
    return f"Sunny and 21 C in {city}."


WEATHER = FunctionTool.from_defaults(fn=get_weather)


def answer_with_tool_result(messages) -> str:
    results = [m.content for m in messages if m.role.value == "tool"]
    return f"Forecast: {results[-1]}" if results else "Hello again."


MEMORIES = {
    "ChatMemoryBuffer on PolymemChatStore": lambda mem: ChatMemoryBuffer.from_defaults(
        chat_store=PolymemChatStore(mem, user_id="ann"), chat_store_key="ann-chat"
    ),
    "Memory on PolymemAsyncChatStore with PolymemMemoryBlock": lambda mem: Memory.from_defaults(
        session_id="ann-chat",
        chat_store=PolymemAsyncChatStore(mem, user_id="ann"),
        memory_blocks=[PolymemMemoryBlock(mem, user_id="ann")],
    ),
    "PolymemMemory": lambda mem: PolymemMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="ann-chat"),
}


@pytest.mark.parametrize("make_memory", list(MEMORIES.values()), ids=list(MEMORIES))
async def test_a_tool_calling_run_is_kept_in_polymem_with_calls_linked_to_results(lexical, scripted, make_memory) -> None:
    llm = scripted.make(tool_name="get_weather", tool_kwargs={"city": "Oslo"}, answer=answer_with_tool_result)
    agent = FunctionAgent(tools=[WEATHER], llm=llm, system_prompt="You are a weather bot.")

    response = await agent.run("What's the weather in Oslo?", memory=make_memory(lexical))

    transcript = lexical.session("ann-chat", user_id="ann").transcript()
    assert str(response) == "Forecast: Sunny and 21 C in Oslo."
    assert [m.role for m in transcript] == ["user", "assistant", "tool", "assistant"]
    call, result = transcript[1].tool_calls[0], transcript[2]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Oslo"})
    assert (result.tool_call_id, result.content) == (call.id, "Sunny and 21 C in Oslo.")


@pytest.mark.parametrize("make_memory", list(MEMORIES.values()), ids=list(MEMORIES))
async def test_the_second_run_sees_the_first_through_polymem(lexical, scripted, make_memory) -> None:
    agent = FunctionAgent(tools=[WEATHER], llm=scripted.make(tool_name="get_weather", tool_kwargs={"city": "Oslo"}))
    await agent.run("What's the weather in Oslo?", memory=make_memory(lexical))

    await agent.run("Thanks! And tomorrow?", memory=make_memory(lexical))

    assert "What's the weather in Oslo?" in scripted.last_prompt_text
    assert "Sunny and 21 C in Oslo." in scripted.last_prompt_text


async def test_an_agent_recalls_what_another_framework_taught_polymem(lexical, scripted) -> None:
    lexical.save("Ann lives in Bergen and hates rain.", user_id="ann", agent_id="langchain-agent", source="user_input")
    agent = FunctionAgent(tools=[WEATHER], llm=scripted.make())

    await agent.run("Will I need an umbrella where I live?", memory=MEMORIES["PolymemMemory"](lexical))

    assert "Ann lives in Bergen and hates rain." in scripted.last_prompt_text


async def test_what_a_user_tells_the_agent_is_remembered_for_other_frameworks(lexical, scripted) -> None:
    agent = FunctionAgent(tools=[WEATHER], llm=scripted.make())

    await agent.run("I prefer temperatures in Fahrenheit.", memory=MEMORIES["PolymemMemory"](lexical))

    hits = lexical.recall("temperature units", user_id="ann")
    assert [(h.memory.content, h.memory.category) for h in hits] == [("I prefer temperatures in Fahrenheit.", "preference")]


@pytest.mark.parametrize(
    "make_memory",
    [MEMORIES["PolymemMemory"], MEMORIES["ChatMemoryBuffer on PolymemChatStore"]],
    ids=["PolymemMemory", "ChatMemoryBuffer on PolymemChatStore"],
)
async def test_a_saved_and_restored_context_resumes_on_the_same_polymem_session(lexical, scripted, make_memory) -> None:
    llm = scripted.make(tool_name="get_weather", tool_kwargs={"city": "Oslo"}, answer=answer_with_tool_result)
    workflow = AgentWorkflow(agents=[FunctionAgent(name="weather", description="weather", tools=[WEATHER], llm=llm)])
    ctx = Context(workflow)
    await workflow.run("What's the weather in Oslo?", ctx=ctx, memory=make_memory(lexical))

    saved = json.dumps(ctx.to_dict(serializer=JsonSerializer()))
    restored = Context.from_dict(workflow, json.loads(saved), serializer=JsonSerializer())
    await workflow.run("And in Bergen?", ctx=restored)

    memory = await restored.store.get("memory")
    stored_form = JsonSerializer().serialize(memory)
    assert memory.chat_store.memory is lexical
    assert lexical.url in stored_form and "Oslo" not in stored_form
    assert "What's the weather in Oslo?" in scripted.last_prompt_text
    transcript = lexical.session("ann-chat", user_id="ann").transcript()
    assert [m.content for m in transcript if m.role == "user"] == ["What's the weather in Oslo?", "And in Bergen?"]


async def test_a_second_process_reads_the_conversation_an_agent_wrote(db_url, lexical, scripted, tmp_path: Path) -> None:
    agent = FunctionAgent(tools=[WEATHER], llm=scripted.make(tool_name="get_weather", tool_kwargs={"city": "Oslo"}))
    await agent.run("What's the weather in Oslo?", memory=MEMORIES["PolymemMemory"](lexical))
    script = tmp_path / "reader.py"
    script.write_text(
        "import sys\n"
        "from polymem_llamaindex import PolymemMemory\n"
        "memory = PolymemMemory.from_defaults(memory=sys.argv[1], user_id='ann', chat_store_key='ann-chat')\n"
        "print(' '.join(m.role.value for m in memory.get_all()))\n"
    )

    out = subprocess.run(
        [sys.executable, str(script), db_url], capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "POLYMEM_EMBEDDER": "none"},
    )

    assert out.stdout.split() == ["user", "assistant", "tool", "assistant"]


def test_the_same_file_serves_llamaindex_and_plain_polymem_readers(db_url, conversation) -> None:
    with polymem.open(db_url, embedder=None) as mem:
        PolymemChatStore(mem, user_id="ann").set_messages("shared", conversation)
        plain = mem.session("shared", user_id="ann").messages()

    assert [m.content for m in plain] == [m.content or "" for m in conversation]
    assert plain[4].tool_calls[0].name == "search_hotels"
