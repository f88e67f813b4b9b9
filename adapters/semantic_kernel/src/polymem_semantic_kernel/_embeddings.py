"""`SemanticKernelEmbedder`: a Semantic Kernel embedding service as polymem's `Embedder`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from semantic_kernel.connectors.ai.embedding_generator_base import EmbeddingGeneratorBase

import polymem


class SemanticKernelEmbedder:
    """Makes any `EmbeddingGeneratorBase` usable as polymem's embedder.

        store = polymem.open("sqlite:///memory.db", embedder=SemanticKernelEmbedder(service))

    `model_id` defaults to the service's `ai_model_id` (the vector space
    polymem records next to every vector); `dimension` is read from the model
    by embedding one probe text, unless given. polymem's protocol is
    synchronous, so the service runs on a private event loop thread, the same
    one for every call.
    """

    def __init__(
        self,
        service: EmbeddingGeneratorBase,
        *,
        model_id: str | None = None,
        dimension: int | None = None,
        settings: Any = None,
    ) -> None:
        self._service = service
        self._model_id = model_id or service.ai_model_id
        self._dimension = dimension
        self._settings = settings
        self._loop = polymem.LoopThread("polymem-sk-embedder")

    @property
    def service(self) -> EmbeddingGeneratorBase:
        """The wrapped Semantic Kernel service."""
        return self._service

    @property
    def model_id(self) -> str:
        """The vector space's name: the service's model id unless overridden."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The vector length, read from the model once."""
        if self._dimension is None:
            self._dimension = len(self.embed(["dimension probe"])[0])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        if not texts:
            return []
        batch = list(texts)
        vectors = self._loop.run(lambda: self._service.generate_embeddings(batch, self._settings))
        return [[float(x) for x in row] for row in vectors]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """`embed` for callers already on an event loop (calls the service directly)."""
        if not texts:
            return []
        vectors = await self._service.generate_embeddings(list(texts), self._settings)
        return [[float(x) for x in row] for row in vectors]
