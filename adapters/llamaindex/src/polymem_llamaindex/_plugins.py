"""LlamaIndex models as polymem plug-ins: an `Embedder`, an `Extractor`, a `Summarizer`, a `Reranker`, a `QueryRewriter`."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM

import polymem


class LlamaIndexEmbedder:
    """A LlamaIndex `BaseEmbedding` as polymem's `Embedder`.

    `polymem.open(url, embedder=LlamaIndexEmbedder(embed_model))` embeds memories
    with the model a LlamaIndex application already configured. `model_id` names
    the vector space (class and model name), and `dimension` is measured once by
    embedding a probe text, never assumed.
    """

    def __init__(self, embed_model: BaseEmbedding, *, model_id: str | None = None) -> None:
        self.embed_model = embed_model
        self._model_id = model_id or f"llama_index/{embed_model.class_name()}/{embed_model.model_name}"
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        """The vector space's name: `llama_index/<class>/<model_name>` unless given."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Length of the model's vectors, measured on first use."""
        if self._dimension is None:
            self._dimension = len(self.embed_model.get_text_embedding("polymem dimension probe"))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts in one batch call of the LlamaIndex model."""
        if not texts:
            return []
        vectors = self.embed_model.get_text_embedding_batch(list(texts))
        return [list(map(float, vector)) for vector in vectors]

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self._model_id!r})"


class _Chat:
    """polymem's `ChatModel` on a LlamaIndex `LLM`: a system and a user message in, the reply's text out."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    @staticmethod
    def _messages(system: str, prompt: str) -> list[ChatMessage]:
        return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=prompt)]

    def complete(self, system: str, prompt: str) -> str:
        return self.llm.chat(self._messages(system, prompt)).message.content or ""

    async def acomplete(self, system: str, prompt: str) -> str:
        return (await self.llm.achat(self._messages(system, prompt))).message.content or ""


class LlamaIndexExtractor(polymem.ChatExtractor):
    """A LlamaIndex `LLM` as polymem's `Extractor`: conversation in, memory drafts out
    (polymem's `ChatExtractor`: its prompt, its JSON parsing, its error rule).

    `source` tags every draft (an LLM's reading of a conversation is an inference unless
    you decide otherwise). A reply with no JSON list of memories raises
    `polymem.ModelAnswerError`; nothing is written.
    """

    def __init__(self, llm: LLM, *, prompt: str = polymem.ChatExtractor.SYSTEM, source: str = "inference") -> None:
        super().__init__(_Chat(llm), system=prompt, source=source)
        self.llm = llm
        self.prompt = prompt


class LlamaIndexSummarizer(polymem.ChatSummarizer):
    """A LlamaIndex `LLM` as polymem's `Summarizer` of working-memory overflow (polymem's `ChatSummarizer`).

    polymem checks every summary keeps the numbers and units of what it
    replaces, and keeps the raw text when it does not.
    """

    def __init__(self, llm: LLM, *, prompt: str = polymem.ChatSummarizer.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=prompt)
        self.llm = llm
        self.prompt = prompt


class LlamaIndexReranker(polymem.ChatReranker):
    """A LlamaIndex `LLM` as polymem's `Reranker`: it rates each candidate 0–10 (the prompt and
    the parsing are polymem's). `polymem.open(url, reranker=LlamaIndexReranker(llm))`."""

    def __init__(self, llm: LLM, *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


class LlamaIndexQueryRewriter(polymem.ChatQueryRewriter):
    """A LlamaIndex `LLM` as polymem's `QueryRewriter`: `polymem.open(url, query_rewriter=LlamaIndexQueryRewriter(llm))`."""

    def __init__(self, llm: LLM, *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)
