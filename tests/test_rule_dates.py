"""The rule extractor dates what a sentence says began (or ends), relative to when it was said."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polymem
from polymem._dates import read_validity

SAID = datetime(2026, 3, 10, 15, 30, tzinfo=timezone.utc)  # a Tuesday


def day(year: int, month: int, d: int) -> datetime:
    return datetime(year, month, d, tzinfo=timezone.utc)


def extracted(text: str, said: datetime | None = SAID) -> polymem.MemoryDraft:
    (draft,) = polymem.RuleExtractor().extract([polymem.Message("user", text, created_at=said)])
    return draft


def test_a_month_and_day_without_a_year_is_the_last_one_before_the_statement() -> None:
    assert extracted("I switched to black on March 1st").valid_from == day(2026, 3, 1)


def test_a_month_and_day_later_in_the_year_than_the_statement_is_last_years() -> None:
    assert extracted("I switched to black on March 15th").valid_from == day(2025, 3, 15)


def test_a_day_of_a_month_reads_as_a_month_and_day() -> None:
    assert extracted("I switched to black on the 1st of March").valid_from == day(2026, 3, 1)


def test_an_explicit_year_is_kept() -> None:
    assert extracted("I switched to black on March 1st, 2024").valid_from == day(2024, 3, 1)


def test_an_iso_date_is_read_as_written() -> None:
    assert extracted("I have lived in Lyon since 2024-05-01").valid_from == day(2024, 5, 1)


def test_yesterday_is_the_day_before_the_message() -> None:
    assert extracted("Yesterday I adopted a cat named Miso").valid_from == day(2026, 3, 9)


def test_last_week_is_the_monday_of_the_week_before() -> None:
    assert extracted("I started a new job last week").valid_from == day(2026, 3, 2)


def test_a_count_of_units_ago_goes_back_from_the_message() -> None:
    assert extracted("I stopped eating meat two weeks ago").valid_from == day(2026, 2, 24)


def test_a_bare_month_in_the_past_is_the_last_one() -> None:
    assert extracted("I moved to Berlin in June").valid_from == day(2025, 6, 1)


def test_a_bare_month_in_a_sentence_about_the_future_is_the_next_one() -> None:
    assert extracted("I will start my Spanish course in June").valid_from == day(2026, 6, 1)


def test_until_gives_the_end_of_the_validity() -> None:
    draft = extracted("I am working from Oslo until April")
    assert (draft.valid_from, draft.valid_to) == (None, day(2026, 4, 1))


def test_a_weekday_is_the_last_one_on_or_before_the_message() -> None:
    assert extracted("I sold my car on Monday").valid_from == day(2026, 3, 9)


@pytest.mark.parametrize("text", ["My locker code is 4417", "I may switch to tea", "I'm 30 years old",
                                  "I march in the parade with my band", "I have 2 cats"])
def test_numbers_and_words_that_only_look_like_dates_give_no_validity(text: str) -> None:
    draft = extracted(text)
    assert (draft.valid_from, draft.valid_to) == (None, None)


def test_a_message_without_a_time_is_read_relative_to_now() -> None:
    before = datetime.now(timezone.utc)
    valid_from = extracted("Yesterday I adopted a cat named Miso", said=None).valid_from
    assert valid_from is not None and (before.date() - valid_from.date()).days == 1


def test_dates_are_read_in_the_time_zone_of_the_message() -> None:
    from datetime import timedelta

    tokyo = timezone(timedelta(hours=9))
    assert read_validity("Yesterday I moved", datetime(2026, 3, 10, 1, 0, tzinfo=tokyo)) == (
        datetime(2026, 3, 9, tzinfo=tokyo), None)


# Pieces of every kind of date expression (most without a digit), and words around them.
DATE_PIECES = ["three days ago", "a few weeks ago", "a couple of months ago", "last week", "next month", "this year",
               "on Friday", "last Monday", "March 1st", "the 1st of March", "Sept. 3", "in May", "early March",
               "since 2019", "May 2023", "2026-03-01", "yesterday", "tonight", "until", "will", "I moved to Lisbon",
               "it may rain", "of", "the", "12", "ago", "week"]


@given(st.lists(st.sampled_from(DATE_PIECES), min_size=1, max_size=8))
@settings(max_examples=400, deadline=None)
def test_a_text_is_read_as_every_pattern_reads_it_after_the_date_word_check(words: list[str]) -> None:
    import re

    from polymem import _dates

    text, said = " ".join(words), datetime(2026, 3, 10, 15, 30, tzinfo=timezone.utc)
    checked = (_dates.read_validity(text, said), _dates.read_period(text, said))
    every_text = re.compile("")  # every text passes: each pattern is tried
    original, _dates._HINT = _dates._HINT, every_text
    try:
        assert checked == (_dates.read_validity(text, said), _dates.read_period(text, said))
    finally:
        _dates._HINT = original


def test_a_short_texts_day_is_remembered_and_read_as_before() -> None:
    from polymem import _dates

    text = "We moved to Lisbon on March 1st"
    _dates._remembered_date.cache_clear()
    first, again = _dates.read_date(text, SAID), _dates.read_date(text, SAID)
    start, _ = read_validity(text, SAID)
    assert start is not None and first == again == start.date()
    assert _dates._remembered_date.cache_info().hits == 1


def test_a_days_reading_depends_on_when_the_text_was_said() -> None:
    from polymem import _dates

    text = "I started yesterday"
    assert _dates.read_date(text, day(2026, 3, 10)) == day(2026, 3, 9).date()
    assert _dates.read_date(text, day(2026, 5, 2)) == day(2026, 5, 1).date()


def test_a_days_reading_is_that_of_the_day_it_was_said_where_it_was_said() -> None:
    from datetime import timedelta

    from polymem import _dates

    text = "I started yesterday"
    instant = datetime(2026, 3, 9, 23, 30, tzinfo=timezone.utc)
    paris = instant.astimezone(timezone(timedelta(hours=1)))  # the same instant, on March 10th there
    assert _dates.read_date(text, instant) == day(2026, 3, 8).date()
    assert _dates.read_date(text, paris) == day(2026, 3, 9).date()


def test_a_long_texts_day_is_read_every_time_and_not_kept() -> None:
    from polymem import _dates

    text = "x " * _dates.DATED_TEXT_CHARS + "since 2021"
    _dates._remembered_date.cache_clear()
    assert _dates.read_date(text, SAID) == day(2021, 1, 1).date()
    assert _dates._remembered_date.cache_info().currsize == 0
