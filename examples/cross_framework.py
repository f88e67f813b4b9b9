"""One memory across frameworks, on the embedded default (an SQLite file), printed step by step.

A LangChain agent talks with user A; then an AutoGen AssistantAgent, a LlamaIndex
FunctionAgent, a Semantic Kernel ChatCompletionAgent, an Agent Framework Agent (and LangChain again), each in
its own process on the same file, are asked about A. Each shows the memories that
reached its model's prompt. Every model is the framework's own offline stand-in.

Run: `python examples/cross_framework.py [path/to/memory.db]` (offline).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import polymem

ROOT = Path(__file__).resolve().parents[1]
READERS = ["autogen", "llamaindex", "semantic_kernel", "agent_framework", "langchain"]
LABELS = {"langchain": "LangChain LLMChain + PolymemMemory", "autogen": "AutoGen AssistantAgent + PolymemMemory",
          "llamaindex": "LlamaIndex FunctionAgent + PolymemMemory",
          "semantic_kernel": "Semantic Kernel ChatCompletionAgent + PolymemPlugin",
          "agent_framework": "Agent Framework Agent + PolymemContextProvider"}
WRITE = [["A", "My name is Xiaoming"], ["A", "I like blue"], ["A", "Please recommend a shirt"],
         ["B", "User B hates promotions"], ["A-zh", "我叫小明"], ["A-zh", "我喜欢蓝色"]]
ASK = [["A", "What do you know about me?"], ["A", "Any suggestions in cool tones?"], ["A", "Do I like promotions?"],
       ["A-zh", "有什么偏冷的色调建议?"], ["A-zh", "小明喜欢蓝色吗?"]]


def open_store(url: str) -> polymem.Memory:
    return polymem.open(url)  # the embedded default: polymem's default embedder


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
                        "reply": result.messages[-1].to_text()})
    return out


def _scripted(adapter: str) -> Any:
    """An adapter's scripted model for its framework (adapters/<adapter>/tests/scripted.py)."""
    loader = importlib.util.spec_from_file_location(f"polymem_{adapter}_scripted",
                                                    ROOT / "adapters" / adapter / "tests" / "scripted.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


# -- Semantic Kernel: a ChatCompletionAgent whose model recalls through PolymemPlugin ------------

async def run_semantic_kernel(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.contents import FunctionResultContent

    from polymem_semantic_kernel import PolymemPlugin

    scripted = _scripted("semantic_kernel")

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


# -- Microsoft Agent Framework: an Agent with PolymemContextProvider ------------------------------

async def run_agent_framework(mem: polymem.Memory, spec: dict[str, Any]) -> list[dict[str, Any]]:
    from agent_framework import Agent

    from polymem_agent_framework import RECALL_HEADER, PolymemContextProvider

    scripted = _scripted("agent_framework")

    out = []
    for kind in ("write", "ask"):
        for user, query in spec.get(kind, []):
            client = scripted.ScriptedChatClient("Here is what I know.")
            memory = PolymemContextProvider(mem, user_id=user, remember="extract" if kind == "write" else "none")
            reply = await Agent(client, name="agent_framework", context_providers=[memory]).run(query)
            injected = [line.split("] ", 1)[1] for text in client.prompt_texts() if text.startswith(RECALL_HEADER)
                        for line in text.splitlines()[1:]]
            out.append({"user": user, "query": query, "injected": injected, "reply": reply.text})
    return out


RUNNERS = {"langchain": run_langchain, "llamaindex": run_llamaindex, "autogen": run_autogen,
           "semantic_kernel": run_semantic_kernel, "agent_framework": run_agent_framework}


def agent_process(framework: str, url: str, spec: dict[str, Any]) -> None:
    """The child: run one framework's agent, print its answers as JSON."""
    with open_store(url) as mem:
        runner = RUNNERS[framework]
        answers = runner(mem, spec)
        if asyncio.iscoroutine(answers):
            answers = asyncio.run(answers)
        mem.flush()
    print(json.dumps(answers, ensure_ascii=False))


def spawn(framework: str, url: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, __file__, "--agent", framework, url, json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def collect(process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise SystemExit(err[-3000:])
    answers: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    return answers


def say(text: str = "") -> None:
    print(text, flush=True)


def show(answer: dict[str, Any]) -> None:
    say(f"    ? [{answer['user']}] {answer['query']}")
    for line in answer["injected"] or ["(no memory injected)"]:
        say(f"        {line.lstrip('- ')}")


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="polymem-demo-")) / "memory.db"
    url = f"sqlite:///{path}"
    started = time.perf_counter()
    with polymem.open(url) as mem:
        model = mem.embedder.model_id if mem.embedder else "none (lexical only)"
    say(f"polymem: one memory across frameworks — store {url}\nembedder: {model}\n")

    say("1. A LangChain agent (LLMChain + PolymemMemory, FakeListLLM) talks with user A; user B says one thing:")
    for answer in collect(spawn("langchain", url, {"write": WRITE})):
        say(f"    [{answer['user']}] {answer['query']}" + (f"   (memories in its prompt: {answer['injected']})"
                                                          if answer["injected"] else ""))
    with polymem.open(url, embedder=None) as mem:
        say("   Long-term memories the store distilled:")
        for record in sorted(mem.list(limit=100), key=lambda r: (r.user_id or "", r.created_at)):
            say(f"    + user {record.user_id:5} [{record.category:10}] {record.content!r} (agent {record.agent_id})")

    say("\n2. Five agents, each in its own process on the same file, are asked about user A")
    say("   (what reached each model's prompt is printed under each question):")
    running = [(name, spawn(name, url, {"ask": ASK, "autogen_min_relevance": 0.0})) for name in READERS]
    for name, process in running:
        say(f"\n  {LABELS[name]} (pid {process.pid}):")
        for answer in collect(process):
            show(answer)

    say("\n3. Isolation: user B's 'User B hates promotions' never reached a prompt for user A (asked above:")
    say("   'Do I like promotions?'). Chinese: exact words (蓝色, 小明) are found by the full-text index. A Chinese")
    say("   question without them still brings A-zh's memories only because all-MiniLM-L6-v2 maps most Chinese")
    say("   characters to [UNK] (all Chinese text looks alike to it): real Chinese or cross-lingual semantic")
    say("   recall needs a multilingual embedder, e.g. paraphrase-multilingual-MiniLM-L12-v2.")
    say(f"\ndone in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--agent":
        agent_process(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
    else:
        main()
