"""polymem for Microsoft Agent Framework: one memory every framework reads and writes.

- `PolymemContextProvider` — a `ContextProvider`: before a run, recalls the
  user's long-term memories relevant to the new messages into the prompt;
  after it, captures the turn into the user's session and long-term memory.
- `PolymemHistoryProvider` — a `HistoryProvider` keeping the conversation in a
  polymem working-memory session: a drop-in for `InMemoryHistoryProvider`
  that resumes in another process from the session id alone.
- `ChatClientExtractor` / `ChatClientSummarizer` / `ChatClientReranker` /
  `ChatClientQueryRewriter` — polymem's extractor, summarizer, reranker and
  query rewriter, answered by any Agent Framework chat client.
- `to_polymem` / `from_polymem` (and their `_all` forms) — lossless message conversion.

Example (offline: a lexical-only store in memory):

>>> import asyncio, polymem
>>> from agent_framework import Message
>>> from polymem_agent_framework import PolymemHistoryProvider
>>> async def main() -> list[str]:
...     history = PolymemHistoryProvider(polymem.open("memory://", embedder=None), user_id="alice")
...     await history.save_messages("trip-1", [Message("user", ["Book Oslo"]), Message("assistant", ["Done."])])
...     return [m.text for m in await history.get_messages("trip-1")]
>>> asyncio.run(main())
['Book Oslo', 'Done.']
"""

from ._convert import RECALL_HEADER, from_polymem, from_polymem_all, to_polymem, to_polymem_all
from ._llm import ChatClientExtractor, ChatClientQueryRewriter, ChatClientReranker, ChatClientSummarizer
from ._providers import PolymemContextProvider, PolymemHistoryProvider

__all__ = [
    "ChatClientExtractor",
    "ChatClientQueryRewriter",
    "ChatClientReranker",
    "ChatClientSummarizer",
    "PolymemContextProvider",
    "PolymemHistoryProvider",
    "RECALL_HEADER",
    "from_polymem",
    "from_polymem_all",
    "to_polymem",
    "to_polymem_all",
]
