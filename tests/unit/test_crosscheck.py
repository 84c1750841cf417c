"""The cross-check rule between the published rate and the SBS close
(docs/decisions.md#cross-checks).

Checked against the real 2026 history: the central bank's SBS sell series (pen-radar CSV) and
the recorded BCRP answer, against the tax authority's publications (ivanjoz JSON).
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.capture.crosscheck import compare, counterpart_date
from builder.core.business_days import business_days_between, is_business_day
from builder.core.canonical import canonical_rate
from builder.sources.centralbank import parse_response
from builder.sources.common import ParsedRate
from tests.realdata import bcrp_recording, sbs_venta_history, sunat_history

NONE_DECLARED: frozenset[date] = frozenset()


def rate(compra: str, venta: str, fecha: date = date(2026, 9, 7)) -> ParsedRate:
    return ParsedRate(fecha_serie=fecha, compra_cruda=compra, venta_cruda=venta, fragmento="")


def ten_thousandths(n: int) -> str:
    """``n`` ten-thousandths as plain decimal text: 33605 -> ``3.3605``."""
    return f"{n // 10_000}.{n % 10_000:04d}"


def at_three_decimals_half_up(n: int) -> int:
    """``n`` ten-thousandths rounded half-up to thousandths (an oracle apart from the code)."""
    return (n + 5) // 10


@given(
    published=st.tuples(st.integers(30_000, 40_000), st.integers(30_000, 40_000)),
    apart=st.tuples(st.integers(-15, 15), st.integers(-15, 15)),
)
def test_compare_is_ok_exactly_when_both_sides_agree_at_three_decimals_half_up(
    published: tuple[int, int], apart: tuple[int, int]
) -> None:
    """What RULE_TEXT states and every cotejo records: both sides equal at 3 decimals."""
    close = (published[0] + apart[0], published[1] + apart[1])
    agree = all(
        at_three_decimals_half_up(mine) == at_three_decimals_half_up(theirs)
        for mine, theirs in zip(published, close, strict=True)
    )
    found = compare(rate(*map(ten_thousandths, published)), rate(*map(ten_thousandths, close)))
    assert found == ("ok" if agree else "discrepante")


@pytest.mark.parametrize(
    ("published", "counterpart"),
    [
        pytest.param("2026-09-08", "2026-09-07", id="tuesday-monday"),
        pytest.param("2026-09-07", "2026-09-04", id="monday-friday"),
        pytest.param("2026-09-05", "2026-09-04", id="saturday-friday"),
        pytest.param("2026-09-06", "2026-09-04", id="sunday-friday"),
        pytest.param("2026-07-24", "2026-07-22", id="after-holiday-2026-07-23"),
        pytest.param("2026-08-07", "2026-08-05", id="after-holiday-2026-08-06"),
        pytest.param("2026-07-28", "2026-07-24", id="after-non-working-monday-2026-07-27"),
        pytest.param("2026-07-30", "2026-07-24", id="after-holidays-2026-07-28-and-29"),
        pytest.param("2026-01-02", "2025-12-31", id="after-new-year"),
    ],
)
def test_counterpart_is_the_last_business_day_before(published: str, counterpart: str) -> None:
    assert counterpart_date(date.fromisoformat(published), NONE_DECLARED) == date.fromisoformat(
        counterpart
    )


def test_declared_nd_moves_the_counterpart_one_business_day_each() -> None:
    tuesday = date(2026, 9, 8)
    assert counterpart_date(tuesday, {date(2026, 9, 7)}) == date(2026, 9, 4)
    assert counterpart_date(tuesday, {date(2026, 9, 7), date(2026, 9, 4)}) == date(2026, 9, 3)


def test_declared_nd_elsewhere_or_on_a_weekend_moves_nothing() -> None:
    tuesday = date(2026, 9, 8)
    assert counterpart_date(tuesday, {date(2026, 9, 4)}) == date(2026, 9, 7)
    assert counterpart_date(date(2026, 9, 7), {date(2026, 9, 5), date(2026, 9, 6)}) == date(
        2026, 9, 4
    )
    assert counterpart_date(tuesday, {tuesday}) == date(2026, 9, 7)


def test_declared_nd_may_be_a_predicate() -> None:
    declared = {date(2026, 9, 7)}
    assert counterpart_date(date(2026, 9, 8), declared.__contains__) == date(2026, 9, 4)


def test_a_predicate_that_declares_every_day_is_refused() -> None:
    with pytest.raises(ValueError, match="declared nd_fuente days in a row"):
        counterpart_date(date(2026, 9, 8), lambda _day: True)


@given(
    published=st.dates(min_value=date(2021, 1, 1), max_value=date(2027, 12, 31)),
    gaps=st.sets(st.integers(min_value=1, max_value=20), max_size=6),
)
def test_counterpart_skips_exactly_the_declared_business_days(
    published: date, gaps: set[int]
) -> None:
    declared = {published - timedelta(days=gap) for gap in gaps}
    found = counterpart_date(published, declared)
    assert found < published
    assert is_business_day(found)
    assert found not in declared
    between = business_days_between(found + timedelta(days=1), published - timedelta(days=1))
    assert all(day in declared for day in between)


@pytest.mark.parametrize(
    ("published", "close", "resultado"),
    [
        pytest.param(("3.351", "3.372"), ("3.351", "3.372"), "ok", id="equal"),
        pytest.param(("3.36", "3.368"), ("3.360", "3.368"), "ok", id="dropped-zero-is-equal"),
        pytest.param(("3.3605", "3.368"), ("3.361", "3.368"), "ok", id="equal-after-half-up"),
        pytest.param(("3.352", "3.372"), ("3.351", "3.372"), "discrepante", id="compra-differs"),
        pytest.param(("3.351", "3.373"), ("3.351", "3.372"), "discrepante", id="venta-differs"),
        pytest.param(("3.372", "3.351"), ("3.351", "3.372"), "discrepante", id="sides-swapped"),
    ],
)
def test_compare_checks_both_sides_at_three_decimals(
    published: tuple[str, str], close: tuple[str, str], resultado: str
) -> None:
    assert compare(rate(*published), rate(*close)) == resultado


def test_every_real_sbs_sell_value_agrees_with_the_next_publication() -> None:
    sbs = sbs_venta_history()
    assert len(sbs) == 145
    # The CSV lists every business day of its span and nothing else, so no publication below
    # can point to a day it merely lacks.
    assert sorted(sbs) == business_days_between(min(sbs), max(sbs))
    checked: dict[date, date] = {}
    for day in sunat_history():
        counterpart = counterpart_date(day.fecha, NONE_DECLARED)
        if counterpart in sbs:
            assert canonical_rate(day.venta) == canonical_rate(sbs[counterpart]), day
            checked[day.fecha] = counterpart
    assert len(checked) == 214  # every publication from 2026-01-20 to 2026-08-21
    assert min(checked) == date(2026, 1, 20)
    assert max(checked) == date(2026, 8, 21)
    assert set(checked.values()) == set(sbs)


def test_real_holiday_and_non_working_day_publications_repeat_the_previous_close() -> None:
    published = {day.fecha: day.venta for day in sunat_history()}
    sbs = sbs_venta_history()
    # 2026-07-27 (Mon) had no SBS close: 07-28 to 07-30 all point to Fri 07-24.
    for fecha in ("2026-07-25", "2026-07-28", "2026-07-29", "2026-07-30"):
        published_on = date.fromisoformat(fecha)
        assert counterpart_date(published_on, NONE_DECLARED) == date(2026, 7, 24)
        assert canonical_rate(published[published_on]) == canonical_rate(sbs[date(2026, 7, 24)])


# The recorded BCRP answer (09 Sep 2026) holds the closes of 01, 02, 03, 04 and 07 Sep. Seven
# tax-authority publications point to them: each weekday D to D-1, and Sat 05, Sun 06 and
# Mon 07 to Fri 04; 08 Sep's close was still n.d. (pending), so 09 Sep has no counterpart yet.
CASSETTE_MAPPING = {
    date(2026, 9, 2): date(2026, 9, 1),
    date(2026, 9, 3): date(2026, 9, 2),
    date(2026, 9, 4): date(2026, 9, 3),
    date(2026, 9, 5): date(2026, 9, 4),
    date(2026, 9, 6): date(2026, 9, 4),
    date(2026, 9, 7): date(2026, 9, 4),
    date(2026, 9, 8): date(2026, 9, 7),
}


def test_recorded_closes_agree_with_the_seven_publications_that_point_to_them() -> None:
    answer = parse_response(
        bcrp_recording().body,
        start=date(2026, 9, 1),
        end=date(2026, 9, 8),
        today_lima=date(2026, 9, 9),
    )
    closes = {close.fecha_serie: close for close in answer.rates}
    assert set(CASSETTE_MAPPING.values()) == set(closes)
    declared = {nd.fecha_serie for nd in answer.declared_nd}
    published = {day.fecha: day for day in sunat_history()}
    for fecha, expected in CASSETTE_MAPPING.items():
        assert counterpart_date(fecha, declared) == expected
        day = published[fecha]
        assert compare(rate(day.compra, day.venta, fecha), closes[expected]) == "ok", fecha
    assert counterpart_date(date(2026, 9, 9), declared) == date(2026, 9, 8)
    assert date(2026, 9, 8) not in closes
