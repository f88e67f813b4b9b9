"""polymem for LangChain and LangGraph: drop-in memory classes over one polymem store.

Each class takes a polymem store (`polymem.open(...)` or `polymem.open_async(...)`,
an SQLite file, in-process, or remote) and the scope it writes to. Only
translation lives here; storage, scoring and recall are polymem's.

>>> import polymem
>>> from langchain_core.messages import AIMessage, HumanMessage
>>> from polymem_langchain import PolymemChatMessageHistory, PolymemRetriever
>>> mem = polymem.open("memory://", embedder=None)
>>> history = PolymemChatMessageHistory(mem, "chat-1", user_id="ann")
>>> history.add_messages([HumanMessage("I live in Lyon"), AIMessage("Noted!")])
>>> [m.content for m in history.messages]
['I live in Lyon', 'Noted!']
>>> _ = mem.save("Ann lives in Lyon", user_id="ann")
>>> [d.page_content for d in PolymemRetriever(store=mem, user_id="ann").invoke("Lyon")]
['Ann lives in Lyon']

- `PolymemChatMessageHistory`: `BaseChatMessageHistory` for `RunnableWithMessageHistory`
  and the classic `ConversationBufferMemory` & co. (`chat_memory=`).
- `PolymemMemory`: a classic `BaseMemory` giving a chain long-term memory.
- `PolymemVectorStore`, `PolymemRetriever`: retrieval over long-term memory.
- `PolymemStore`: LangGraph's `BaseStore` (`graph.compile(store=...)`).
- `PolymemEmbeddings`, `LangChainEmbedder`: embeddings both ways.
- `ChatModelExtractor`, `ChatModelSummarizer`: polymem's extraction and summary by a chat model.
"""

from ._chain_memory import PolymemMemory
from ._convert import to_langchain, to_polymem
from ._embeddings import LangChainEmbedder, PolymemEmbeddings
from ._graph_store import PolymemStore
from ._history import MessageWindow, PolymemChatMessageHistory
from ._llm import ChatModelExtractor, ChatModelQueryRewriter, ChatModelReranker, ChatModelSummarizer
from ._vectorstore import PolymemRetriever, PolymemVectorStore

__version__ = "0.1.0"

__all__ = [
    "ChatModelExtractor",
    "ChatModelQueryRewriter",
    "ChatModelReranker",
    "ChatModelSummarizer",
    "LangChainEmbedder",
    "MessageWindow",
    "PolymemChatMessageHistory",
    "PolymemEmbeddings",
    "PolymemMemory",
    "PolymemRetriever",
    "PolymemStore",
    "PolymemVectorStore",
    "__version__",
    "to_langchain",
    "to_polymem",
]
