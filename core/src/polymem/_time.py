"""Timezone-aware UTC time: the only kind polymem stores or exchanges."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from ._errors import NaiveDatetimeError

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock: the current time, aware, in UTC."""
    return datetime.now(timezone.utc)


def require_aware(value: datetime, what: str = "datetime") -> datetime:
    """Return `value` in UTC, or raise `NaiveDatetimeError` if it has no timezone."""
    if not isinstance(value, datetime):
        raise NaiveDatetimeError(f"{what} must be a timezone-aware datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{what} is a naive datetime ({value.isoformat()}); pass an aware one, "
            "e.g. datetime.now(timezone.utc)"
        )
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # e.g. 9999-12-31T23:59:59-14:00 is past the last representable UTC time
        from ._errors import InvalidInput

        raise InvalidInput(f"{what} is out of range once converted to UTC: {value.isoformat()}") from None


def to_iso(value: datetime | None) -> str | None:
    """ISO-8601 text of an aware datetime (None stays None)."""
    if value is None:
        return None
    if isinstance(value, datetime) and value.tzinfo is timezone.utc:  # what polymem holds: nothing to convert
        return value.isoformat()
    return require_aware(value).isoformat()


def from_iso(text: str | None, what: str = "timestamp") -> datetime | None:
    """Parse ISO-8601 text; text without an offset is rejected, never guessed."""
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except (TypeError, ValueError) as exc:
        raise NaiveDatetimeError(f"{what} is not an ISO-8601 timestamp: {text!r}") from exc
    return require_aware(parsed, what)


def checked_clock(clock: Clock) -> Clock:
    """Wrap a user clock so a naive datetime from it fails loudly."""

    def now() -> datetime:
        return require_aware(clock(), "clock()")

    return now
