"""Pure layout of a year's coverage calendar: every day of the year with its status.

A day with a valid observation is ``dato``; a business day between the series' first and last
dates without one is a gap, coloured by its ``motivo`` (``sin_dato``, ``fallo``, ``nd_fuente``)
exactly as ``/v1/coverage`` lists it; other days are ``no_habil`` (weekend or holiday) or
``fuera_de_rango`` (before the first or after the last date of the series).
"""

from __future__ import annotations

import calendar as stdlib_calendar
import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date

from builder.core.business_days import non_working_reason
from builder.core.vocabulary import FALLO, GAP_REASONS, ND_FUENTE, SIN_DATO

MONTH_NAMES = (
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "setiembre",
    "octubre",
    "noviembre",
    "diciembre",
)
WEEKDAY_HEADERS = ("lu", "ma", "mi", "ju", "vi", "sá", "do")
# Legend order and the words a person reads for each status.
STATUS_LABELS = {
    "dato": "con dato",
    SIN_DATO: "sin_dato: ninguna captura obtuvo dato y no hay causa registrada",
    FALLO: "fallo: la fuente falló ese día",
    ND_FUENTE: "nd_fuente: la fuente declaró no tener dato",
    "no_habil": "no hábil (fin de semana o feriado)",
    "fuera_de_rango": "fuera del rango de la serie",
}


@dataclasses.dataclass(frozen=True, slots=True)
class CalendarDay:
    day: date
    status: str
    note: str

    @property
    def title(self) -> str:
        return f"{self.day.isoformat()}: {self.note}"


@dataclasses.dataclass(frozen=True, slots=True)
class MonthGrid:
    name: str
    weeks: tuple[tuple[CalendarDay | None, ...], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class LegendEntry:
    status: str
    label: str
    count: int


@dataclasses.dataclass(frozen=True, slots=True)
class YearCalendar:
    year: int
    months: tuple[MonthGrid, ...]
    legend: tuple[LegendEntry, ...]
    gaps: tuple[CalendarDay, ...]


def day_status(
    day: date,
    with_data: frozenset[date],
    gaps: Mapping[date, str],
    first: date,
    last: date,
) -> CalendarDay:
    if day in with_data:
        return CalendarDay(day, "dato", "con dato")
    if day in gaps:
        reason = gaps[day]
        return CalendarDay(day, reason, reason)
    closed = non_working_reason(day)
    if closed is not None:
        return CalendarDay(day, "no_habil", closed)
    if day < first or day > last:
        return CalendarDay(day, "fuera_de_rango", "fuera del rango de la serie")
    # A business day inside the range with neither data nor a listed gap: coverage and the
    # calendar disagree, which the published coverage never does; show it as sin_dato.
    return CalendarDay(day, SIN_DATO, SIN_DATO)


def year_calendar(
    year: int,
    with_data: Iterable[date],
    gaps: Mapping[date, str],
    first: date,
    last: date,
) -> YearCalendar:
    """Twelve Monday-first month grids of ``year`` and a legend counting each status."""
    present = frozenset(with_data)
    counts: Counter[str] = Counter()
    months = []
    gap_days = []
    for month in range(1, 13):
        weeks = []
        for week in stdlib_calendar.Calendar(firstweekday=0).monthdatescalendar(year, month):
            row: list[CalendarDay | None] = []
            for day in week:
                if day.month != month:
                    row.append(None)
                    continue
                cell = day_status(day, present, gaps, first, last)
                counts[cell.status] += 1
                if cell.status in GAP_REASONS:
                    gap_days.append(cell)
                row.append(cell)
            weeks.append(tuple(row))
        months.append(MonthGrid(MONTH_NAMES[month - 1], tuple(weeks)))
    legend = tuple(
        LegendEntry(status, label, counts[status]) for status, label in STATUS_LABELS.items()
    )
    return YearCalendar(year, tuple(months), legend, tuple(gap_days))
