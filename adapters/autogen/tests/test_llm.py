"""ChatCompletionExtractor and ChatCompletionSummarizer: polymem plug-ins answered by an AutoGen model client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from autogen_core.models import SystemMessage, UserMessage

import polymem
from polymem_autogen import ChatCompletionExtractor, ChatCompletionSummarizer

CONVERSATION = [
    polymem.Message(role="user", content="I moved to Bergen and I'm vegetarian."),
    polymem.Message(role="assistant", content="Noted!", name="planner"),
]


def test_extractor_turns_the_model_json_into_memory_drafts(replay: Any) -> None:
    answer = json.dumps(
        [
            {
                "content": "The user lives in Bergen",
                "category": "fact",
                "source": "user_input",
                "importance": 0.8,
                "entities": ["Bergen"],
            },
            {"content": "The user is vegetarian", "category": "preference", "source": "inference"},
        ]
    )
    drafts = ChatCompletionExtractor(replay(answer)).extract(CONVERSATION)
    assert drafts == [
        polymem.MemoryDraft("The user lives in Bergen", "fact", "user_input", 0.8, ("Bergen",)),
        polymem.MemoryDraft("The user is vegetarian", "preference", "inference"),
    ]


def test_extractor_sends_the_conversation_with_roles_and_names(replay: Any) -> None:
    client = replay("[]")
    ChatCompletionExtractor(client).extract(CONVERSATION)
    system, user = client.create_calls[0]["messages"]
    assert isinstance(system, SystemMessage) and "fact, preference, event, task" in system.content
    assert isinstance(user, UserMessage)
    assert user.content.endswith("Conversation:\nuser: I moved to Bergen and I'm vegetarian.\nassistant (planner): Noted!")


def test_extractor_reads_json_inside_a_code_fence(replay: Any) -> None:
    answer = 'Here you go:\n```json\n[{"content": "The user lives in Bergen"}]\n```'
    assert [d.content for d in ChatCompletionExtractor(replay(answer)).extract(CONVERSATION)] == [
        "The user lives in Bergen"
    ]


def test_extractor_skips_unusable_items_and_defaults_unknown_sources_to_inference(replay: Any) -> None:
    answer = json.dumps(
        [
            {"content": ""},
            {"content": "x", "category": "gossip"},
            {"content": "The user lives in Bergen", "source": "hearsay", "importance": 7},
        ]
    )
    (draft,) = ChatCompletionExtractor(replay(answer)).extract(CONVERSATION)
    assert (draft.content, draft.source, draft.importance) == ("The user lives in Bergen", "inference", None)


def test_extractor_raises_when_the_model_answers_without_json(replay: Any) -> None:
    with pytest.raises(polymem.ModelAnswerError, match="did not answer with JSON"):
        ChatCompletionExtractor(replay("I could not find anything.")).extract(CONVERSATION)


@pytest.mark.asyncio
async def test_extractor_works_when_called_from_inside_an_event_loop(replay: Any) -> None:
    extractor = ChatCompletionExtractor(replay('[{"content": "The user lives in Bergen"}]'))
    assert [d.content for d in extractor.extract(CONVERSATION)] == ["The user lives in Bergen"]


def test_store_ingest_saves_what_the_extractor_returns(db_url: str, replay: Any) -> None:
    extractor = ChatCompletionExtractor(replay('[{"content": "The user lives in Bergen", "category": "fact"}]'))
    with polymem.open(db_url, embedder=None, extractor=extractor) as mem:
        mem.ingest(CONVERSATION, user_id="alice")
        assert [r.content for r in mem.list(user_id="alice")] == ["The user lives in Bergen"]


def test_summarizer_folds_the_previous_summary_and_new_messages(replay: Any) -> None:
    client = replay("The user moved to Bergen; budget 1200 EUR.")
    summary = ChatCompletionSummarizer(client).summarize("Budget 1200 EUR.", CONVERSATION)
    assert summary == "The user moved to Bergen; budget 1200 EUR."
    sent = client.create_calls[0]["messages"][1].content
    assert sent.startswith("Summary so far:\nBudget 1200 EUR.\n\nNew messages:\nuser: I moved to Bergen")


def test_a_session_that_overflows_keeps_the_model_summary(db_url: str, replay: Any) -> None:
    summary = "The user has a budget of 1200 EUR for the trip."
    summarizer = ChatCompletionSummarizer(replay(summary))
    with polymem.open(db_url, embedder=None, summarizer=summarizer) as mem:
        ses = mem.session("s", user_id="alice", max_tokens=30, overflow="summarize", keep_last=1)
        for text in (
            "My budget is 1200 EUR for the trip",
            "I want 3 nights in Bergen",
            "Find me a quiet hotel near the harbour",
        ):
            ses.add("user", text)
        assert ses.summary == summary
        assert [m.content for m in ses.messages()][0] == summary
