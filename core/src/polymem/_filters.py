"""Recall and list filters: validated once, compiled to SQL so they apply inside the search."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from ._errors import InvalidFilterError
from ._time import from_iso, require_aware

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
TEXT_FIELDS = ("category", "source", "agent_id", "session_id", "user_id", "status")
TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "expire_at")
NUMBER_FIELDS = ("importance", "access_count", "version")
_SQL_OPS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_KEY_RE = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def to_micros(value: datetime) -> int:
    """Aware datetime → integer microseconds since the epoch (exact, sortable)."""
    aware = require_aware(value)
    delta = aware - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int | None) -> datetime | None:
    if value is None:
        return None
    return _EPOCH + timedelta(microseconds=int(value))


def _time_value(field: str, value: Any) -> int:
    if isinstance(value, str):
        parsed = from_iso(value, field)
        assert parsed is not None
        value = parsed
    if not isinstance(value, datetime):
        raise InvalidFilterError(f"filter on {field} needs an aware datetime or ISO-8601 text, got {value!r}")
    return to_micros(value)


def compile_filter(filter: dict[str, Any] | None, alias: str = "m") -> tuple[str, list[Any]]:
    """Validate a filter dict and compile it to `(sql, params)` over memory columns."""
    if not filter:
        return "", []
    if not isinstance(filter, dict):
        raise InvalidFilterError(f"filter must be a dict, got {type(filter).__name__}")
    clauses: list[str] = []
    params: list[Any] = []
    for field, condition in filter.items():
        ops = condition if isinstance(condition, dict) and condition and all(
            isinstance(k, str) and k.startswith("$") for k in condition
        ) else {"$eq": condition}
        for op, value in ops.items():
            if op not in OPERATORS:
                raise InvalidFilterError(f"unknown filter operator {op!r} on {field!r}; use one of {', '.join(OPERATORS)}")
            sql, args = _compile_one(field, op, value, alias)
            clauses.append(sql)
            params.extend(args)
    return " AND ".join(clauses), params


def _column(field: str, alias: str) -> tuple[str, str]:
    """SQL expression and kind (text, time, number, json, entities) of a filter field."""
    if field in TEXT_FIELDS:
        return f"{alias}.{field}", "text"
    if field in TIME_FIELDS:
        return f"{alias}.{field}", "time"
    if field in NUMBER_FIELDS:
        return f"{alias}.{field}", "number"
    if field == "entities":
        return f"{alias}.entities", "entities"
    if field.startswith("metadata."):
        key = field[len("metadata."):]
        if not _KEY_RE.match(key):
            raise InvalidFilterError(f"bad metadata key {key!r} (letters, digits, _ and - separated by dots)")
        path = "$." + ".".join(f'"{part}"' for part in key.split("."))
        return f"json_extract({alias}.metadata, '{path}')", "json"
    raise InvalidFilterError(
        f"unknown filter field {field!r}; use one of {', '.join(TEXT_FIELDS + TIME_FIELDS + NUMBER_FIELDS)}, "
        "entities or metadata.<key>"
    )


def _scalar(kind: str, field: str, value: Any) -> Any:
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
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        raise InvalidFilterError(f"filter on {field} compares scalars only, got {value!r}")
    return value


def _compile_one(field: str, op: str, value: Any, alias: str) -> tuple[str, list[Any]]:
    column, kind = _column(field, alias)
    if op == "$exists":
        if not isinstance(value, bool):
            raise InvalidFilterError("$exists takes true or false")
        if kind == "entities":
            return (f"json_array_length({column}) {'>' if value else '='} 0", [])
        return (f"{column} IS {'NOT ' if value else ''}NULL", [])
    if op == "$contains":
        if kind == "entities":
            return (f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)", [value])
        if kind == "json":
            return (f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)", [_scalar("json", field, value)])
        if kind == "text":
            return (f"instr({column}, ?) > 0", [str(value)])
        raise InvalidFilterError(f"$contains does not apply to {field}")
    if kind == "entities":
        if op == "$eq":
            return (f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)", [value])
        raise InvalidFilterError(f"entities support $eq, $contains and $exists, not {op}")
    if op in ("$in", "$nin"):
        if not isinstance(value, (list, tuple)) or not value:
            raise InvalidFilterError(f"{op} on {field} needs a non-empty list")
        values = [_scalar(kind, field, v) for v in value]
        marks = ", ".join("?" for _ in values)
        negate = "NOT " if op == "$nin" else ""
        return (f"{column} {negate}IN ({marks})", values)
    scalar = _scalar(kind, field, value)
    if scalar is None:
        if op == "$eq":
            return (f"{column} IS NULL", [])
        if op == "$ne":
            return (f"{column} IS NOT NULL", [])
        raise InvalidFilterError(f"{op} on {field} cannot compare with null")
    if op == "$ne":
        return (f"({column} IS NULL OR {column} != ?)", [scalar])
    if field == "expire_at" and op in ("$gt", "$gte"):  # no expiry means "never": later than any time
        return (f"({column} IS NULL OR {column} {_SQL_OPS[op]} ?)", [scalar])
    return (f"{column} {_SQL_OPS[op]} ?", [scalar])


def dumps(value: Any) -> str:
    if not value and isinstance(value, (dict, list)):  # most records carry no metadata or entities
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
