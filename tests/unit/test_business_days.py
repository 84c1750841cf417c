from __future__ import annotations

import csv
import importlib.resources
import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.core.business_days import (
    LIMA,
    business_days_between,
    count_business_days_after,
    expected_series_date,
    is_business_day,
    last_business_day_on_or_before,
    non_working_reason,
    previous_business_day,
    today_in_lima,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SBS_CSV = REAL / "bcrp_PD04640PD_sbs_venta_daily_2026-01-19_2026-08-20__pen-radar.csv"
SUNAT_JSON = REAL / "sunat_usd_pen_daily_2021-01-01_2026-09-21__ivanjoz_public-business-data.json"

HOLIDAYS = {
    2024: "01-01 03-28 03-29 05-01 06-07 06-29 07-23 07-28 07-29 08-06 08-30 10-08 11-01 12-08 "
    "12-09 12-25",
    2025: "01-01 04-17 04-18 05-01 07-23 07-28 07-29 08-06 10-08 12-08 12-09 12-25",
    # 06-29 (Saint Peter and Saint Paul) is a Monday in 2026: the SBS published nothing that day.
    2026: "01-01 04-02 04-03 05-01 06-29 07-23 07-28 07-29 08-06 10-08 12-08 12-09 12-25",
}
HOLIDAY_DATES = [
    date.fromisoformat(f"{year}-{month_day}")
    for year, month_days in HOLIDAYS.items()
    for month_day in month_days.split()
]


def d(iso: str) -> date:
    return date.fromisoformat(iso)


# --- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize("holiday", HOLIDAY_DATES, ids=str)
def test_peruvian_public_holiday_is_not_a_business_day_and_is_named(holiday: date) -> None:
    assert not is_business_day(holiday)
    assert non_working_reason(holiday) not in (None, "sábado", "domingo")


def test_holiday_reason_is_the_spanish_holiday_name() -> None:
    assert non_working_reason(d("2026-07-28")) == "Día de la Independencia"


def test_listed_non_working_monday_is_not_a_business_day_with_the_csv_motive() -> None:
    assert not is_business_day(d("2026-07-27"))
    reason = non_working_reason(d("2026-07-27"))
    assert reason is not None
    assert reason.startswith("día no laborable")
    assert "SBS" in reason


def test_every_listed_non_working_day_is_a_weekday_the_holidays_package_does_not_know() -> None:
    resource = importlib.resources.files("builder.core") / "data" / "non_working_days.csv"
    rows = list(csv.DictReader(resource.read_text(encoding="utf-8").splitlines()))
    assert rows, "the data file lists at least one day"
    for row in rows:
        listed = d(row["fecha"])
        assert listed.weekday() < 5
        assert non_working_reason(listed) == row["motivo"]
        assert row["evidencia"].strip()


@pytest.mark.parametrize(
    "weekday",
    [
        "2026-09-01",
        "2026-09-02",
        "2026-09-03",
        "2026-09-04",
        "2026-09-07",
        "2026-07-24",
        "2026-07-30",
    ],
)
def test_ordinary_weekday_is_a_business_day(weekday: str) -> None:
    assert is_business_day(d(weekday))
    assert non_working_reason(d(weekday)) is None


@pytest.mark.parametrize(
    ("weekend", "name"),
    [("2026-09-05", "sábado"), ("2026-09-06", "domingo"), ("2024-01-06", "sábado")],
)
def test_saturday_and_sunday_are_not_business_days(weekend: str, name: str) -> None:
    assert not is_business_day(d(weekend))
    assert non_working_reason(d(weekend)) == name


# --- navigation -------------------------------------------------------------------------------


def test_previous_business_day_skips_weekend_and_holidays() -> None:
    assert previous_business_day(d("2026-09-07")) == d("2026-09-04")
    assert previous_business_day(d("2026-09-04")) == d("2026-09-03")
    # Sat 25, Sun 26, listed Mon 27, holidays Tue 28 and Wed 29 July 2026.
    assert previous_business_day(d("2026-07-30")) == d("2026-07-24")


def test_last_business_day_on_or_before_is_the_day_itself_when_it_is_one() -> None:
    assert last_business_day_on_or_before(d("2026-09-04")) == d("2026-09-04")
    assert last_business_day_on_or_before(d("2026-09-06")) == d("2026-09-04")


def test_business_days_between_includes_both_ends_in_ascending_order() -> None:
    assert business_days_between(d("2026-09-04"), d("2026-09-08")) == [
        d("2026-09-04"),
        d("2026-09-07"),
        d("2026-09-08"),
    ]


@given(
    start=st.dates(min_value=date(1990, 1, 1), max_value=date(2030, 12, 31)),
    days=st.integers(min_value=0, max_value=3000),
)
def test_business_days_between_agrees_with_checking_each_day(start: date, days: int) -> None:
    end = start + timedelta(days=days)
    each = [start + timedelta(days=i) for i in range(days + 1)]
    assert business_days_between(start, end) == [day for day in each if is_business_day(day)]


def test_business_days_between_is_empty_when_end_precedes_start() -> None:
    assert business_days_between(d("2026-09-08"), d("2026-09-04")) == []


def test_saturday_with_friday_data_has_no_business_day_missing() -> None:
    assert count_business_days_after(d("2026-09-04"), d("2026-09-05")) == 0


def test_friday_to_next_tuesday_counts_monday_and_tuesday() -> None:
    assert count_business_days_after(d("2026-09-04"), d("2026-09-08")) == 2


@pytest.mark.parametrize(
    ("start", "end"), [("2026-09-08", "2026-09-08"), ("2026-09-08", "2026-09-04")]
)
def test_count_business_days_after_is_zero_when_end_is_not_after_start(
    start: str, end: str
) -> None:
    assert count_business_days_after(d(start), d(end)) == 0


# --- expected dates of the series ------------------------------------------------------------


@pytest.mark.parametrize("today", ["2026-09-06", "2026-09-08", "2026-07-28"])
def test_published_series_is_expected_to_carry_today(today: str) -> None:
    assert expected_series_date("publicado", d(today)) == d(today)


@pytest.mark.parametrize(
    ("today", "expected"),
    [
        ("2026-09-06", "2026-09-03"),  # Sun: last business day Fri 04 published Thu 03's close
        ("2026-09-07", "2026-09-04"),  # Mon: Monday publishes Friday's close
        # Tue: Tuesday publishes Monday's close. The rule previous_business_day(
        # last_business_day_on_or_before(today)) gives Mon 07 here, not Fri 04.
        ("2026-09-08", "2026-09-07"),
        ("2026-07-23", "2026-07-21"),  # holiday Thu: last business day Wed 22
        ("2026-07-24", "2026-07-22"),  # Fri after the holiday: Thursday had no close
        ("2026-07-30", "2026-07-24"),  # after Sat..Wed without business days
    ],
)
def test_closing_series_is_expected_one_business_day_behind(today: str, expected: str) -> None:
    assert expected_series_date("cierre", d(today)) == d(expected)


def test_unknown_series_is_rejected() -> None:
    with pytest.raises(ValueError, match="serie"):
        expected_series_date("compra", d("2026-09-08"))


# --- Lima's clock -----------------------------------------------------------------------------


def test_utc_early_morning_is_still_the_previous_day_in_lima() -> None:
    assert today_in_lima(datetime(2026, 9, 8, 3, 0, tzinfo=UTC)) == d("2026-09-07")
    assert today_in_lima(datetime(2026, 9, 8, 5, 0, tzinfo=UTC)) == d("2026-09-08")
    assert today_in_lima(datetime(2026, 9, 8, 0, 0, tzinfo=LIMA)) == d("2026-09-08")


def test_naive_datetime_is_rejected() -> None:
    with pytest.raises(ValueError, match="aware"):
        today_in_lima(datetime(2026, 9, 8, 3, 0))  # noqa: DTZ001


# --- real data --------------------------------------------------------------------------------


def test_sbs_published_a_close_on_exactly_the_business_days_of_2026() -> None:
    with SBS_CSV.open(encoding="utf-8", newline="") as f:
        published = [d(row["date"]) for row in csv.DictReader(f)]
    assert len(published) == 145
    assert set(published) == set(business_days_between(d("2026-01-19"), d("2026-08-20")))


def test_sunat_repeats_the_previous_rate_after_a_non_business_day() -> None:
    with SUNAT_JSON.open(encoding="utf-8") as f:
        records = json.load(f, parse_float=Decimal)["registros"]
    rates = {d(r["fecha"]): (Decimal(r["compra"]), Decimal(r["venta"])) for r in records}
    checked = 0
    day = d("2026-01-20")
    while day <= d("2026-08-21"):
        before = day - timedelta(days=1)
        if day in rates and before in rates and not is_business_day(before):
            assert rates[day] == rates[before], f"SUNAT {day} differs from {before}"
            checked += 1
        day += timedelta(days=1)
    assert checked > 50  # weekends, holidays and 2026-07-27 are all present in the file


# --- properties -------------------------------------------------------------------------------

DATES = st.dates(min_value=date(2000, 1, 1), max_value=date(2040, 12, 31))


@settings(deadline=None)
@given(DATES)
def test_previous_business_day_is_the_nearest_business_day_before(day: date) -> None:
    previous = previous_business_day(day)
    assert previous < day
    assert is_business_day(previous)
    assert business_days_between(previous + timedelta(days=1), day - timedelta(days=1)) == []


@settings(deadline=None)
@given(DATES, DATES)
def test_count_business_days_after_matches_the_listed_business_days(a: date, b: date) -> None:
    expected = len(business_days_between(a + timedelta(days=1), b))
    assert count_business_days_after(a, b) == expected


# --- loading ahead ----------------------------------------------------------------------------

LOADS_AHEAD = """
import sys
from datetime import date
from builder.core import business_days
assert "holidays.countries" not in sys.modules  # imported on first use, not with the module
business_days.load_calendar([2030])
assert "holidays.countries" in sys.modules
caches = (business_days._public_holidays, business_days._extra_non_working_days)
before = [cache.cache_info().misses for cache in caches]
# An ordinary Wednesday: its answer reads both the holidays and the listed non-working days.
assert business_days.non_working_reason(date(2030, 1, 2)) is None
assert [cache.cache_info().misses for cache in caches] == before  # nothing left to load
"""


def test_load_calendar_does_the_first_use_s_loading_ahead_of_it() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", LOADS_AHEAD], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
