"""The storage-level conformance suite: what every record store and session store must do.

Subclass `RecordStoreConformance` with a `records` fixture returning an open record store
(a `RecordStore` or `AsyncRecordStore`, empty), and `SessionStoreConformance` with a
`sessions` fixture returning an open session store (`SessionStore` or `AsyncSessionStore`,
empty). Coroutine methods are awaited by `call`, so one test serves sync and async stores.
The batch tests check that a batch is all-or-nothing: one failing operation leaves nothing
of the batch applied.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from .._backend import NewRecord
from .._errors import NotFoundError, VersionConflictError
from .._models import MemoryRecord, Message, new_id
from .._storage import (
    Batch,
    Insert,
    ListRecords,
    SessionAppend,
    SessionDelete,
    SessionEvict,
    SessionSetSummary,
    SessionTouch,
    Update,
)
from .._text import content_hash, terms
from . import call

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
NS = "storage-suite"


def new_record(content: str, user_id: str = "u") -> NewRecord:
    record = MemoryRecord(memory_id=new_id(), content=content, category="fact", source="user_input",
                          importance=0.5, user_id=user_id, agent_id=None, session_id=None, namespace=NS,
                          created_at=NOW, updated_at=NOW)
    return NewRecord(record, None, content_hash(content), None, tuple(terms(content)))


class RecordStoreConformance:
    """Records: typed operations and batches."""

    @pytest.fixture
    def records(self) -> Any:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    def _insert(self, records: Any, *contents: str) -> list[MemoryRecord]:
        results = call(records.insert(Insert([new_record(c) for c in contents], NOW)))
        return [record for record, _ in results]

    def test_insert_then_get_and_list(self, records: Any) -> None:
        a, b = self._insert(records, "alpha fact", "beta fact")
        assert [r.memory_id for r in call(records.get(NS, [a.memory_id]))] == [a.memory_id]
        listed = call(records.list(ListRecords(NS, user_id="u")))
        assert {r.memory_id for r in listed} == {a.memory_id, b.memory_id}

    def test_insert_of_the_same_content_returns_the_stored_record(self, records: Any) -> None:
        (a,) = self._insert(records, "the same words")
        results = call(records.insert(Insert([new_record("the same words")], NOW + timedelta(seconds=1))))
        assert [(r.memory_id, new) for r, new in results] == [(a.memory_id, False)]

    def test_update_writes_a_version_with_compare_and_set(self, records: Any) -> None:
        (a,) = self._insert(records, "first words")
        updated = call(records.update(Update(NS, a.memory_id, {"importance": 0.9}, a.version, NOW)))
        assert (updated.version, updated.importance) == (a.version + 1, 0.9)
        with pytest.raises(VersionConflictError):
            call(records.update(Update(NS, a.memory_id, {"importance": 0.1}, a.version, NOW)))
        with pytest.raises(NotFoundError):
            call(records.update(Update(NS, "no-such-memory", {"importance": 0.1}, None, NOW)))

    def test_a_batch_applies_every_operation_in_order(self, records: Any) -> None:
        a, b = self._insert(records, "keeper words", "other words")
        keep = Update(NS, a.memory_id, {"importance": 0.8}, a.version, NOW)
        retire = Update(NS, b.memory_id, {"status": "archived"}, b.version, NOW)
        merged, retired = call(records.apply(Batch(keep, retire)))
        assert (merged.importance, retired.status) == (0.8, "archived")
        assert [r.memory_id for r in call(records.list(ListRecords(NS, user_id="u")))] == [a.memory_id]

    def test_a_batch_is_all_or_nothing(self, records: Any) -> None:
        (a,) = self._insert(records, "untouched words")
        fresh = new_record("never stored words")
        batch = Batch(Update(NS, a.memory_id, {"importance": 0.9}, a.version, NOW),
                      Insert([fresh], NOW),
                      Update(NS, a.memory_id, {"importance": 0.1}, a.version, NOW))  # stale by then: fails
        with pytest.raises(VersionConflictError):
            call(records.apply(batch))
        assert call(records.get(NS, [fresh.record.memory_id])) == []
        (stored,) = call(records.get(NS, [a.memory_id]))
        assert (stored.version, stored.importance) == (a.version, a.importance)

    def test_a_blocked_source_is_kept_per_namespace_until_unblocked(self, records: Any) -> None:
        assert call(records.block_source(NS, "tool:web", "compromised", "ops", NOW, True)) is True
        assert call(records.block_source(NS, "tool:web", "again", "ops", NOW, True)) is False
        found = call(records.blocked_sources(NS))
        assert list(found) == ["tool:web"] and (found["tool:web"]["reason"], found["tool:web"]["blocked_by"]) == \
            ("compromised", "ops")
        assert call(records.blocked_sources(NS + "-other")) == {}
        assert call(records.block_source(NS, "tool:web", None, None, NOW, False)) is True
        assert call(records.blocked_sources(NS)) == {}


    def test_delete_keeps_a_tombstone_that_as_of_sees_through(self, records: Any) -> None:
        (a,) = self._insert(records, "alpha fact")
        later = NOW + timedelta(hours=1)
        assert call(records.delete(NS, a.memory_id, later)) is True
        assert call(records.get(NS, [a.memory_id])) == [] and call(records.delete(NS, a.memory_id, later)) is False
        before = call(records.as_of(NS, NOW, "u", None, None))
        assert [(r.memory_id, v) for r, v in before] == [(a.memory_id, None)]
        assert call(records.as_of(NS, later, "u", None, None)) == []
        assert [(v.content, vector) for v, vector in call(records.history(NS, [a.memory_id], None))[a.memory_id]] == [
            ("alpha fact", None)]

    def test_as_of_gives_the_version_current_then(self, records: Any) -> None:
        (a,) = self._insert(records, "alpha fact")
        call(records.update(Update(NS, a.memory_id, {"content": "alpha fact, revised"}, None,
                                   NOW + timedelta(hours=2))))
        (past, _), = call(records.as_of(NS, NOW + timedelta(hours=1), None, [a.memory_id], None))
        assert (past.content, past.version) == ("alpha fact", 1)
        (now, _), = call(records.as_of(NS, NOW + timedelta(hours=3), None, [a.memory_id], None))
        assert (now.content, now.version) == ("alpha fact, revised", 2)
        assert call(records.as_of(NS, NOW - timedelta(hours=1), None, None, None)) == []

    def test_a_past_version_keeps_the_vector_its_row_held(self, records: Any) -> None:
        """`as_of` gives an updated or deleted memory's past version with the vector it had then
        (of the model asked for), so a past recall need not embed that content again."""
        old_a, old_b, new_a = (np.array(v, dtype=np.float32) for v in ([1, 0, 0], [0, 1, 0], [0, 0, 1]))
        a, b = (new_record(c) for c in ("alpha fact", "beta fact"))
        a, b = (replace(n, record=n.record.replace(embedding_model="m"), vector=v) for n, v in ((a, old_a), (b, old_b)))
        call(records.insert(Insert([a, b], NOW)))
        call(records.update(Update(NS, a.record.memory_id, {"content": "alpha revised"}, None, NOW + timedelta(hours=2),
                                   new_a, "m", content_hash("alpha revised"), tuple(terms("alpha revised")))))
        call(records.delete(NS, b.record.memory_id, NOW + timedelta(hours=2)))
        then = call(records.as_of(NS, NOW + timedelta(hours=1), "u", None, "m", changed_only=True))
        assert sorted((r.content, v.tolist()) for r, v in then) == [("alpha fact", old_a.tolist()),
                                                                    ("beta fact", old_b.tolist())]
        assert [v for _, v in call(records.as_of(NS, NOW + timedelta(hours=1), "u", None, "other"))] == [None, None]

    def test_a_past_version_without_a_vector_keeps_the_one_given_and_no_later_one(self, records: Any) -> None:
        (a,) = self._insert(records, "alpha fact")  # saved without a vector: its past version has none
        call(records.update(Update(NS, a.memory_id, {"content": "alpha revised"}, None, NOW + timedelta(hours=2))))
        given, later = np.array([1, 0, 0], dtype=np.float32), np.array([0, 1, 0], dtype=np.float32)
        call(records.keep_version_vectors(NS, [(a.memory_id, 1, given)], "m"))
        call(records.keep_version_vectors(NS, [(a.memory_id, 1, later)], "m"))
        (past, vector), = call(records.as_of(NS, NOW + timedelta(hours=1), None, [a.memory_id], "m"))
        assert (past.version, vector.tolist()) == (1, given.tolist())

    def test_history_gives_every_version_of_many_memories_with_the_vectors_they_kept(self, records: Any) -> None:
        """Live and deleted memories at once, oldest version first: a past version with the vector
        of the model asked for it kept, the present one with the memory's own; unknown ids left out."""
        old_a, old_b, new_a = (np.array(v, dtype=np.float32) for v in ([1, 0, 0], [0, 1, 0], [0, 0, 1]))
        a, b = (new_record(c) for c in ("alpha fact", "beta fact"))
        a, b = (replace(n, record=n.record.replace(embedding_model="m"), vector=v) for n, v in ((a, old_a), (b, old_b)))
        (plain,) = self._insert(records, "gamma fact")
        call(records.insert(Insert([a, b], NOW)))
        call(records.update(Update(NS, a.record.memory_id, {"content": "alpha revised"}, None, NOW + timedelta(hours=2),
                                   new_a, "m", content_hash("alpha revised"), tuple(terms("alpha revised")))))
        call(records.delete(NS, b.record.memory_id, NOW + timedelta(hours=2)))
        ids = [a.record.memory_id, b.record.memory_id, plain.memory_id, "no-such-memory"]
        found = call(records.history(NS, ids, "m"))
        assert {i: [(r.version, r.content, None if v is None else v.tolist()) for r, v in versions]
                for i, versions in found.items()} == {
            a.record.memory_id: [(1, "alpha fact", old_a.tolist()), (2, "alpha revised", new_a.tolist())],
            b.record.memory_id: [(1, "beta fact", old_b.tolist())],
            plain.memory_id: [(1, "gamma fact", None)]}
        assert {i: [v for _, v in versions] for i, versions in call(records.history(NS, ids, "other")).items()} == {
            a.record.memory_id: [None, None], b.record.memory_id: [None], plain.memory_id: [None]}

    def test_purge_removes_the_memory_its_versions_and_its_tombstone(self, records: Any) -> None:
        a, b = self._insert(records, "alpha fact", "beta fact")
        call(records.update(Update(NS, a.memory_id, {"content": "alpha revised"}, None, NOW + timedelta(hours=1))))
        call(records.delete(NS, a.memory_id, NOW + timedelta(hours=2)))
        assert call(records.purge(NS, a.memory_id)) is True and call(records.purge(NS, b.memory_id)) is True
        assert call(records.history(NS, [a.memory_id, b.memory_id], None)) == {}
        assert call(records.as_of(NS, NOW + timedelta(hours=1), None, None, None)) == []
        assert call(records.purge(NS, a.memory_id)) is False

    def test_document_frequencies_count_the_memories_holding_each_term(self, records: Any) -> None:
        self._insert(records, "alpha fact", "beta fact")
        rows, docs = records.document_frequencies(NS, ["alpha", "gamma"])
        assert rows >= 0 and docs["gamma"] in (0, 1) and docs["alpha"] >= 1


class SessionStoreConformance:
    """Sessions: typed operations and batches."""

    @pytest.fixture
    def sessions(self) -> Any:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    @staticmethod
    def _messages(*texts: str) -> list[tuple[Message, int]]:
        return [(Message(role="user", content=t, created_at=NOW), len(t.split())) for t in texts]

    def test_touch_append_evict_summary_delete(self, sessions: Any) -> None:
        call(sessions.session_touch(SessionTouch(NS, "s1", "u", None, NOW, None)))
        rows = self._messages("one", "two words", "three more words")
        call(sessions.session_append(NS, "s1", rows))
        assert call(sessions.session_evict(NS, "s1", [rows[0][0].message_id])) == 1
        call(sessions.session_set_summary(NS, "s1", "one"))
        window = call(sessions.session_messages(NS, "s1", True))
        assert [m.content for m, _ in window] == ["two words", "three more words"]
        assert [m.content for m, _ in call(sessions.session_messages(NS, "s1", False))] == [
            "one", "two words", "three more words"]
        info = call(sessions.session_info(NS, "s1"))
        assert (info.user_id, info.summary, info.message_count, info.window_count) == ("u", "one", 3, 2)
        assert call(sessions.session_delete(NS, "s1")) is True
        assert call(sessions.session_info(NS, "s1")) is None

    def test_a_batch_applies_every_operation_in_order(self, sessions: Any) -> None:
        rows = self._messages("hello there", "general words")
        results = call(sessions.apply(Batch(
            SessionTouch(NS, "s2", "u", None, NOW, NOW + timedelta(hours=1)),
            SessionAppend(NS, "s2", rows),
            SessionSetSummary(NS, "s2", "a summary"),
            SessionEvict(NS, "s2", [rows[0][0].message_id]))))
        assert results[-1] == 1
        info = call(sessions.session_info(NS, "s2"))
        assert (info.summary, info.message_count, info.window_count) == ("a summary", 2, 1)
        assert call(sessions.apply(Batch(SessionDelete(NS, "s2")))) == [True]
        assert call(sessions.session_info(NS, "s2")) is None

    def test_a_batch_is_all_or_nothing(self, sessions: Any) -> None:
        call(sessions.session_touch(SessionTouch(NS, "s3", "u", None, NOW, None)))
        call(sessions.session_append(NS, "s3", self._messages("kept")))
        unstorable = Message(role="user", content="x", created_at=NOW, metadata={"bad": object()})
        batch = Batch(SessionSetSummary(NS, "s3", "should not stay"),
                      SessionAppend(NS, "s3", self._messages("should not stay either")),
                      SessionAppend(NS, "s3", [(unstorable, 1)]))  # cannot be encoded: fails
        with pytest.raises(TypeError):
            call(sessions.apply(batch))
        info = call(sessions.session_info(NS, "s3"))
        assert (info.summary, info.message_count) == (None, 1)
        assert [m.content for m, _ in call(sessions.session_messages(NS, "s3", False))] == ["kept"]
