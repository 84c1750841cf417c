"""The backfill's pure rules: which dates are missing, and which requests are refused."""

from __future__ import annotations

from datetime import date

import pytest

from builder.capture.backfill import BackfillError, check_request, missing_dates, parse_date

SEP_1, SEP_8 = date(2026, 9, 1), date(2026, 9, 8)
RECORDED = {date(2026, 9, d) for d in (1, 2, 3, 4, 7)}  # the real answer's valued dates


def test_weekends_and_holidays_are_never_missing() -> None:
    # July 2026: 23, 28, 29 are holidays and 27 a listed non-working day.
    july = missing_dates("cierre", date(2026, 7, 20), date(2026, 7, 31), set(), set(), SEP_8)
    assert july == [date(2026, 7, d) for d in (20, 21, 22, 24, 30, 31)]


def test_dates_with_a_value_or_a_declaration_are_not_missing() -> None:
    declared = {date(2026, 9, 3)}
    valued = RECORDED - declared
    assert missing_dates("cierre", SEP_1, SEP_8, valued, declared, date(2026, 9, 30)) == [SEP_8]


@pytest.mark.parametrize(
    ("today", "missing"),
    [
        (date(2026, 9, 8), []),  # the close of the 8th comes out on the 9th
        (date(2026, 9, 9), []),  # due today: it may still come out during the day
        (date(2026, 9, 10), [SEP_8]),  # a day late: missing
    ],
)
def test_a_trailing_date_is_pending_until_its_publication_is_past(
    today: date, missing: list[date]
) -> None:
    assert missing_dates("cierre", SEP_1, SEP_8, RECORDED, set(), today) == missing


def test_a_gap_before_the_last_value_is_missing_however_recent() -> None:
    valued = RECORDED - {date(2026, 9, 4)}
    assert missing_dates("cierre", SEP_1, SEP_8, valued, set(), SEP_8) == [date(2026, 9, 4)]


def test_publications_are_due_on_the_day_itself() -> None:
    days = {date(2026, 9, d) for d in range(1, 8)}
    assert missing_dates("publicado", SEP_1, SEP_8, days, set(), SEP_8) == []
    assert missing_dates("publicado", SEP_1, SEP_8, days, set(), date(2026, 9, 9)) == [SEP_8]


def test_nothing_valued_in_a_past_range_leaves_every_business_day_missing() -> None:
    assert missing_dates("cierre", SEP_1, SEP_8, set(), set(), date(2026, 9, 30)) == sorted(
        RECORDED | {SEP_8}
    )


TODAY = date(2026, 9, 20)


@pytest.mark.parametrize(
    ("source", "start", "end", "from_file", "message"),
    [
        ("centralbank", date(2026, 9, 9), SEP_8, None, "--from 2026-09-09 is after --to"),
        ("taxauth_txt", date(2026, 9, 9), SEP_8, "f.json", "--from 2026-09-09 is after --to"),
        ("centralbank", SEP_1, date(2026, 9, 21), None, "after today in Lima"),
        ("centralbank", date(1920, 1, 1), SEP_8, None, "100 years"),
        ("taxauth_txt", SEP_1, SEP_8, None, "--from-file"),
        ("taxauth_txt", date(2026, 8, 31), SEP_8, "f.json", "same month"),
        ("taxauth_txt", date(2025, 9, 1), date(2025, 9, 30), "", "--from-file"),
        ("sbs", SEP_1, SEP_8, None, "unknown source"),
    ],
)
def test_a_request_that_cannot_run_is_refused(
    source: str, start: date, end: date, from_file: str | None, message: str
) -> None:
    with pytest.raises(BackfillError, match=message):
        check_request(source, start, end, TODAY, from_file)


@pytest.mark.parametrize(
    ("source", "start", "end", "from_file"),
    [
        ("centralbank", date(2025, 1, 1), TODAY, None),
        ("centralbank", TODAY, TODAY, None),
        ("centralbank", date(2025, 1, 1), TODAY, "saved.json"),
        ("taxauth_txt", date(2025, 11, 1), date(2025, 11, 30), "saved.json"),
        ("taxauth_txt", date(2025, 11, 10), date(2025, 11, 10), "saved.json"),
    ],
)
def test_a_good_request_passes(source: str, start: date, end: date, from_file: str | None) -> None:
    check_request(source, start, end, TODAY, from_file)


@pytest.mark.parametrize("raw", ["2026-9-1", "20260901", "2026-09-31", "01/09/2026", "", "x"])
def test_dates_are_exactly_yyyy_mm_dd(raw: str) -> None:
    with pytest.raises(BackfillError, match="--from"):
        parse_date(raw, "--from")
    assert parse_date("2026-09-01", "--from") == SEP_1
