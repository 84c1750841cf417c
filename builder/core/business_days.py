"""Peru's business calendar, as used by the banking regulator (SBS) and the central bank (BCRP).

A business day is Monday to Friday, except Peru's public holidays (from the ``holidays``
package) and the one-off non-working days listed, with evidence, in the versioned data file
``builder/core/data/non_working_days.csv``. Every function is pure, callers passing the dates,
but :func:`load_calendar`, which only loads ahead what the others would load on first use.
"""

from __future__ import annotations

import csv
import functools
import importlib.resources
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta

import holidays

from builder.core.vocabulary import LIMA, SERIES

_ONE_DAY = timedelta(days=1)
_WEEKEND_NAMES = {5: "sábado", 6: "domingo"}
_CSV_HEADER = ["fecha", "motivo", "evidencia"]


@functools.lru_cache(maxsize=128)
def _public_holidays(year: int) -> dict[date, str]:
    """Peru's public holidays of one year, named in Spanish."""
    return dict(holidays.country_holidays("PE", years=year, language="es").items())


def load_calendar(years: Iterable[int]) -> None:
    """Load the calendar of ``years`` now rather than on its first use. The first year loaded
    costs the most: the ``holidays`` package imports the module of every country it knows
    (0.1-0.3 s), so a server does this before it answers, not in the middle of a request."""
    _extra_non_working_days()
    for year in years:
        _public_holidays(year)


@functools.lru_cache(maxsize=1)
def _extra_non_working_days() -> dict[date, str]:
    """The one-off non-working days of the packaged CSV, mapped to their motive."""
    resource = importlib.resources.files("builder.core") / "data" / "non_working_days.csv"
    reader = csv.DictReader(resource.read_text(encoding="utf-8").splitlines())
    if reader.fieldnames != _CSV_HEADER:
        raise ValueError(f"non_working_days.csv: header {reader.fieldnames}, want {_CSV_HEADER}")
    return {date.fromisoformat(row["fecha"]): row["motivo"] for row in reader}


def today_in_lima(now: datetime) -> date:
    """The calendar date in Lima at the instant ``now``, which must be timezone-aware."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware, got naive {now.isoformat()}")
    return now.astimezone(LIMA).date()


def next_lima_midnight(day: date) -> datetime:
    """The Lima midnight that ends ``day``: where a token's last valid day and a rate limit's
    day end, both decided from this one rule."""
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=LIMA)


def non_working_reason(d: date) -> str | None:
    """Why ``d`` is not a business day (holiday name, CSV motive, weekday name), or None."""
    holiday = _public_holidays(d.year).get(d)
    if holiday is not None:
        return holiday
    extra = _extra_non_working_days().get(d)
    if extra is not None:
        return extra
    return _WEEKEND_NAMES.get(d.weekday())


def is_business_day(d: date) -> bool:
    """True if ``d`` is a weekday that is neither a public holiday nor a listed non-working day."""
    return non_working_reason(d) is None


def previous_business_day(d: date) -> date:
    """The latest business day strictly before ``d``."""
    return last_business_day_on_or_before(d - _ONE_DAY)


def last_business_day_on_or_before(d: date) -> date:
    """``d`` itself if it is a business day, else the latest business day before it."""
    while not is_business_day(d):
        d -= _ONE_DAY
    return d


def business_days_between(start: date, end: date) -> list[date]:
    """The business days from ``start`` to ``end``, both included, ascending.

    By ordinal arithmetic (ordinal 1, 0001-01-01, is a Monday, so ordinals ``o`` with
    ``(o - 1) % 7 >= 5`` are weekends), minus the closed weekdays of those years: a range of
    decades costs one pass over integers, not a calendar lookup per day.
    """
    if end < start:
        return []
    closed = {d.toordinal() for d in _closed_weekdays(start.year, end.year)}
    return [
        date.fromordinal(o)
        for o in range(start.toordinal(), end.toordinal() + 1)
        if (o - 1) % 7 < 5 and o not in closed
    ]


def _weekdays_through(d: date) -> int:
    """How many Mondays to Fridays there are from 0001-01-01 (a Monday) to ``d``, included."""
    weeks, rest = divmod(d.toordinal(), 7)
    return 5 * weeks + min(rest, 5)


def _closed_weekdays(first_year: int, last_year: int) -> set[date]:
    """Holidays and listed non-working days of these years that fall on a weekday."""
    closed = set(_extra_non_working_days())
    for year in range(first_year, last_year + 1):
        closed.update(_public_holidays(year))
    return {d for d in closed if d.weekday() < 5}


def count_business_days_after(start: date, end: date) -> int:
    """How many business days lie in the half-open interval (``start``, ``end``]."""
    if end <= start:
        return 0
    weekdays = _weekdays_through(end) - _weekdays_through(start)
    closed = _closed_weekdays(start.year, end.year)
    return weekdays - sum(1 for d in closed if start < d <= end)


def expected_series_date(serie: str, today: date) -> date:
    """The date the newest value of ``serie`` should carry on ``today``.

    ``"publicado"`` (the tax authority's published rate) is dated ``today``. ``"cierre"`` (the
    regulator's close) of a business day D is published on D+1, so on ``today`` the newest close
    is the business day before the last business day on or before ``today``.
    """
    if serie == "publicado":
        return today
    if serie == "cierre":
        return previous_business_day(last_business_day_on_or_before(today))
    raise ValueError(f"unknown serie {serie!r}; expected one of {SERIES}")
