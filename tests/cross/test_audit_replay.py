"""An AutoGen agent's past recall, replayed after the memory changed.

A real `AssistantAgent` loop (AutoGen's `ReplayChatCompletionClient` as its model) recalls
through `polymem_autogen.PolymemMemory` from a `polymem serve` service over HTTP. The user
then changes their mind and the memory is updated and deleted; the service's audit replay
still shows, verified against the hash chain, the very memory the agent's model was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

import polymem
from polymem._http import HttpTransport
from polymem.server import Service, create_app
from polymem.testing import local_embedder


async def _ask(store: Any, question: str) -> list[str]:
    """One AutoGen agent run; the memory lines its model was given."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.models import SystemMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from polymem_autogen import PolymemMemory

    client = ReplayChatCompletionClient(["Noted."])
    agent = AssistantAgent("assistant", model_client=client, memory=[PolymemMemory(store, user_id="ann")])
    await agent.run(task=question)
    injected = [m.content for m in client.create_calls[0]["messages"]
                if isinstance(m, SystemMessage) and m.content.startswith("Relevant memories")]
    return [line for block in injected for line in str(block).splitlines()[1:] if line.strip()]


async def test_an_autogen_agents_past_recall_is_replayed_after_the_memory_changed(tmp_path: Path) -> None:
    service = Service(f"sqlite:///{tmp_path / 'store.db'}", embedder=local_embedder())
    _, token = service.tokens.create_token("agent", "default", ["read", "write", "admin"])
    store = polymem.AsyncMemory(HttpTransport("http://polymem.test", token, asynchronous=True,
                                              transport=httpx.ASGITransport(app=create_app(service))))
    try:
        colour = await store.save("Ann's favourite colour is blue", user_id="ann", category="preference")
        await store.save("Ann works as a graphic designer", user_id="ann")
        before = await _ask(store, "Which colour should Ann's new logo be?")
        assert any("blue" in line for line in before)
        entry = next(e for e in reversed(service.audit.entries()) if e["action"] == "recall")

        await store.update(colour.memory_id, content="Ann's favourite colour is now black")
        after = await _ask(store, "Which colour should Ann's new logo be?")
        assert any("black" in line for line in after) and not any("blue" in line for line in after)
        await store.delete(colour.memory_id)

        report = await store.audit_replay(entry["seq"])
        assert report["verified"] and report["chain_ok"]
        given = {m["memory"]["content"]: m for m in report["memories"]}
        assert given["Ann's favourite colour is blue"]["version"] == 1
        assert all(any(content in line for line in before) for content in given)  # exactly what the model saw
    finally:
        await store.close()
        await service.aclose()
        service.close_sync()
