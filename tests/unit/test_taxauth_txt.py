"""The tax authority's text file ``DD/MM/YYYY|compra|venta|`` (docs/sources.md#text-file)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal

import pytest

from builder.sources.common import InvariantError, SourceFormatError
from builder.sources.taxauth_txt import parse_taxauth_txt
from tests.realdata import SunatDay, sunat_history

TODAY = date(2026, 9, 20)  # a real Sunday: the file said 20/09/2026|3.354|3.362|
LINE = "20/09/2026|3.354|3.362|"


def real_day(iso: str) -> SunatDay:
    (day,) = (day for day in sunat_history() if day.fecha == date.fromisoformat(iso))
    return day


def as_published(raw: str) -> str:
    return raw


def padded_to_three(raw: str) -> str:
    return f"{Decimal(raw):.3f}"


def trailing_zeros_dropped(raw: str) -> str:
    integer, _, decimals = f"{Decimal(raw):.3f}".partition(".")
    return f"{integer}.{decimals.rstrip('0') or '0'}"


def file_line(day: SunatDay, value_text: Callable[[str], str]) -> str:
    fecha = day.fecha.strftime("%d/%m/%Y")
    return f"{fecha}|{value_text(day.compra)}|{value_text(day.venta)}|"


def canonical_oracle(raw: str) -> str:
    # The fixture carries at most 3 decimals: the canonical form is the exact value at 3 places.
    value = Decimal(raw)
    assert value.as_tuple().exponent >= -3
    return str(value.quantize(Decimal("0.001")))


@pytest.mark.parametrize(
    "value_text",
    [
        pytest.param(as_published, id="values-as-published"),
        pytest.param(padded_to_three, id="values-three-decimals"),
        pytest.param(trailing_zeros_dropped, id="values-trailing-zeros-dropped"),
    ],
)
@pytest.mark.parametrize(
    ("prefix", "suffix"),
    [
        pytest.param("", "", id="no-line-end"),
        pytest.param("", "\n", id="lf"),
        pytest.param("", "\r\n", id="crlf"),
        pytest.param("  ", "\r\n", id="spaces-and-crlf"),
    ],
)
def test_every_real_day_parses_to_its_real_canonical_values(
    value_text: Callable[[str], str], prefix: str, suffix: str
) -> None:
    history = sunat_history()
    assert len(history) == 1976
    for day in history:
        line = file_line(day, value_text)
        rate = parse_taxauth_txt(f"{prefix}{line}{suffix}".encode("ascii"), day.fecha)
        assert rate.fecha_serie == day.fecha, line
        assert rate.compra == canonical_oracle(day.compra), line
        assert rate.venta == canonical_oracle(day.venta), line
        assert rate.compra_cruda == value_text(day.compra), line
        assert rate.venta_cruda == value_text(day.venta), line
        assert rate.fragmento == line


def test_trailing_zeros_variant_really_drops_zeros() -> None:
    day = real_day("2026-06-11")  # published as compra 3.4, venta 3.402
    assert file_line(day, trailing_zeros_dropped) == "11/06/2026|3.4|3.402|"
    assert file_line(day, padded_to_three) == "11/06/2026|3.400|3.402|"
    rate = parse_taxauth_txt(b"11/06/2026|3.4|3.402|", day.fecha)
    assert (rate.compra, rate.venta) == ("3.400", "3.402")


@pytest.mark.parametrize(
    "iso",
    [
        pytest.param("2026-09-19", id="saturday-2026-09-19"),
        pytest.param("2026-09-20", id="sunday-2026-09-20"),
        pytest.param("2026-08-16", id="sunday-2026-08-16"),
    ],
)
def test_weekend_date_parses_like_any_other(iso: str) -> None:
    day = real_day(iso)
    assert day.fecha.weekday() >= 5
    rate = parse_taxauth_txt(file_line(day, as_published).encode("ascii") + b"\n", day.fecha)
    assert rate.fecha_serie == day.fecha
    assert (rate.compra, rate.venta) == (canonical_oracle(day.compra), canonical_oracle(day.venta))


def test_every_real_weekend_day_parses_with_today_as_its_date() -> None:
    weekend = [day for day in sunat_history() if day.fecha.weekday() >= 5]
    assert weekend
    for day in weekend:
        rate = parse_taxauth_txt(file_line(day, as_published).encode("ascii"), day.fecha)
        assert rate.fecha_serie == day.fecha


FORMAT_CHANGES = [
    pytest.param(b"<html><body>Servicio no disponible</body></html>", id="html-page"),
    pytest.param(
        b"<!DOCTYPE html>\r\n<html>\r\n<head><title>SUNAT</title></head>\r\n</html>\r\n",
        id="html-page-multiline",
    ),
    pytest.param(b"20/09/2026;3.354;3.362;", id="semicolon-separator"),
    pytest.param(b"20/09/2026,3.354,3.362,", id="comma-separator"),
    pytest.param(b"20/09/2026|3.354|3.362", id="missing-trailing-pipe"),
    pytest.param(b"20/09/2026|3.354|3.362|3.370|", id="extra-field"),
    pytest.param(b"20/09/2026|3.354|", id="missing-field"),
    pytest.param(b"", id="empty-body"),
    pytest.param(b"  \r\n\t \n", id="whitespace-only"),
    pytest.param(b"20/09/2026|3.354|3.362|\n19/09/2026|3.354|3.362|\n", id="two-lines"),
    pytest.param(LINE.encode("utf-16"), id="utf-16-with-bom"),
    pytest.param(LINE.encode("utf-16-le"), id="utf-16-le"),
    pytest.param(LINE.encode("utf-16-be"), id="utf-16-be"),
    pytest.param(b"20/09/2026|3.354|3.362| Publicaci\xf3n", id="latin-1-non-ascii-byte"),
    pytest.param(b"20/09/2026|3.3541|3.362|", id="four-decimals-compra"),
    pytest.param(b"20/09/2026|3.354|3.3620|", id="four-decimals-venta"),
    pytest.param(b"20/09/2026|3,354|3,362|", id="decimal-comma"),
    pytest.param(b"20/09/2026|3|3.362|", id="value-without-decimals"),
    pytest.param(b"20/09/2026|abc|3.362|", id="value-not-a-number"),
    pytest.param(b"20/09/2026||3.362|", id="value-empty"),
    pytest.param(b"2026-09-20|3.354|3.362|", id="iso-date"),
    pytest.param(b"20/9/2026|3.354|3.362|", id="date-not-zero-padded"),
]


@pytest.mark.parametrize("body", FORMAT_CHANGES)
def test_hostile_body_is_a_format_change(body: bytes) -> None:
    with pytest.raises(SourceFormatError) as raised:
        parse_taxauth_txt(body, TODAY)
    assert type(raised.value) is SourceFormatError
    assert raised.value.alert_type == "cambio_formato"


def test_four_decimals_is_a_format_change_not_rounded() -> None:
    with pytest.raises(SourceFormatError, match="more than 3 decimals"):
        parse_taxauth_txt(b"20/09/2026|3.3541|3.362|", TODAY)


INVARIANT_FAILURES = [
    pytest.param(b"20/09/2026|0.000|3.362|", id="zero-compra"),
    pytest.param(b"20/09/2026|3.354|0.000|", id="zero-venta"),
    pytest.param(b"20/09/2026|-3.354|3.362|", id="negative-compra"),
    pytest.param(b"20/09/2026|3.354|-3.362|", id="negative-venta"),
    pytest.param(b"20/09/2026|33540.000|33620.000|", id="absurd-magnitude-33540"),
    pytest.param(b"20/09/2026|25.000|25.000|", id="absurd-magnitude-25"),
    pytest.param(b"20/09/2026|3.354|25.000|", id="absurd-magnitude-venta-only"),
    pytest.param(b"20/09/2026|0.335|0.336|", id="absurd-magnitude-0.335"),
    pytest.param(b"20/09/2026|0.003|0.004|", id="absurd-magnitude-0.003"),
    pytest.param(b"20/09/2026|3.354|0.5|", id="absurd-magnitude-venta-0.5"),
    pytest.param(b"31/02/2026|3.354|3.362|", id="impossible-date-31-february"),
    pytest.param(b"29/02/2026|3.354|3.362|", id="impossible-date-29-february-2026"),
    pytest.param(b"00/09/2026|3.354|3.362|", id="impossible-date-day-zero"),
    pytest.param(b"20/13/2026|3.354|3.362|", id="impossible-date-month-13"),
    pytest.param(b"22/09/2026|3.354|3.362|", id="two-days-after-today"),
    pytest.param(b"20/09/2027|3.354|3.362|", id="a-year-after-today"),
]


@pytest.mark.parametrize("body", INVARIANT_FAILURES)
def test_value_that_cannot_be_a_rate_fails_an_invariant(body: bytes) -> None:
    with pytest.raises(InvariantError) as raised:
        parse_taxauth_txt(body, TODAY)
    assert type(raised.value) is InvariantError
    assert raised.value.alert_type == "invariante_fallida"


def test_tomorrows_date_parses_for_plausibility_to_mark() -> None:
    tomorrow = TODAY + timedelta(days=1)
    rate = parse_taxauth_txt(b"21/09/2026|3.354|3.362|\r\n", TODAY)
    assert rate.fecha_serie == tomorrow
    assert (rate.compra, rate.venta) == ("3.354", "3.362")


def test_past_date_parses() -> None:
    rate = parse_taxauth_txt(b"01/01/2021|3.618|3.624|", TODAY)
    assert rate.fecha_serie == date(2021, 1, 1)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(LINE.encode(), id="bare"),
        pytest.param(LINE.encode() + b"\n", id="lf"),
        pytest.param(LINE.encode() + b"\r\n", id="crlf"),
        pytest.param(b"  " + LINE.encode() + b"\r\n", id="spaces-and-crlf"),
        pytest.param(b"\r\n\t " + LINE.encode() + b" \t\n\n", id="mixed-white-space"),
    ],
)
def test_fragmento_is_the_exact_stripped_line(body: bytes) -> None:
    assert parse_taxauth_txt(body, TODAY).fragmento == LINE


def test_real_compra_above_venta_of_2021_05_13_parses_as_published() -> None:
    day = real_day("2021-05-13")
    assert (day.compra, day.venta) == ("3.726", "3.725")
    rate = parse_taxauth_txt(b"13/05/2021|3.726|3.725|\r\n", day.fecha)
    assert rate.fecha_serie == day.fecha
    assert (rate.compra_cruda, rate.venta_cruda) == ("3.726", "3.725")
    assert (rate.compra, rate.venta) == ("3.726", "3.725")
    assert rate.fragmento == "13/05/2021|3.726|3.725|"
