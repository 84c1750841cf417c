"""The tax authority's monthly history answer (docs/sources.md#monthly-history).

No raw answer was ever recorded (docs/sources.md#recordings), so the good answers are built in the
documented shape, ``[{"fecPublica":"01/11/2025","valTipo":"3.372","codTipo":"C"}, ...]`` (two rows
per date, every field a string), from the tax authority's real history; the documented examples
(``01/11/2025`` C ``3.372``, ``01/01/2024`` C ``3.705``) are checked to be among them. Every
hostile body is derived from a good one in the test.
"""

from __future__ import annotations

import json
import random
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.sources.common import InvariantError, SourceFormatError, content_type_of
from builder.sources.taxauth_monthly import (
    ENDPOINT,
    PARSER_VERSION,
    parse_monthly,
    query_identity,
)
from tests.realdata import SunatDay, sunat_history

TODAY = date(2026, 9, 20)


def month_days(year: int, month: int) -> list[SunatDay]:
    return [d for d in sunat_history() if (d.fecha.year, d.fecha.month) == (year, month)]


def row(fecha: date, value: str, side: str) -> str:
    """One row exactly as the documented example writes it (compact, this key order)."""
    return json.dumps(
        {"fecPublica": fecha.strftime("%d/%m/%Y"), "valTipo": value, "codTipo": side},
        separators=(",", ":"),
    )


def rows_of(days: list[SunatDay]) -> list[str]:
    return [r for d in days for r in (row(d.fecha, d.compra, "C"), row(d.fecha, d.venta, "V"))]


def answer(rows: list[str], separator: str = ",") -> bytes:
    return ("[" + separator.join(rows) + "]").encode()


NOVEMBER_2025 = month_days(2025, 11)
GOOD = answer(rows_of(NOVEMBER_2025))


def parse(body: bytes, year: int = 2025, month: int = 11, today: date = TODAY):  # type: ignore[no-untyped-def]
    return parse_monthly(body, year=year, month=month, today_lima=today)


def test_the_documented_examples_are_real_values() -> None:
    assert row(date(2025, 11, 1), NOVEMBER_2025[0].compra, "C") == (
        '{"fecPublica":"01/11/2025","valTipo":"3.372","codTipo":"C"}'
    )
    (first_of_2024,) = [d for d in month_days(2024, 1) if d.fecha == date(2024, 1, 1)]
    assert first_of_2024.compra == "3.705"


def test_a_whole_month_parses_to_its_real_values_with_exact_fragments() -> None:
    parsed = parse(GOOD)
    assert not parsed.empty
    assert parsed.rows == 60
    assert [r.fecha_serie for r in parsed.rates] == [d.fecha for d in NOVEMBER_2025]
    assert len(parsed.rates) == 30
    for rate, day in zip(parsed.rates, NOVEMBER_2025, strict=True):
        assert (rate.compra_cruda, rate.venta_cruda) == (day.compra, day.venta)
        assert rate.fragmento in GOOD.decode()
        assert (
            rate.fragmento == f"{row(day.fecha, day.compra, 'C')},{row(day.fecha, day.venta, 'V')}"
        )
    assert parsed.rates[0].compra == "3.372"
    assert PARSER_VERSION == "taxauth_mensual-1.0"


def test_a_month_with_a_real_gap_leaves_the_date_absent() -> None:
    # docs/sources.md#which-days: 2024-01-03 is missing from the tax authority's calendar.
    january = month_days(2024, 1)
    parsed = parse(answer(rows_of(january)), 2024, 1)
    dates = [r.fecha_serie for r in parsed.rates]
    assert date(2024, 1, 3) not in dates
    assert len(dates) == 30


def test_rows_in_any_order_and_any_white_space_give_the_same_dates() -> None:
    rows = rows_of(NOVEMBER_2025)
    random.Random(7).shuffle(rows)
    body = ("\r\n [\n  " + ",\n  ".join(rows) + "\n]\n").encode()
    parsed = parse(body)
    assert [(r.fecha_serie, r.compra, r.venta) for r in parsed.rates] == [
        (r.fecha_serie, r.compra, r.venta) for r in parse(GOOD).rates
    ]


def test_values_with_fewer_decimals_are_canonical_at_three() -> None:
    body = answer([row(date(2025, 11, 3), "3.37", "C"), row(date(2025, 11, 3), "3.4", "V")])
    (rate,) = parse(body).rates
    assert (rate.compra_cruda, rate.compra, rate.venta) == ("3.37", "3.370", "3.400")


def test_the_empty_array_is_an_empty_answer_not_a_format_error() -> None:
    for body in (b"[]", b" [ ]\r\n"):
        parsed = parse(body)
        assert parsed.empty and parsed.rates == ()


def replace_first(old: str, new: str) -> bytes:
    text = GOOD.decode()
    assert old in text
    return text.replace(old, new, 1).encode()


FIRST_C = row(date(2025, 11, 1), "3.372", "C")

FORMAT_CHANGES = {
    "empty-body": b"",
    "only-white-space": b" \r\n",
    "firewall-page": b"<html><head><title>Request Rejected</title></head><body>The requested "
    b"URL was rejected.</body></html>",
    "not-json": b"fecPublica;valTipo;codTipo",
    "truncated": GOOD[:-30],
    "html-after-the-array": GOOD + b"<br /><b>Warning</b>",
    "two-arrays": GOOD + b"[]",
    "object-not-array": b'{"data": ' + GOOD + b"}",
    "latin-1": replace_first('"C"}', '"C", "nota": "a\xf1o"}').replace(b"\xc3\xb1", b"\xf1"),
    "byte-order-mark": b"\xef\xbb\xbf" + GOOD,
    "row-not-object": answer(['["01/11/2025","3.372","C"]']),
    "missing-key": replace_first(',"codTipo":"C"}', "}"),
    "extra-key": replace_first('"C"}', '"C","codMoneda":"USD"}'),
    "repeated-key": replace_first('"C"}', '"C","codTipo":"C"}'),
    "value-as-number": replace_first('"valTipo":"3.372"', '"valTipo":3.372'),
    "value-four-decimals": replace_first('"3.372"', '"3.3720"'),
    "value-no-point": replace_first('"3.372"', '"3372"'),
    "value-comma": replace_first('"3.372"', '"3,372"'),
    "value-n.d.": replace_first('"3.372"', '"n.d."'),
    "value-nan": replace_first('"valTipo":"3.372"', '"valTipo":NaN'),
    "side-lowercase": replace_first('"codTipo":"C"', '"codTipo":"c"'),
    "side-other": replace_first('"codTipo":"C"', '"codTipo":"P"'),
    "date-iso": replace_first('"01/11/2025"', '"2025-11-01"'),
    "date-unpadded": replace_first('"01/11/2025"', '"1/11/2025"'),
    "date-other-month": replace_first('"01/11/2025"', '"01/12/2025"'),
    "date-other-year": replace_first('"01/11/2025"', '"01/11/2024"'),
    "side-twice": answer([FIRST_C, FIRST_C, row(date(2025, 11, 1), "3.378", "V")]),
    "one-side-only": answer([FIRST_C]),
    "trailing-comma": GOOD[:-1] + b",]",
}


@pytest.mark.parametrize("body", FORMAT_CHANGES.values(), ids=FORMAT_CHANGES.keys())
def test_anything_but_the_documented_shape_is_a_format_change(body: bytes) -> None:
    with pytest.raises(SourceFormatError):
        parse(body)


def test_the_message_names_the_row_that_broke_the_rule() -> None:
    rows = rows_of(NOVEMBER_2025)
    rows[2] = row(date(2025, 11, 2), "3.3720", "C")
    with pytest.raises(SourceFormatError, match=r"row 3: valTipo '3\.3720' has more than 3"):
        parse(answer(rows))
    with pytest.raises(SourceFormatError, match="rejection page"):
        parse(FORMAT_CHANGES["firewall-page"])
    with pytest.raises(SourceFormatError, match="2025-11-01 has no venta row"):
        parse(FORMAT_CHANGES["one-side-only"])


INVARIANTS = {
    "zero": answer([FIRST_C, row(date(2025, 11, 1), "0.000", "V")]),
    "negative": answer([FIRST_C, row(date(2025, 11, 1), "-3.378", "V")]),
    "absurd": answer([FIRST_C, row(date(2025, 11, 1), "33.780", "V")]),
    "impossible-date": answer(
        [row(date(2025, 11, 1), "3.372", "C").replace("01/11", "31/11"), FIRST_C]
    ),
}


@pytest.mark.parametrize("body", INVARIANTS.values(), ids=INVARIANTS.keys())
def test_a_well_formed_value_that_cannot_be_a_rate_is_an_invariant_failure(body: bytes) -> None:
    with pytest.raises(InvariantError):
        parse(body)


def test_a_date_two_days_after_today_is_an_invariant_failure_tomorrow_is_not() -> None:
    tomorrow = date(2025, 11, 16)
    body = answer(rows_of([d for d in NOVEMBER_2025 if d.fecha <= tomorrow]))
    assert parse(body, today=tomorrow - timedelta(days=1)).rates[-1].fecha_serie == tomorrow
    with pytest.raises(InvariantError, match="more than one day after today"):
        parse(body, today=tomorrow - timedelta(days=2))


def test_the_query_identity_names_the_month_as_the_endpoint_counts_it() -> None:
    assert query_identity(ENDPOINT, 2025, 11) == f"POST {ENDPOINT}?anio=2025&mes=10"
    assert query_identity(ENDPOINT, 2024, 1).endswith("?anio=2024&mes=0")
    with pytest.raises(ValueError):
        query_identity(ENDPOINT, 2024, 13)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (GOOD, "application/json"),
        (b"  []\n", "application/json"),
        (FORMAT_CHANGES["firewall-page"], "text/html"),
        (b"", "application/octet-stream"),
        (b"fecPublica;valTipo", "application/octet-stream"),
    ],
)
def test_a_saved_answer_is_labelled_by_its_shape(body: bytes, content_type: str) -> None:
    assert content_type_of(body) == content_type


@settings(max_examples=60, deadline=None)
@given(
    keep=st.lists(st.booleans(), min_size=30, max_size=30),
    seed=st.integers(0, 2**16),
    separator=st.sampled_from([",", ", ", ",\n", " ,\r\n  "]),
)
def test_any_subset_in_any_order_parses_to_exactly_that_subset(
    keep: list[bool], seed: int, separator: str
) -> None:
    days = [d for d, k in zip(NOVEMBER_2025, keep, strict=True) if k]
    rows = rows_of(days)
    random.Random(seed).shuffle(rows)
    parsed = parse(answer(rows, separator))
    assert [(r.fecha_serie, r.compra_cruda, r.venta_cruda) for r in parsed.rates] == [
        (d.fecha, d.compra, d.venta) for d in days
    ]
    assert parsed.rows == 2 * len(days)
