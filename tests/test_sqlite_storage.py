"""How the SQLite file is written: versions kept once, the WAL kept short off the write path."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

import polymem
from polymem import _sqlite
from polymem._filters import dumps
from polymem.testing import FakeClock, HashEmbedder, RecordingEmbedder, local_embedder


def _versions_table(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT memory_id, version FROM memory_versions ORDER BY memory_id, version").fetchall()


def test_a_save_keeps_its_record_once_in_the_row(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        rec = mem.save("I like green tea", user_id="u")
        assert mem.history(rec.memory_id) == [rec]
    assert _versions_table(path) == []


def test_an_update_keeps_the_version_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        rec = mem.save("I like green tea", user_id="u")
        new = mem.update(rec.memory_id, content="I like black tea")
        assert [(v.version, v.content) for v in mem.history(rec.memory_id)] == [(1, "I like green tea"),
                                                                               (2, "I like black tea")]
        assert mem.history(rec.memory_id)[-1] == new
    assert _versions_table(path) == [(rec.memory_id, 1)]


def test_a_store_that_also_kept_the_current_version_lists_each_version_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        rec = mem.save("I like green tea", user_id="u")
        new = mem.update(rec.memory_id, content="I like black tea")
    with sqlite3.connect(path) as conn:  # as stores written before 0.1.0's last change hold it
        conn.execute("INSERT INTO memory_versions(namespace, memory_id, version, record) VALUES (?, ?, ?, ?)",
                     (new.namespace, new.memory_id, new.version, dumps(new.to_dict())))
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        assert [v.version for v in mem.history(rec.memory_id)] == [1, 2]
        third = mem.update(rec.memory_id, content="I like oolong")
        assert [v.content for v in mem.history(rec.memory_id)] == ["I like green tea", "I like black tea",
                                                                  third.content]


def test_a_snapshot_carries_every_version_with_the_current_one_last(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'a.db'}", embedder=None) as mem:
        rec = mem.save("I like green tea", user_id="u")
        mem.update(rec.memory_id, content="I like black tea")
        mem.update(rec.memory_id, importance=0.9)
        before = mem.history(rec.memory_id)
        mem.export_snapshot(tmp_path / "snap.jsonl")
    with polymem.open(f"sqlite:///{tmp_path / 'b.db'}", embedder=None) as mem:
        mem.import_snapshot(tmp_path / "snap.jsonl")
        assert mem.history(rec.memory_id) == before
        mem.update(rec.memory_id, content="I like oolong")
        assert [v.version for v in mem.history(rec.memory_id)] == [1, 2, 3, 4]


def test_the_wal_starts_over_while_a_writer_keeps_saving(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    wal = Path(f"{path}-wal")
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        for i in range(4000):
            mem.save(f"memory number {i} about tea", user_id="u")
        time.sleep(0.5)  # the checkpointer copies in the background
        # ~50 KB a save: without checkpoints the WAL would hold all 200 MB
        assert wal.stat().st_size < 64 << 20
        assert path.stat().st_size > 500_000  # the saves reached the database file itself
        assert mem.stats()["memories"] == 4000


def test_a_snapshot_whose_current_version_differs_from_its_record_round_trips_exactly(tmp_path: Path) -> None:
    # As a PostgreSQL store exports it: each version as written, the record with later access counts.
    with polymem.open(f"sqlite:///{tmp_path / 'a.db'}", embedder=None) as mem:
        mem.save("I like green tea", user_id="u")
        mem.export_snapshot(tmp_path / "a.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("type") == "memory":
            line["record"]["access_count"] = 5
            assert line["versions"][-1]["access_count"] == 0
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with polymem.open(f"sqlite:///{tmp_path / 'b.db'}", embedder=None) as mem:
        mem.import_snapshot(tmp_path / "b.jsonl")
        mem.export_snapshot(tmp_path / "c.jsonl")
    exported = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    memories = [line for line in exported if line.get("type") == "memory"]
    assert len(memories) == 1
    assert memories == [line for line in lines if line.get("type") == "memory"]


def test_durability_full_in_the_url_syncs_every_commit_and_normal_stays_the_default(tmp_path: Path) -> None:
    import polymem

    with polymem.open(f"sqlite:///{tmp_path / 'full.db'}?durability=full", embedder=None) as full, \
            polymem.open(f"sqlite:///{tmp_path / 'normal.db'}", embedder=None) as normal:
        synchronous = {name: store.backend._conn.execute("PRAGMA synchronous").fetchone()[0]
                       for name, store in (("full", full), ("normal", normal))}
        assert full.url.endswith("?durability=full")
    assert synchronous == {"full": 2, "normal": 1}


def _updated_then_unvectored(path: Path) -> tuple[str, Any]:
    """A store whose dog memory changed after `then`, its past version kept without a vector (as
    versions kept before migration 10 are); (memory_id, then)."""
    clock = FakeClock()
    with polymem.open(f"sqlite:///{path}", embedder=local_embedder(), clock=clock) as mem:
        dog = mem.save("My dog is called Rex", user_id="ann")
        then = clock.advance(days=1)
        clock.advance(days=1)
        mem.update(dog.memory_id, content="I gave my dog away")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE memory_versions SET vector = NULL, vector_model = NULL")
    return dog.memory_id, then


def test_a_past_version_kept_without_a_vector_is_embedded_once_then_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _, then = _updated_then_unvectored(path)
    embedder = RecordingEmbedder(local_embedder())
    with polymem.open(f"sqlite:///{path}", embedder=embedder) as mem:
        first = mem.recall("my dog", user_id="ann", as_of=then)
        second = mem.recall("my dog", user_id="ann", as_of=then)
    assert embedder.texts == ["my dog", "My dog is called Rex", "my dog"]
    assert [(h.memory.content, h.similarity) for h in first] == [(h.memory.content, h.similarity) for h in second]


def test_a_read_only_store_recalls_the_past_without_keeping_vectors(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory_id, then = _updated_then_unvectored(path)
    with polymem.open(f"sqlite:///{path}?mode=ro", embedder=local_embedder()) as mem:
        (hit,) = mem.recall("my dog", user_id="ann", as_of=then)
    assert (hit.memory.memory_id, hit.memory.content) == (memory_id, "My dog is called Rex")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM memory_versions WHERE vector IS NOT NULL").fetchone() == (0,)


def _foreign_counts(mem: Any, *namespaces: str) -> list[int]:
    return [mem.backend.count_foreign_vectors(ns, mem.embedder.model_id) for ns in namespaces]


def test_memories_without_a_vector_of_the_model_are_counted_for_their_namespace_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with polymem.open(url, embedder=None, namespace="lexical") as lexical:
        kept = [lexical.save(f"note {i} about tea", user_id="u") for i in range(3)]
    with polymem.open(url, embedder=None, namespace="team") as team:
        team.save("the team likes green tea", user_id="u")
    with polymem.open(url, embedder=HashEmbedder(), namespace="team") as mem:
        assert _foreign_counts(mem, "lexical", "team", "nobody") == [3, 1, 0]
        mem.recall("tea", user_id="u")  # embeds the team's memory, and only the team's
        assert _foreign_counts(mem, "lexical", "team") == [3, 0]
        lexical_view = polymem.open(url, embedder=None, namespace="lexical")
        lexical_view.update(kept[0].memory_id, content="note 0 about black tea")  # still without a vector
        lexical_view.delete(kept[1].memory_id)
        lexical_view.close()
        assert _foreign_counts(mem, "lexical", "team") == [2, 0]


def test_memories_without_a_vector_of_the_model_are_found_through_indexes_not_by_reading_every_row(
        tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    with polymem.open(url, embedder=None) as lexical:
        lexical.save("a note kept without a vector", user_id="u")
    for dimension in (64, 48, 80):  # models named before, after and as the one asked for
        with polymem.open(url, embedder=HashEmbedder(dimension), namespace=f"by-{dimension}") as mem:
            mem.save_many([polymem.MemoryDraft(f"tea note {i}") for i in range(3)], user_id="u")
    with polymem.open(url, embedder=HashEmbedder(64), namespace="by-64") as mem:
        held = mem.save("one more tea note", user_id="u")
        mem.delete(held.memory_id)  # no longer active: counted nowhere
        with sqlite3.connect(path) as conn:
            expected = dict(conn.execute("SELECT namespace, COUNT(*) FROM memories WHERE status = 'active' AND "
                                         "(vector IS NULL OR embedding_model IS NOT ?) GROUP BY namespace",
                                         (mem.embedder.model_id,)).fetchall())
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + _sqlite._FOREIGN_ROWS, ("m", "m"))]
        assert expected == {"default": 1, "by-48": 3, "by-80": 3}
        assert _foreign_counts(mem, "default", "by-48", "by-80", "by-64") == [1, 3, 3, 0]
    assert all("USING INDEX" in step for step in plan if step.startswith(("SCAN", "SEARCH")))


def test_recalls_beside_memories_of_another_model_find_the_active_ones_without_a_vector_through_indexes(
        tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    with polymem.open(url, embedder=None) as lexical:
        unembedded = [lexical.save(f"a note on tea {i}", user_id="u").memory_id for i in range(4)]
    with polymem.open(url, embedder=HashEmbedder(48)) as other_model:
        other_model.save("a note of another model", user_id="u")
    with sqlite3.connect(path) as conn:  # as consolidation leaves a decayed memory: archived
        conn.execute("UPDATE memories SET status = 'archived' WHERE memory_id = ?", (unembedded[0],))
    with polymem.open(url, embedder=HashEmbedder(64)) as mem:
        model_id = mem.embedder.model_id
        pending = mem.backend.pending_reembed("default", model_id, 10, missing_only=True)
        first = mem.backend.pending_reembed("default", model_id, 1, missing_only=True)
        rest = mem.backend.pending_reembed("default", model_id, 10, missing_only=True, after=first[0][0])
    with sqlite3.connect(path) as conn:
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + _sqlite._MISSING_VECTORS.format(
            scope="namespace = ? AND "), ("default", "", "default", "", 10))]
    # not the archived one, nor the other model's; in memory_id order
    assert [memory_id for memory_id, _ in pending] == sorted(unembedded[1:])
    assert first + rest == pending
    assert all("USING INDEX" in step for step in plan if step.startswith(("SCAN", "SEARCH")))


def test_a_re_embedding_starts_each_batch_where_the_last_one_ended(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    with polymem.open(url, embedder=None) as lexical:
        lexical.save_many([polymem.MemoryDraft(f"note {i}") for i in range(600)], user_id="u")
    statements: list[str] = []
    with polymem.open(url, embedder=HashEmbedder(64)) as mem:
        mem.backend._conn.set_trace_callback(statements.append)
        assert mem.reembed() == 600
        mem.backend._conn.set_trace_callback(None)
    batches = [sql for sql in statements if sql.startswith("SELECT memory_id, content FROM memories")]
    assert len(batches) == 4  # 256 + 256 + 88, and the empty one that ends it
    with sqlite3.connect(path) as conn:
        for sql in batches:
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert plan == ["SEARCH memories USING INDEX memories_id (namespace=? AND memory_id>?)"]
    assert [sql.count("memory_id > ''") for sql in batches] == [1, 0, 0, 0]


def test_a_scopes_first_read_goes_through_the_index_of_its_namespace_and_user(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=HashEmbedder()) as mem:
        mem.save("a note about tea", user_id="u")
        assert mem.recall("tea", user_id="u") and mem.recall("tea", user_id=None)  # both kinds of scope read
        model_id = mem.embedder.model_id
    with sqlite3.connect(path) as conn:
        for where, params in (("namespace = ?", ("default",)), ("namespace = ? AND user_id IS ?", ("default", "u"))):
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + _sqlite._SCOPE_ROWS.format(where=where),
                                                    (*params, model_id))]
            assert plan and all(step.startswith("SEARCH memories USING INDEX memories_scope_created (namespace=?")
                                for step in plan)


def _store_of_sources(path: Path, embedder: HashEmbedder) -> list[tuple[str, str]]:
    """300 memories of one user, every tenth written by a tool: (content, source) of each."""
    topics = ["tea", "the garden", "trains", "a dentist", "jazz", "the budget"]
    rows = [(f"note {i} on {topics[i % len(topics)]} ({i * 7 % 13})", "tool" if i % 10 == 0 else "user_input")
            for i in range(300)]
    with polymem.open(f"sqlite:///{path}", embedder=embedder) as mem:
        mem.save_many([polymem.MemoryDraft(content, source=source) for content, source in rows], user_id="u")
    return rows


def _exact_nearest(embedder: HashEmbedder, rows: list[tuple[str, str]], source: str, query: str,
                   k: int) -> list[float]:
    """The similarities of the `k` nearest memories of `source` (numpy over every one of them)."""
    kept = [content for content, of in rows if of == source]
    sims = np.array(embedder.embed(kept)) @ np.array(embedder.embed([query])[0])
    return sorted(np.round(sims, 5).tolist(), reverse=True)[:k]


def _found(found: Any) -> list[float]:
    return [round(similarity, 5) for _, similarity in found]


def test_a_filter_most_memories_pass_is_checked_on_the_rows_of_the_best_candidates_alone(tmp_path: Path) -> None:
    embedder = HashEmbedder(64)
    rows = _store_of_sources(tmp_path / "m.db", embedder)
    statements: list[str] = []
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as mem:
        query = embedder.embed(["a note on tea"])[0]
        mem.nearest(query, user_id="u", top_k=10)  # the scope's vectors read
        mem.backend._conn.set_trace_callback(statements.append)
        found = mem.nearest(query, user_id="u", top_k=10, filter={"source": "user_input"})
        mem.backend._conn.set_trace_callback(None)
    assert _found(found) == _exact_nearest(embedder, rows, "user_input", "a note on tea", 10)
    assert {record.source for record, _ in found} == {"user_input"}
    reads = [sql for sql in statements if sql.startswith("SELECT m.rowid FROM memories m")]
    assert len(reads) == 1 and "m.rowid IN (" in reads[0]  # the scope's other rows not read for the filter


def test_a_filter_few_memories_pass_still_finds_the_nearest_of_them(tmp_path: Path) -> None:
    embedder = HashEmbedder(64)
    rows = _store_of_sources(tmp_path / "m.db", embedder)
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder) as mem:
        query = embedder.embed(["a note on tea"])[0]
        found = mem.nearest(query, user_id="u", top_k=10, filter={"source": "tool"})
    assert _found(found) == _exact_nearest(embedder, rows, "tool", "a note on tea", 10)
    assert {record.source for record, _ in found} == {"tool"}
