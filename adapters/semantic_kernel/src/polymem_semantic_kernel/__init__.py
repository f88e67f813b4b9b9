"""polymem for Semantic Kernel: one memory shared with every other agent framework.

Long-term memory as a plugin, working memory as an agent thread that resumes
in another process, kernel filters that capture tool results and user turns
and bring relevant memories back into prompts, a chat completion wrapper that
brings them to agents too, Semantic Kernel's
`MemoryStoreBase` on polymem, and Semantic Kernel services as polymem's
embedder, extractor, summarizer, reranker and query rewriter.

>>> import asyncio, polymem
>>> from semantic_kernel import Kernel
>>> from polymem_semantic_kernel import PolymemPlugin
>>> store = polymem.open("memory://", embedder=None)
>>> kernel = Kernel()
>>> plugin = kernel.add_plugin(PolymemPlugin(store, user_id="ann"), "memory")
>>> _ = asyncio.run(kernel.invoke(plugin_name="memory", function_name="save", content="Ann drinks green tea"))
>>> print(asyncio.run(kernel.invoke(plugin_name="memory", function_name="recall", query="tea")))  # doctest: +ELLIPSIS
1. [...] Ann drinks green tea (fact, score ...)
"""

from ._chat_completion import PolymemChatCompletion
from ._convert import from_polymem, from_polymem_all, to_polymem, to_polymem_all
from ._embeddings import SemanticKernelEmbedder
from ._filters import PolymemMemoryFilter
from ._llm import (
    SemanticKernelExtractor,
    SemanticKernelQueryRewriter,
    SemanticKernelReranker,
    SemanticKernelSummarizer,
)
from ._memory_store import PolymemMemoryStore
from ._plugin import PolymemPlugin, format_hits
from ._thread import PolymemChatHistoryAgentThread

__version__ = "0.1.0"

__all__ = [
    "PolymemChatCompletion",
    "PolymemChatHistoryAgentThread",
    "PolymemMemoryFilter",
    "PolymemMemoryStore",
    "PolymemPlugin",
    "SemanticKernelEmbedder",
    "SemanticKernelExtractor",
    "SemanticKernelQueryRewriter",
    "SemanticKernelReranker",
    "SemanticKernelSummarizer",
    "format_hits",
    "from_polymem",
    "from_polymem_all",
    "to_polymem",
    "to_polymem_all",
]
