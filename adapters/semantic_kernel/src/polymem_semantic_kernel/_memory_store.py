"""`PolymemMemoryStore`: Semantic Kernel's (deprecated, widely deployed) `MemoryStoreBase` on polymem."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from semantic_kernel.exceptions import ServiceResourceNotFoundError

import polymem

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from semantic_kernel.memory.memory_record import MemoryRecord
    from semantic_kernel.memory.memory_store_base import MemoryStoreBase


COLLECTION_KEY = "sk_collection"
"""The metadata key naming a record's Semantic Kernel collection."""

KEY_KEY = "sk_key"
"""The metadata key holding a record's Semantic Kernel key (its `id`)."""

RECORD_KEY = "sk_record"
"""The metadata key holding the Semantic Kernel record fields polymem has no column for."""

_PAGE = 10_000


class GivenVectors:
    """polymem's embedder for a store that holds the vectors Semantic Kernel hands it, as given.

    Its vector space is named `model_id`; its dimension is that of the first
    vector stored or searched (a vector of another dimension is then refused
    by polymem with `DimensionMismatchError`). It embeds no text.
    """

    def __init__(self, model_id: str) -> None:
        self._model_id = model_id
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        """The dimension of the first vector seen; 0 before any (no vector matches it)."""
        return self._dimension or 0

    def adopt(self, dimension: int) -> None:
        """Take this dimension if none is known yet (that of the first vector seen)."""
        if self._dimension is None:
            self._dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise polymem.InvalidInput(
            "this store keeps the vectors Semantic Kernel hands it and embeds no text: give every record an "
            "embedding (SemanticTextMemory does), or open the store with an embedder and pass it in")


class PolymemMemoryStore(MemoryStoreBase):
    """A `MemoryStoreBase` whose records are polymem memories.

    Existing `SemanticTextMemory` / `TextMemoryPlugin` code runs unchanged:

        memory = SemanticTextMemory(storage=PolymemMemoryStore(), embeddings_generator=service)

    `PolymemMemoryStore()` is an in-memory store, as `VolatileMemoryStore()`
    is; `PolymemMemoryStore("sqlite:///memory.db")` (any polymem URL) keeps
    the records. A store opened here holds the vectors Semantic Kernel hands
    it exactly as given, of whatever dimension (`GivenVectors`, named
    `vector_model`), searches them by cosine, and embeds nothing itself; it
    is closed by `close()`.

    A collection is the metadata key `sk_collection`, a record's key is
    `sk_key`; its text is the memory's content (a reference record's
    description, or its id, when it has no text). Records belong to
    `user_id` / `agent_id` (None: shared), with `source` and `category`.

    To share the records with other frameworks' recall, pass a store opened
    with the same embedding service
    (`PolymemMemoryStore(polymem.open(url, embedder=SemanticKernelEmbedder(service)))`):
    the vectors Semantic Kernel hands over are then kept in that store's
    vector space, and polymem's own recall embeds queries alike. Vectors of
    another dimension than such a store's are refused (`DimensionMismatchError`).
    Relevance is the cosine similarity, as in `VolatileMemoryStore`, and
    `with_embedding(s)=True` returns each vector as it was given.
    """

    def __init__(
        self,
        store: Any = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        source: str = "import",
        category: str = "fact",
        vector_model: str = "semantic-kernel",
    ) -> None:
        self._owned = store is None or isinstance(store, str)
        self._space = GivenVectors(vector_model) if self._owned else None
        opened = polymem.open(store or "memory://", embedder=self._space) if self._owned else store
        self._store = opened.to_async()  # any store: its async form
        self._user_id = user_id
        self._agent_id = agent_id
        self._source = source
        self._category = category
        self._created: set[str] = set()

    async def close(self) -> None:
        """Close the store if this object opened it (a store passed in stays open)."""
        if self._owned:
            await self._store.close()

    # collections -------------------------------------------------------------------------
    async def create_collection(self, collection_name: str) -> None:
        """Make an (empty) collection exist; it persists once it holds a record."""
        self._created.add(collection_name)

    async def get_collections(self) -> list[str]:
        """Every collection holding a record, plus those created empty here."""
        names = dict.fromkeys(sorted(self._created))
        for record in await self._records({COLLECTION_KEY: {"$exists": True}}):
            names.setdefault(record.metadata[COLLECTION_KEY], None)
        return list(names)

    async def delete_collection(self, collection_name: str) -> None:
        """Delete a collection and every record in it."""
        self._created.discard(collection_name)
        for record in await self._records({COLLECTION_KEY: collection_name}):
            await self._store.delete(record.memory_id)

    async def does_collection_exist(self, collection_name: str) -> bool:
        """Whether the collection was created here or holds a record."""
        if collection_name in self._created:
            return True
        return bool(await self._records({COLLECTION_KEY: collection_name}, limit=1))

    # records -------------------------------------------------------------------------------
    async def upsert(self, collection_name: str, record: MemoryRecord) -> str:
        """Insert or replace one record; returns its key."""
        return (await self.upsert_batch(collection_name, [record]))[0]

    async def upsert_batch(self, collection_name: str, records: list[MemoryRecord]) -> list[str]:
        """Insert or replace records (one batched save); returns their keys."""
        await self._require(collection_name)
        keys = [record._id for record in records]
        replaced = await self._by_keys(collection_name, keys)
        given = [r for r in records if r._embedding is not None] if self._store.embedder is not None else []
        if given:
            vectors = [np.asarray(r._embedding, dtype=float).reshape(-1) for r in given]
            if self._space is not None:
                self._space.adopt(len(vectors[0]))
            await self._save(collection_name, given, [v.tolist() for v in vectors])
        # Records without an embedding (or for a lexical-only store): the store embeds them, if it can.
        if rest := [r for r in records if not any(r is g for g in given)]:
            await self._save(collection_name, rest, None)
        for old in replaced:  # after the new records are in: a refused record replaces nothing
            await self._store.delete(old.memory_id)
        for record, key in zip(records, keys):
            record._key = key
        return keys

    async def get(self, collection_name: str, key: str, with_embedding: bool = False) -> MemoryRecord:
        """One record by key; raises `ServiceResourceNotFoundError` like `VolatileMemoryStore`."""
        found = await self.get_batch(collection_name, [key], with_embedding)
        if not found:
            raise ServiceResourceNotFoundError(f"Key '{key}' not found in collection '{collection_name}'")
        return found[0]

    async def get_batch(
        self, collection_name: str, keys: list[str], with_embeddings: bool = False
    ) -> list[MemoryRecord]:
        """The records of the keys that exist, in the order of `keys`."""
        await self._require(collection_name)
        found = {m.metadata[KEY_KEY]: m for m in await self._by_keys(collection_name, keys)}
        vectors = await self._vectors([m.memory_id for m in found.values()]) if with_embeddings else {}
        return [to_sk_record(found[k], vectors.get(found[k].memory_id)) for k in keys if k in found]

    async def remove(self, collection_name: str, key: str) -> None:
        """Delete one record; raises `ServiceResourceNotFoundError` when it does not exist."""
        await self._require(collection_name)
        found = await self._by_keys(collection_name, [key])
        if not found:
            raise ServiceResourceNotFoundError(f"Key '{key}' not found in collection '{collection_name}'")
        await self._store.delete(found[0].memory_id)

    async def remove_batch(self, collection_name: str, keys: list[str]) -> None:
        """Delete the records of the keys that exist."""
        await self._require(collection_name)
        for memory in await self._by_keys(collection_name, keys):
            await self._store.delete(memory.memory_id)

    # search --------------------------------------------------------------------------------
    async def get_nearest_matches(
        self,
        collection_name: str,
        embedding: np.ndarray,
        limit: int,
        min_relevance_score: float = 0.0,
        with_embeddings: bool = False,
    ) -> list[tuple[MemoryRecord, float]]:
        """The `limit` records most similar to `embedding` (cosine), best first."""
        if not await self.does_collection_exist(collection_name):
            return []
        hits = await self._search(collection_name, embedding, limit)
        hits = [(memory, score) for memory, score in hits if score >= min_relevance_score]
        vectors = await self._vectors([m.memory_id for m, _ in hits]) if with_embeddings else {}
        return [(to_sk_record(memory, vectors.get(memory.memory_id)), score) for memory, score in hits]

    async def get_nearest_match(  # type: ignore[override]  # (None when nothing matches, as SK's own stores return)
        self,
        collection_name: str,
        embedding: np.ndarray,
        min_relevance_score: float = 0.0,
        with_embedding: bool = False,
    ) -> tuple[MemoryRecord, float] | None:
        """The single most similar record, or None."""
        matches = await self.get_nearest_matches(collection_name, embedding, 1, min_relevance_score, with_embedding)
        return matches[0] if matches else None

    # translation ----------------------------------------------------------------------------
    async def _save(self, collection_name: str, records: list[MemoryRecord], vectors: list[list[float]] | None) -> None:
        drafts = [self._draft(collection_name, record) for record in records]
        # A key per save: the same text under two keys stays two records (a keyless save of the
        # same content in the same scope would return the memory already stored).
        await self._store.save_many(drafts, user_id=self._user_id, agent_id=self._agent_id, vectors=vectors,
                                    idempotency_keys=[f"sk:{collection_name}:{r._id}:{uuid.uuid4()}" for r in records])

    def _draft(self, collection_name: str, record: MemoryRecord) -> polymem.MemoryDraft:
        timestamp = record._timestamp.isoformat() if isinstance(record._timestamp, datetime) else None
        fields = {
            "id": record._id,
            "text": record._text,
            "description": record._description,
            "additional_metadata": record._additional_metadata,
            "external_source_name": record._external_source_name,
            "is_reference": record._is_reference,
            "timestamp": timestamp,
            # polymem keeps vectors normalised: the norm gives the vector back as it was given
            "norm": None if record._embedding is None else float(np.linalg.norm(record._embedding)),
        }
        return polymem.MemoryDraft(
            content=record._text or record._description or record._id,
            category=self._category,
            source=self._source,
            metadata={COLLECTION_KEY: collection_name, KEY_KEY: record._id, RECORD_KEY: fields},
        )

    async def _require(self, collection_name: str) -> None:
        if not await self.does_collection_exist(collection_name):
            raise ServiceResourceNotFoundError(f"Collection '{collection_name}' does not exist")

    async def _records(self, filter: dict[str, Any], limit: int | None = None) -> list[polymem.MemoryRecord]:
        scoped = {f"metadata.{key}": value for key, value in filter.items()}
        out: list[polymem.MemoryRecord] = []
        while True:
            page_size = min(limit - len(out), _PAGE) if limit else _PAGE
            page = await self._store.list(
                user_id=self._user_id,
                agent_id=self._agent_id,
                filter=scoped,
                limit=page_size,
                offset=len(out),
            )
            out.extend(page)
            if len(page) < page_size or (limit and len(out) >= limit):
                return out

    async def _by_keys(self, collection_name: str, keys: Sequence[str]) -> list[polymem.MemoryRecord]:
        if not keys:
            return []
        return await self._records({COLLECTION_KEY: collection_name, KEY_KEY: {"$in": list(keys)}})

    async def _search(self, collection_name: str, embedding: np.ndarray, limit: int) -> list[tuple[Any, float]]:
        if self._store.embedder is None:
            raise polymem.InvalidInput(
                "PolymemMemoryStore needs a store with an embedder for nearest-match search "
                "(e.g. polymem.open(url, embedder=SemanticKernelEmbedder(service)))"
            )
        vector = np.asarray(embedding, dtype=float).reshape(-1).tolist()
        if self._space is not None:
            self._space.adopt(len(vector))
        found: list[tuple[Any, float]] = await self._store.nearest(
            vector, user_id=self._user_id, agent_id=self._agent_id, top_k=limit,
            filter={f"metadata.{COLLECTION_KEY}": collection_name})
        return found

    async def _vectors(self, memory_ids: Sequence[str]) -> dict[str, np.ndarray]:
        found = await self._store.vectors(list(memory_ids)) if memory_ids else {}
        return {k: np.asarray(v) for k, v in found.items()}


def to_sk_record(memory: polymem.MemoryRecord, embedding: np.ndarray | None = None) -> MemoryRecord:
    """A polymem memory as Semantic Kernel's `MemoryRecord` (the fields `upsert` kept)."""
    fields = memory.metadata.get(RECORD_KEY) or {}
    timestamp = fields.get("timestamp")
    return MemoryRecord(
        is_reference=bool(fields.get("is_reference", False)),
        external_source_name=fields.get("external_source_name"),
        id=fields.get("id") or memory.metadata.get(KEY_KEY) or memory.memory_id,
        description=fields.get("description"),
        text=fields.get("text", memory.content),
        additional_metadata=fields.get("additional_metadata"),
        embedding=None if embedding is None else np.asarray(embedding, dtype=float) * (fields.get("norm") or 1.0),
        key=memory.metadata.get(KEY_KEY),
        timestamp=datetime.fromisoformat(timestamp) if timestamp else None,
    )
