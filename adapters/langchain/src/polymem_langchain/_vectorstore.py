"""`PolymemVectorStore` and `PolymemRetriever`: LangChain retrieval over polymem long-term memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, PrivateAttr

import polymem

from ._convert import (
    DOC_ID_KEY,
    LC_KEY,
    hit_to_document,
    memory_metadata,
    metadata_filter,
    record_to_document,
)
from ._embeddings import as_embedder, as_embeddings
from ._stores import Forms, Plan, Store, call


class PolymemVectorStore(VectorStore):
    """A LangChain `VectorStore` whose documents are polymem long-term memories.

    Documents are saved as memories of `user_id` (and `agent_id`,
    `session_id`) with their metadata; searches recall within `user_id`
    (polymem's hybrid search, ranked by its score) and return `k` documents
    whenever the store holds `k`, as every vector store does. Search by vector
    gives the cosine neighbours; MMR picks among polymem's candidates by their
    stored vectors. Scores are polymem's
    final score in [0, 1], higher is better, so `similarity_score_threshold`
    retrievers work as usual. `filter` takes document metadata keys with
    `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains`.
    Documents with ids the caller chose keep them; others get the memory id.
    Use it through `as_retriever()`, e.g. in `VectorStoreRetrieverMemory`.
    """

    def __init__(
        self,
        store: Store,
        *,
        user_id: str | None,
        agent_id: str | None = None,
        session_id: str | None = None,
        category: str = "fact",
        source: str = "user_input",
    ) -> None:
        self._forms = Forms(store)
        self.store = store
        self.user_id = user_id
        self.agent_id = agent_id
        self.session_id = session_id
        self.category = category
        self.source = source

    @property
    def embeddings(self) -> Embeddings | None:
        """The store's embedder as LangChain `Embeddings` (None in lexical-only mode)."""
        return as_embeddings(self._forms.store.embedder)

    # -- plans -------------------------------------------------------------------------------
    def _find(self, doc_id: str) -> Plan[polymem.MemoryRecord | None]:
        found: list[polymem.MemoryRecord] = yield call(
            "list", user_id=self.user_id, filter={f"metadata.{LC_KEY}.{DOC_ID_KEY}": doc_id}, limit=1)
        if found:
            return found[0]
        record: polymem.MemoryRecord | None = yield call("get", doc_id)
        if record is not None and record.user_id == self.user_id and record.status == "active":
            return record
        return None

    def _add(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None, ids: Sequence[str | None] | None,
             kwargs: dict[str, Any]) -> Plan[list[str]]:
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"got {len(metadatas)} metadatas for {len(texts)} texts")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"got {len(ids)} ids for {len(texts)} texts")
        category = kwargs.get("category", self.category)
        source = kwargs.get("source", self.source)
        out: list[str | None] = []
        drafts: list[polymem.MemoryDraft] = []  # documents without ids: saved in one batch
        for n, text in enumerate(texts):
            doc_id = ids[n] if ids else None
            metadata = memory_metadata(metadatas[n] if metadatas else None, doc_id)
            existing = (yield from self._find(doc_id)) if doc_id else None
            if existing is not None:
                yield call("update", existing.memory_id, content=text, metadata=metadata)
            elif doc_id is not None:  # the key keeps documents with equal text apart
                yield call("save", text, user_id=self.user_id, agent_id=self.agent_id, session_id=self.session_id,
                           category=category, source=source, metadata=metadata,
                           idempotency_key=f"langchain:{self.user_id}:{doc_id}")
            else:
                drafts.append(polymem.MemoryDraft(text, category=category, source=source, metadata=metadata))
            out.append(doc_id)
        saved = iter((yield call("save_many", drafts, user_id=self.user_id, agent_id=self.agent_id,
                                 session_id=self.session_id)) if drafts else ())
        return [doc_id if doc_id is not None else next(saved).memory_id for doc_id in out]

    def _delete(self, ids: list[str] | None) -> Plan[bool]:
        if ids is None:
            raise ValueError("give the ids to delete; PolymemVectorStore never deletes a whole memory")
        deleted = True
        for doc_id in ids:
            record = yield from self._find(doc_id)
            deleted = bool(record is not None and (yield call("delete", record.memory_id))) and deleted
        return deleted

    def _get(self, ids: Sequence[str]) -> Plan[list[Document]]:
        docs = []
        for doc_id in dict.fromkeys(ids):
            record = yield from self._find(doc_id)
            if record is not None:
                docs.append(record_to_document(record))
        return docs

    def _recall(self, query: str, k: int, kwargs: dict[str, Any]) -> Plan[list[polymem.RecallHit]]:
        # min_relevance=0: k documents whenever the store holds k, as every LangChain vector store
        # returns; polymem ranks them (its own relevance cut is for what it puts in a prompt).
        hits = yield call("recall", query, user_id=self.user_id, top_k=k, category=kwargs.get("category"),
                          filter=metadata_filter(kwargs.get("filter")), min_relevance=0)
        return list(hits)

    def _search(self, query: str, k: int, kwargs: dict[str, Any]) -> Plan[list[tuple[Document, float]]]:
        return [(record_to_document(h.memory), h.score) for h in (yield from self._recall(query, k, kwargs))]

    def _nearest(self, embedding: Sequence[float], k: int,
                 kwargs: dict[str, Any]) -> Plan[list[tuple[polymem.MemoryRecord, float]]]:
        found = yield call("nearest", list(embedding), user_id=self.user_id, top_k=k, category=kwargs.get("category"),
                           filter=metadata_filter(kwargs.get("filter")))
        return list(found)

    def _by_vector(self, embedding: Sequence[float], k: int, kwargs: dict[str, Any]) -> Plan[list[Document]]:
        return [record_to_document(record) for record, _ in (yield from self._nearest(embedding, k, kwargs))]

    def _mmr(self, query: str | None, embedding: Sequence[float] | None, k: int, fetch_k: int, lambda_mult: float,
             kwargs: dict[str, Any]) -> Plan[list[Document]]:
        """MMR over `fetch_k` candidates: polymem's recall for a query, its cosine neighbours for a vector."""
        if query is not None:
            hits = yield from self._recall(query, fetch_k, kwargs)
            candidates = [(h.memory, h.similarity or 0.0) for h in hits]
        else:
            assert embedding is not None
            candidates = yield from self._nearest(embedding, fetch_k, kwargs)
        ids = [record.memory_id for record, _ in candidates]
        stored = (yield call("vectors", ids)) if ids else {}
        picked = polymem.maximal_marginal_relevance(
            [similarity for _, similarity in candidates],
            [stored.get(record.memory_id) for record, _ in candidates], k, lambda_mult)
        return [record_to_document(candidates[i][0]) for i in picked]

    # -- LangChain API -----------------------------------------------------------------------
    def add_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, *,
                  ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Save texts as memories; an id already present updates that memory (a new version)."""
        return self._forms.sync.run(self._add(texts, metadatas, ids, kwargs))

    async def aadd_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, *,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        """Async `add_texts`."""
        return await self._forms.asynchronous.run(self._add(texts, metadatas, ids, kwargs))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete memories by document id; True if every one existed."""
        return self._forms.sync.run(self._delete(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Async `delete`."""
        return await self._forms.asynchronous.run(self._delete(ids))

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids (missing ones are skipped)."""
        return self._forms.sync.run(self._get(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async `get_by_ids`."""
        return await self._forms.asynchronous.run(self._get(ids))

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """Recall `k` documents for `query`, best first, with polymem's score (higher is better)."""
        return self._forms.sync.run(self._search(query, k, kwargs))

    async def asimilarity_search_with_score(self, query: str, k: int = 4,
                                            **kwargs: Any) -> list[tuple[Document, float]]:
        """Async `similarity_search_with_score`."""
        return await self._forms.asynchronous.run(self._search(query, k, kwargs))

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Recall `k` documents for `query`, best first."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Async `similarity_search`."""
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        """The `k` documents whose stored vectors are nearest `embedding` by cosine (a vector of the store's model)."""
        return self._forms.sync.run(self._by_vector(embedding, k, kwargs))

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                           **kwargs: Any) -> list[Document]:
        """Async `similarity_search_by_vector`."""
        return await self._forms.asynchronous.run(self._by_vector(embedding, k, kwargs))

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      **kwargs: Any) -> list[Document]:
        """`k` of the `fetch_k` documents polymem recalls for `query`, picked for relevance and diversity.

        `lambda_mult` runs from 0 (most diverse) to 1 (most relevant)."""
        return self._forms.sync.run(self._mmr(query, None, k, fetch_k, lambda_mult, kwargs))

    async def amax_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20,
                                             lambda_mult: float = 0.5, **kwargs: Any) -> list[Document]:
        """Async `max_marginal_relevance_search`."""
        return await self._forms.asynchronous.run(self._mmr(query, None, k, fetch_k, lambda_mult, kwargs))

    def max_marginal_relevance_search_by_vector(self, embedding: list[float], k: int = 4, fetch_k: int = 20,
                                                lambda_mult: float = 0.5, **kwargs: Any) -> list[Document]:
        """MMR over the `fetch_k` nearest neighbours of `embedding`."""
        return self._forms.sync.run(self._mmr(None, embedding, k, fetch_k, lambda_mult, kwargs))

    async def amax_marginal_relevance_search_by_vector(self, embedding: list[float], k: int = 4, fetch_k: int = 20,
                                                       lambda_mult: float = 0.5, **kwargs: Any) -> list[Document]:
        """Async `max_marginal_relevance_search_by_vector`."""
        return await self._forms.asynchronous.run(self._mmr(None, embedding, k, fetch_k, lambda_mult, kwargs))

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda score: score  # polymem's score is already a relevance in [0, 1]

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None = None,
                   metadatas: list[dict[str, Any]] | None = None, *, ids: list[str] | None = None,
                   store: Store | None = None, user_id: str | None = None, **kwargs: Any) -> PolymemVectorStore:
        """A store over `store` (default: a new in-process polymem embedding with `embedding`), filled with texts."""
        if store is None:
            store = polymem.open("memory://", embedder=as_embedder(embedding) if embedding else None)
        vectorstore = cls(store, user_id=user_id, **kwargs)
        vectorstore.add_texts(texts, metadatas, ids=ids)
        return vectorstore


class PolymemRetriever(BaseRetriever):
    """A LangChain retriever over polymem long-term memory (`mem.recall`).

    Each document is one memory: `page_content` is its text, `id` its memory
    id, and `metadata` carries its category, source, scope, times, the score
    parts (`score`, `relevance`, `similarity`, `live_score`) and its own
    metadata under `"metadata"`. `filter` is a polymem filter (fields such as
    `category`, `source`, `metadata.<key>`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    """A polymem store (`polymem.open(...)` or `polymem.open_async(...)`)."""
    user_id: str | None
    """Whose memories to recall (None: every user of the namespace)."""
    agent_id: str | None = None
    """Only memories written by this agent, if set."""
    top_k: int = 4
    """How many memories to return."""
    category: str | None = None
    """Only memories of this category, if set."""
    filter: dict[str, Any] | None = None
    """A polymem recall filter."""

    _forms: Forms = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._forms = Forms(self.store)

    def _recall(self, query: str, kwargs: dict[str, Any]) -> Plan[list[Document]]:
        hits = yield call(
            "recall", query, user_id=self.user_id, agent_id=kwargs.get("agent_id", self.agent_id),
            top_k=kwargs.get("top_k", kwargs.get("k", self.top_k)), category=kwargs.get("category", self.category),
            filter=kwargs.get("filter", self.filter),
        )
        return [hit_to_document(h) for h in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return self._forms.sync.run(self._recall(query, kwargs))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        return await self._forms.asynchronous.run(self._recall(query, kwargs))
