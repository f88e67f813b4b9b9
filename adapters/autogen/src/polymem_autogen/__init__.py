"""polymem for AutoGen AgentChat: one memory every framework reads and writes.

- `PolymemMemory` — an `autogen_core.memory.Memory` component: recalls
  relevant long-term memories into the agent's context before each model
  call, and `capture`s finished runs into working and long-term memory.
- `PolymemChatCompletionContext` — a `ChatCompletionContext` kept in a
  polymem working-memory session, so a conversation survives the process.
- `ChatCompletionExtractor` / `ChatCompletionSummarizer` / `ChatCompletionReranker` /
  `ChatCompletionQueryRewriter` — polymem's extractor, summarizer, reranker and
  query rewriter, answered by any AutoGen `ChatCompletionClient`.
- `to_polymem_messages` / `from_polymem_messages` — lossless conversion of
  AutoGen's LLM messages; `task_messages_to_polymem` for a run's messages.

Example (offline: a replayed model, lexical-only store in memory):

>>> import asyncio, polymem
>>> from autogen_agentchat.agents import AssistantAgent
>>> from autogen_ext.models.replay import ReplayChatCompletionClient
>>> from polymem_autogen import PolymemMemory
>>> async def main() -> str:
...     mem = polymem.open("memory://", embedder=None)
...     memory = PolymemMemory(mem, user_id="alice")
...     mem.save("Alice is allergic to peanuts", user_id="alice", category="fact")
...     agent = AssistantAgent(
...         "chef",
...         model_client=ReplayChatCompletionClient(["No peanuts, then."]),
...         memory=[memory],
...     )
...     result = await agent.run(task="Suggest a snack for Alice, who has a peanuts allergy")
...     recalled = result.messages[1]          # the MemoryQueryEvent
...     return recalled.content[0].content
>>> asyncio.run(main())
'Alice is allergic to peanuts'
"""

from ._context import PolymemChatCompletionContext, PolymemChatCompletionContextConfig
from ._convert import (
    RecalledMemoriesMessage,
    from_polymem_messages,
    task_messages_to_polymem,
    to_polymem_messages,
)
from ._llm import (
    ChatCompletionExtractor,
    ChatCompletionQueryRewriter,
    ChatCompletionReranker,
    ChatCompletionSummarizer,
)
from ._memory import PolymemMemory, PolymemMemoryConfig

__all__ = [
    "ChatCompletionExtractor",
    "ChatCompletionQueryRewriter",
    "ChatCompletionReranker",
    "ChatCompletionSummarizer",
    "PolymemChatCompletionContext",
    "PolymemChatCompletionContextConfig",
    "PolymemMemory",
    "PolymemMemoryConfig",
    "RecalledMemoriesMessage",
    "from_polymem_messages",
    "task_messages_to_polymem",
    "to_polymem_messages",
]
