"""PolymemVectorStore and PolymemRetriever: LangChain retrieval over polymem long-term memory."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

import polymem
from polymem_langchain import PolymemEmbeddings, PolymemRetriever, PolymemVectorStore

DOCS = [
    Document("Ann's cat is named Miso", metadata={"topic": "pets", "year": 2020}),
    Document("Ann runs 10 km every Sunday morning", metadata={"topic": "sport", "year": 2023}),
    Document("Ann is learning to play the cello", metadata={"topic": "music", "year": 2024}),
    Document("Ann's dog Rex likes long walks in the park", metadata={"topic": "pets", "year": 2024}),
]


@pytest.fixture
def vectorstore(smem: polymem.Memory) -> PolymemVectorStore:
    store = PolymemVectorStore(smem, user_id="ann")
    store.add_documents(DOCS)
    return store


def test_similarity_search_finds_the_relevant_memory_first(vectorstore: PolymemVectorStore) -> None:
    assert vectorstore.similarity_search("What instrument does Ann play?", k=1)[0].page_content == (
        "Ann is learning to play the cello")


def test_documents_keep_their_metadata_and_get_the_memory_id(vectorstore: PolymemVectorStore,
                                                             smem: polymem.Memory) -> None:
    doc = vectorstore.similarity_search("cat name", k=1)[0]
    assert doc.metadata == {"topic": "pets", "year": 2020}
    assert smem.get(doc.id).content == "Ann's cat is named Miso"


def test_scores_are_relevances_in_0_1_best_first(vectorstore: PolymemVectorStore) -> None:
    scored = vectorstore.similarity_search_with_relevance_scores("running on Sundays", k=4)
    scores = [s for _, s in scored]
    assert scored[0][0].page_content.startswith("Ann runs")
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    threshold = scores[0] - 1e-9
    retriever = vectorstore.as_retriever(search_type="similarity_score_threshold",
                                         search_kwargs={"score_threshold": threshold, "k": 4})
    assert [d.page_content for d in retriever.invoke("running on Sundays")] == [scored[0][0].page_content]


def test_metadata_filters_apply_inside_the_search(vectorstore: PolymemVectorStore) -> None:
    pets = vectorstore.similarity_search("animal", k=4, filter={"topic": "pets"})
    assert {d.page_content for d in pets} <= {DOCS[0].page_content, DOCS[3].page_content} and pets
    recent = vectorstore.similarity_search("Ann", k=4, filter={"year": {"$gte": 2024}})
    assert {d.metadata["year"] for d in recent} == {2024}
    either = vectorstore.similarity_search("Ann", k=4, filter={"topic": {"$in": ["music", "sport"]}})
    assert {d.metadata["topic"] for d in either} == {"music", "sport"}


def test_an_unsupported_filter_is_refused(vectorstore: PolymemVectorStore) -> None:
    with pytest.raises(polymem.InvalidFilterError):
        vectorstore.similarity_search("x", filter={"$or": [{"topic": "pets"}, {"topic": "music"}]})


def test_ids_given_by_the_caller_are_kept_and_adding_again_updates(smem: polymem.Memory) -> None:
    store = PolymemVectorStore(smem, user_id="ann")
    assert store.add_texts(["Ann lives in Lyon"], metadatas=[{"v": 1}], ids=["home"]) == ["home"]
    store.add_documents([Document("Ann lives in Paris now", metadata={"v": 2}, id="home")])
    assert store.get_by_ids(["home", "missing"]) == [
        Document("Ann lives in Paris now", metadata={"v": 2}, id="home")]
    record = smem.list(user_id="ann")[0]
    assert [v.content for v in smem.history(record.memory_id)] == ["Ann lives in Lyon", "Ann lives in Paris now"]
    assert store.delete(["home"]) is True
    assert store.get_by_ids(["home"]) == []


def test_documents_with_equal_text_and_their_own_ids_stay_apart(mem: polymem.Memory) -> None:
    store = PolymemVectorStore(mem, user_id="ann")
    store.add_documents([Document("same words", metadata={"n": 1}, id="a"),
                         Document("same words", metadata={"n": 2}, id="b")])
    assert sorted((d.id, d.metadata["n"]) for d in store.get_by_ids(["a", "b"])) == [("a", 1), ("b", 2)]


def test_memories_from_other_frameworks_are_searchable_documents(smem: polymem.Memory) -> None:
    record = smem.save("Ann prefers tea over coffee", user_id="ann", category="preference")
    [doc] = PolymemVectorStore(smem, user_id="ann").similarity_search("hot drinks", k=1)
    assert (doc.id, doc.page_content, doc.metadata) == (record.memory_id, record.content, {})


def test_users_do_not_see_each_others_documents(vectorstore: PolymemVectorStore, smem: polymem.Memory) -> None:
    assert PolymemVectorStore(smem, user_id="bob").similarity_search("Ann's cat", k=4) == []
    assert PolymemVectorStore(smem, user_id="bob").get_by_ids([vectorstore.similarity_search("cat", k=1)[0].id]) == []


def test_from_texts_opens_an_in_process_store_with_the_given_embeddings(embedder: polymem.Embedder) -> None:
    store = PolymemVectorStore.from_texts(["Paris is in France", "Tokyo is in Japan"], PolymemEmbeddings(embedder),
                                          user_id="geo")
    assert store.similarity_search("Japanese capital", k=1)[0].page_content == "Tokyo is in Japan"
    assert store.embeddings is not None and store.embeddings.embed_query("x") == embedder.embed(["x"])[0]


async def test_async_methods_over_an_async_store(db_url: str, embedder: polymem.Embedder) -> None:
    async with polymem.open_async(db_url, embedder=embedder) as amem:
        store = PolymemVectorStore(amem, user_id="ann")
        ids = await store.aadd_documents(DOCS)
        assert len(ids) == 4
        [doc] = await store.asimilarity_search("musical instrument", k=1)
        assert doc.page_content == "Ann is learning to play the cello"
        assert (await store.aget_by_ids([doc.id]))[0].page_content == doc.page_content
        assert await store.adelete([doc.id]) is True


def test_retriever_documents_carry_polymems_fields(smem: polymem.Memory) -> None:
    record = smem.save("Ann's passport expires in March 2027", user_id="ann", category="task",
                       metadata={"doc": "passport"})
    [doc] = PolymemRetriever(store=smem, user_id="ann", top_k=1).invoke("When does my passport expire?")
    assert doc.id == record.memory_id and doc.page_content == record.content
    assert {k: doc.metadata[k] for k in ("memory_id", "category", "source", "user_id", "metadata")} == {
        "memory_id": record.memory_id, "category": "task", "source": "user_input", "user_id": "ann",
        "metadata": {"doc": "passport"}}
    assert 0 < doc.metadata["score"] <= 1


def test_retriever_filters_by_category_and_polymem_filter(smem: polymem.Memory) -> None:
    smem.save("Ann likes jazz", user_id="ann", category="preference")
    smem.save("Ann saw a jazz concert yesterday", user_id="ann", category="event", metadata={"city": "Lyon"})
    by_category = PolymemRetriever(store=smem, user_id="ann", category="event").invoke("jazz")
    assert [d.page_content for d in by_category] == ["Ann saw a jazz concert yesterday"]
    by_filter = PolymemRetriever(store=smem, user_id="ann", filter={"metadata.city": "Lyon"}).invoke("jazz")
    assert [d.page_content for d in by_filter] == ["Ann saw a jazz concert yesterday"]


async def test_retriever_in_a_retrieval_chain_sync_and_async(smem: polymem.Memory) -> None:
    smem.save("The office wifi password is on the fridge", user_id="ann")
    retriever = PolymemRetriever(store=smem, user_id="ann", top_k=1)
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    chain = {"context": retriever | (lambda docs: docs[0].page_content),
             "question": RunnablePassthrough()} | prompt | ParrotFakeChatModel()
    answer = chain.invoke("where is the wifi password?")
    assert "on the fridge" in answer.content
    assert "on the fridge" in (await chain.ainvoke("wifi password?")).content


def test_similarity_search_returns_k_documents_even_unrelated_ones(vectorstore: PolymemVectorStore) -> None:
    found = vectorstore.similarity_search("quarterly tax filing deadline", k=4)
    assert sorted(d.page_content for d in found) == sorted(d.page_content for d in DOCS)


def test_search_by_vector_returns_the_cosine_neighbours(vectorstore: PolymemVectorStore) -> None:
    assert vectorstore.embeddings is not None
    vector = vectorstore.embeddings.embed_query("a pet cat called Miso")
    assert vectorstore.similarity_search_by_vector(vector, k=1)[0].page_content == DOCS[0].page_content
    assert len(vectorstore.similarity_search_by_vector(vector, k=3, filter={"topic": "pets"})) == 2


def test_mmr_retriever_trades_a_near_duplicate_for_diversity(smem: polymem.Memory) -> None:
    store = PolymemVectorStore(smem, user_id="ann")
    store.add_texts(["Ann's cat is named Miso", "Ann has a cat called Miso", "Ann plays the cello on Sundays"])
    relevant = store.similarity_search("What is Ann's cat called?", k=2)
    assert {d.page_content for d in relevant} == {"Ann's cat is named Miso", "Ann has a cat called Miso"}
    retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 3, "lambda_mult": 0.3})
    diverse = [d.page_content for d in retriever.invoke("What is Ann's cat called?")]
    assert "Miso" in diverse[0] and diverse[1] == "Ann plays the cello on Sundays"


async def test_async_mmr_by_vector_matches_the_sync_one(vectorstore: PolymemVectorStore) -> None:
    assert vectorstore.embeddings is not None
    vector = vectorstore.embeddings.embed_query("Ann's pets")
    sync = vectorstore.max_marginal_relevance_search_by_vector(vector, k=2, fetch_k=4)
    assert await vectorstore.amax_marginal_relevance_search_by_vector(vector, k=2, fetch_k=4) == sync
    assert len(await vectorstore.amax_marginal_relevance_search("Ann's pets", k=3)) == 3
