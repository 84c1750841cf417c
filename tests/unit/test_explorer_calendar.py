"""The coverage calendar's layout: every day of the year with the status a person should see."""

from __future__ import annotations

from datetime import date

from builder.render.explorer.calendar import year_calendar

FIRST, LAST = date(2026, 1, 2), date(2026, 9, 21)


def cells(calendar):  # type: ignore[no-untyped-def]
    return {c.day: c for m in calendar.months for w in m.weeks for c in w if c is not None}


def test_gaps_are_coloured_by_their_motivo_and_data_days_by_dato() -> None:
    gaps = {
        date(2026, 9, 14): "fallo",
        date(2026, 9, 15): "nd_fuente",
        date(2026, 9, 16): "sin_dato",
    }
    data = [date(2026, 9, 11), date(2026, 9, 17), date(2026, 9, 18), date(2026, 9, 21)]
    calendar = year_calendar(2026, data, gaps, date(2026, 9, 11), LAST)
    by_day = cells(calendar)
    assert by_day[date(2026, 9, 14)].status == "fallo"
    assert by_day[date(2026, 9, 15)].status == "nd_fuente"
    assert by_day[date(2026, 9, 16)].status == "sin_dato"
    assert by_day[date(2026, 9, 21)].status == "dato"
    assert [g.day for g in calendar.gaps] == sorted(gaps)


def test_weekends_and_holidays_are_not_business_days_and_say_why() -> None:
    by_day = cells(year_calendar(2026, [], {}, FIRST, LAST))
    assert by_day[date(2026, 9, 19)].status == "no_habil"  # a Saturday
    assert by_day[date(2026, 9, 19)].note == "sábado"
    holiday = by_day[date(2026, 7, 28)]  # Fiestas Patrias
    assert holiday.status == "no_habil"
    assert holiday.note not in ("sábado", "domingo")


def test_a_weekend_day_with_a_published_value_shows_the_value() -> None:
    by_day = cells(year_calendar(2026, [date(2026, 9, 20)], {}, FIRST, LAST))
    assert by_day[date(2026, 9, 20)].status == "dato"


def test_business_days_outside_the_series_range_are_out_of_range() -> None:
    by_day = cells(year_calendar(2026, [], {}, FIRST, LAST))
    assert by_day[date(2026, 9, 22)].status == "fuera_de_rango"
    assert by_day[date(2026, 1, 2)].status == "sin_dato"


def test_month_grids_start_on_monday_and_the_legend_counts_every_day() -> None:
    calendar = year_calendar(2026, [date(2026, 9, 21)], {date(2026, 9, 14): "fallo"}, FIRST, LAST)
    september = calendar.months[8]
    assert september.name == "setiembre"
    assert september.weeks[0][0] is None  # 1 September 2026 is a Tuesday
    assert september.weeks[0][1] is not None and september.weeks[0][1].day == date(2026, 9, 1)
    assert sum(entry.count for entry in calendar.legend) == 365
    counts = {entry.status: entry.count for entry in calendar.legend}
    assert counts["dato"] == 1 and counts["fallo"] == 1
    assert [entry.status for entry in calendar.legend] == [
        "dato",
        "sin_dato",
        "fallo",
        "nd_fuente",
        "no_habil",
        "fuera_de_rango",
    ]
