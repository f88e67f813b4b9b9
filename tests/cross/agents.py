"""Run one framework's own agent loop on a polymem store, in this process, and report what its model saw.

    python agents.py FRAMEWORK STORE_URL SPEC_JSON

FRAMEWORK is langchain, llamaindex, autogen, semantic_kernel or agent_framework. SPEC_JSON is a file:
{"write": [[user, text], ...], "ask": [[user, query], ...]} (and optionally
"autogen_min_relevance", passed to `polymem_autogen.PolymemMemory`). `write` turns are a
conversation with the framework's agent (its memory distils them); each `ask` runs
the agent once on a fresh conversation. Prints one JSON line:
{"framework": ..., "answers": [{"user", "query", "injected", "reply"}]}, where
`injected` is the memory text that reached the (fake) model's prompt.

Every model is the framework's own offline stand-in: LangChain `FakeListLLM`,
LlamaIndex `MockFunctionCallingLLM`, AutoGen `ReplayChatCompletionClient`,
Semantic Kernel a scripted `ChatCompletionClientBase` (adapters/semantic_kernel/tests/scripted.py),
Agent Framework a scripted `BaseChatClient` (adapters/agent_framework/tests/scripted.py).
The MiniLM model is loaded once per process (`polymem.testing.local_embedder`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import polymem
from polymem.testing import local_embedder

ROOT = Path(__file__).resolve().parents[2]


def open_store(url: str) -> polymem.Memory:
    if url.startswith("http"):  # the service embeds; its client needs no model
        return polymem.open(url)
    embedder = None if url.endswith("#lexical") else local_embedder()
    return polymem.open(url.removesuffix("#lexical"), embedder=embedder)


# The agent runners are the example's own (examples/cross_framework.py): one copy, so the
# story `make demo` prints is exactly what these tests check.
_spec = importlib.util.spec_from_file_location("cross_framework_example", ROOT / "examples" / "cross_framework.py")
assert _spec and _spec.loader
_example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_example)
RUNNERS = _example.RUNNERS


def main() -> None:
    framework, url, spec_path = sys.argv[1:4]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    with open_store(url) as mem:
        runner = RUNNERS[framework]
        answers = runner(mem, spec)
        if asyncio.iscoroutine(answers):
            answers = asyncio.run(answers)
        mem.flush()
    print(json.dumps({"framework": framework, "answers": answers}, ensure_ascii=False))


if __name__ == "__main__":
    main()
