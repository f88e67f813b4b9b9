"""PolymemMemoryStore: SemanticTextMemory and TextMemoryPlugin code running unchanged on polymem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from semantic_kernel import Kernel
from semantic_kernel.exceptions import ServiceResourceNotFoundError

import polymem

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from semantic_kernel.core_plugins.text_memory_plugin import TextMemoryPlugin
    from semantic_kernel.memory.memory_record import MemoryRecord
    from semantic_kernel.memory.semantic_text_memory import SemanticTextMemory

from polymem_semantic_kernel import PolymemMemoryStore, SemanticKernelEmbedder

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def service(scripted, minilm):
    return scripted.LocalEmbeddingService(minilm)


@pytest.fixture
def sk_store(db_url, service):
    with polymem.open(db_url, embedder=SemanticKernelEmbedder(service)) as mem:
        yield mem


@pytest.fixture
def text_memory(sk_store, service):
    return SemanticTextMemory(storage=PolymemMemoryStore(sk_store), embeddings_generator=service)


def record(key, text, vector=(1.0, 0.0, 0.0), **fields):
    return MemoryRecord.local_record(
        id=key, text=text, description=fields.get("description"), additional_metadata=fields.get("meta"),
        embedding=np.asarray(vector, dtype=float),
    )


async def test_semantic_text_memory_saves_and_searches_by_meaning(text_memory):
    await text_memory.save_information("facts", "The office is in Oslo", id="office")
    await text_memory.save_information("facts", "Lunch is served at noon", id="lunch")
    results = await text_memory.search("facts", "Which city is the workplace in?", limit=2)
    assert [r.id for r in results] == ["office", "lunch"]
    assert results[0].relevance > results[1].relevance


async def test_search_respects_min_relevance_and_collection(text_memory):
    await text_memory.save_information("facts", "The office is in Oslo", id="office")
    await text_memory.save_information("other", "The office is in Oslo", id="elsewhere")
    results = await text_memory.search("facts", "office city", limit=5, min_relevance_score=0.3)
    assert [r.id for r in results] == ["office"]
    assert await text_memory.search("facts", "office city", min_relevance_score=0.99) == []


async def test_get_returns_every_field_saved(text_memory):
    await text_memory.save_information("facts", "Wifi password is on the fridge", id="wifi", description="home",
                                       additional_metadata='{"room": "kitchen"}')
    got = await text_memory.get("facts", "wifi")
    assert (got.id, got.text, got.description, got.additional_metadata, got.is_reference) == (
        "wifi", "Wifi password is on the fridge", "home", '{"room": "kitchen"}', False)


async def test_references_keep_their_source(text_memory):
    await text_memory.save_reference("docs", "Release notes for 2.0", external_id="gh-42",
                                     external_source_name="github", description="release notes")
    (hit,) = await text_memory.search("docs", "release notes")
    assert (hit.id, hit.external_source_name, hit.is_reference) == ("gh-42", "github", True)


async def test_text_memory_plugin_works_unchanged_in_a_kernel(text_memory):
    kernel = Kernel()
    kernel.add_plugin(TextMemoryPlugin(text_memory), "memory")
    await kernel.invoke(plugin_name="memory", function_name="save", text="Ann's birthday is May 3", key="bday",
                        collection="people")
    answer = await kernel.invoke(plugin_name="memory", function_name="recall", ask="When is Ann's birthday?",
                                 collection="people", relevance=0.2)
    assert "May 3" in str(answer)


async def test_upsert_replaces_a_key_and_keeps_the_vector_it_was_given(sk_store):
    storage = PolymemMemoryStore(sk_store)
    await storage.create_collection("c")
    dim = sk_store.embedder.dimension
    first, second = np.eye(dim)[0], np.eye(dim)[1]
    await storage.upsert("c", record("k", "old text", first))
    await storage.upsert("c", record("k", "new text", second))
    got = await storage.get("c", "k", with_embedding=True)
    assert got.text == "new text"
    assert np.allclose(got.embedding, second)
    (match, score) = await storage.get_nearest_match("c", second)
    assert (match.id, round(score, 6)) == ("k", 1.0)


async def test_records_land_as_polymem_memories_other_frameworks_can_recall(sk_store, text_memory):
    await text_memory.save_information("facts", "The office is in Oslo", id="office")
    (hit,) = sk_store.recall("where is the office", user_id=None, top_k=1)
    assert (hit.memory.content, hit.memory.metadata["sk_collection"], hit.memory.source) == (
        "The office is in Oslo", "facts", "import")


async def test_collections_are_listed_checked_and_deleted(sk_store):
    storage = PolymemMemoryStore(sk_store)
    await storage.create_collection("empty")
    await storage.create_collection("full")
    dim = sk_store.embedder.dimension
    await storage.upsert_batch("full", [record("a", "alpha", np.ones(dim)), record("b", "beta", np.ones(dim))])
    assert await storage.get_collections() == ["empty", "full"]
    assert await PolymemMemoryStore(sk_store).get_collections() == ["full"]  # empty ones are not persisted
    await storage.delete_collection("full")
    assert not await storage.does_collection_exist("full")
    assert sk_store.list() == []


async def test_missing_collections_and_keys_raise_like_volatile_memory_store(sk_store):
    storage = PolymemMemoryStore(sk_store)
    with pytest.raises(ServiceResourceNotFoundError):
        await storage.upsert("nope", record("k", "text"))
    await storage.create_collection("c")
    with pytest.raises(ServiceResourceNotFoundError):
        await storage.get("c", "missing")
    with pytest.raises(ServiceResourceNotFoundError):
        await storage.remove("c", "missing")
    assert await storage.get_nearest_matches("nope", np.ones(3), limit=3) == []


async def test_remove_batch_and_get_batch_follow_the_keys(sk_store):
    storage = PolymemMemoryStore(sk_store)
    await storage.create_collection("c")
    dim = sk_store.embedder.dimension
    await storage.upsert_batch("c", [record(k, f"text {k}", np.ones(dim)) for k in "abc"])
    await storage.remove_batch("c", ["a", "zz"])
    assert [r.id for r in await storage.get_batch("c", ["c", "a", "b"])] == ["c", "b"]


async def test_records_are_scoped_to_the_stores_user(sk_store):
    dim = sk_store.embedder.dimension
    ann, bob = PolymemMemoryStore(sk_store, user_id="ann"), PolymemMemoryStore(sk_store, user_id="bob")
    await ann.create_collection("c")
    await ann.upsert("c", record("k", "Ann's secret", np.ones(dim)))
    assert not await bob.does_collection_exist("c")
    assert sk_store.list(user_id="ann")[0].content == "Ann's secret"


async def test_the_same_text_under_two_keys_stays_two_records(sk_store):
    storage = PolymemMemoryStore(sk_store)
    await storage.create_collection("c")
    dim = sk_store.embedder.dimension
    await storage.upsert_batch("c", [record("a", "same", np.ones(dim)), record("b", "same", np.ones(dim))])
    assert sorted(r.id for r in await storage.get_batch("c", ["a", "b"])) == ["a", "b"]


async def test_a_lexical_only_store_says_what_it_cannot_do(store):
    storage = PolymemMemoryStore(store)
    await storage.create_collection("c")
    await storage.upsert("c", record("k", "text"))
    with pytest.raises(polymem.InvalidInput, match="needs a store with an embedder"):
        await storage.get_nearest_matches("c", np.ones(3), limit=1)


async def test_a_store_built_without_arguments_keeps_the_vectors_it_is_handed_as_given():
    storage = PolymemMemoryStore()
    await storage.create_collection("c")
    await storage.upsert_batch("c", [record("x", "along x", (3.0, 4.0, 0.0)), record("y", "along y", (0.0, 0.0, 2.0))])
    got = await storage.get("c", "x", with_embedding=True)
    assert np.allclose(got.embedding, [3.0, 4.0, 0.0])
    (match, score), *_ = await storage.get_nearest_matches("c", np.asarray([0.0, 0.0, 5.0]), limit=2)
    assert (match.id, round(score, 6)) == ("y", 1.0)
    await storage.close()


async def test_semantic_text_memory_on_a_store_built_without_arguments(service):
    memory = SemanticTextMemory(storage=PolymemMemoryStore(), embeddings_generator=service)
    await memory.save_information("facts", "The office is in Oslo", id="office")
    await memory.save_information("facts", "Lunch is served at noon", id="lunch")
    results = await memory.search("facts", "Which city is the workplace in?", limit=2)
    assert [r.id for r in results] == ["office", "lunch"]


async def test_a_store_opened_from_a_url_keeps_its_records_for_the_next_one(db_url):
    first = PolymemMemoryStore(db_url)
    await first.create_collection("c")
    await first.upsert("c", record("k", "kept", (1.0, 2.0)))
    await first.close()
    second = PolymemMemoryStore(db_url)
    (match, score) = await second.get_nearest_match("c", np.asarray([1.0, 2.0]), with_embedding=True)
    assert (match.id, match.text, round(score, 6)) == ("k", "kept", 1.0)
    assert np.allclose(match.embedding, [1.0, 2.0])
    await second.close()


async def test_a_vector_of_another_dimension_is_refused_and_replaces_nothing():
    storage = PolymemMemoryStore()
    await storage.create_collection("c")
    await storage.upsert("c", record("k", "three dimensions", (1.0, 0.0, 0.0)))
    with pytest.raises(polymem.DimensionMismatchError):
        await storage.upsert("c", record("k", "four dimensions", (1.0, 0.0, 0.0, 0.0)))
    assert (await storage.get("c", "k")).text == "three dimensions"


async def test_a_store_of_given_vectors_embeds_no_text():
    storage = PolymemMemoryStore()
    await storage.create_collection("c")
    bare = MemoryRecord.local_record(id="k", text="no vector", description=None, additional_metadata=None,
                                     embedding=None)
    with pytest.raises(polymem.InvalidInput, match="embeds no text"):
        await storage.upsert("c", bare)
