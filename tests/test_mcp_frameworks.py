"""The frameworks' own MCP loaders in their own agent loops, with scripted models, on one store:
a LangGraph agent (langchain-mcp-adapters) saves, an AutoGen agent (autogen-ext's McpWorkbench)
recalls it and saves more, and a LlamaIndex agent reads both through its polymem adapter."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import polymem


def server_args(url: str, source: str) -> list[str]:
    return ["-m", "polymem.cli", "mcp", "--url", url, "--no-embedder", "--source", source]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


async def langgraph_saves(url: str) -> list[Any]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langgraph.prebuilt import create_react_agent

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    client = MultiServerMCPClient({"polymem": {"transport": "stdio", "command": sys.executable,
                                               "args": server_args(url, "mcp:langgraph"), "env": child_env()}})
    tools = await client.get_tools()
    assert {"save_memory", "recall_memories"} <= {t.name for t in tools}
    model = ScriptedModel(messages=iter([
        AIMessage(content="", tool_calls=[{"id": "call-1", "name": "save_memory", "args": {
            "content": "Ann is allergic to peanuts", "user_id": "ann", "category": "fact"}}]),
        AIMessage(content="Noted: no peanuts for Ann."),
    ]))
    agent = create_react_agent(model, tools)
    state = await agent.ainvoke({"messages": [("user", "Remember that I'm allergic to peanuts.")]})
    return list(state["messages"])


async def autogen_recalls_and_saves(url: str) -> list[Any]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, ModelInfo, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient
    from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams

    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    calls = [FunctionCall(id="c1", name="recall_memories", arguments=json.dumps({"query": "peanuts", "user_id": "ann"})),
             FunctionCall(id="c2", name="save_memory", arguments=json.dumps(
                 {"content": "Ann's favourite dessert is lemon tart", "user_id": "ann", "category": "preference"}))]
    model = ReplayChatCompletionClient(
        [CreateResult(finish_reason="function_calls", content=calls, usage=usage, cached=False),
         "Lemon tart it is, and no peanuts."],
        model_info=ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown",
                             structured_output=False))
    params = StdioServerParams(command=sys.executable, args=server_args(url, "mcp:autogen"), env=child_env(), read_timeout_seconds=30)
    async with McpWorkbench(params) as workbench:
        assert "recall_memories" in {t["name"] for t in await workbench.list_tools()}
        agent = AssistantAgent("assistant", model_client=model, workbench=workbench, reflect_on_tool_use=True)
        result = await agent.run(task="What should I bake for Ann?")
    return list(result.messages)


async def llamaindex_reads(url: str) -> list[str]:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from polymem_llamaindex import PolymemMemory

    prompts: list[str] = []

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        prompts.extend(str(m.content) for m in messages)
        return ChatMessage(role="assistant", content="Lemon tart, no peanuts.")

    with polymem.open(url, embedder=None) as mem:
        agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=respond))
        memory = PolymemMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="llamaindex-ann")
        await agent.run("Ann's dessert and her peanuts allergy?", memory=memory)
    return prompts


async def test_three_frameworks_share_one_memory_through_mcp(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    lg = await langgraph_saves(url)
    tool_messages = [m for m in lg if getattr(m, "type", "") == "tool"]
    assert len(tool_messages) == 1 and tool_messages[0].status == "success"
    content = tool_messages[0].content
    texts = [b["text"] for b in content if isinstance(b, dict)] if isinstance(content, list) else [content]
    record = json.loads(texts[0])  # the tool's text is the record's JSON
    assert record["content"] == "Ann is allergic to peanuts" and record["source"] == "mcp:langgraph"
    assert lg[-1].content == "Noted: no peanuts for Ann."

    ag = await autogen_recalls_and_saves(url)
    results = [r for m in ag if type(m).__name__ == "ToolCallExecutionEvent" for r in m.content]
    assert len(results) == 2 and not any(r.is_error for r in results)
    assert "Ann is allergic to peanuts" in results[0].content  # AutoGen recalls what LangGraph saved

    with polymem.open(url, embedder=None) as mem:
        sources = {r.content: r.source for r in mem.list(user_id="ann")}
    assert sources == {"Ann is allergic to peanuts": "mcp:langgraph",
                       "Ann's favourite dessert is lemon tart": "mcp:autogen"}

    prompts = "\n".join(await llamaindex_reads(url))
    assert "Ann is allergic to peanuts" in prompts and "lemon tart" in prompts
