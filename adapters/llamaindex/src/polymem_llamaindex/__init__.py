"""polymem for LlamaIndex: chat stores, memory and memory blocks on one shared memory.

- `PolymemChatStore`: a `BaseChatStore` (for `ChatMemoryBuffer`), one polymem session per key.
- `PolymemAsyncChatStore`: an `AsyncDBChatStore` (for `Memory`): ACTIVE = window, ARCHIVED = the rest.
- `PolymemMemoryBlock`: a `Memory` block; flushed messages become long-term memories, `get` recalls them.
- `PolymemMemory`: a `ChatMemoryBuffer` drop-in that also injects relevant long-term memories.
- `LlamaIndexEmbedder`, `LlamaIndexExtractor`, `LlamaIndexSummarizer`, `LlamaIndexReranker`,
  `LlamaIndexQueryRewriter`: LlamaIndex models as polymem plug-ins.

Example (offline; `embedder=None` is polymem's lexical-only mode):

>>> import polymem
>>> from llama_index.core.llms import ChatMessage
>>> from polymem_llamaindex import PolymemMemory
>>> mem = polymem.open("memory://", embedder=None)
>>> _ = mem.save("Ann's flight to Oslo leaves at 07:40.", user_id="ann", agent_id="autogen-planner")
>>> memory = PolymemMemory.from_defaults(memory=mem, user_id="ann", chat_store_key="ann-chat", token_limit=2000)
>>> memory.put(ChatMessage(role="user", content="When does my flight to Oslo leave?"))
>>> print(memory.get()[0].content)
Long-term memories relevant to this conversation:
- Ann's flight to Oslo leaves at 07:40.

Importing this package also registers `PolymemChatStore` with LlamaIndex's chat
store loader, so a plain `ChatMemoryBuffer` on it survives `to_dict`/`from_dict`.
"""

from typing import cast

from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.loading import RECOGNIZED_CHAT_STORES

from ._chat_store import PolymemAsyncChatStore, PolymemChatStore
from ._convert import UnsupportedContentError, from_polymem, to_polymem
from ._memory import PolymemMemory, PolymemMemoryBlock
from ._plugins import (
    LlamaIndexEmbedder,
    LlamaIndexExtractor,
    LlamaIndexQueryRewriter,
    LlamaIndexReranker,
    LlamaIndexSummarizer,
)

# (`load_chat_store` rebuilds any chat store it names; its registry is typed for the one it ships)
cast("dict[str, type[BaseChatStore]]", RECOGNIZED_CHAT_STORES).setdefault(PolymemChatStore.class_name(), PolymemChatStore)

__version__ = "0.1.0"

__all__ = [
    "LlamaIndexEmbedder",
    "LlamaIndexExtractor",
    "LlamaIndexQueryRewriter",
    "LlamaIndexReranker",
    "LlamaIndexSummarizer",
    "PolymemAsyncChatStore",
    "PolymemChatStore",
    "PolymemMemory",
    "PolymemMemoryBlock",
    "UnsupportedContentError",
    "__version__",
    "from_polymem",
    "to_polymem",
]
