"""Run one framework's own agent loop on a polymem store, in this process, and report what its model saw.

    python agents.py FRAMEWORK STORE_URL SPEC_JSON

FRAMEWORK is langchain, llamaindex, autogen or semantic_kernel. SPEC_JSON is a file:
{"write": [[user, text], ...], "ask": [[user, query], ...]} (and optionally
"autogen_min_relevance", passed to `polymem_autogen.PolymemMemory`). `write` turns are a
conversation with the framework's agent (its memory distils them); each `ask` runs
the agent once on a fresh conversation. Prints one JSON line:
{"framework": ..., "answers": [{"user", "query", "injected", "reply"}]}, where
`injected` is the memory text that reached the (fake) model's prompt.

Every model is the framework's own offline stand-in: LangChain `FakeListLLM`,
LlamaIndex `MockFunctionCallingLLM`, AutoGen `ReplayChatCompletionClient`,
Semantic Kernel a scripted `ChatCompletionClientBase` (adapters/semantic_kernel/tests/scripted.py).
The MiniLM model is loaded once per process (`polymem.testing.local_embedder`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import polymem
from polymem.testing import local_embedder

ROOT = Path(__file__).resolve().parents[2]


def open_store(url: str) -> polymem.Memory:
    if url.startswith("http"):  # the service embeds; its client needs no model
        return polymem.open(url)
    embedder = None if url.endswith("#lexical") else local_embedder()
    return polymem.open(url.removesuffix("#lexical"), embedder=embedder)


# -- LangChain: an LLMChain with PolymemMemory (classic BaseMemory) ------------------------------

def run_langchain(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from langchain_classic.chains import LLMChain
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate

    from polymem_langchain import PolymemMemory

    prompt = PromptTemplate.from_template("Known about the user:\n{history}\n\nHuman: {input}\nAI:")

    class Prompts(BaseCallbackHandler):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
            self.seen.extend(prompts)

    def chain(user: str, session: str, replies: list[str], seen: Prompts) -> Any:
        llm = FakeListLLM(responses=replies, callbacks=[seen])
        return LLMChain(llm=llm, prompt=prompt, memory=PolymemMemory(store=mem, user_id=user, agent_id="langchain",
                                                                      session_id=session))

    out = []
    writers: dict[str, Any] = {}
    for user, text in spec.get("write", []):
        seen = Prompts()
        if user not in writers:
            writers[user] = chain(user, f"langchain-{user}", ["Noted."] * 20, seen)
        writers[user].llm.callbacks = [seen]
        reply = writers[user].invoke({"input": text})["text"]
        out.append({"user": user, "query": text, "injected": _lc_memories(seen.seen[-1]), "reply": reply})
    for user, query in spec.get("ask", []):
        seen = Prompts()
        reply = chain(user, f"langchain-ask-{uuid.uuid4()}", ["Here is what I know."], seen).invoke({"input": query})
        out.append({"user": user, "query": query, "injected": _lc_memories(seen.seen[-1]), "reply": reply["text"]})
    return out


def _lc_memories(prompt: str) -> list[str]:
    block = prompt.split("Known about the user:\n", 1)[1].split("\n\nHuman:", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


# -- LlamaIndex: a FunctionAgent with PolymemMemory ----------------------------------------------

async def run_llamaindex(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from polymem_llamaindex import PolymemMemory

    prompts: list[list[ChatMessage]] = []

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        prompts.append(list(messages))
        return ChatMessage(role="assistant", content="Here is what I know.")

    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=respond),
                          system_prompt="You are a helpful shop assistant.")
    out = []
    for kind in ("write", "ask"):
        for user, query in spec.get(kind, []):
            key = f"llamaindex-{user}" if kind == "write" else f"llamaindex-ask-{uuid.uuid4()}"
            memory = PolymemMemory.from_defaults(memory=mem, user_id=user, chat_store_key=key)
            reply = await agent.run(query, memory=memory)
            injected = [str(m.content) for m in prompts[-1] if "Long-term memories" in str(m.content)]
            out.append({"user": user, "query": query, "injected": _lines(injected), "reply": str(reply)})
    return out


def _lines(blocks: list[str]) -> list[str]:
    return [line for block in blocks for line in block.splitlines()[1:] if line.strip()]


# -- AutoGen: an AssistantAgent with PolymemMemory -----------------------------------------------

async def run_autogen(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.models import SystemMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from polymem_autogen import PolymemMemory

    out = []
    for kind in ("write", "ask"):
        for user, query in spec.get(kind, []):
            client = ReplayChatCompletionClient(["Here is what I know."])
            options = {"min_relevance": spec["autogen_min_relevance"]} if "autogen_min_relevance" in spec else {}
            memory = PolymemMemory(mem, user_id=user, agent_id="autogen", **options)
            agent = AssistantAgent("assistant", model_client=client, memory=[memory])
            result = await agent.run(task=query)
            if kind == "write":
                await memory.capture(result)
            injected = [m.content for m in client.create_calls[0]["messages"]
                        if isinstance(m, SystemMessage) and m.content.startswith("Relevant memories")]
            out.append({"user": user, "query": query, "injected": _lines(injected),
                        "reply": str(result.messages[-1].content)})
    return out


# -- Semantic Kernel: a ChatCompletionAgent whose model recalls through PolymemPlugin ------------

async def run_semantic_kernel(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.contents import FunctionResultContent

    from polymem_semantic_kernel import PolymemPlugin

    path = ROOT / "adapters" / "semantic_kernel" / "tests" / "scripted.py"
    loader = importlib.util.spec_from_file_location("polymem_sk_scripted", path)
    assert loader is not None and loader.loader is not None
    scripted = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(scripted)

    def recall_then_answer(history: Any) -> Any:
        question = next(m.content for m in reversed(history.messages) if m.role.value == "user")
        return scripted.call(("memory-recall", {"query": question}))

    if spec.get("write"):
        raise SystemExit("semantic_kernel only answers here (its agent writes through the model's memory-save calls)")
    out = []
    for user, query in spec.get("ask", []):
        service = scripted.ScriptedChatCompletion([recall_then_answer, "Here is what I know."])
        kernel = Kernel()
        kernel.add_plugin(PolymemPlugin(mem, user_id=user, agent_id="semantic_kernel"), "memory")
        agent = ChatCompletionAgent(kernel=kernel, service=service, name="helper", instructions="You help.")
        reply = await agent.get_response(messages=query)
        results = [str(i.result) for m in service.seen[-1].messages for i in m.items
                   if isinstance(i, FunctionResultContent)]
        injected = [line.split("] ", 1)[1] for r in results for line in r.splitlines() if "] " in line]
        out.append({"user": user, "query": query, "injected": injected, "reply": str(reply)})
    return out


def main() -> None:
    framework, url, spec_path = sys.argv[1:4]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    with open_store(url) as mem:
        runner = {"langchain": run_langchain, "llamaindex": run_llamaindex, "autogen": run_autogen,
                  "semantic_kernel": run_semantic_kernel}[framework]
        answers = runner(mem, spec)
        if asyncio.iscoroutine(answers):
            answers = asyncio.run(answers)
        mem.flush()
    print(json.dumps({"framework": framework, "answers": answers}, ensure_ascii=False))


if __name__ == "__main__":
    main()
