"""Extraction and summary by a chat model (`ChatExtractor`, `ChatSummarizer`), and validity read from the text."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import polymem
from polymem.testing import FakeClock, local_embedder

SAID = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)
FEBRUARY, APRIL = datetime(2026, 2, 15, tzinfo=timezone.utc), datetime(2026, 4, 1, tzinfo=timezone.utc)


class Scripted:
    """A chat model that answers its replies in turn and keeps what it was asked."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.asked: list[tuple[str, str]] = []

    def complete(self, system: str, prompt: str) -> str:
        self.asked.append((system, prompt))
        return self.replies.pop(0)


class AsyncScripted(polymem.AsyncChatModel):
    """The same, async only (as AutoGen's or Agent Framework's clients are)."""

    def __init__(self, *replies: str) -> None:
        super().__init__()
        self.replies = list(replies)

    async def acomplete(self, system: str, prompt: str) -> str:
        return self.replies.pop(0)


BLACK = json.dumps([{"content": "Ann's favourite colour is black", "category": "preference",
                     "source": "user_input", "valid_from": "2026-03-01"}])


def test_the_models_json_becomes_drafts_with_their_validity() -> None:
    (draft,) = polymem.ChatExtractor(Scripted(BLACK)).extract([polymem.Message("user", "I switched to black")])
    assert draft == polymem.MemoryDraft("Ann's favourite colour is black", "preference", "user_input",
                                        valid_from=datetime(2026, 3, 1, tzinfo=timezone.utc))


def test_a_fenced_object_of_memories_is_read() -> None:
    reply = 'Here:\n```json\n{"memories": [{"content": "Ann owns 2 bikes"}]}\n```'
    assert [d.content for d in polymem.ChatExtractor(Scripted(reply)).extract([polymem.Message("user", "x")])] == [
        "Ann owns 2 bikes"]


def test_the_prompt_gives_the_time_each_message_was_said_and_the_categories() -> None:
    model = Scripted("[]")
    polymem.ChatExtractor(model, categories=("fact", "hobby")).extract(
        [polymem.Message("user", "I switched to black on March 1st", created_at=SAID)])
    system, prompt = model.asked[0]
    assert "fact, hobby" in system and "valid_from" in system
    assert "took place up to 2026-03-10 12:00 (UTC)" in prompt
    assert prompt.endswith("[2026-03-10 12:00] user: I switched to black on March 1st")


def test_unusable_items_are_skipped_and_a_bad_date_or_importance_is_dropped_not_the_memory() -> None:
    reply = json.dumps([{"content": ""}, {"content": "x", "category": "gossip"},
                        {"content": "Ann lives in Bergen", "importance": 7, "valid_from": "soon", "source": "hearsay"}])
    (draft,) = polymem.ChatExtractor(Scripted(reply)).extract([polymem.Message("user", "x")])
    assert (draft.content, draft.importance, draft.valid_from, draft.source) == (
        "Ann lives in Bergen", None, None, "inference")


def test_a_reply_without_json_is_a_model_answer_error_and_saves_nothing() -> None:
    with polymem.open("memory://", embedder=None, extractor=polymem.ChatExtractor(Scripted("Sure, noted!"))) as mem:
        with pytest.raises(polymem.ModelAnswerError, match="did not answer with JSON"):
            mem.ingest([polymem.Message("user", "I like tea")], user_id="ann")
        assert mem.list(user_id="ann") == []


def test_a_model_answer_error_is_also_a_value_error() -> None:
    assert issubclass(polymem.ModelAnswerError, ValueError)


def test_ending_a_session_on_an_unreadable_reply_keeps_its_messages_to_end_again() -> None:
    extractor = polymem.ChatExtractor(Scripted("I can't do that.", BLACK))
    with polymem.open("memory://", embedder=None, extractor=extractor) as mem:
        session = mem.session("chat", user_id="ann")
        session.add("user", "I switched to black on March 1st")
        with pytest.raises(polymem.ModelAnswerError):
            session.end(consolidate=True)
        assert [m.content for m in session.messages()] == ["I switched to black on March 1st"]
        assert [r.content for r in session.end(consolidate=True)] == ["Ann's favourite colour is black"]


async def test_an_async_store_awaits_an_async_only_model() -> None:
    async with polymem.open_async("memory://", embedder=None, extractor=polymem.ChatExtractor(AsyncScripted(BLACK))) as amem:
        (saved,) = await amem.ingest([polymem.Message("user", "I switched to black on March 1st")], user_id="ann")
    assert saved.metadata["valid_from"] == "2026-03-01T00:00:00+00:00"


def test_a_sync_store_runs_an_async_only_model_on_its_loop_thread() -> None:
    assert len(polymem.ChatExtractor(AsyncScripted(BLACK)).extract([polymem.Message("user", "x")])) == 1


def test_the_summarizer_folds_the_summary_so_far_and_the_new_messages() -> None:
    model = Scripted("  Ann's budget is 1200 EUR.  ")
    summary = polymem.ChatSummarizer(model).summarize("Budget 1200 EUR.", [polymem.Message("user", "Book Oslo")])
    assert summary == "Ann's budget is 1200 EUR."
    assert model.asked[0][1] == "Summary so far:\nBudget 1200 EUR.\n\nNew messages:\nuser: Book Oslo"


def test_an_empty_summary_leaves_the_raw_text_in_the_window() -> None:
    with polymem.open("memory://", embedder=None, summarizer=polymem.ChatSummarizer(Scripted("", "", ""))) as mem:
        session = mem.session("s", user_id="ann", max_tokens=20, overflow="summarize", keep_last=1)
        for text in ("My budget is 1200 EUR for the trip", "I want 3 nights in Bergen", "Find a quiet hotel"):
            session.add("user", text)
        assert session.summary is not None and "1200 EUR" in session.summary


def test_a_store_ingest_dates_undated_messages_by_its_clock() -> None:
    model = Scripted("[]")
    with polymem.open("memory://", embedder=None, clock=FakeClock(SAID), extractor=polymem.ChatExtractor(model)) as mem:
        mem.ingest([polymem.Message("user", "I switched to black yesterday")], user_id="ann")
    assert "[2026-03-10 12:00] user: I switched to black yesterday" in model.asked[0][1]


def test_a_draft_with_a_naive_validity_is_refused() -> None:
    with polymem.open("memory://", embedder=None) as mem, pytest.raises(polymem.NaiveDatetimeError):
        mem.save_many([polymem.MemoryDraft("I live in Oslo", valid_from=datetime(2026, 3, 1))], user_id="ann")


# -- the supersession scenario: what Ann liked in February, once she said she switched ----------------------------
def test_saying_the_switch_dates_it_and_february_still_recalls_blue(tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc))
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=local_embedder(), clock=clock) as mem:
        mem.save("My favourite colour is blue", user_id="ann", category="preference")
        clock.advance(days=59)  # March 10th: the default RuleExtractor reads "on March 1st" from then
        (black,) = mem.ingest([polymem.Message("user", "I switched my favourite colour to black on March 1st.")],
                              user_id="ann")
        assert black.metadata["valid_from"] == "2026-03-01T00:00:00+00:00"
        assert len(mem.consolidate().superseded) == 1
        question = "What colour does Ann like?"
        assert [h.memory.content for h in mem.recall(question, user_id="ann", valid_at=FEBRUARY)] == [
            "My favourite colour is blue"]
        assert [h.memory.content for h in mem.recall(question, user_id="ann", valid_at=APRIL)] == [
            "I switched my favourite colour to black on March 1st."]
        assert [h.memory.content for h in mem.recall(question, user_id="ann",
                                                     valid_at=datetime(2026, 3, 1, tzinfo=timezone.utc)
                                                     - timedelta(seconds=1))] == ["My favourite colour is blue"]
