"""Semantic Kernel services as polymem's embedder, extractor and summarizer."""

from __future__ import annotations

import json

import pytest

import polymem
from polymem_semantic_kernel import SemanticKernelEmbedder, SemanticKernelExtractor, SemanticKernelSummarizer


def test_the_embedder_reads_its_dimension_and_model_id_from_the_service(scripted, minilm):
    embedder = SemanticKernelEmbedder(scripted.LocalEmbeddingService(minilm))
    assert isinstance(embedder, polymem.Embedder)
    assert (embedder.model_id, embedder.dimension) == (f"local:{minilm.model_id}", minilm.dimension)


def test_the_embedder_returns_the_services_vectors(scripted, minilm):
    embedder = SemanticKernelEmbedder(scripted.LocalEmbeddingService(minilm), model_id="mine", dimension=384)
    vectors = embedder.embed(["green tea", "black coffee"])
    assert vectors == [[float(x) for x in row] for row in minilm.embed(["green tea", "black coffee"])]
    assert embedder.model_id == "mine"


async def test_the_embedder_works_from_inside_a_running_event_loop(scripted, minilm):
    embedder = SemanticKernelEmbedder(scripted.LocalEmbeddingService(minilm))
    assert len(embedder.embed(["called while a loop runs"])[0]) == minilm.dimension
    assert len((await embedder.aembed(["awaited"]))[0]) == minilm.dimension


def test_a_store_recalls_by_meaning_with_the_wrapped_service(scripted, minilm, db_url):
    with polymem.open(db_url, embedder=SemanticKernelEmbedder(scripted.LocalEmbeddingService(minilm))) as mem:
        mem.save("Ann's favourite drink is green tea", user_id="ann")
        mem.save("Ann's car is red", user_id="ann")
        hits = mem.recall("beverage preference", user_id="ann", top_k=2)
        assert "tea" in hits[0].memory.content
        assert hits[0].memory.embedding_model == f"local:{minilm.model_id}"


def test_the_extractor_turns_the_models_json_into_drafts(scripted):
    answer = [
        {"content": "Ann is vegan", "category": "preference", "source": "user_input", "importance": 0.9,
         "entities": ["Ann"]},
        {"content": "Ann may like Thai food", "source": "guess"},
        {"content": "   "},
        "not an object",
    ]
    service = scripted.ScriptedChatCompletion(["```json\n" + json.dumps(answer) + "\n```"])
    drafts = SemanticKernelExtractor(service).extract([polymem.Message(role="user", content="I'm vegan.")])
    assert drafts == [
        polymem.MemoryDraft("Ann is vegan", "preference", "user_input", 0.9, ("Ann",)),
        polymem.MemoryDraft("Ann may like Thai food", "fact", "inference"),
        polymem.MemoryDraft("not an object", "fact", "inference"),  # a bare string is a fact
    ]
    assert "user: I'm vegan." in service.seen[0].messages[-1].content


def test_a_reply_that_is_not_json_is_a_model_answer_error(scripted):
    service = scripted.ScriptedChatCompletion(["Sorry, I can't."])
    with pytest.raises(polymem.ModelAnswerError):
        SemanticKernelExtractor(service).extract([polymem.Message(role="user", content="hi")])


def test_the_extractor_serves_a_stores_ingest(scripted, store, db_url):
    service = scripted.ScriptedChatCompletion([json.dumps([{"content": "Ann owns 2 bikes", "category": "fact"}])])
    with polymem.open(db_url, embedder=None, extractor=SemanticKernelExtractor(service)) as mem:
        saved = mem.ingest([polymem.Message(role="user", content="I have two bikes")], user_id="ann")
    assert [(r.content, r.source) for r in saved] == [("Ann owns 2 bikes", "inference")]


def test_the_summarizer_folds_the_previous_summary_and_messages(scripted):
    service = scripted.ScriptedChatCompletion(["Budget 40 EUR; prefers tea."])
    summary = SemanticKernelSummarizer(service).summarize(
        "Budget 40 EUR.", [polymem.Message(role="user", content="I prefer tea.")]
    )
    assert summary == "Budget 40 EUR; prefers tea."
    prompt = service.seen[0].messages
    assert "Keep every number" in prompt[0].content
    assert "Summary so far:\nBudget 40 EUR." in prompt[1].content and "user: I prefer tea." in prompt[1].content


def test_a_session_window_summarizes_through_the_service(scripted, db_url):
    service = scripted.ScriptedChatCompletion([lambda h: "Summary: the budget is 40 EUR."] * 10)
    with polymem.open(db_url, embedder=None, summarizer=SemanticKernelSummarizer(service)) as mem:
        session = mem.session("s", user_id="ann", max_tokens=30, overflow="summarize", keep_last=2)
        session.add("user", "My budget is 40 EUR for the whole trip, please keep it in mind.")
        for word in ("alpha", "beta", "gamma", "delta"):
            session.add("user", f"message {word} with some more words in it")
        assert session.summary == "Summary: the budget is 40 EUR."
        assert service.seen
