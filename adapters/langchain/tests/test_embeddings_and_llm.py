"""Embeddings both ways, and polymem's extraction and summary done by a LangChain chat model."""

from __future__ import annotations

import json

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.vectorstores import InMemoryVectorStore

import polymem
from polymem_langchain import (
    ChatModelExtractor,
    ChatModelSummarizer,
    LangChainEmbedder,
    PolymemChatMessageHistory,
    PolymemEmbeddings,
    to_polymem,
)


def test_a_langchain_embeddings_object_is_polymems_embedder(db_url: str) -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=32))
    assert isinstance(embedder, polymem.Embedder)
    assert (embedder.model_id, embedder.dimension) == ("langchain:DeterministicFakeEmbedding:size=32", 32)
    with polymem.open(db_url, embedder=embedder) as mem:
        record = mem.save("Ann's locker code is 4417", user_id="ann")
        assert record.embedding_model == embedder.model_id
        hit = mem.recall("Ann's locker code is 4417", user_id="ann")[0]
        assert hit.memory.memory_id == record.memory_id and hit.similarity == pytest.approx(1.0, abs=1e-5)


def test_a_different_langchain_model_is_a_different_vector_space(db_url: str) -> None:
    with polymem.open(db_url, embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=32))) as mem:
        mem.save("some memory", user_id="ann")
    with polymem.open(db_url, embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=16))) as mem:
        [hit] = mem.recall("some memory", user_id="ann")
        assert hit.similarity is None  # found by its text; the other model's vector is never compared
        assert mem.reembed() == 1
        assert mem.recall("some memory", user_id="ann")[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_polymems_embedder_works_where_langchain_expects_embeddings(embedder: polymem.Embedder) -> None:
    embeddings = PolymemEmbeddings(embedder)
    assert embeddings.embed_query("hello") == embedder.embed(["hello"])[0]
    assert (embeddings.model_id, embeddings.dimension) == (embedder.model_id, embedder.dimension)
    store = InMemoryVectorStore(embeddings)
    store.add_texts(["The Eiffel Tower is in Paris", "Bananas are yellow"])
    assert store.similarity_search("famous landmark in France", k=1)[0].page_content.startswith("The Eiffel")


async def test_polymem_embeddings_async(embedder: polymem.Embedder) -> None:
    embeddings = PolymemEmbeddings(embedder)
    assert await embeddings.aembed_documents(["a", "b"]) == embedder.embed(["a", "b"])


EXTRACTION = json.dumps({"memories": [
    {"content": "Ann is allergic to penicillin", "category": "fact", "importance": 0.9, "entities": ["Ann"]},
    {"content": "Ann prefers morning appointments", "category": "preference", "source": "inference"},
]})


def test_the_extractor_turns_the_models_answer_into_memories(db_url: str) -> None:
    extractor = ChatModelExtractor(FakeListChatModel(responses=[f"```json\n{EXTRACTION}\n```"]))
    with polymem.open(db_url, embedder=None, extractor=extractor) as mem:
        saved = mem.ingest([to_polymem(HumanMessage("I'm allergic to penicillin; mornings suit me best.")),
                            to_polymem(AIMessage("Noted."))], user_id="ann")
    assert [(r.content, r.category, r.source, r.entities) for r in saved] == [
        ("Ann is allergic to penicillin", "fact", "inference", ("Ann",)),
        ("Ann prefers morning appointments", "preference", "inference", ())]
    assert saved[0].importance == 0.9


async def test_an_async_store_distils_with_the_models_async_call(db_url: str) -> None:
    extractor = ChatModelExtractor(FakeListChatModel(responses=[EXTRACTION]))
    async with polymem.open_async(db_url, embedder=None, extractor=extractor) as amem:
        saved = await amem.ingest([to_polymem(HumanMessage("I'm allergic to penicillin."))], user_id="ann")
    assert [r.content for r in saved] == ["Ann is allergic to penicillin", "Ann prefers morning appointments"]


def test_the_extractor_saves_nothing_when_the_model_finds_nothing(mem: polymem.Memory) -> None:
    extractor = ChatModelExtractor(FakeListChatModel(responses=['{"memories": []}']))
    assert extractor.extract([to_polymem(HumanMessage("hi"))]) == []


def test_the_extractor_rejects_an_answer_that_is_not_json() -> None:
    extractor = ChatModelExtractor(FakeListChatModel(responses=["Sure! Ann likes tea."]))
    with pytest.raises(polymem.ModelAnswerError, match="JSON"):
        extractor.extract([to_polymem(HumanMessage("I like tea"))])


async def test_the_extractor_and_summarizer_have_async_forms() -> None:
    extractor = ChatModelExtractor(FakeListChatModel(responses=[EXTRACTION]))
    assert len(await extractor.aextract([to_polymem(HumanMessage("x"))])) == 2
    summarizer = ChatModelSummarizer(FakeListChatModel(responses=["  short  "]))
    assert await summarizer.asummarize(None, [to_polymem(HumanMessage("x"))]) == "short"


def test_the_summarizer_folds_the_window_overflow_with_the_model(db_url: str) -> None:
    model = FakeListChatModel(responses=["Ann booked 2 nights in Lyon for 180 EUR and asked about trains."])
    with polymem.open(db_url, embedder=None, summarizer=ChatModelSummarizer(model)) as mem:
        history = PolymemChatMessageHistory(mem, "trip", user_id="ann", max_tokens=40, overflow="summarize",
                                            keep_last=1)
        history.add_messages([HumanMessage("Book 2 nights in Lyon please."), AIMessage("Done, 180 EUR total."),
                              HumanMessage("Are there trains from Paris to Lyon in the morning?")])
        window = history.messages
    assert window[0].type == "system"
    assert window[0].content == "Ann booked 2 nights in Lyon for 180 EUR and asked about trains."
    assert window[-1].content == "Are there trains from Paris to Lyon in the morning?"


def test_a_summary_that_loses_a_number_is_replaced_by_the_raw_text(db_url: str) -> None:
    model = FakeListChatModel(responses=["Ann booked some nights."])
    with polymem.open(db_url, embedder=None, summarizer=ChatModelSummarizer(model)) as mem:
        history = PolymemChatMessageHistory(mem, "trip", user_id="ann", max_tokens=40, overflow="summarize",
                                            keep_last=1)
        history.add_messages([HumanMessage("Book 2 nights in Lyon please."), AIMessage("Done, 180 EUR total."),
                              HumanMessage("Are there trains from Paris to Lyon in the morning?")])
        summary = history.messages[0].content
    assert "Book 2 nights in Lyon" in summary and summary != "Ann booked some nights."
