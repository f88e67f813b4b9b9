"""Reading when a statement's fact began (or ends) from its words, relative to when it was said.

A small table of English patterns, no library. bench/bench_dates.py (load ~19 on 2 cores):
dateparser 1.5's `search_dates` read 20 of 28 statements right and 5 of 15 of a second table,
took 0.7–1.5 s to import and 0.9–1.5 s for its first read, ~11 ms each after, and read "may",
"march", "4417" and "30 years" in "I'm 30 years old" as dates; these patterns read 28/28 (the
table they were written against) and 12/15 (a table written after, untuned: they miss durations,
"the summer of 2021" and a future told by "starting"), in under 0.2 ms; a text without a date-like
word in one search.

>>> from datetime import datetime, timezone
>>> said = datetime(2026, 3, 10, 15, 30, tzinfo=timezone.utc)
>>> read_validity("I switched to black on March 1st", said)
(datetime.datetime(2026, 3, 1, 0, 0, tzinfo=datetime.timezone.utc), None)
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

_MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for name in names}
_DAYS = {name: n for n, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                            "sunday"))}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:1[89]|2[01])\d\d)"
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_PREP = r"(?:in|since|from|during|until|till|early|late|by)\s+"

# Each pattern with the name of its reading; the first kind that matches wins.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [(kind, re.compile(body, re.IGNORECASE)) for kind, body in (
    ("iso", r"\b(?P<year>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    ("day", r"\b" + _MONTH + r"\s+" + _DAY + r"\b(?:,?\s+" + _YEAR + r"\b)?"),
    ("day", r"\b(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"\b(?:,?\s+" + _YEAR + r"\b)?"),
    ("month", r"\b" + _MONTH + r",?\s+" + _YEAR + r"\b"),
    ("word", r"\b(?P<word>yesterday|today|tonight|tomorrow)\b"),
    ("ago", r"\b" + _COUNT + r"\s+(?P<unit>day|week|month|year)s?\s+ago\b"),
    ("relative", r"\b(?P<which>last|this|next)\s+(?P<unit>week|month|year)\b"),
    ("weekday", r"\b(?P<which>last|this|next|on)\s+(?P<weekday>" + "|".join(_DAYS) + r")\b"),
    # A bare month or year only after a preposition: "may", "march" and 4417 are not dates by themselves.
    ("month", r"\b" + _PREP + _MONTH + r"\b"),
    ("year", r"\b" + _PREP + _YEAR + r"\b"),
)]
# A word every expression above holds (a digit, a month's or a weekday's name or its start, a
# word of the "word", "ago" and "relative" kinds): a text without one is read by one search, not ten.
_HINT = re.compile(r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|"
                   r"yesterday|today|tonight|tomorrow|ago|last|next|this)", re.IGNORECASE)
_UNTIL = re.compile(r"\b(?:until|till|til|through|up to)\s+(?:the\s+)?$", re.IGNORECASE)
_FUTURE = re.compile(r"\b(?:will|shall|going to|gonna|plan(?:ning)? to|about to|intend to)\b|\w'll\b",
                     re.IGNORECASE)
# "When I was ten, where did I live?" opens with a clause of time and asks for a place: a "when"
# whose clause a comma closes before another question is not asked.
_QUESTION_WORD = r"(?:who|whom|whose|what|where|which|why|how|did|do|does|is|are|was|were|can|could|would|will|should|have|has|had)"
_WHEN = re.compile(r"^\W*(?:when\b(?![^,?]*,\s*" + _QUESTION_WORD + r"\b)|what\s+(?:date|day|time|year|month)"
                   r"|how\s+long\s+ago|which\s+(?:date|day|year|month))\b", re.IGNORECASE)
# How long the period a date expression names lasts, by its kind (and unit).
_SPANS = {"iso": "day", "day": "day", "word": "day", "weekday": "day", "month": "month", "year": "year"}


def asks_when(question: str) -> bool:
    """Whether a question asks for a time ("When did…", "What date…", "How long ago…"): what
    answers it states one."""
    return _WHEN.search(question) is not None


DATED_TEXTS_KEPT = 1 << 12
"""How many texts' days `read_date` remembers."""
DATED_TEXT_CHARS = 1024
"""The longest text whose day `read_date` remembers."""


def read_date(sentence: str, said_at: datetime) -> date | None:
    """The day the sentence's first date expression names (`read_validity`'s), None if none.

    A recall asking for a time reads the days of ~30 memories, mostly the same ones from one
    recall to the next: those of the last `DATED_TEXTS_KEPT` texts of up to `DATED_TEXT_CHARS`
    characters are remembered (ten patterns searched again cost 0.13 ms a recall), by the day
    they were said where they were said (all the reading depends on: one instant is two days in
    two time zones)."""
    said_on = said_at.date()
    if len(sentence) > DATED_TEXT_CHARS:
        return _read_date(sentence, said_on)
    return _remembered_date(sentence, said_on)


def _read_date(sentence: str, said_on: date) -> date | None:
    start, end = read_validity(sentence, datetime(said_on.year, said_on.month, said_on.day))
    day = start or end
    return None if day is None else day.date()


_remembered_date = lru_cache(maxsize=DATED_TEXTS_KEPT)(_read_date)


def read_period(text: str, now: datetime) -> tuple[date, date] | None:
    """The period the text's first date expression names, read relative to `now` as
    `read_validity` reads one: (its first day, the day after its last), a day for "on May 8th"
    or "yesterday", a week for "last week", a month for "in May 2023", a year for "in 2022";
    None when the text names no time."""
    if not _HINT.search(text):
        return None
    future = _FUTURE.search(text) is not None
    for kind, pattern in _PATTERNS:
        found = pattern.search(text)
        if found is None:
            continue
        groups = found.groupdict()
        start = _resolve(kind, groups, now.date(), future=future)
        if start is None:
            continue
        unit = _SPANS.get(kind) or groups["unit"].casefold()
        try:
            end = start + timedelta(days=7) if unit == "week" else _shift(start, unit, 1)
        except (ValueError, OverflowError):
            continue
        return start, end
    return None


def read_validity(sentence: str, said_at: datetime) -> tuple[datetime | None, datetime | None]:
    """`(valid_from, valid_to)` the sentence's first date expression gives, each None when it
    gives none: the start of the day, week, month or year it names (midnight in `said_at`'s
    time zone), read relative to `said_at`; "until …" gives `valid_to` instead. A month, day
    or weekday without a year is the last one on or before the statement, or the next one
    when the sentence speaks of the future ("will", "going to", "until", …)."""
    if not _HINT.search(sentence):
        return None, None
    for kind, pattern in _PATTERNS:
        found = pattern.search(sentence)
        if found is None:
            continue
        until = _UNTIL.search(sentence[:found.start()]) or re.match(r"(?:until|till)\b", found.group(0), re.I)
        future = until is not None or _FUTURE.search(sentence) is not None
        day = _resolve(kind, found.groupdict(), said_at.date(), future=future)
        if day is None:
            continue
        start = datetime(day.year, day.month, day.day, tzinfo=said_at.tzinfo)
        return (None, start) if until else (start, None)
    return None, None


def _resolve(kind: str, g: dict[str, str], today: date, *, future: bool) -> date | None:
    try:
        if kind == "iso":
            return date(int(g["year"]), int(g["m"]), int(g["d"]))
        if kind in ("day", "month"):
            month, day = _MONTHS[g["month"].casefold().rstrip(".")], int(g.get("day") or 1)
            if g.get("year"):
                return date(int(g["year"]), month, day)
            # the last such day (or month) on or before the statement, or the next one from it
            key, now = (month, day if kind == "day" else 1), (today.month, today.day if kind == "day" else 1)
            year = today.year + (key < now if future else -(key > now))
            return date(year, month, day)
        if kind == "year":
            return date(int(g["year"]), 1, 1)
        if kind == "word":
            return today + timedelta(days={"yesterday": -1, "tomorrow": 1}.get(g["word"].casefold(), 0))
        if kind == "ago":
            count = int(g["count"]) if g["count"].isdigit() else _NUMBERS[" ".join(g["count"].casefold().split())]
            return _shift(today, g["unit"].casefold(), -count)
        if kind == "relative":
            step, unit = {"last": -1, "this": 0, "next": 1}[g["which"].casefold()], g["unit"].casefold()
            if unit == "week":
                return today - timedelta(days=today.weekday()) + timedelta(weeks=step)
            start = _shift(today.replace(day=1), unit, step)
            return start if unit == "month" else start.replace(month=1)
        if kind == "weekday":
            target, which = _DAYS[g["weekday"].casefold()], g["which"].casefold()
            if which == "next" or (future and which in ("on", "this")):
                ahead = (target - today.weekday()) % 7
                return today + timedelta(days=ahead or (7 if which == "next" else 0))
            back = (today.weekday() - target) % 7
            return today - timedelta(days=back or (7 if which == "last" else 0))
    except (KeyError, ValueError, OverflowError):
        return None
    return None


def _shift(day: date, unit: str, count: int) -> date:
    """`day` moved by `count` days, weeks, months or years (a month's last day where the day
    is past its end: a month before March 31st is the end of February)."""
    if unit in ("day", "week"):
        return day + timedelta(days=count * (7 if unit == "week" else 1))
    index = day.year * 12 + day.month - 1 + (count * 12 if unit == "year" else count)
    year, month = index // 12, index % 12 + 1
    for last in (day.day, 30, 29, 28):
        if last <= day.day:
            try:
                return date(year, month, last)
            except ValueError:
                continue
    raise ValueError(day)
