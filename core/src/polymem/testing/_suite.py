"""The conformance tests themselves (see `polymem.testing`)."""

from __future__ import annotations

import io
import json
import math
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

import polymem
from polymem import (
    DimensionMismatchError,
    EmptyContentError,
    InvalidFilterError,
    InvalidInput,
    MemoryDraft,
    NaiveDatetimeError,
    SnapshotError,
    VersionConflictError,
)

from .. import _engine
from . import FakeClock, RecordingEmbedder, call, local_embedder


class MemoryConformance:
    """Behaviour every polymem store shows, sync or async, on any backend."""

    @pytest.fixture
    def open_store(self) -> Any:  # pragma: no cover - provided by the subclass
        raise NotImplementedError("provide an open_store fixture: (clock, embedder) -> store")

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def mem(self, open_store: Any, clock: FakeClock) -> Any:
        store = open_store(clock, local_embedder())
        yield store
        call(store.close())

    @pytest.fixture
    def lexical(self, open_store: Any, clock: FakeClock) -> Any:
        store = open_store(clock, None)
        yield store
        call(store.close())

    # -- saving -----------------------------------------------------------------------------
    def test_save_returns_a_complete_record(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann", category="preference", metadata={"k": 1}))
        assert uuid.UUID(rec.memory_id)
        assert rec.content == "I like blue" and rec.category == "preference" and rec.user_id == "ann"
        assert rec.created_at == clock.now and rec.created_at.tzinfo is not None
        assert rec.version == 1 and rec.status == "active" and rec.access_count == 0
        assert rec.embedding_model == mem.embedder.model_id
        assert rec.metadata == {"k": 1}

    def test_base_score_comes_from_the_source(self, mem: Any) -> None:
        user = call(mem.save("I live in Paris", user_id="ann", source="user_input"))
        inferred = call(mem.save("Ann probably likes cities", user_id="ann", source="inference"))
        tool = call(mem.save("Weather in Paris: 12 C", user_id="ann", source="tool_result"))
        assert (user.importance, inferred.importance, tool.importance) == (0.6, 0.4, 0.3)

    def test_explicit_importance_overrides_the_source(self, mem: Any) -> None:
        assert call(mem.save("Deadline is Friday", user_id="ann", importance=0.9)).importance == 0.9

    def test_get_returns_the_saved_record(self, mem: Any) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        assert call(mem.get(rec.memory_id)) == rec

    def test_get_of_an_unknown_id_is_none(self, mem: Any) -> None:
        assert call(mem.get(str(uuid.uuid4()))) is None

    def test_same_idempotency_key_returns_the_same_record(self, mem: Any) -> None:
        first = call(mem.save("I like blue", user_id="ann", idempotency_key="k1"))
        again = call(mem.save("I like blue!", user_id="ann", idempotency_key="k1"))
        assert again.memory_id == first.memory_id
        assert len(call(mem.list(user_id="ann"))) == 1

    def test_same_content_in_the_same_scope_is_not_duplicated(self, mem: Any, clock: FakeClock) -> None:
        first = call(mem.save("I like blue", user_id="ann"))
        clock.advance(days=3)
        again = call(mem.save("  i like BLUE ", user_id="ann"))
        assert again.memory_id == first.memory_id
        assert again.last_accessed_at == clock.now
        assert len(call(mem.list(user_id="ann"))) == 1

    def test_a_batch_repeating_content_saves_it_once(self, mem: Any) -> None:
        saved = call(mem.save_many([polymem.MemoryDraft("I like blue"), polymem.MemoryDraft("i like BLUE"),
                                    polymem.MemoryDraft("I like green")], user_id="ann"))
        assert saved[0].memory_id == saved[1].memory_id != saved[2].memory_id
        assert len(call(mem.list(user_id="ann"))) == 2

    def test_in_a_batch_content_repeating_a_keyed_memory_is_that_memory_as_when_saved_one_by_one(
            self, mem: Any) -> None:
        drafts = [polymem.MemoryDraft("I like blue"), polymem.MemoryDraft("I like blue")]
        batch = call(mem.save_many(drafts, user_id="ann", idempotency_keys=["k1", None]))
        first = call(mem.save("I like red", user_id="bob", idempotency_key="k2"))
        again = call(mem.save("I like red", user_id="bob"))
        assert batch[1].memory_id == batch[0].memory_id
        assert again.memory_id == first.memory_id
        assert len(call(mem.list(user_id="ann"))) == len(call(mem.list(user_id="bob"))) == 1

    def test_same_content_for_another_user_is_a_separate_memory(self, mem: Any) -> None:
        a = call(mem.save("I like blue", user_id="ann"))
        b = call(mem.save("I like blue", user_id="bob"))
        assert a.memory_id != b.memory_id

    # -- bad input --------------------------------------------------------------------------
    @pytest.mark.parametrize("content", ["", "   "])
    def test_empty_content_is_refused(self, mem: Any, content: str) -> None:
        with pytest.raises(EmptyContentError):
            call(mem.save(content, user_id="ann"))
        assert call(mem.list(user_id="ann")) == []

    def test_a_memory_longer_than_the_model_window_is_stored_whole_and_found(self, mem: Any) -> None:
        notes = " ".join(f"Item {i} of the meeting was routine." for i in range(1500))  # ~55,000 characters
        content = f"{notes} Finally: the staging database listens on port 5433."
        saved = call(mem.save(content, user_id="ann"))
        assert call(mem.get(saved.memory_id)).content == content
        hits = call(mem.recall("staging database port", user_id="ann"))
        assert [h.memory.memory_id for h in hits] == [saved.memory_id]

    def test_nul_characters_are_refused(self, mem: Any) -> None:
        with pytest.raises(InvalidInput):
            call(mem.save("I like\x00 blue", user_id="ann"))
        assert call(mem.list(user_id="ann")) == []

    @pytest.mark.parametrize("importance", [-0.1, 1.5, "high", True, float("nan"), float("inf")])
    def test_out_of_range_importance_is_refused(self, mem: Any, importance: Any) -> None:
        with pytest.raises(InvalidInput):
            call(mem.save("I like blue", user_id="ann", importance=importance))

    @pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
    def test_nan_or_infinity_in_metadata_is_refused_and_nothing_is_stored(self, mem: Any, value: float) -> None:
        with pytest.raises(InvalidInput):
            call(mem.save("I like blue", user_id="ann", metadata={"score": value}))
        assert call(mem.list(user_id="ann")) == []

    @pytest.mark.parametrize("bad", ["nan", "ragged", "text"])
    def test_a_malformed_vector_is_refused_and_nothing_is_stored(self, mem: Any, bad: str) -> None:
        dimension = mem.embedder.dimension
        vector: Any = {"nan": [float("nan")] * dimension, "ragged": [[0.1] * dimension, [0.1]],
                       "text": ["x"] * dimension}[bad]
        with pytest.raises(InvalidInput):
            call(mem.save("I like blue", user_id="ann", vector=vector))
        with pytest.raises(InvalidInput):
            call(mem.recall("blue", user_id="ann", query_vector=vector))
        assert call(mem.list(user_id="ann")) == []

    def test_naive_datetime_is_refused_and_nothing_is_stored(self, mem: Any) -> None:
        with pytest.raises(NaiveDatetimeError):
            call(mem.save("Call the bank", user_id="ann", expire_at=datetime(2030, 1, 1)))
        assert call(mem.list(user_id="ann")) == []

    @pytest.mark.parametrize("top_k", [0, -1, 1001, 2.5, True])
    def test_out_of_range_top_k_is_refused(self, mem: Any, top_k: Any) -> None:
        with pytest.raises(InvalidInput):
            call(mem.recall("blue", user_id="ann", top_k=top_k))

    def test_unknown_filter_operator_is_refused(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        with pytest.raises(InvalidFilterError):
            call(mem.recall("blue", user_id="ann", filter={"category": {"$regex": "p.*"}}))

    def test_unknown_filter_field_is_refused(self, mem: Any) -> None:
        with pytest.raises(InvalidFilterError):
            call(mem.recall("blue", user_id="ann", filter={"colour": "blue"}))

    def test_wrong_vector_dimension_is_refused(self, mem: Any) -> None:
        with pytest.raises(DimensionMismatchError):
            call(mem.save("I like blue", user_id="ann", vector=[0.1, 0.2, 0.3]))
        assert call(mem.list(user_id="ann")) == []

    def test_bad_input_leaves_stored_memories_unchanged(self, mem: Any) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        with pytest.raises(InvalidInput):
            call(mem.update(rec.memory_id, importance=2.0))
        with pytest.raises(EmptyContentError):
            call(mem.update(rec.memory_id, content=""))
        assert call(mem.get(rec.memory_id)) == rec
        assert len(call(mem.history(rec.memory_id))) == 1

    # -- recall -----------------------------------------------------------------------------
    def test_recall_finds_the_semantic_match(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann", category="preference"))
        call(mem.save("I dislike promotions", user_id="ann", category="preference"))
        hits = call(mem.recall("What colours does the user like?", user_id="ann"))
        assert [h.memory.content for h in hits] == ["I like blue"]

    def test_recall_results_are_ordered_by_score(self, mem: Any) -> None:
        for text in ["I like blue", "My favourite colour is blue", "Blue shirts suit me", "I own a dog"]:
            call(mem.save(text, user_id="ann"))
        hits = call(mem.recall("blue colour", user_id="ann"))
        scores = [h.score for h in hits]
        assert len(hits) >= 2 and scores == sorted(scores, reverse=True)

    def test_recall_hit_explains_its_score(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        hit = call(mem.recall("I like blue", user_id="ann"))[0]
        assert hit.similarity is not None and hit.similarity > 0.9
        assert hit.text_rank == 1.0
        assert 0 < hit.live_score <= 1 and 0 < hit.score <= 1

    def test_decayed_memory_ranks_below_an_equally_relevant_fresh_one(self, mem: Any, clock: FakeClock) -> None:
        old = call(mem.save("I like blue", user_id="ann", category="event"))
        clock.advance(days=120)
        fresh = call(mem.save("I like blue", user_id="ann", agent_id="other", category="event"))
        hits = call(mem.recall("I like blue", user_id="ann"))
        assert [h.memory.memory_id for h in hits] == [fresh.memory_id, old.memory_id]
        assert hits[0].live_score > hits[1].live_score

    def test_unrelated_memory_is_not_recalled_for_its_high_score(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann", importance=0.1))
        call(mem.save("I dislike promotions", user_id="ann", importance=1.0))
        hits = call(mem.recall("What colours does the user like?", user_id="ann"))
        assert "I dislike promotions" not in [h.memory.content for h in hits]

    def test_recall_never_crosses_users(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        call(mem.save("User B hates promotions", user_id="bob"))
        for query in ["promotions", "What does the user hate?", "blue", "What do you know about me?"]:
            assert all(h.memory.user_id == "ann" for h in call(mem.recall(query, user_id="ann")))

    def test_recall_filters_by_agent_and_category(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann", agent_id="lc", category="preference"))
        call(mem.save("I like blue jeans", user_id="ann", agent_id="ag", category="fact"))
        assert [h.memory.agent_id for h in call(mem.recall("blue", user_id="ann", agent_id="ag"))] == ["ag"]
        assert [h.memory.category for h in call(mem.recall("blue", user_id="ann", category="preference"))] == [
            "preference"]

    def test_recall_filters_by_metadata_and_time_inside_the_search(self, mem: Any, clock: FakeClock) -> None:
        start = clock.now
        for i in range(30):
            call(mem.save(f"I like blue number {i}", user_id="ann", metadata={"topic": "colour", "n": i}))
            clock.advance(hours=1)
        call(mem.save("I like blue, in the archive", user_id="ann", metadata={"topic": "archive"}))
        hits = call(mem.recall("I like blue", user_id="ann", top_k=3, filter={"metadata.topic": "archive"}))
        assert [h.memory.content for h in hits] == ["I like blue, in the archive"]
        early = call(mem.recall("blue", user_id="ann", top_k=50,
                                filter={"created_at": {"$lt": start + timedelta(hours=5)}, "metadata.n": {"$gte": 2}}))
        assert sorted(h.memory.metadata["n"] for h in early) == [2, 3, 4]

    def test_metadata_filter_compares_a_whole_list_or_object(self, mem: Any) -> None:
        call(mem.save("Draft one", user_id="ann", metadata={"tags": ["draft"], "who": {"b": 2, "a": 1}}))
        call(mem.save("Final one", user_id="ann", metadata={"tags": ["draft", "final"]}))
        call(mem.save("Plain one", user_id="ann", metadata={"tags": "['draft']"}))
        listed = call(mem.list(user_id="ann", filter={"metadata.tags": ["draft"]}))
        assert [r.content for r in listed] == ["Draft one"]
        assert [r.content for r in call(mem.list(user_id="ann", filter={"metadata.who": {"$eq": {"a": 1, "b": 2}}}))
                ] == ["Draft one"]
        others = call(mem.list(user_id="ann", filter={"metadata.tags": {"$ne": ["draft"]}}))
        assert sorted(r.content for r in others) == ["Final one", "Plain one"]

    def test_metadata_filter_takes_integers_beyond_64_bits(self, mem: Any) -> None:
        call(mem.save("Priced", user_id="ann", metadata={"price": 10}))
        assert len(call(mem.list(user_id="ann", filter={"metadata.price": {"$lt": 10**100}}))) == 1
        assert call(mem.list(user_id="ann", filter={"metadata.price": {"$gt": -(10**100), "$lt": 5}})) == []

    def test_a_filter_value_with_a_nul_character_matches_as_no_stored_value_would(self, mem: Any) -> None:
        call(mem.save("Public doc", user_id="ann", metadata={"access": "public"}))
        call(mem.save("Private doc", user_id="ann", metadata={"access": "private"}))

        def contents(filter: dict[str, Any]) -> list[str]:
            return sorted(r.content for r in call(mem.list(user_id="ann", filter=filter)))

        assert contents({"metadata.access": "public\x00' OR '1'='1"}) == []
        assert contents({"metadata.access": {"$ne": "public\x00"}}) == ["Private doc", "Public doc"]
        assert contents({"metadata.access": {"$in": ["public", "x\x00"]}}) == ["Public doc"]
        assert contents({"metadata.access": {"$gt": "pri\x00vate"}}) == ["Private doc", "Public doc"]
        assert contents({"metadata.access": {"$lte": "pu\x00"}}) == ["Private doc"]

    def test_infinite_filter_bounds_lie_beyond_every_number_and_nan_equals_nothing(self, mem: Any) -> None:
        for price in (10, 20):
            call(mem.save(f"Priced {price}", user_id="ann", metadata={"price": price}))

        def count(bounds: dict[str, float]) -> int:
            return len(call(mem.list(user_id="ann", filter={"metadata.price": bounds})))

        assert (count({"$lt": math.inf}), count({"$gt": -math.inf})) == (2, 2)
        assert (count({"$gt": math.inf}), count({"$lte": -math.inf})) == (0, 0)
        assert (count({"$eq": math.nan}), count({"$lt": math.nan})) == (0, 0)

    def test_metadata_filter_keys_may_hold_spaces(self, mem: Any) -> None:
        call(mem.save("Spaced", user_id="ann", metadata={"first name": "Ann"}))
        assert [r.content for r in call(mem.list(user_id="ann", filter={"metadata.first name": "Ann"}))] == ["Spaced"]
        with pytest.raises(InvalidFilterError, match="Invalid filter key"):
            call(mem.list(user_id="ann", filter={"metadata.a') OR 1=1 OR json_extract(m.metadata, '$.": 1}))

    def test_recall_finds_chinese_words(self, mem: Any) -> None:
        call(mem.save("我喜欢蓝色", user_id="ann", category="preference"))
        call(mem.save("我叫小明", user_id="ann"))
        assert call(mem.recall("蓝色", user_id="ann"))[0].memory.content == "我喜欢蓝色"

    def test_lexical_mode_recalls_by_text(self, lexical: Any) -> None:
        call(lexical.save("I like blue", user_id="ann"))
        call(lexical.save("I own a dog", user_id="ann"))
        hits = call(lexical.recall("blue", user_id="ann"))
        assert [h.memory.content for h in hits] == ["I like blue"] and hits[0].similarity is None

    def test_a_memory_written_beside_a_strong_match_ranks_above_an_equally_relevant_one_written_apart(
            self, lexical: Any, clock: FakeClock) -> None:
        call(lexical.save("Ann: I started violin lessons downtown", user_id="ann"))
        clock.advance(minutes=2)
        call(lexical.save("Ann: lessons go fine", user_id="ann"))
        clock.advance(days=7)
        call(lexical.save("Ann: lessons run long", user_id="ann"))  # fresher, as relevant: first without context
        hits = call(lexical.recall("violin lessons", user_id="ann", min_relevance=0))
        assert [h.memory.content for h in hits] == [
            "Ann: I started violin lessons downtown", "Ann: lessons go fine", "Ann: lessons run long"]
        assert hits[1].relevance == pytest.approx(hits[2].relevance)

    def test_a_query_naming_a_period_ranks_the_memory_written_in_it_first(
            self, lexical: Any, clock: FakeClock) -> None:
        clock.now = datetime(2026, 1, 10, 12, tzinfo=timezone.utc)
        call(lexical.save("Ann: we went hiking in the hills", user_id="ann"))
        clock.advance(days=30)
        call(lexical.save("Ann: we went hiking again", user_id="ann"))  # fresher, as relevant: first without time
        clock.advance(days=3)
        hits = call(lexical.recall("where did Ann go hiking in January 2026?", user_id="ann", min_relevance=0))
        assert [h.memory.content for h in hits] == ["Ann: we went hiking in the hills", "Ann: we went hiking again"]

    def test_recall_reinforces_what_it_returns(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        clock.advance(days=1)
        call(mem.recall("blue", user_id="ann"))
        call(mem.flush())
        after = call(mem.get(rec.memory_id))
        assert after.access_count == 1
        assert after.last_accessed_at == clock.now
        assert after.importance == pytest.approx(rec.importance + 0.1)

    def test_expired_memory_is_not_recalled(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("Door code is 4512", user_id="ann", expire_at=clock.now + timedelta(hours=1)))
        assert call(mem.recall("door code", user_id="ann"))
        clock.advance(hours=2)
        assert call(mem.recall("door code", user_id="ann")) == []

    def test_list_is_an_exact_lookup(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann", metadata={"key": "colour"}))
        call(mem.save("I like tea", user_id="ann", metadata={"key": "drink"}))
        found = call(mem.list(user_id="ann", filter={"metadata.key": "drink"}))
        assert [r.content for r in found] == ["I like tea"]

    # -- versions ---------------------------------------------------------------------------
    def test_update_writes_a_new_version_and_keeps_history(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        clock.advance(minutes=5)
        new = call(mem.update(rec.memory_id, content="I like black", expected_version=1))
        assert new.version == 2 and new.updated_at == clock.now and new.created_at == rec.created_at
        assert [v.content for v in call(mem.history(rec.memory_id))] == ["I like blue", "I like black"]
        assert call(mem.recall("black", user_id="ann"))[0].memory.content == "I like black"

    def test_stale_expected_version_is_refused(self, mem: Any) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        call(mem.update(rec.memory_id, content="I like green"))
        with pytest.raises(VersionConflictError):
            call(mem.update(rec.memory_id, content="I like red", expected_version=1))
        assert call(mem.get(rec.memory_id)).content == "I like green"

    def test_update_of_an_unknown_memory_is_not_found(self, mem: Any) -> None:
        with pytest.raises(polymem.NotFoundError):
            call(mem.update(str(uuid.uuid4()), content="x"))

    # -- by key -------------------------------------------------------------------------------
    def test_put_then_get_by_key_returns_the_latest_version(self, mem: Any) -> None:
        first = call(mem.put("prefs/colour", "I like blue", user_id="ann"))
        second = call(mem.put("prefs/colour", "I like black", user_id="ann"))
        found = call(mem.get_by_key("prefs/colour"))
        assert found.memory_id == first.memory_id == second.memory_id
        assert (found.content, found.version) == ("I like black", 2)

    def test_get_by_an_unknown_key_is_none(self, mem: Any) -> None:
        assert call(mem.get_by_key("no/such/key")) is None

    def test_distinct_lists_each_value_once(self, mem: Any) -> None:
        for n, topic in enumerate(["work", "home", "work"]):
            call(mem.save(f"note {n}", user_id="ann", metadata={"topic": topic}))
        assert sorted(call(mem.distinct("metadata.topic", user_id="ann"))) == ["home", "work"]

    def test_delete_removes_the_memory(self, mem: Any) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        assert call(mem.delete(rec.memory_id)) is True
        assert call(mem.get(rec.memory_id)) is None
        assert call(mem.recall("blue", user_id="ann")) == []
        assert call(mem.delete(rec.memory_id)) is False

    # -- consolidation ----------------------------------------------------------------------
    def test_consolidate_merges_near_duplicates_keeping_history(self, mem: Any) -> None:
        first = call(mem.save("I like blue", user_id="ann", category="preference"))
        dup = call(mem.save("I like blue.", user_id="ann", category="preference"))
        report = call(mem.consolidate())
        assert report.merged == {first.memory_id: [dup.memory_id]}
        assert call(mem.get(dup.memory_id)).status == "archived"
        assert dup.memory_id in call(mem.get(first.memory_id)).metadata["merged_from"]
        assert [h.memory.memory_id for h in call(mem.recall("blue", user_id="ann"))] == [first.memory_id]

    def test_consolidate_supersedes_a_contradicted_preference(self, mem: Any, clock: FakeClock) -> None:
        old = call(mem.save("My favourite colour is blue", user_id="ann", category="preference"))
        clock.advance(days=2)
        new = call(mem.save("My favourite colour is now black", user_id="ann", category="preference"))
        report = call(mem.consolidate())
        assert report.superseded == {old.memory_id: new.memory_id}
        versions = call(mem.history(old.memory_id))
        assert [v.content for v in versions] == ["My favourite colour is blue", "My favourite colour is now black"]
        live = [h.memory.content for h in call(mem.recall("favourite colour", user_id="ann"))]
        assert live == ["My favourite colour is now black"]

    def test_consolidate_archives_expired_and_decayed(self, mem: Any, clock: FakeClock) -> None:
        expiring = call(mem.save("Door code is 4512", user_id="ann", expire_at=clock.now + timedelta(days=1)))
        task = call(mem.save("Buy milk", user_id="ann", category="task"))
        keep = call(mem.save("My name is Ann", user_id="ann", category="fact"))
        clock.advance(days=60)
        report = call(mem.consolidate())
        assert report.expired == [expiring.memory_id]
        assert report.archived == [task.memory_id]
        assert call(mem.get(keep.memory_id)).status == "active"

    def test_consolidate_keeps_unrelated_memories(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann", category="preference"))
        call(mem.save("I like jazz", user_id="ann", category="preference"))
        report = call(mem.consolidate())
        assert report.changed == 0

    # -- embeddings -------------------------------------------------------------------------
    def test_memories_saved_without_a_model_are_embedded_by_the_first_recall_with_one(
            self, open_store: Any, clock: FakeClock) -> None:
        first = open_store(clock, None)
        saved = call(first.save("I like blue", user_id="ann"))
        second = open_store(clock, local_embedder())
        call(first.close())
        try:
            assert [h.memory.memory_id for h in call(second.recall("blue", user_id="ann"))] == [saved.memory_id]
            assert call(second.get(saved.memory_id)).embedding_model == local_embedder().model_id
            assert call(second.reembed()) == 0
            assert call(second.recall("which colour?", user_id="ann"))[0].memory.memory_id == saved.memory_id
        finally:
            call(second.close())

    def test_a_re_embedding_embeds_each_memory_once_over_several_batches(
            self, open_store: Any, clock: FakeClock) -> None:
        first = open_store(clock, None)
        contents = [f"note {i} on the garden" for i in range(600)]  # batches of 256
        call(first.save_many([MemoryDraft(c) for c in contents], user_id="ann"))
        embedder = RecordingEmbedder(local_embedder())
        second = open_store(clock, embedder)
        call(first.close())
        try:
            assert call(second.reembed()) == 600
            assert sorted(embedder.texts) == sorted(contents)
            assert call(second.reembed()) == 0
        finally:
            call(second.close())

    # -- working memory ---------------------------------------------------------------------
    def test_session_keeps_messages_in_order_with_every_field(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        call(ses.add("user", "What's the weather?", name="ann", metadata={"lang": "en"}))
        call(ses.add("assistant", "", tool_calls=[{"id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'}]))
        call(ses.add("tool", "12 C", tool_call_id="c1"))
        messages = call(ses.messages())
        assert [m.role for m in messages] == ["user", "assistant", "tool"]
        assert messages[0].name == "ann" and messages[0].metadata == {"lang": "en"}
        assert messages[1].tool_calls[0].name == "weather" and messages[1].tool_calls[0].arguments == '{"city": "Paris"}'
        assert messages[2].tool_call_id == "c1"

    def test_window_is_bounded_by_tokens_not_messages(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=100, keep_last=1)
        for i in range(10):
            call(ses.add("user", f"hi {i}"))
        assert len(call(ses.messages())) == 10
        call(ses.add("user", "Quarterly report: " + "revenue grew strongly across regions " * 6))
        window = call(ses.messages())
        assert window[-1].content.startswith("Quarterly report")
        assert len(window) < 11
        assert len(call(ses.transcript())) == 11

    def test_overflow_summary_keeps_the_last_messages_verbatim(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=40, overflow="summarize", keep_last=2)
        call(ses.add("user", "Revenue was 12.5 million USD in 2025."))
        call(ses.add("assistant", "Noted, 12.5 million USD."))
        call(ses.add("user", "Costs were 3 million EUR, spread over a very long list of line items."))
        call(ses.add("user", "I live in Paris"))
        window = call(ses.messages())
        assert window[0].role == "system" and window[0].metadata["polymem_summary"]
        assert "12.5" in window[0].content and "USD" in window[0].content
        assert [m.content for m in window[-2:]][-1] == "I live in Paris"

    def test_summary_that_loses_a_number_falls_back_to_raw_text(self, open_store: Any, clock: FakeClock) -> None:
        class Lossy:
            def summarize(self, previous: str | None, messages: Any) -> str:
                return "The user talked about money."

        store = open_store(clock, None)
        store.engine.summarizer = Lossy()
        try:
            ses = store.session("s1", user_id="ann", max_tokens=25, overflow="summarize", keep_last=1)
            call(ses.add("user", "The invoice total is 4,200 EUR due on 2026-03-01."))
            call(ses.add("user", "Please also note the shipping, a detail that takes up many tokens here."))
            summary = call(ses.messages())[0].content
            assert "4,200 EUR" in summary and "talked about money" not in summary
        finally:
            call(store.close())

    def test_session_ttl_expires_the_window(self, mem: Any, clock: FakeClock) -> None:
        ses = mem.session("s1", user_id="ann", ttl=timedelta(minutes=30))
        call(ses.add("user", "hello"))
        clock.advance(minutes=31)
        assert call(ses.messages()) == []

    def test_evicted_messages_leave_the_window_but_stay_in_the_transcript(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        first = call(ses.add("user", "one"))
        call(ses.add("user", "two"))
        assert call(ses.evict([first.message_id])) == 1
        assert [m.content for m in call(ses.messages())] == ["two"]
        assert [m.content for m in call(ses.transcript())] == ["one", "two"]

    def test_replace_sets_the_window(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        call(ses.add("user", "one"))
        two = call(ses.add("user", "two"))
        call(ses.replace([two, polymem.Message(role="assistant", content="three")]))
        assert [m.content for m in call(ses.messages())] == ["two", "three"]
        call(ses.clear())
        assert call(ses.messages()) == []
        assert len(call(ses.transcript())) == 3

    def test_ending_a_session_consolidates_it_into_long_term_memory(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann")
        call(ses.add("user", "Hi! My name is Ann. I like blue."))
        call(ses.add("assistant", "Nice to meet you, Ann."))
        call(ses.add("user", "Can you recommend a shirt?"))
        saved = call(ses.end())
        assert sorted(r.content for r in saved) == ["I like blue.", "My name is Ann."]
        assert all(r.session_id == "s1" and r.user_id == "ann" for r in saved)
        assert call(ses.messages()) == []
        assert call(mem.recall("favourite colour", user_id="ann"))[0].memory.content == "I like blue."

    def test_ending_without_consolidation_discards(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann")
        call(ses.add("user", "My name is Ann."))
        assert call(ses.end(consolidate=False)) == []
        assert call(mem.list(user_id="ann")) == []

    # -- snapshots --------------------------------------------------------------------------
    def _fill(self, mem: Any, clock: FakeClock) -> list[Any]:
        recs = [call(mem.save(f"Fact number {i}: I like colour {c}", user_id=u, category="preference",
                              metadata={"i": i}, entities=[c]))
                for i, (u, c) in enumerate([("ann", "blue"), ("ann", "red"), ("bob", "green")])]
        clock.advance(hours=1)
        call(mem.update(recs[0].memory_id, content="Fact: I like black now"))
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        call(ses.add("user", "hello 你好", metadata={"x": [1, 2]}))
        return recs

    def test_snapshot_round_trip_is_exact(self, mem: Any, open_store: Any, clock: FakeClock) -> None:
        self._fill(mem, clock)
        buffer = io.BytesIO()
        assert call(mem.export_snapshot(buffer)) == 3
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            buffer.seek(0)
            report = call(target.import_snapshot(buffer))
            assert (report.imported, report.duplicates, report.sessions) == (3, 0, 1)
            for rec in call(mem.list(limit=100)):
                assert call(target.get(rec.memory_id)) == rec
                assert call(target.history(rec.memory_id)) == call(mem.history(rec.memory_id))
            source_msgs = call(mem.session("s1", user_id="ann", max_tokens=None).transcript())
            assert call(target.session("s1", user_id="ann", max_tokens=None).transcript()) == source_msgs
            buffer.seek(0)
            again = call(target.import_snapshot(buffer))
            assert (again.imported, again.duplicates) == (0, 3)
        finally:
            call(target.close())

    def test_a_restored_snapshot_answers_valid_at_and_as_of_for_live_memories(
            self, mem: Any, open_store: Any, clock: FakeClock) -> None:
        """Validity travels in the metadata and versions with their memory."""
        paris = call(mem.save("I live in Paris", user_id="ann", valid_from=datetime(2020, 1, 1, tzinfo=timezone.utc),
                              valid_to=datetime(2024, 1, 1, tzinfo=timezone.utc)))
        then = clock.advance(days=1)
        clock.advance(days=1)
        call(mem.update(paris.memory_id, content="I lived in Paris"))
        buffer = io.BytesIO()
        call(mem.export_snapshot(buffer))
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            buffer.seek(0)
            call(target.import_snapshot(buffer))
            assert call(target.get(paris.memory_id, as_of=then)).content == "I live in Paris"
            in_2022 = datetime(2022, 1, 1, tzinfo=timezone.utc)
            assert [r.content for r in call(target.list(user_id="ann", valid_at=in_2022))] == ["I lived in Paris"]
            assert call(target.list(user_id="ann", valid_at=datetime(2025, 1, 1, tzinfo=timezone.utc))) == []
        finally:
            call(target.close())

    def test_a_restored_snapshot_answers_as_of_for_deleted_memories_as_the_original(
            self, mem: Any, open_store: Any, clock: FakeClock) -> None:
        """A deleted memory travels as a tombstone with its versions: the restored store sees it
        before its deletion, in the version of then, and not after, as the original does."""
        gone = call(mem.save("My address is 1 Elm Street", user_id="ann"))
        call(mem.save("I like jazz", user_id="ann"))
        then = clock.advance(days=1)
        clock.advance(days=1)
        call(mem.update(gone.memory_id, content="My address is 2 Oak Road"))
        call(mem.delete(gone.memory_id))
        buffer = io.BytesIO()
        assert call(mem.export_snapshot(buffer)) == 1
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            buffer.seek(0)
            assert (call(target.import_snapshot(buffer)).imported, call(target.get(gone.memory_id))) == (1, None)
            assert call(target.history(gone.memory_id)) == call(mem.history(gone.memory_id))
            for store in (mem, target):
                assert call(store.get(gone.memory_id, as_of=then)).content == "My address is 1 Elm Street"
                assert call(store.get(gone.memory_id, as_of=clock.now)) is None
            assert [(h.memory.memory_id, h.memory.version) for h in call(
                target.recall("Where do I live?", user_id="ann", as_of=then))] == [
                (h.memory.memory_id, h.memory.version) for h in call(
                    mem.recall("Where do I live?", user_id="ann", as_of=then))]
            buffer.seek(0)
            assert call(target.import_snapshot(buffer)).duplicates == 2
        finally:
            call(target.close())

    def test_a_snapshot_of_format_version_1_still_imports(self, mem: Any, open_store: Any, clock: FakeClock) -> None:
        """Version 1 predates tombstones: no tombstone lines and no `tombstones` count."""
        self._fill(mem, clock)
        buffer = io.BytesIO()
        call(mem.export_snapshot(buffer))
        lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
        lines[0]["version"] = 1
        del lines[-1]["tombstones"]
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            report = call(target.import_snapshot(io.BytesIO(b"".join(json.dumps(x).encode() + b"\n" for x in lines))))
            assert (report.imported, report.sessions) == (3, 1)
        finally:
            call(target.close())

    def test_truncated_snapshot_is_refused_with_its_line_and_imports_nothing(
            self, mem: Any, open_store: Any, clock: FakeClock) -> None:
        self._fill(mem, clock)
        buffer = io.BytesIO()
        call(mem.export_snapshot(buffer))
        lines = buffer.getvalue().splitlines(keepends=True)
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            with pytest.raises(SnapshotError, match="truncated"):
                call(target.import_snapshot(io.BytesIO(b"".join(lines[:-1]))))
            corrupt = lines[:2] + [b'{"type": "memory", "record": {"memory_id": 1\n'] + lines[3:]
            with pytest.raises(SnapshotError, match="line 3"):
                call(target.import_snapshot(io.BytesIO(b"".join(corrupt))))
            assert call(target.list(limit=100)) == []
        finally:
            call(target.close())

    def test_snapshot_import_reembeds_vectors_of_another_model(
            self, lexical: Any, open_store: Any, clock: FakeClock) -> None:
        call(lexical.save("I like blue", user_id="ann"))
        buffer = io.BytesIO()
        call(lexical.export_snapshot(buffer))
        header = json.loads(buffer.getvalue().splitlines()[0])
        assert header["format"] == "polymem-snapshot" and header["version"] == 2
        target = open_store(clock, local_embedder(), fresh=True)
        try:
            buffer.seek(0)
            assert call(target.import_snapshot(buffer)).reembedded == 1
            assert call(target.recall("colour", user_id="ann"))[0].memory.content == "I like blue"
        finally:
            call(target.close())

    # -- later additions ----------------------------------------------------------------------
    def test_two_idempotency_keys_are_two_memories(self, mem: Any) -> None:
        a = call(mem.save("I like blue", user_id="ann", idempotency_key="k1"))
        b = call(mem.save("I like blue", user_id="ann", idempotency_key="k2"))
        assert a.memory_id != b.memory_id

    def test_recall_with_a_given_query_vector(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        call(mem.save("I own a dog", user_id="ann"))
        vector = mem.embedder.embed(["favourite colour"])[0]
        hits = call(mem.recall("zzzz", user_id="ann", query_vector=vector))
        assert hits[0].memory.content == "I like blue"

    def test_forgotten_messages_leave_the_transcript(self, mem: Any) -> None:
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        first = call(ses.add("user", "one"))
        call(ses.add("assistant", ""))
        assert call(ses.forget([first.message_id])) == 1
        assert [m.content for m in call(ses.transcript())] == [""]

    def test_min_relevance_drops_weak_hits(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        call(mem.save("My favourite colour is blue", user_id="ann"))
        strong = call(mem.recall("I like blue", user_id="ann", min_relevance=0.9))
        assert [h.memory.content for h in strong] == ["I like blue"]
        with pytest.raises(InvalidInput):
            call(mem.recall("blue", user_id="ann", min_relevance=1.5))

    def test_min_relevance_zero_returns_top_k_whatever_they_are(self, mem: Any) -> None:
        for content in ("I like blue", "The quarterly report is due", "Paris is in France"):
            call(mem.save(content, user_id="ann"))
        call(mem.save("I like blue too", user_id="bob"))
        hits = call(mem.recall("favourite colour", user_id="ann", top_k=3, min_relevance=0))
        assert len(hits) == 3 and hits[0].memory.content == "I like blue"
        assert {h.memory.user_id for h in hits} == {"ann"}

    def test_min_relevance_zero_fills_with_memories_matching_nothing(self, lexical: Any) -> None:
        call(lexical.save("I like blue", user_id="ann"))
        call(lexical.save("The quarterly report is due", user_id="ann"))
        hits = call(lexical.recall("blue", user_id="ann", top_k=5, min_relevance=0))
        assert [h.memory.content for h in hits] == ["I like blue", "The quarterly report is due"]
        assert hits[1].relevance == 0.0
        assert [h.memory.content for h in call(lexical.recall("blue", user_id="ann", top_k=5))] == ["I like blue"]

    def test_nearest_ranks_by_cosine_alone(self, mem: Any) -> None:
        blue = call(mem.save("I like blue", user_id="ann", importance=0.0))
        call(mem.save("I own a dog", user_id="ann", importance=1.0))
        vector = mem.embedder.embed(["favourite colour"])[0]
        found = call(mem.nearest(vector, user_id="ann", top_k=2))
        assert [r.memory_id for r, _ in found][0] == blue.memory_id and found[0][1] > found[1][1]
        stored = call(mem.vectors([blue.memory_id]))
        assert len(stored[blue.memory_id]) == mem.embedder.dimension

    def test_a_term_searched_before_it_was_stored_is_found_after(self, lexical: Any) -> None:
        assert call(lexical.recall("What is my dog called?", user_id="ann")) == []
        call(lexical.save("Remember my dog is called Rex", user_id="ann"))
        assert [h.memory.content for h in call(lexical.recall("What is my dog called?", user_id="ann"))] == [
            "Remember my dog is called Rex"]

    def test_update_can_extend_an_expiry(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("Door code is 4512", user_id="ann", expire_at=clock.now + timedelta(hours=1)))
        call(mem.update(rec.memory_id, expire_at=clock.now + timedelta(days=1)))
        clock.advance(hours=2)
        assert [h.memory.memory_id for h in call(mem.recall("door code", user_id="ann"))] == [rec.memory_id]

    def test_list_leaves_out_expired_memories(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("Door code is 4512", user_id="ann", expire_at=clock.now + timedelta(hours=1)))
        call(mem.save("I like blue", user_id="ann"))
        clock.advance(hours=2)
        assert [r.content for r in call(mem.list(user_id="ann"))] == ["I like blue"]
        assert len(call(mem.list(user_id="ann", status=None))) == 2

    # -- explain ----------------------------------------------------------------------------
    def test_explain_gives_parts_that_recombine_to_each_score(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("My favourite colour is blue", user_id="ann", category="preference"))
        call(mem.save("I walk my dog every morning", user_id="ann", source="inference"))
        clock.advance(days=30)
        hits = call(mem.recall("What colour is my favourite?", user_id="ann", explain=True))
        assert hits
        for hit in hits:
            why = hit.explanation
            relevance, live = why["relevance"], why["live"]
            weight = relevance["vector_weight"]
            text = (why["text"]["rank"] or 0.0) * why["text"].get("coverage", 1.0)
            fused = (weight * max(0.0, why["similarity"] or 0.0) + (1 - weight) * text) * \
                (relevance.get("grounding") or 1.0)
            assert relevance["value"] == pytest.approx(fused) == pytest.approx(hit.relevance)
            assert live["decay_factor"] == pytest.approx(0.5 ** (live["age_days"] / live["half_life_days"]))
            assert live["value"] == pytest.approx(min(1.0, live["base"] * live["decay_factor"] + live["access_bonus"]))
            blend = why["blend"]["live_weight"]
            assert why["score"] == pytest.approx(relevance["value"] * ((1 - blend) + blend * live["value"]))
            assert why["score"] == pytest.approx(hit.score) and live["value"] == pytest.approx(hit.live_score)
        best = hits[0].explanation
        assert best["live"]["age_days"] == pytest.approx(30.0) and best["live"]["half_life_days"] == 60.0
        assert best["live"]["source"] == "user_input" and best["live"]["base_by_source"] == 0.6
        assert [t["term"] for t in best["text"]["terms"]] == ["color", "favourit"]  # as the index stems them
        assert all(t["weight"] > 0 and t["documents"] == 1 for t in best["text"]["terms"])

    def test_a_recall_without_explain_carries_no_explanation(self, mem: Any) -> None:
        call(mem.save("I like blue", user_id="ann"))
        assert [h.explanation for h in call(mem.recall("blue", user_id="ann"))] == [None]

    def test_explain_in_lexical_mode_names_the_text_match(self, lexical: Any) -> None:
        call(lexical.save("Remember my dog is called Rex", user_id="ann"))
        (hit,) = call(lexical.recall("What is my dog called?", user_id="ann", explain=True))
        why = hit.explanation
        assert why["relevance"]["mode"] == "lexical" and why["relevance"]["admitted_by"] == "text"
        assert why["similarity"] is None and why["relevance"]["value"] == \
            pytest.approx(why["text"]["rank"] * why["text"]["coverage"])
        assert {"dog", "call"} <= {t["term"] for t in why["text"]["terms"]}

    # -- time travel ------------------------------------------------------------------------
    def test_as_of_gives_each_memory_in_the_version_current_then(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann", category="preference"))
        then = clock.advance(days=1)
        clock.advance(days=1)
        call(mem.update(rec.memory_id, content="I like black"))
        assert call(mem.get(rec.memory_id, as_of=then)).content == "I like blue"
        assert [r.content for r in call(mem.list(user_id="ann", as_of=then))] == ["I like blue"]
        past = call(mem.recall("Which colour do I like?", user_id="ann", as_of=then))
        assert [(h.memory.content, h.memory.version) for h in past] == [("I like blue", 1)]
        assert [h.memory.content for h in call(mem.recall("Which colour do I like?", user_id="ann"))] == [
            "I like black"]

    def test_as_of_leaves_out_what_was_saved_later(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("I like blue", user_id="ann"))
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        later = call(mem.save("I like green", user_id="ann"))
        assert call(mem.get(later.memory_id, as_of=then)) is None
        assert [h.memory.content for h in call(mem.recall("colour I like", user_id="ann", as_of=then))] == [
            "I like blue"]

    def test_a_deleted_memory_is_gone_now_but_seen_before_its_deletion(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        assert call(mem.delete(rec.memory_id)) is True
        assert call(mem.get(rec.memory_id)) is None and call(mem.recall("blue", user_id="ann")) == []
        assert call(mem.get(rec.memory_id, as_of=then)).content == "I like blue"
        assert [h.memory.memory_id for h in call(mem.recall("blue", user_id="ann", as_of=then))] == [rec.memory_id]
        assert call(mem.get(rec.memory_id, as_of=clock.advance(hours=1))) is None
        assert [v.content for v in call(mem.history(rec.memory_id))] == ["I like blue"]

    def test_purge_removes_a_memory_and_its_past_for_good(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("My passport number is X123", user_id="ann"))
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        call(mem.update(rec.memory_id, content="My passport number is Y456"))
        call(mem.delete(rec.memory_id))
        assert call(mem.purge(rec.memory_id)) is True
        assert call(mem.get(rec.memory_id, as_of=then)) is None and call(mem.history(rec.memory_id)) == []
        assert call(mem.recall("passport number", user_id="ann", as_of=then)) == []
        assert call(mem.purge(rec.memory_id)) is False

    def test_purge_removes_a_live_memory_too(self, mem: Any) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        assert call(mem.purge(rec.memory_id)) is True
        assert call(mem.get(rec.memory_id)) is None and call(mem.history(rec.memory_id)) == []

    def test_as_of_recalls_the_preference_held_before_a_supersession(self, mem: Any, clock: FakeClock) -> None:
        old = call(mem.save("My favourite colour is blue", user_id="ann", category="preference"))
        february = clock.advance(days=40)
        clock.advance(days=20)
        call(mem.save("My favourite colour is now black", user_id="ann", category="preference"))
        call(mem.consolidate())
        question = "What is my favourite colour?"
        assert [h.memory.content for h in call(mem.recall(question, user_id="ann", as_of=february))] == [
            "My favourite colour is blue"]
        assert call(mem.get(old.memory_id, as_of=february)).version == 1
        assert [h.memory.content for h in call(mem.recall(question, user_id="ann"))] == [
            "My favourite colour is now black"]

    def test_as_of_computes_live_scores_at_that_time(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("Buy milk", user_id="ann", category="task"))
        then = clock.advance(days=7)
        clock.advance(days=70)
        (hit,) = call(mem.recall("milk", user_id="ann", as_of=then, explain=True))
        assert hit.explanation["live"]["age_days"] == pytest.approx(7.0)
        assert hit.live_score == pytest.approx(0.6 * 0.5)

    def test_as_of_filters_the_versions_current_then(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("Project kickoff on Monday", user_id="ann", metadata={"topic": "work"}))
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        call(mem.update(rec.memory_id, metadata={"topic": "archive"}))
        assert [r.memory_id for r in call(mem.list(user_id="ann", filter={"metadata.topic": "work"},
                                                   as_of=then))] == [rec.memory_id]
        assert call(mem.list(user_id="ann", filter={"metadata.topic": "work"})) == []

    def test_as_of_recall_ranks_as_ranking_every_version_current_then(self, mem: Any, clock: FakeClock,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
        """A recall `as_of` (or `valid_at`) searches the memories unchanged since then and ranks only
        those changed since in their past version; with more of those than it searches past, every
        version current then is ranked: each gives the same hits, versions and order."""
        self._as_of_ranks_as_every_version(mem, clock, monkeypatch)

    def test_as_of_recall_ranks_as_ranking_every_version_current_then_by_text(
            self, lexical: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
        self._as_of_ranks_as_every_version(lexical, clock, monkeypatch)

    @staticmethod
    def _as_of_ranks_as_every_version(mem: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
        said = {text: call(mem.save(text, user_id="ann", category=category)) for text, category in [
            ("My favourite colour is blue", "preference"), ("I live in Paris near the river", "fact"),
            ("My dog is called Rex", "fact"), ("I drink green tea every morning", "preference"),
            ("My sister lives in Lyon", "fact"), ("I work as a nurse at the city hospital", "fact"),
            ("I am allergic to peanuts", "fact"), ("Dentist appointment on Friday", "event"),
            ("I like jazz and old blues records", "preference"), ("My car is a red bicycle", "fact")]}
        call(mem.save("Bob likes football", user_id="bob"))
        clock.advance(days=3)
        call(mem.update(said["I live in Paris near the river"].memory_id, content="I live in Berlin by the lake"))
        call(mem.delete(said["My car is a red bicycle"].memory_id))
        call(mem.save("My favourite colour is now green", user_id="ann", category="preference"))
        call(mem.consolidate())  # supersedes blue before `then`
        call(mem.recall("dog tea jazz", user_id="ann"))  # reinforcement, which has no versions
        call(mem.flush())  # written off the read path: it must not land between the two recalls compared
        then = clock.advance(days=2)
        clock.advance(days=5)
        call(mem.update(said["My dog is called Rex"].memory_id, content="My dog Rex died last winter"))
        call(mem.update(said["I drink green tea every morning"].memory_id, importance=0.9, category="fact"))
        call(mem.delete(said["I am allergic to peanuts"].memory_id))
        call(mem.save("My favourite colour is now black", user_id="ann", category="preference"))
        call(mem.consolidate())  # supersedes green after `then`
        call(mem.save("I moved to Madrid", user_id="ann"))
        for question in ["What is my favourite colour?", "Where do I live?", "dog", "What do I drink?",
                         "peanut allergy", "Tell me about my family", "music", "hospital work"]:
            for top_k, floor in ((10, None), (20, 0.0)):
                options = {"user_id": "ann", "as_of": then, "top_k": top_k, "min_relevance": floor}
                searched = call(mem.recall(question, **options))
                with monkeypatch.context() as patched:
                    patched.setattr(_engine, "MAX_SEARCHED_PAST", 0)  # (a server in this process too)
                    ranked = call(mem.recall(question, valid_at=then, **options))
                for other in (ranked, call(mem.recall(question, valid_at=then, **options))):
                    assert [(h.memory.memory_id, h.memory.version, h.memory.content) for h in searched] == [
                        (h.memory.memory_id, h.memory.version, h.memory.content) for h in other], question
                    for part in ("similarity", "text_rank", "score"):
                        assert [getattr(h, part) for h in searched] == pytest.approx(
                            [getattr(h, part) for h in other], abs=1e-6), (question, part)

    def test_a_recall_as_of_the_past_embeds_only_its_query(self, open_store: Any, clock: FakeClock) -> None:
        """Each version keeps the vector it had: an updated or deleted memory's earlier content is
        ranked by it, never embedded again."""
        embedder = RecordingEmbedder(local_embedder())
        mem = open_store(clock, embedder)
        try:
            dog = call(mem.save("My dog is called Rex", user_id="ann"))
            cat = call(mem.save("My cat is called Tom", user_id="ann"))
            then = clock.advance(days=1)
            clock.advance(days=1)
            call(mem.update(dog.memory_id, content="I gave my dog away"))
            call(mem.delete(cat.memory_id))
            embedder.texts.clear()
            hits = call(mem.recall("my pets' names", user_id="ann", as_of=then))
            assert sorted(h.memory.content for h in hits) == ["My cat is called Tom", "My dog is called Rex"]
            assert embedder.texts == ["my pets' names"]
        finally:
            call(mem.close())

    def test_a_past_list_pages_as_reading_every_version_current_then(
            self, mem: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
        """`list(as_of=T)` and `list(valid_at=T)` list the memories unchanged since by the store and
        read only the others; every page is the one reading every memory's version of T gives, in
        the same order (memories saved together share their time)."""
        first = call(mem.save_many([MemoryDraft(f"Batch note {i}") for i in range(12)], user_id="ann"))
        clock.advance(hours=1)
        alone = [call(mem.save(f"Single note {i}", user_id="ann")) for i in range(5)]
        call(mem.save("I studied in Rome", user_id="ann", valid_to=clock.now + timedelta(days=1)))
        then = clock.advance(days=2)
        call(mem.update(first[3].memory_id, content="Batch note 3, revised"))
        call(mem.update(alone[1].memory_id, content="Single note 1, revised"))
        call(mem.delete(first[7].memory_id))
        call(mem.save_many([MemoryDraft(f"Later note {i}") for i in range(4)], user_id="ann"))
        clock.advance(days=1)
        pages = [(limit, offset) for limit in (1, 3, 7, 40) for offset in (0, 2, 5, 11, 16, 30)]
        for options in ({"as_of": then}, {"valid_at": then}, {"valid_at": then - timedelta(hours=1)},
                        {"valid_at": then, "as_of": then}, {"as_of": then, "status": None}):
            listed = {page: [(r.memory_id, r.version) for r in call(mem.list(user_id="ann", limit=page[0],
                                                                             offset=page[1], **options))]
                      for page in pages}
            with monkeypatch.context() as patched:
                patched.setattr(_engine, "MAX_SEARCHED_PAST", 0)  # every memory's version of T read
                for page in pages:
                    assert listed[page] == [(r.memory_id, r.version) for r in call(mem.list(
                        user_id="ann", limit=page[0], offset=page[1], **options))], (options, page)

    def test_a_recall_valid_at_a_past_time_ranks_the_version_then_by_the_vector_it_kept(
            self, open_store: Any, clock: FakeClock) -> None:
        embedder = RecordingEmbedder(local_embedder())
        mem = open_store(clock, embedder)
        try:
            dog = call(mem.save("My dog is called Rex", user_id="ann"))
            then = clock.advance(days=1)
            clock.advance(days=1)
            call(mem.update(dog.memory_id, content="I gave my dog away"))
            embedder.texts.clear()
            hits = call(mem.recall("my pets' names", user_id="ann", valid_at=then))
            assert [(h.memory.content, h.memory.version) for h in hits] == [("My dog is called Rex", 1)]
            assert hits[0].similarity == pytest.approx(
                float(np.dot(*local_embedder().embed(["My dog is called Rex", "my pets' names"]))), abs=1e-5)
            assert embedder.texts == ["my pets' names"]
        finally:
            call(mem.close())

    def test_a_recall_as_of_the_past_reinforces_nothing(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann"))
        then = clock.advance(hours=1)
        call(mem.recall("blue", user_id="ann", as_of=then))
        call(mem.flush())
        assert call(mem.get(rec.memory_id)).access_count == 0

    def test_as_of_must_be_aware(self, mem: Any) -> None:
        with pytest.raises(NaiveDatetimeError):
            call(mem.recall("blue", user_id="ann", as_of=datetime(2026, 1, 1)))

    # -- validity time ----------------------------------------------------------------------
    def test_what_held_in_february_is_recalled_after_a_supersession(self, mem: Any, clock: FakeClock) -> None:
        call(mem.save("My favourite colour is blue", user_id="ann", category="preference"))
        february = clock.advance(days=40)
        clock.advance(days=30)
        march_first = february + timedelta(days=19)
        call(mem.save("My favourite colour is now black", user_id="ann", category="preference",
                      valid_from=march_first))
        call(mem.consolidate())
        question = "What is my favourite colour?"
        assert [h.memory.content for h in call(mem.recall(question, user_id="ann", valid_at=february))] == [
            "My favourite colour is blue"]
        assert [h.memory.content for h in call(mem.recall(question, user_id="ann",
                                                          valid_at=march_first + timedelta(days=1)))] == [
            "My favourite colour is now black"]
        (now,) = call(mem.list(user_id="ann", category="preference"))
        assert now.metadata["valid_from"] == march_first.isoformat()

    def test_a_fact_is_listed_only_within_its_validity(self, mem: Any) -> None:
        start, end = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 1, tzinfo=timezone.utc)
        rec = call(mem.save("I live in Paris", user_id="ann", valid_from=start, valid_to=end))
        assert (rec.metadata["valid_from"], rec.metadata["valid_to"]) == (start.isoformat(), end.isoformat())
        assert [r.memory_id for r in call(mem.list(user_id="ann", valid_at=datetime(2022, 6, 1, tzinfo=timezone.utc)))
                ] == [rec.memory_id]
        assert call(mem.list(user_id="ann", valid_at=datetime(2024, 6, 1, tzinfo=timezone.utc))) == []
        assert call(mem.list(user_id="ann", valid_at=datetime(2019, 6, 1, tzinfo=timezone.utc))) == []

    def test_get_gives_the_version_that_held_then(self, mem: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I live in Paris", user_id="ann", valid_from=datetime(2020, 1, 1, tzinfo=timezone.utc)))
        clock.advance(days=1)
        call(mem.put("home", "I live in Berlin", user_id="ann"))  # another memory, by key
        moved = datetime(2024, 1, 1, tzinfo=timezone.utc)
        call(mem.update(rec.memory_id, content="I live in Lyon", metadata={"valid_from": moved.isoformat()}))
        assert call(mem.get(rec.memory_id, valid_at=datetime(2022, 1, 1, tzinfo=timezone.utc))).content == \
            "I live in Paris"
        assert call(mem.get(rec.memory_id, valid_at=moved + timedelta(days=1))).content == "I live in Lyon"
        assert call(mem.get(rec.memory_id, valid_at=datetime(2019, 1, 1, tzinfo=timezone.utc))) is None

    def test_save_many_gives_every_memory_the_validity(self, mem: Any) -> None:
        start, end = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 1, tzinfo=timezone.utc)
        saved = call(mem.save_many([MemoryDraft("I live in Paris"), MemoryDraft("I work at the Louvre")],
                                   user_id="ann", valid_from=start, valid_to=end))
        assert {(r.metadata["valid_from"], r.metadata["valid_to"]) for r in saved} == {
            (start.isoformat(), end.isoformat())}
        assert len(call(mem.list(user_id="ann", valid_at=datetime(2022, 1, 1, tzinfo=timezone.utc)))) == 2
        assert call(mem.list(user_id="ann", valid_at=datetime(2025, 1, 1, tzinfo=timezone.utc))) == []

    def test_put_sets_the_validity_of_a_new_memory_and_of_a_new_version(self, mem: Any) -> None:
        start, moved = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 1, tzinfo=timezone.utc)
        first = call(mem.put("home", "I live in Paris", user_id="ann", valid_from=start, metadata={"k": 1}))
        assert (first.metadata["valid_from"], first.metadata["k"]) == (start.isoformat(), 1)
        second = call(mem.put("home", "I live in Lyon", user_id="ann", valid_from=moved))
        assert (second.version, second.metadata) == (2, {"k": 1, "valid_from": moved.isoformat()})
        assert call(mem.get(first.memory_id, valid_at=datetime(2022, 1, 1, tzinfo=timezone.utc))).content == \
            "I live in Paris"

    def test_a_recall_valid_at_can_return_what_a_list_valid_at_lists_each_in_its_version(
            self, mem: Any, clock: FakeClock) -> None:
        """A recall `valid_at=T` searches the memories whose present version held at T and reads
        the history of the others alone (written since T, or declaring a validity): whatever it
        ranks, with no threshold it returns the memories `list(valid_at=T)` lists, in their versions."""
        start = clock.now
        dog = call(mem.save("My dog is called Rex", user_id="ann"))
        home = call(mem.save("I live in Paris", user_id="ann"))
        call(mem.save("I work as a nurse", user_id="ann", valid_from=start - timedelta(days=400),
                      valid_to=start + timedelta(days=20)))
        call(mem.save("I studied in Rome", user_id="ann", valid_to=start + timedelta(days=5)))
        call(mem.save("Bob likes football", user_id="bob"))
        moved = clock.advance(days=10)
        call(mem.update(home.memory_id, content="I live in Berlin now"))
        car = call(mem.save("My car is red", user_id="ann"))
        clock.advance(days=1)
        call(mem.delete(car.memory_id))
        call(mem.save("I drink green tea", user_id="ann"))
        call(mem.update(dog.memory_id, content="My dog Rex is old now",
                        metadata={"valid_from": (start + timedelta(days=2)).isoformat()}))
        clock.advance(days=30)
        for at in (start - timedelta(days=500), start - timedelta(days=100), start + timedelta(days=1),
                   start + timedelta(days=3), start + timedelta(days=6), moved + timedelta(hours=1), clock.now):
            listed = {(r.memory_id, r.version, r.content) for r in call(mem.list(user_id="ann", valid_at=at))}
            recalled = {(h.memory.memory_id, h.memory.version, h.memory.content) for h in call(mem.recall(
                "what do you know about me?", user_id="ann", valid_at=at, min_relevance=0, top_k=50))}
            assert recalled == listed, at
        assert {h.memory.content for h in call(mem.recall("Where do I live?", user_id="ann", min_relevance=0,
                                                          valid_at=start + timedelta(days=6)))} >= {"I live in Paris"}

    # -- namespaces -------------------------------------------------------------------------
    # A memory is known by (namespace, memory_id): a namespace can be cloned into another of the
    # same store, and nothing one namespace answers tells whether an id or a key exists in another.
    @pytest.fixture
    def other(self, open_store: Any, clock: FakeClock) -> Any:
        """A second namespace of the test's store."""
        store = open_store(clock, local_embedder(), namespace="team-b")
        yield store
        call(store.close())

    @staticmethod
    def _clone(source: Any, target: Any) -> Any:
        buffer = io.BytesIO()
        call(source.export_snapshot(buffer))
        buffer.seek(0)
        return call(target.import_snapshot(buffer))

    def test_importing_a_snapshot_into_a_second_namespace_imports_every_memory(
            self, mem: Any, other: Any, clock: FakeClock) -> None:
        self._fill(mem, clock)
        report = self._clone(mem, other)
        source = call(mem.list(limit=100))
        assert (report.imported, report.duplicates, report.sessions) == (len(source), 0, 1)
        for rec in source:
            assert call(other.get(rec.memory_id)) == rec.replace(namespace="team-b")
            assert [v.replace(namespace=rec.namespace) for v in call(other.history(rec.memory_id))] == call(
                mem.history(rec.memory_id))
        assert call(other.recall("which colour does ann like?", user_id="ann"))[0].memory.namespace == "team-b"

    def test_the_same_id_in_two_namespaces_is_two_independent_memories(
            self, mem: Any, other: Any, clock: FakeClock) -> None:
        rec = call(mem.save("I like blue", user_id="ann", category="preference"))
        self._clone(mem, other)
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        assert call(other.update(rec.memory_id, content="I like black")).namespace == "team-b"
        assert call(mem.get(rec.memory_id)) == rec
        assert [v.content for v in call(mem.history(rec.memory_id))] == ["I like blue"]
        assert [h.memory.content for h in call(mem.recall("colour", user_id="ann"))] == ["I like blue"]
        call(mem.update(rec.memory_id, content="I like red"))
        assert [v.content for v in call(other.history(rec.memory_id))] == ["I like blue", "I like black"]
        assert call(other.delete(rec.memory_id)) is True
        assert call(mem.get(rec.memory_id)).content == "I like red"
        assert call(other.get(rec.memory_id, as_of=then)).content == "I like blue"
        assert call(other.purge(rec.memory_id)) is True
        assert call(other.get(rec.memory_id)) is None and call(other.history(rec.memory_id)) == []
        assert [v.content for v in call(mem.history(rec.memory_id))] == ["I like blue", "I like red"]
        assert call(mem.get(rec.memory_id, as_of=then)).content == "I like blue"
        assert list(call(mem.vectors([rec.memory_id]))) == [rec.memory_id]
        assert [h.memory.content for h in call(mem.recall("colour", user_id="ann"))] == ["I like red"]

    def test_consolidating_one_namespace_leaves_the_clone_in_another_alone(
            self, mem: Any, other: Any) -> None:
        first = call(mem.save("I like blue", user_id="ann", category="preference"))
        dup = call(mem.save("I like blue.", user_id="ann", category="preference"))
        self._clone(mem, other)
        assert call(other.consolidate()).merged == {first.memory_id: [dup.memory_id]}
        assert call(mem.get(first.memory_id)) == first and call(mem.get(dup.memory_id)) == dup
        assert call(mem.consolidate()).merged == {first.memory_id: [dup.memory_id]}

    def test_a_session_of_the_same_id_in_two_namespaces_ends_into_its_own(self, mem: Any, other: Any) -> None:
        call(other.session("s1", user_id="ann").add("user", "My name is Ann."))
        ses = mem.session("s1", user_id="ann")
        call(ses.add("user", "Hi! I like blue."))
        saved = call(ses.end())
        assert [r.content for r in saved] == ["I like blue."] and saved[0].namespace == mem.namespace
        assert [m.content for m in call(other.session("s1", user_id="ann").messages())] == ["My name is Ann."]
        assert call(other.list(user_id="ann")) == []

    def test_an_id_of_another_namespace_answers_as_an_unknown_one(
            self, mem: Any, other: Any, clock: FakeClock) -> None:
        theirs = call(other.save("My PIN is 4321", user_id="bob"))
        then = clock.advance(hours=1)
        clock.advance(hours=1)
        call(other.update(theirs.memory_id, content="My PIN is 9876"))
        buffer = io.BytesIO()
        call(other.export_snapshot(buffer))  # `theirs` alone: an explicit id to write
        snapshot = buffer.getvalue()
        deleted = call(other.save("My locker is 12", user_id="bob"))
        call(other.delete(deleted.memory_id))  # its tombstone and versions stay

        def answers(memory_id: str) -> dict[str, Any]:
            probes: dict[str, Callable[[], Any]] = {
                "get": lambda: mem.get(memory_id),
                "get as_of": lambda: mem.get(memory_id, as_of=then),
                "get quarantined": lambda: mem.get(memory_id, include_quarantined=True),
                "history": lambda: mem.history(memory_id),
                "vectors": lambda: mem.vectors([memory_id]),
                "update": lambda: mem.update(memory_id, content="x"),
                "update expected": lambda: mem.update(memory_id, content="x", expected_version=2),
                "set_status": lambda: mem.set_status(memory_id, "archived"),
                "release": lambda: mem.release(memory_id),
                "delete": lambda: mem.delete(memory_id),
                "purge": lambda: mem.purge(memory_id),
                "import": lambda: mem.import_snapshot(  # last: it writes the id into this namespace
                    io.BytesIO(snapshot.replace(theirs.memory_id.encode(), memory_id.encode()))),
            }
            out: dict[str, Any] = {}
            for name, probe in probes.items():
                try:
                    out[name] = ("answer", call(probe()))
                except Exception as exc:  # the answer under test: its type and message
                    out[name] = (type(exc).__name__, str(exc).replace(memory_id, "<id>"))
            return out

        for memory_id in [theirs.memory_id, deleted.memory_id]:
            assert answers(memory_id) == answers(str(uuid.uuid4()))
        assert [v.content for v in call(other.history(theirs.memory_id))] == ["My PIN is 4321", "My PIN is 9876"]
        assert call(other.get(theirs.memory_id)).status == "active"

    def test_a_key_of_another_namespace_answers_as_an_unused_one(self, mem: Any, other: Any) -> None:
        theirs = call(other.save("My PIN is 4321", user_id="bob", idempotency_key="pin"))
        put = call(other.put("locker", "My locker is 12", user_id="bob"))
        assert call(mem.get_by_key("pin")) is None and call(mem.get_by_key("locker")) is None
        mine = call(mem.save("I like tea", user_id="bob", idempotency_key="pin"))
        assert mine.content == "I like tea" and mine.namespace == mem.namespace
        assert call(mem.put("locker", "My bike is red", user_id="bob")).version == 1
        assert call(other.get(theirs.memory_id)) == theirs and call(other.get(put.memory_id)) == put

