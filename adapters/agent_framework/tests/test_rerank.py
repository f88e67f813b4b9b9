"""Rerank and query rewriting by an Agent Framework chat client, seen through an `Agent`'s context provider."""

from __future__ import annotations

from agent_framework import Agent
from polymem_af_scripted import ScriptedChatClient

import polymem
from polymem_agent_framework import RECALL_HEADER, ChatClientQueryRewriter, ChatClientReranker, PolymemContextProvider

ALICE = ["Alice is allergic to peanuts", "Alice cooks with peanuts for her guests"]
TASK = "What should I cook for Alice? She has a peanuts allergy."


async def _recalled(store: polymem.Memory, task: str) -> str:
    client = ScriptedChatClient("A chickpea curry.")
    agent = Agent(client, "You are a chef.", context_providers=[
        PolymemContextProvider(store, user_id="alice", remember="none")])
    await agent.run(task)
    return "\n".join(text for text in client.prompt_texts(0) if text.startswith(RECALL_HEADER))


async def test_the_agents_prompt_lists_memories_in_the_reranker_clients_order(db_url: str) -> None:
    with polymem.open(db_url, embedder=None) as plain:
        for text in ALICE:
            plain.save(text, user_id="alice")
        first_stage = [h.memory.content for h in plain.recall(TASK, user_id="alice")]
    judge = ScriptedChatClient("[3, 9]")  # rates recall's two candidates, in recall's order
    with polymem.open(db_url, embedder=None, reranker=ChatClientReranker(judge)) as store:
        recalled = await _recalled(store, TASK)
    assert recalled.index(first_stage[1]) < recalled.index(first_stage[0])
    assert judge.requests[0][0].text == polymem.ChatReranker.SYSTEM


async def test_variants_from_the_client_find_what_the_task_words_miss(db_url: str) -> None:
    flight = "Alice's flight to Oslo leaves at 09:10"
    rewriter = ChatClientQueryRewriter(ScriptedChatClient('["Alice flight Oslo"]'))
    with polymem.open(db_url, embedder=None, query_rewriter=rewriter) as store:
        store.save(flight, user_id="alice")
        recalled = await _recalled(store, "When does she travel?")
    assert flight in recalled


def test_the_reranker_runs_from_sync_code_too() -> None:
    assert ChatClientReranker(ScriptedChatClient("[10, 0]")).rerank("peanuts?", ALICE) == [1.0, 0.0]
