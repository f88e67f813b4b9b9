"""No untyped exception escapes a public operation: every operation of the table, fed any value.

Each operation of `polymem.operations` is called through `Memory.execute` with
arguments drawn from well-formed and hostile values (wrong types, NaN, lone
surrogates, NUL, huge numbers, naive and overflowing datetimes, ragged
vectors…). It either works or raises a `PolymemError` subclass, and what was
stored before stays readable.
"""

from __future__ import annotations

import copy
import io
import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import polymem
from polymem import operations as ops
from polymem.operations import OPERATIONS, SessionOperation

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["", "   ", "a\x00b", "\ud800", "I like blue", "m-1", "active", "bogus", "fact", "ann",
                     "9999-12-31T23:59:59-14:00", "2030-01-01T00:00:00", "{}"]),
    st.binary(max_size=10),
    st.lists(st.one_of(st.floats(allow_nan=True), st.text(max_size=3), st.none()), max_size=4),
    st.lists(st.lists(st.floats(allow_nan=False, width=32), max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.one_of(st.floats(allow_nan=True), st.text(max_size=5), st.none()),
                    max_size=3),
    st.sampled_from([{"metadata.x": {"$bogus": 1}}, {"user_id": {"$in": "ann"}}, {"$or": 5},
                     {"created_at": {"$lt": "9999-12-31T23:59:59-14:00"}}]),
    st.datetimes(timezones=st.none() | st.just(timezone.utc) | st.just(timezone(timedelta(hours=-14)))),
    st.sampled_from([[polymem.Message("user", "I like blue")], [{"role": "user"}], [{"content": 5}], ["x"],
                     [polymem.MemoryDraft("I like blue")], [{"content": None}], [polymem.MemoryDraft("")]]),
)

STORE_OPS = [op for op in OPERATIONS if not issubclass(op, SessionOperation)]
SESSION_OPS = [op for op in OPERATIONS if issubclass(op, SessionOperation)]


@pytest.fixture(scope="module")
def mem() -> Any:
    with polymem.open("memory://typed-errors", embedder=None) as store:
        store.save("I like blue", user_id="ann", metadata={"topic": "colour"})
        yield store


def _snapshot_lines() -> list[dict[str, Any]]:
    """A valid snapshot of one keyed memory and one session, as JSON objects."""
    with polymem.open("memory://", embedder=None) as source:
        source.save("I like green", user_id="ann", idempotency_key="k1")
        source.session("s1", user_id="ann").add("user", "hello")
        buffer = io.BytesIO()
        source.export_snapshot(buffer)
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


SNAPSHOT = _snapshot_lines()


@st.composite
def _snapshots(draw: Any) -> bytes:
    """A valid snapshot with one field of its memory (record or line) or session made hostile."""
    lines = copy.deepcopy(SNAPSHOT)
    memory, session = lines[1], lines[2]
    target = draw(st.sampled_from([memory["record"], memory, session, session["messages"][0]]))
    key = draw(st.sampled_from(sorted(target)))
    if draw(st.booleans()):
        target.pop(key)
    else:
        target[key] = draw(HOSTILE)
    return b"".join(json.dumps(line, default=str).encode("utf-8", "surrogatepass") + b"\n" for line in lines)


def _arguments(op: type[ops.Operation[Any]], draw: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, info in op.model_fields.items():
        if key == "session":
            values[key] = ops.SessionSpec.of("typed", user_id="ann", max_tokens=50)
        elif key == "target":
            values[key] = io.BytesIO()
        elif key == "source" and op is ops.ImportSnapshot:
            values[key] = io.BytesIO(draw(st.binary(max_size=40) | _snapshots()))
        elif info.exclude:  # a local callback: not a value a caller sends
            values[key] = None
        elif info.is_required() or draw(st.booleans()):
            values[key] = draw(HOSTILE)
        else:
            values[key] = info.get_default(call_default_factory=True)
    return values


def _still_intact(mem: Any) -> None:
    assert [r.content for r in mem.list(user_id="ann", limit=10_000) if r.content == "I like blue"]


@pytest.mark.parametrize("op", STORE_OPS + SESSION_OPS, ids=lambda op: op.name)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_argument_gives_a_result_or_a_typed_error(mem: Any, op: type[ops.Operation[Any]], data: Any) -> None:
    call = op.model_construct(**_arguments(op, data.draw))
    try:
        mem.execute(call)
    except polymem.PolymemError:
        pass
    _still_intact(mem)


def test_a_datetime_past_the_last_utc_time_is_a_typed_error(mem: Any) -> None:
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-14)))
    with pytest.raises(polymem.InvalidInput, match="out of range"):
        mem.save("Call the bank", user_id="ann", expire_at=late)


@pytest.mark.parametrize("text", ["I like \ud800 blue", "ann\x00"])
def test_text_no_backend_can_store_is_refused(mem: Any, text: str) -> None:
    with pytest.raises(polymem.InvalidInput):
        mem.save(text, user_id="ann")
    with pytest.raises(polymem.InvalidInput):
        mem.save("I like green", user_id=text)


def test_a_read_scope_that_is_not_text_is_refused_not_read_as_everyone(mem: Any) -> None:
    with pytest.raises(polymem.InvalidInput, match="user_id"):
        mem.recall("blue", user_id=123)  # type: ignore[arg-type]


def test_an_unknown_status_is_refused(mem: Any) -> None:
    with pytest.raises(polymem.InvalidInput, match="status"):
        mem.list(status="bogus")


def test_a_malformed_tool_call_is_refused(mem: Any) -> None:
    with pytest.raises(polymem.InvalidInput, match="tool call"):
        mem.session("t", user_id="ann").add("assistant", "calling", tool_calls=["x"])


@pytest.mark.parametrize("edit", ["duplicate idempotency_key", "NaN importance", "session without created_at"])
def test_a_snapshot_the_store_cannot_hold_is_a_snapshot_error(mem: Any, edit: str) -> None:
    lines = copy.deepcopy(SNAPSHOT)
    if edit == "duplicate idempotency_key":
        twin = copy.deepcopy(lines[1])
        twin["record"]["memory_id"] = "another-id"
        lines.insert(2, twin)
        lines[-1]["memories"] = 2
    elif edit == "NaN importance":
        lines[1]["record"]["importance"] = float("nan")
    else:
        del lines[2]["created_at"]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with polymem.open("memory://", embedder=None) as target, pytest.raises(polymem.SnapshotError):
        target.import_snapshot(io.BytesIO(data))


def test_a_snapshot_session_without_messages_is_imported_as_an_empty_session() -> None:
    lines = copy.deepcopy(SNAPSHOT)
    lines[2].pop("messages", None)
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with polymem.open("memory://", embedder=None) as target:
        report = target.import_snapshot(io.BytesIO(data))
        assert report.sessions == 1
        assert target.session(lines[2]["session_id"], user_id=lines[2]["user_id"]).transcript() == []


def test_a_snapshot_session_message_missing_its_fields_is_a_snapshot_error() -> None:
    lines = copy.deepcopy(SNAPSHOT)
    lines[2]["messages"] = [{"tokens": 3}]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with polymem.open("memory://", embedder=None) as target, pytest.raises(polymem.SnapshotError):
        target.import_snapshot(io.BytesIO(data))


def test_a_snapshot_reusing_a_stored_idempotency_key_counts_it_as_a_duplicate() -> None:
    lines = copy.deepcopy(SNAPSHOT)
    lines[1]["record"]["memory_id"] = "another-id"
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    with polymem.open("memory://", embedder=None) as target:
        target.save("I like green", user_id="ann", idempotency_key="k1")
        report = target.import_snapshot(io.BytesIO(data))
    assert (report.imported, report.duplicates) == (0, 1)


@pytest.mark.parametrize("limit", [-1, 0, True, 2.5, "8000"])
def test_a_content_limit_that_is_not_a_positive_integer_is_refused(limit: Any) -> None:
    with pytest.raises(polymem.InvalidInput, match="max_content_chars"):
        polymem.open("memory://", embedder=None, max_content_chars=limit)


def _database_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "good.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as store:
        store.save_many([polymem.MemoryDraft(f"fact number {i} about the garden") for i in range(300)], user_id="ann")
    return path.read_bytes()


def _open_and_read(path: Path) -> None:
    with polymem.open(f"sqlite:///{path}", embedder=None) as store:
        store.list(user_id="ann", limit=10_000)
        store.recall("garden", user_id="ann")


@pytest.mark.parametrize("kind", ["random bytes", "truncated", "directory"])
def test_a_file_that_is_not_a_database_opens_with_a_typed_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "store.db"
    if kind == "random bytes":
        path.write_bytes(os.urandom(8192))
    elif kind == "truncated":
        data = _database_bytes(tmp_path)
        path.write_bytes(data[: len(data) // 2])
    else:
        path.mkdir()
    with pytest.raises(polymem.StoreUnreadableError):
        _open_and_read(path)


@pytest.fixture(scope="module")
def good_database(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _database_bytes(tmp_path_factory.mktemp("good"))


@settings(max_examples=30, deadline=None)
@given(cut=st.integers(min_value=0, max_value=2**20), noise=st.binary(max_size=64), at=st.integers(0, 2**20))
def test_a_damaged_database_file_opens_and_reads_or_gives_a_typed_error(
        tmp_path_factory: pytest.TempPathFactory, good_database: bytes, cut: int, noise: bytes, at: int) -> None:
    folder = tmp_path_factory.mktemp("damaged")
    data = bytearray(good_database)
    at %= len(data)
    data[at:at + len(noise)] = noise
    path = folder / "store.db"
    path.write_bytes(bytes(data[: cut % (len(data) + 1)]))
    try:
        _open_and_read(path)
    except polymem.PolymemError:
        pass

