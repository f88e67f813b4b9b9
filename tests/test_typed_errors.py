"""No untyped exception escapes a public operation: every operation of the table, fed any value.

Each operation of `polymem.operations` is called through `Memory.execute` with
arguments drawn from well-formed and hostile values (wrong types, NaN, lone
surrogates, NUL, huge numbers, naive and overflowing datetimes, ragged
vectors…). It either works or raises a `PolymemError` subclass, and what was
stored before stays readable.
"""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
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


def _arguments(op: type[ops.Operation[Any]], draw: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, info in op.model_fields.items():
        if key == "session":
            values[key] = ops.SessionSpec.of("typed", user_id="ann", max_tokens=50)
        elif key == "target":
            values[key] = io.BytesIO()
        elif key == "source" and op is ops.ImportSnapshot:
            values[key] = io.BytesIO(draw(st.binary(max_size=40)))
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
