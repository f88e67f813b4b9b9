"""Snapshots across stores and embedders: SQLite → in-memory → SQLite is exact in every field;
an embedder change re-embeds (never mixes); re-imports add nothing; damaged files are refused whole."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import polymem
from polymem.testing import FakeClock, HashEmbedder


def fill(mem: polymem.Memory, clock: FakeClock) -> None:
    blue = mem.save("I like blue", user_id="xiaoming", agent_id="langchain", category="preference",
                    entities=["blue"], metadata={"from": "chat", "n": [1, 2]}, idempotency_key="lc:blue")
    mem.save("My name is Xiaoming", user_id="xiaoming", importance=0.9)
    mem.save("我喜欢蓝色", user_id="xiaoming-zh", category="preference")
    mem.save("User B hates promotions", user_id="B", category="preference",
             expire_at=clock.now.replace(year=2027))
    clock.advance(days=3)
    mem.update(blue.memory_id, content="I like blue and navy", metadata={"from": "chat", "edited": True})
    mem.recall("blue", user_id="xiaoming")
    mem.flush()
    session = mem.session("shop", user_id="xiaoming", max_tokens=12, overflow="summarize", keep_last=1)
    session.add("user", "My name is Xiaoming and my budget is 40 EUR.", name="xiaoming")
    session.add("assistant", "", tool_calls=[{"id": "c1", "name": "shirts", "arguments": '{"colour": "blue"}'}])
    session.add("tool", "Oxford, navy, 35 EUR", tool_call_id="c1", name="shirts", metadata={"k": "v"})


def contents(mem: polymem.Memory) -> dict[str, Any]:
    """Every field of every memory (all versions, all statuses, the vector) and every session."""
    memories = {}
    for status in ("active", "archived", "blocked"):
        for record in mem.list(status=status, limit=1000):
            memories[record.memory_id] = {
                "record": record.to_dict(), "history": [v.to_dict() for v in mem.history(record.memory_id)]}
    snapshot = io.BytesIO()
    mem.export_snapshot(snapshot)
    lines = [json.loads(line) for line in snapshot.getvalue().decode().splitlines()]
    vectors = {line["record"]["memory_id"]: line["vector"] for line in lines if line.get("type") == "memory"}
    keys = {line["record"]["memory_id"]: line["idempotency_key"] for line in lines if line.get("type") == "memory"}
    sessions = [line for line in lines if line.get("type") == "session"]
    return {"memories": memories, "vectors": vectors, "keys": keys, "sessions": sessions}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_sqlite_to_memory_to_sqlite_is_exact(tmp_path: Path, clock: FakeClock) -> None:
    embedder = HashEmbedder(64)
    stores = [f"sqlite:///{tmp_path / 'first.db'}", f"memory://chain-{tmp_path.name}", f"sqlite:///{tmp_path / 'last.db'}"]
    with polymem.open(stores[0], embedder=embedder, clock=clock) as mem:
        fill(mem, clock)
        original = contents(mem)
        mem.export_snapshot(tmp_path / "0.jsonl")
    assert len(original["memories"]) == 4 and original["sessions"][0]["summary"]
    for n, url in enumerate(stores[1:], start=1):
        with polymem.open(url, embedder=embedder, clock=clock) as mem:
            report = mem.import_snapshot(tmp_path / f"{n - 1}.jsonl")
            assert (report.imported, report.duplicates, report.reembedded, report.sessions) == (4, 0, 0, 1)
            assert contents(mem) == original
            again = mem.import_snapshot(tmp_path / f"{n - 1}.jsonl")
            assert (again.imported, again.duplicates, again.sessions) == (0, 4, 0)
            assert contents(mem) == original
            mem.export_snapshot(tmp_path / f"{n}.jsonl")
            assert [h.memory.content for h in mem.recall("navy", user_id="xiaoming")][0] == "I like blue and navy"


def test_an_embedder_change_re_embeds_and_never_mixes(tmp_path: Path, clock: FakeClock) -> None:
    old, new = HashEmbedder(64), HashEmbedder(32)
    with polymem.open(f"sqlite:///{tmp_path / 'old.db'}", embedder=old, clock=clock) as mem:
        fill(mem, clock)
        original = contents(mem)
        mem.export_snapshot(tmp_path / "old.jsonl")
    with polymem.open(f"memory://new-{tmp_path.name}", embedder=new, clock=clock) as mem:
        report = mem.import_snapshot(tmp_path / "old.jsonl")
        assert (report.imported, report.reembedded) == (4, 4)
        moved = contents(mem)
        assert mem.stats()["embedding_models"] == {new.model_id: 4}
        for memory_id, vector in moved["vectors"].items():
            record = moved["memories"][memory_id]["record"]
            assert len(vector) == 32 and record["embedding_model"] == new.model_id
            assert np.allclose(vector, new.embed([record["content"]])[0], atol=1e-6)
        # Everything but the model and the vectors is as it was.
        for memory_id, item in original["memories"].items():
            assert {**moved["memories"][memory_id]["record"], "embedding_model": None} == \
                {**item["record"], "embedding_model": None}
        assert moved["sessions"] == original["sessions"] and moved["keys"] == original["keys"]
        assert [h.memory.content for h in mem.recall("navy blue", user_id="xiaoming")][0] == "I like blue and navy"
        mem.export_snapshot(tmp_path / "new.jsonl")
    with polymem.open(f"sqlite:///{tmp_path / 'lexical.db'}", embedder=None, clock=clock) as mem:
        assert mem.import_snapshot(tmp_path / "new.jsonl").reembedded == 0
        assert mem.stats()["embedding_models"] == {"(none)": 4}
        assert [h.memory.content for h in mem.recall("蓝色", user_id="xiaoming-zh")] == ["我喜欢蓝色"]


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "count", "surrogate in a summary",
                                    "surrogate in a message"])
@pytest.mark.parametrize("target", ["sqlite", "memory"])
def test_a_damaged_snapshot_is_refused_with_its_line_and_leaves_nothing(tmp_path: Path, clock: FakeClock,
                                                                       damage: str, target: str) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'src.db'}", embedder=None, clock=clock) as mem:
        fill(mem, clock)
        mem.export_snapshot(tmp_path / "s.jsonl")
    lines = (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    if damage == "truncate":
        lines = lines[:-1]
        expected = "truncated"
    elif damage == "corrupt":
        lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
        expected = "line 3"
    elif damage == "count":
        lines[-1] = json.dumps({"type": "end", "memories": 99, "sessions": 1}) + "\n"
        expected = f"line {len(lines)}"
    else:  # a lone surrogate, escaped as JSON allows it: text no store can keep
        number, session = next((n, json.loads(line)) for n, line in enumerate(lines)
                               if json.loads(line).get("type") == "session")
        if damage == "surrogate in a summary":
            session["summary"] = "before \ud800 after"
        else:
            session["messages"][0]["message"]["content"] = "\udfff"
        lines[number] = json.dumps(session) + "\n"
        expected = f"line {number + 1}: holds text that is not valid Unicode"
    (tmp_path / "bad.jsonl").write_text("".join(lines), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'dst.db'}" if target == "sqlite" else f"memory://bad-{damage}-{tmp_path.name}"
    with polymem.open(url, embedder=None, clock=clock) as mem:
        with pytest.raises(polymem.SnapshotError, match=expected):
            mem.import_snapshot(tmp_path / "bad.jsonl")
        assert mem.stats()["memories"] == 0 and mem.sessions() == []
