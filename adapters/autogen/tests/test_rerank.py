"""Rerank and query rewriting by an AutoGen model client, seen through AutoGen's own agent loop."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import SystemMessage

import polymem
from polymem_autogen import ChatCompletionQueryRewriter, ChatCompletionReranker, PolymemMemory

ALICE = ["Alice is allergic to peanuts", "Alice cooks with peanuts for her guests"]
TASK = "What should I cook for Alice? She has a peanuts allergy."


async def _fill(memory: PolymemMemory) -> None:
    for text in ALICE:
        await memory.add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT))


@pytest.mark.asyncio
async def test_an_agents_memory_comes_in_the_reranker_models_order(db_url: str, replay: Any) -> None:
    with polymem.open(db_url, embedder=None) as plain:
        await _fill(PolymemMemory(plain, user_id="alice"))
        first_stage = [h.memory.content for h in plain.recall(TASK, user_id="alice")]
    judge = replay("[3, 9]")  # rates recall's two candidates, in recall's order
    with polymem.open(db_url, embedder=None, reranker=ChatCompletionReranker(judge)) as mem:
        agent = AssistantAgent("chef", model_client=replay("A chickpea curry."), memory=[PolymemMemory(mem, user_id="alice")])
        result = await agent.run(task=TASK)
    (event,) = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert [c.content for c in event.content] == [first_stage[1], first_stage[0]]
    (asked,) = judge.create_calls
    system = [m.content for m in asked["messages"] if isinstance(m, SystemMessage)]
    assert system == [polymem.ChatReranker.SYSTEM]


@pytest.mark.asyncio
async def test_query_variants_from_the_model_client_find_what_the_task_words_miss(db_url: str, replay: Any) -> None:
    flight = "Alice's flight to Oslo leaves at 09:10"
    task = "When does she travel?"
    runs = []
    for rewriter in (None, ChatCompletionQueryRewriter(replay('["Alice flight Oslo"]'))):
        with polymem.open(db_url, embedder=None, query_rewriter=rewriter) as mem:
            memory = PolymemMemory(mem, user_id="alice")
            await memory.add(MemoryContent(content=flight, mime_type=MemoryMimeType.TEXT))
            agent = AssistantAgent("planner", model_client=replay("At 09:10."), memory=[memory])
            result = await agent.run(task=task)
        runs.append([c.content for m in result.messages if isinstance(m, MemoryQueryEvent) for c in m.content])
    assert runs == [[], [flight]]


def test_the_reranker_runs_from_sync_code_too(replay: Any) -> None:
    reranker = ChatCompletionReranker(replay("[10, 0]"))
    assert reranker.rerank("peanuts?", ALICE) == [1.0, 0.0]
