"""Embeddings both ways: LangChain `Embeddings` as a polymem `Embedder`, and back."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.embeddings import Embeddings

from polymem import Embedder

_MODEL_ATTRS = ("model", "model_name", "model_id", "deployment", "size")
_DIMENSION_PROBE = "polymem dimension probe"


class PolymemEmbeddings(Embeddings):
    """A polymem `Embedder` where LangChain expects `Embeddings`.

    It is also a polymem `Embedder` itself (`model_id`, `dimension`, `embed`),
    so the same object can serve both sides of an application.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id: the vector space its vectors live in."""
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        """The wrapped embedder's vector length."""
        return self.embedder.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """polymem's `Embedder.embed`."""
        return [list(v) for v in self.embedder.embed(list(texts))]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed search documents."""
        return self.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query text."""
        return self.embed([text])[0]


class LangChainEmbedder:
    """A LangChain `Embeddings` object as polymem's `Embedder`.

    `model_id` names the vector space; by default it is built from the class
    and its model attribute (`model`, `model_name`, ...), so a different model
    gives a different id and polymem re-embeds instead of mixing spaces. The
    dimension is read from the model by embedding a probe once.
    """

    def __init__(self, embeddings: Embeddings, *, model_id: str | None = None) -> None:
        if isinstance(embeddings, PolymemEmbeddings):
            raise TypeError("this is already a polymem embedder; pass embeddings.embedder")
        self.embeddings = embeddings
        self._model_id = model_id or _derive_model_id(embeddings)
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        """The id polymem records with every vector this embedder makes."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Vector length, read from the model on first use."""
        if self._dimension is None:
            self._dimension = len(self.embeddings.embed_query(_DIMENSION_PROBE))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts with the wrapped LangChain model."""
        vectors = [list(v) for v in self.embeddings.embed_documents(list(texts))]
        if vectors and self._dimension is None:
            self._dimension = len(vectors[0])
        return vectors

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self._model_id!r})"


def as_embeddings(embedder: Embedder | None) -> Embeddings | None:
    """A polymem store's embedder as LangChain `Embeddings` (unwrapped if it wraps some; None stays None)."""
    if embedder is None:
        return None
    return embedder.embeddings if isinstance(embedder, LangChainEmbedder) else PolymemEmbeddings(embedder)


def as_embedder(embeddings: Embeddings) -> Embedder:
    """The polymem `Embedder` behind LangChain `embeddings` (unwrapped if it is one of ours)."""
    return embeddings if isinstance(embeddings, PolymemEmbeddings) else LangChainEmbedder(embeddings)


def _derive_model_id(embeddings: Embeddings) -> str:
    parts = ["langchain", type(embeddings).__name__]
    for attr in _MODEL_ATTRS:
        value = getattr(embeddings, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            parts.append(f"{attr}={value}")
    return ":".join(parts)
