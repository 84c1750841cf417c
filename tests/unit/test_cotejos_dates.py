"""Which publications a newly declared ``nd_fuente`` day re-checks (docs/decisions.md#cross-checks):
those whose counterpart it moves, and no others."""

from __future__ import annotations

from datetime import date

from builder.capture.cotejos import dates_pointing_to, dates_skipping

# Fiestas Patrias 2026: Monday 27 July is a listed non-working day, 28 and 29 are holidays; the
# central bank lists all three as n.d., followed by the close of Thursday 30 July.
FIESTAS = {date(2026, 7, 27), date(2026, 7, 28), date(2026, 7, 29)}


def test_a_declared_day_that_is_no_business_day_re_checks_nothing() -> None:
    for declared_date in sorted(FIESTAS):
        assert dates_skipping(declared_date, FIESTAS) == []
    assert dates_skipping(date(2026, 9, 19), {date(2026, 9, 19)}) == []  # a Saturday


def test_a_declared_business_day_re_checks_the_publications_that_pointed_to_it() -> None:
    tuesday, friday = date(2026, 9, 15), date(2026, 9, 18)
    assert dates_skipping(tuesday, {tuesday}) == [date(2026, 9, 16)]
    weekend_and_monday = [date(2026, 9, 19), date(2026, 9, 20), date(2026, 9, 21)]
    assert dates_skipping(friday, {friday}) == weekend_and_monday
    # Two business days in a row declared together: each moves the publications after it.
    both = {date(2026, 9, 17), friday}
    assert dates_skipping(friday, both) == weekend_and_monday
    assert dates_skipping(date(2026, 9, 17), both) == [date(2026, 9, 18), *weekend_and_monday]


def test_the_publications_after_fiestas_patrias_point_to_friday_24_july() -> None:
    pointing = dates_pointing_to(date(2026, 7, 24), FIESTAS)
    assert pointing == [date(2026, 7, d) for d in (25, 26, 27, 28, 29, 30)]
