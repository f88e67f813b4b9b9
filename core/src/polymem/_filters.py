"""Recall and list filters: validated once (`parse_filter`, one parser for every dialect), then
compiled to SQL so they apply inside the search (SQLite here: `compile_filter`; PostgreSQL:
`_postgres.compile_filter_pg`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ._errors import InvalidFilterError
from ._time import from_iso, require_aware

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
TEXT_FIELDS = ("category", "source", "agent_id", "session_id", "user_id", "status")
TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "expire_at")
NUMBER_FIELDS = ("importance", "access_count", "version")
_SQL_OPS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
# A metadata key's parts: letters, digits, _, - and spaces (no quotes, brackets or `$`, which a
# JSON path or an injection attempt would need), separated by dots.
_KEY_RE = re.compile(r"^[\w\- ]+(\.[\w\- ]+)*$")
_INT64 = 2**63 - 1


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_micros(value: datetime) -> int:
    """Aware datetime → integer microseconds since the epoch (exact, sortable)."""
    aware = require_aware(value)
    delta = aware - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int | None) -> datetime | None:
    if value is None:
        return None
    return _EPOCH + timedelta(0, 0, int(value))  # positional: 3x faster than microseconds=


def _time_value(field: str, value: Any) -> int:
    if isinstance(value, str):
        parsed = from_iso(value, field)
        assert parsed is not None
        value = parsed
    if not isinstance(value, datetime):
        raise InvalidFilterError(f"filter on {field} needs an aware datetime or ISO-8601 text, got {value!r}")
    return to_micros(value)


@dataclass(frozen=True)
class Condition:
    """One test of a filter, validated: `field op value`, the value checked for the field's kind.

    `kind`: text, time, number, json (a metadata key) or entities. `value`: for `$exists` a bool;
    for `$in`/`$nin` a non-empty list of scalars; times as microseconds since the epoch; a
    metadata value as the JSON scalar given (None, bool, number, text); text `$contains` as text.
    Each dialect compiles conditions and raises nothing itself."""

    field: str
    kind: str
    op: str
    value: Any
    path: tuple[str, ...] = ()  # the metadata key's parts (kind json)


def parse_filter(filter: dict[str, Any] | None) -> list[Condition]:
    """Validate a filter dict: the one parser behind every dialect (`InvalidFilterError` if bad)."""
    if not filter:
        return []
    if not isinstance(filter, dict):
        raise InvalidFilterError(f"filter must be a dict, got {type(filter).__name__}")
    conditions: list[Condition] = []
    for field, condition in filter.items():
        ops = condition if isinstance(condition, dict) and condition and all(
            isinstance(k, str) and k.startswith("$") for k in condition
        ) else {"$eq": condition}
        for op, value in ops.items():
            if op not in OPERATORS:
                raise InvalidFilterError(f"unknown filter operator {op!r} on {field!r}; use one of {', '.join(OPERATORS)}")
            conditions.append(_parse_one(field, op, value))
    return conditions


def _kind(field: str) -> tuple[str, tuple[str, ...]]:
    """The kind of a filter field (text, time, number, json, entities) and its metadata key's parts."""
    if field in TEXT_FIELDS:
        return "text", ()
    if field in TIME_FIELDS:
        return "time", ()
    if field in NUMBER_FIELDS:
        return "number", ()
    if field == "entities":
        return "entities", ()
    if field.startswith("metadata."):
        key = field[len("metadata."):]
        if not _KEY_RE.match(key):
            raise InvalidFilterError(f"Invalid filter key {key!r}: letters, digits, _, - and spaces, separated by dots")
        return "json", tuple(key.split("."))
    raise InvalidFilterError(
        f"unknown filter field {field!r}; use one of {', '.join(TEXT_FIELDS + TIME_FIELDS + NUMBER_FIELDS)}, "
        "entities or metadata.<key>"
    )


def _scalar(kind: str, field: str, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _INT64:
        value = float(value)  # beyond a 64-bit integer column: compared as the float it nearly is
    if kind == "time":
        return _time_value(field, value)
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidFilterError(f"filter on {field} needs a number, got {value!r}")
        return value
    if kind == "text":
        if value is not None and not isinstance(value, str):
            raise InvalidFilterError(f"filter on {field} needs text, got {value!r}")
        return value
    if isinstance(value, (dict, list)):
        raise InvalidFilterError(f"filter on {field}: only $eq and $ne compare a list or an object, got {value!r}")
    return value


def _parse_one(field: str, op: str, value: Any) -> Condition:
    kind, path = _kind(field)
    if op == "$exists":
        if not isinstance(value, bool):
            raise InvalidFilterError("$exists takes true or false")
        return Condition(field, kind, op, value, path)
    if op == "$contains":
        if kind == "json":
            return Condition(field, kind, op, _scalar(kind, field, value), path)
        if kind == "text":
            return Condition(field, kind, op, str(value), path)
        if kind != "entities":
            raise InvalidFilterError(f"$contains does not apply to {field}")
        return Condition(field, kind, op, value, path)
    if kind == "entities":
        if op == "$eq":
            return Condition(field, kind, op, value, path)
        raise InvalidFilterError(f"entities support $eq, $contains and $exists, not {op}")
    if op in ("$in", "$nin"):
        if not isinstance(value, (list, tuple)) or not value:
            raise InvalidFilterError(f"{op} on {field} needs a non-empty list")
        return Condition(field, kind, op, [_scalar(kind, field, v) for v in value], path)
    if kind == "json" and op in ("$eq", "$ne") and isinstance(value, (list, dict)):
        return Condition(field, kind, op, value, path)  # a whole JSON array or object, compared as such
    scalar = _scalar(kind, field, value)
    if scalar is None and op not in ("$eq", "$ne"):
        raise InvalidFilterError(f"{op} on {field} cannot compare with null")
    return Condition(field, kind, op, scalar, path)


# -- the SQLite dialect ------------------------------------------------------------------------------
def compile_filter(filter: dict[str, Any] | None, alias: str = "m") -> tuple[str, list[Any]]:
    """Validate a filter dict (`parse_filter`) and compile it to SQLite: `(sql, params)` over memory columns."""
    clauses: list[str] = []
    params: list[Any] = []
    for condition in parse_filter(filter):
        sql, args = _compile_sqlite(condition, alias)
        clauses.append(sql)
        params.extend(args)
    return " AND ".join(clauses), params


def _sqlite_value(kind: str, value: Any) -> Any:
    return int(value) if kind == "json" and isinstance(value, bool) else value


def _compile_sqlite(c: Condition, alias: str) -> tuple[str, list[Any]]:
    if c.kind == "json":
        at = f"{alias}.metadata, '$." + ".".join(f'"{part}"' for part in c.path) + "'"
        column = f"json_extract({at})"
    else:
        column = f"{alias}.{c.field}"
    op, kind = c.op, c.kind
    if op == "$exists":
        if kind == "entities":
            return (f"json_array_length({column}) {'>' if c.value else '='} 0", [])
        return (f"{column} IS {'NOT ' if c.value else ''}NULL", [])
    if op == "$contains":
        if kind == "text":
            return (f"instr({column}, ?) > 0", [c.value])
        return (f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)", [_sqlite_value(kind, c.value)])
    if kind == "entities":  # $eq
        return (f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)", [c.value])
    if op in ("$in", "$nin"):
        values = [_sqlite_value(kind, v) for v in c.value]
        marks = ", ".join("?" for _ in values)
        negate = "NOT " if op == "$nin" else ""
        return (f"{column} {negate}IN ({marks})", values)
    if isinstance(c.value, (list, dict)):  # stored sorted and compact (`dumps`), as json_extract returns it
        same = f"(json_type({at}) IN ('array', 'object') AND {column} = ?)"
        return (same if op == "$eq" else f"NOT COALESCE({same}, 0)"), [_canonical(c.value)]
    scalar = _sqlite_value(kind, c.value)
    if scalar is None:
        return (f"{column} IS NULL" if op == "$eq" else f"{column} IS NOT NULL", [])
    if op == "$ne":
        return (f"({column} IS NULL OR {column} != ?)", [scalar])
    if c.field == "expire_at" and op in ("$gt", "$gte"):  # no expiry means "never": later than any time
        return (f"({column} IS NULL OR {column} {_SQL_OPS[op]} ?)", [scalar])
    return (f"{column} {_SQL_OPS[op]} ?", [scalar])


def _canonical(value: list[Any] | dict[str, Any]) -> str:
    """A JSON array or object as SQLite's json_extract returns one stored by `dumps`."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def dumps(value: Any) -> str:
    if not value and isinstance(value, (dict, list)):  # most records carry no metadata or entities
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
