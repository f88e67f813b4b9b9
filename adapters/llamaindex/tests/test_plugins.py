"""LlamaIndex models as polymem plug-ins: embedder, extractor, summarizer."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import MockFunctionCallingLLM

import polymem
from polymem_llamaindex import LlamaIndexEmbedder, LlamaIndexExtractor, LlamaIndexSummarizer


class MiniLMEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model over the local MiniLM, as an application would configure one."""

    _model: Any = PrivateAttr()

    def __init__(self, model: Any) -> None:
        super().__init__(model_name="all-MiniLM-L6-v2")
        self._model = model

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._model.embed([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def answering(text: str, prompts: list[str] | None = None) -> MockFunctionCallingLLM:
    """LlamaIndex's mock function-calling LLM, scripted to answer `text` (and to record its prompts)."""

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        if prompts is not None:
            prompts.append(messages[-1].content or "")
        return ChatMessage(role="assistant", content=text)

    return MockFunctionCallingLLM(response_generator=respond)


def test_embedder_measures_its_dimension_from_the_model() -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=12))

    assert embedder.dimension == 12
    assert embedder.model_id == "llama_index/MockEmbedding/unknown"
    assert isinstance(embedder, polymem.Embedder)


def test_embedder_embeds_a_batch_in_order() -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=3))

    assert embedder.embed(["a", "b"]) == [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    assert embedder.embed([]) == []


def test_a_store_embeds_with_the_llamaindex_model_and_records_which(embedder) -> None:
    wrapped = LlamaIndexEmbedder(MiniLMEmbedding(embedder), model_id="li-minilm")
    with polymem.open("memory://", embedder=wrapped) as mem:
        mem.save("Ann is allergic to shellfish.", user_id="ann")
        mem.save("Ann's car is a red Fiat.", user_id="ann")

        hits = mem.recall("Can she eat shrimp?", user_id="ann")

    assert hits[0].memory.content == "Ann is allergic to shellfish."
    assert hits[0].memory.embedding_model == "li-minilm"
    assert hits[0].similarity is not None


def test_extractor_turns_the_llm_answer_into_memory_drafts() -> None:
    prompts: list[str] = []
    llm = answering(
        '[{"content": "Ann prefers aisle seats.", "category": "preference", "importance": 0.8, "source": "user_input"},'
        ' {"content": "Ann flies to Oslo on 3 June.", "valid_from": "2026-06-03"}]',
        prompts,
    )

    drafts = LlamaIndexExtractor(llm).extract([polymem.Message(role="user", content="Aisle please, Oslo on 3 June.")])

    assert [(d.content, d.category, d.importance, d.source) for d in drafts] == [
        ("Ann prefers aisle seats.", "preference", 0.8, "inference"),
        ("Ann flies to Oslo on 3 June.", "fact", None, "inference"),
    ]
    assert drafts[1].valid_from == datetime(2026, 6, 3, tzinfo=timezone.utc)
    assert "user: Aisle please, Oslo on 3 June." in prompts[0]


def test_a_store_ingests_through_the_llm_extractor() -> None:
    llm = answering('```json\n{"memories": [{"content": "Ann drinks green tea.", "category": "preference"}]}\n```')
    with polymem.open("memory://", embedder=None, extractor=LlamaIndexExtractor(llm)) as mem:
        saved = mem.ingest([polymem.Message(role="user", content="Green tea for me, always.")], user_id="ann")

    assert [(r.content, r.category, r.source) for r in saved] == [("Ann drinks green tea.", "preference", "inference")]


def test_an_llm_answer_without_json_is_a_model_answer_error_and_saves_nothing() -> None:
    llm = answering('<facts><fact category="preference">Ann drinks green tea.</fact></facts>')
    with polymem.open("memory://", embedder=None, extractor=LlamaIndexExtractor(llm)) as mem:
        with pytest.raises(polymem.ModelAnswerError):
            mem.ingest([polymem.Message(role="user", content="Green tea for me, always.")], user_id="ann")
        assert mem.list(user_id="ann") == []


def test_summarizer_returns_the_llm_summary_of_previous_summary_and_messages() -> None:
    prompts: list[str] = []
    llm = answering("  Ann booked 3 nights in Lyon at 110 EUR.  ", prompts)

    summary = LlamaIndexSummarizer(llm).summarize("Ann plans a trip.", [polymem.Message(role="user", content="3 nights, 110 EUR")])

    assert summary == "Ann booked 3 nights in Lyon at 110 EUR."
    assert "Ann plans a trip." in prompts[0] and "user: 3 nights, 110 EUR" in prompts[0]


def test_a_session_folds_its_overflow_with_the_llm_summarizer() -> None:
    llm = answering("Ann booked 3 nights in Lyon from 12 May at 110 EUR per night.")
    with polymem.open("memory://", embedder=None, summarizer=LlamaIndexSummarizer(llm)) as mem:
        session = mem.session("s", user_id="ann", max_tokens=40, overflow="summarize", keep_last=1)
        session.add("user", "I want 3 nights in Lyon from 12 May.")
        session.add("assistant", "Hotel Bellecour costs 110 EUR per night.")
        session.add("user", "Book it, and tell me about the museums nearby as well please.")

        assert session.summary == "Ann booked 3 nights in Lyon from 12 May at 110 EUR per night."
