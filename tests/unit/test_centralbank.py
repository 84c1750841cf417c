"""The central bank's (BCRP) answer for the SBS close (docs/sources.md#central-bank-json).

Every hostile body is derived, in the test, from the real recorded answer of 09 Sep 2026.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.capture.plausibility import plausibility_reasons
from builder.core.variables import CENTRALBANK_URL
from builder.registry.records import Observation
from builder.sources.centralbank import (
    PARSER_VERSION,
    SERIES_CODES,
    SERIES_NAMES,
    CentralBankAnswer,
    NoData,
    parse_response,
    query_url,
)
from builder.sources.common import InvariantError, ParsedRate, SourceFormatError
from tests.realdata import bcrp_recording

START, END = date(2026, 9, 1), date(2026, 9, 8)  # the recorded request's range
TODAY = date(2026, 9, 9)  # recorded on Wed 09 Sep 2026, Lima morning
REAL = bcrp_recording().body.decode("utf-8")
COMPRA_NAME = "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Compra"
VENTA_NAME = "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Venta"

# (label, compra, venta) of the recorded answer, in order; 05 and 06 Sep (a weekend) are absent.
REAL_ROWS = [
    ("01.Set.26", "3.36", "3.368"),
    ("02.Set.26", "3.353", "3.36"),
    ("03.Set.26", "3.355", "3.365"),
    ("04.Set.26", "3.36", "3.369"),
    ("07.Set.26", "3.351", "3.372"),
    ("08.Set.26", "n.d.", "n.d."),
]


def parse(
    body: str | bytes, start: date = START, end: date = END, today: date = TODAY
) -> CentralBankAnswer:
    raw = body.encode("utf-8") if isinstance(body, str) else body
    return parse_response(raw, start=start, end=end, today_lima=today)


def row_text(label: str, compra: str, venta: str) -> str:
    """One period row laid out as the real answer lays it out."""
    return f'{{\n"name":"{label}",\n"values":["{compra}","{venta}"]\n}}'


def with_rows(rows: list[tuple[str, str, str]], head: str | None = None) -> str:
    """The real answer with other period rows (and optionally another text before them)."""
    before = REAL[: REAL.index('"periods":')] if head is None else head
    return before + '"periods":\n[\n' + ",\n".join(row_text(*row) for row in rows) + "\n]\n}"


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def with_row(label: str, compra: str, venta: str) -> str:
    """The real answer with the values of one of its rows replaced."""
    (old,) = (row for row in REAL_ROWS if row[0] == label)
    return replace_once(REAL, row_text(*old), row_text(label, compra, venta))


def test_row_helpers_rebuild_the_real_answer_exactly() -> None:
    assert with_rows(REAL_ROWS) == REAL


# --- the request ------------------------------------------------------------------------------


def test_query_url_is_the_recorded_request() -> None:
    assert query_url(CENTRALBANK_URL, START, END) == bcrp_recording().uri


def test_query_url_uses_iso_dates_and_the_given_language() -> None:
    url = query_url("http://127.0.0.1:9/api/", date(2026, 1, 5), date(2026, 1, 9), lang="esp")
    assert url == "http://127.0.0.1:9/api/PD04639PD-PD04640PD/json/2026-01-05/2026-01-09/esp"


@pytest.mark.parametrize(
    ("start", "end", "lang"),
    [
        pytest.param(END, START, "ing", id="start-after-end"),
        pytest.param(START, END, "en", id="unknown-language"),
    ],
)
def test_query_url_refuses_a_bad_request(start: date, end: date, lang: str) -> None:
    with pytest.raises(ValueError):
        query_url(CENTRALBANK_URL, start, end, lang=lang)


def test_codes_names_and_parser_version() -> None:
    assert (SERIES_CODES["cierre"].compra, SERIES_CODES["cierre"].venta) == (
        "PD04639PD",
        "PD04640PD",
    )
    assert dict(SERIES_NAMES) == {"PD04639PD": COMPRA_NAME, "PD04640PD": VENTA_NAME}
    assert re.fullmatch(r"[a-z_]+-[0-9]+\.[0-9]+", PARSER_VERSION)
    assert PARSER_VERSION == "centralbank_json-1.0"


# --- the real answer --------------------------------------------------------------------------


def test_recorded_answer_is_json_served_as_html() -> None:
    recording = bcrp_recording()
    assert recording.status == 200
    assert json.loads(recording.body)["config"]["title"] == "Tipo de cambio"


def test_recorded_answer_parses_to_its_five_closes() -> None:
    answer = parse(REAL)
    expected = [
        (date(2026, 9, 1), "3.36", "3.368", "3.360", "3.368"),
        (date(2026, 9, 2), "3.353", "3.36", "3.353", "3.360"),
        (date(2026, 9, 3), "3.355", "3.365", "3.355", "3.365"),
        (date(2026, 9, 4), "3.36", "3.369", "3.360", "3.369"),
        (date(2026, 9, 7), "3.351", "3.372", "3.351", "3.372"),
    ]
    got = [(r.fecha_serie, r.compra_cruda, r.venta_cruda, r.compra, r.venta) for r in answer.rates]
    assert got == expected
    assert all(type(rate) is ParsedRate for rate in answer.rates)


def test_recorded_fragments_are_the_exact_text_of_each_row() -> None:
    answer = parse(REAL)
    assert [day.fragmento for day in answer.days] == [row_text(*row) for row in REAL_ROWS]
    for day, (label, compra, venta) in zip(answer.days, REAL_ROWS, strict=True):
        assert day.fragmento in REAL
        assert json.loads(day.fragmento) == {"name": label, "values": [compra, venta]}


def test_recorded_trailing_nd_is_pending_and_the_weekend_absent() -> None:
    answer = parse(REAL)
    assert answer.declared_nd == ()
    (pending,) = answer.pending
    assert pending == NoData(
        fecha_serie=date(2026, 9, 8),
        compra_cruda="n.d.",
        venta_cruda="n.d.",
        fragmento=row_text("08.Set.26", "n.d.", "n.d."),
        declared=False,
    )
    listed = {day.fecha_serie for day in answer.days}
    assert date(2026, 9, 5) not in listed
    assert date(2026, 9, 6) not in listed
    assert len(answer.days) == 6


# --- format changes ---------------------------------------------------------------------------

INCAPSULA_PAGE = (
    '<html style="height:100%"><head><META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW">'
    '<meta name="format-detection" content="telephone=no"></head><body style="margin:0px;'
    'height:100%"><iframe id="main-iframe" src="/_Incapsula_Resource?CWUDNSAI=24&xinfo=0-0-0"'
    ' frameborder=0 width="100%" height="100%">Request unsuccessful. Incapsula incident ID: '
    "0-0</iframe></body></html>"
)
PHP_WARNING = "\n<br />\n<b>Warning</b>:  Undefined array key 2 in <b>/var/www/api.php</b>\n"
INTERBANK_NAMES = (
    "Tipo de cambio - TC Interbancario (S/ por US$) - Compra",
    "Tipo de cambio - TC Interbancario (S/ por US$) - Venta",
)
EURO_VENTA_NAME = "Tipo de cambio - TC Euro (S/ por Euro) - Venta"

FORMAT_CHANGES = [
    pytest.param(INCAPSULA_PAGE, id="waf-challenge-page-served-with-200"),
    pytest.param("\r\n<!DOCTYPE html><html><body>Mantenimiento</body></html>", id="html-page"),
    pytest.param(REAL + PHP_WARNING, id="php-warning-appended-after-json"),
    pytest.param(REAL + "\n{}", id="second-json-value"),
    pytest.param("", id="empty-body"),
    pytest.param(" \r\n\t", id="white-space-only"),
    pytest.param(REAL[:-40], id="truncated-json"),
    pytest.param(replace_once(REAL, '"3.355","3.365"', '"3.355" "3.365"'), id="missing-comma"),
    pytest.param(REAL.replace('"', "'"), id="single-quotes"),
    pytest.param(replace_once(REAL, "}\n]\n}", "},\n]\n}"), id="trailing-comma-in-periods"),
    pytest.param(replace_once(REAL, '"3.351"', "NaN"), id="nan-constant"),
    pytest.param(f"[{REAL}]", id="top-level-array"),
    pytest.param(with_rows(REAL_ROWS, head="{\n"), id="missing-config"),
    pytest.param(REAL[: REAL.index(',\n"periods":')] + "\n}", id="missing-periods"),
    pytest.param(replace_once(REAL, '"periods":', '"periodos":'), id="periods-renamed"),
    pytest.param(
        replace_once(REAL, '{\n"config":', '{\n"error":"",\n"config":'),
        id="unexpected-top-level-key",
    ),
    pytest.param(
        replace_once(REAL, '"periods":\n[', '"periods":\n{"a":\n[') + "}", id="periods-obj"
    ),
    pytest.param(replace_once(REAL, '"series":', '"serie":'), id="series-renamed"),
    pytest.param(
        replace_once(REAL, COMPRA_NAME, INTERBANK_NAMES[0]).replace(VENTA_NAME, INTERBANK_NAMES[1]),
        id="series-are-the-interbank-averages",
    ),
    pytest.param(replace_once(REAL, VENTA_NAME, EURO_VENTA_NAME), id="column-named-euro"),
    pytest.param(replace_once(REAL, VENTA_NAME, COMPRA_NAME), id="both-columns-named-compra"),
    pytest.param(
        replace_once(REAL, "SBS (S/ por US$) - Venta", "SBS (S/. por US$) - Venta"),
        id="name-slightly-different",
    ),
    pytest.param(
        replace_once(REAL, '"dec":"3"\n}]', '"dec":"3"\n},\n{\n"name":"PD04648PD",\n"dec":"3"\n}]'),
        id="third-series",
    ),
    pytest.param(
        replace_once(REAL, ',\n{\n"name":"' + VENTA_NAME + '",\n"dec":"3"\n}', ""),
        id="one-series-two-values",
    ),
    pytest.param(replace_once(REAL, '"3.351"', "3.351"), id="value-is-a-json-number"),
    pytest.param(with_row("03.Set.26", "", "3.365"), id="value-empty"),
    pytest.param(with_row("03.Set.26", "N.D.", "3.365"), id="nd-upper-case"),
    pytest.param(with_row("03.Set.26", "nd", "3.365"), id="nd-without-dots"),
    pytest.param(with_row("03.Set.26", "3,355", "3.365"), id="decimal-comma"),
    pytest.param(with_row("03.Set.26", "3.", "3.365"), id="dot-without-decimals"),
    pytest.param(with_row("03.Set.26", "+3.355", "3.365"), id="plus-sign"),
    pytest.param(with_row("03.Set.26", "3.355e0", "3.365"), id="exponent"),
    pytest.param(with_row("03.Set.26", " 3.355", "3.365"), id="value-with-space"),
    pytest.param(
        replace_once(REAL, '"values":["3.355","3.365"]', '"values":["3.355"]'), id="one-value"
    ),
    pytest.param(
        replace_once(REAL, '"values":["3.355","3.365"]', '"values":["3.355","3.365","3.4"]'),
        id="three-values",
    ),
    pytest.param(
        replace_once(REAL, '"name":"03.Set.26",', '"name":"03.Set.26",\n"nota":"x",'),
        id="row-with-extra-key",
    ),
    pytest.param(
        replace_once(REAL, '"name":"03.Set.26",', '"name":"03.Set.26",\n"name":"03.Set.26",'),
        id="row-repeats-a-key",
    ),
    pytest.param(replace_once(REAL, '"name":"03.Set.26",\n', ""), id="row-without-label"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.Sep.26"), id="month-sep"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.SET.26"), id="month-upper-case"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.Sept.26"), id="month-four-letters"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.Xyz.26"), id="month-unknown"),
    pytest.param(replace_once(REAL, "01.Set.26", "1.Set.26"), id="day-not-zero-padded"),
    pytest.param(replace_once(REAL, "01.Set.26", "01-Set-26"), id="label-dashes"),
    pytest.param(replace_once(REAL, "01.Set.26", "2026-09-01"), id="label-iso"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.Set.2026"), id="label-four-digit-year"),
    pytest.param(replace_once(REAL, "02.Set.26", "01.Set.26"), id="duplicated-date"),
    pytest.param(replace_once(REAL, "08.Set.26", "07.Set.26"), id="duplicated-last-date"),
    pytest.param(with_rows([REAL_ROWS[1], REAL_ROWS[0], *REAL_ROWS[2:]]), id="dates-out-of-order"),
    pytest.param(replace_once(REAL, "01.Set.26", "31.Ago.26"), id="date-before-the-range"),
    pytest.param(replace_once(REAL, "08.Set.26", "09.Set.26"), id="date-after-the-range"),
    pytest.param(replace_once(REAL, "01.Set.26", "01.Set.25"), id="year-outside-the-range"),
    pytest.param(REAL.encode("utf-16"), id="utf-16"),
    pytest.param(REAL.encode("ascii").replace(b"Tipo", b"T\xedpo"), id="latin-1-byte"),
]


@pytest.mark.parametrize("body", FORMAT_CHANGES)
def test_hostile_body_is_a_format_change(body: str | bytes) -> None:
    with pytest.raises(SourceFormatError) as raised:
        parse(body)
    assert type(raised.value) is SourceFormatError
    assert raised.value.alert_type == "cambio_formato"


def test_challenge_page_message_says_so() -> None:
    with pytest.raises(SourceFormatError, match=r"HTML page, not JSON \(a WAF challenge page\)"):
        parse(INCAPSULA_PAGE)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            replace_once(REAL, "02.Set.26", "01.Set.26"),
            r"period 2 \('01.Set.26'\): date 2026-09-01 repeats",
            id="duplicated-date",
        ),
        pytest.param(
            replace_once(REAL, "08.Set.26", "09.Set.26"),
            r"period 6 \('09.Set.26'\): date 2026-09-09 is outside the range",
            id="outside-range",
        ),
        pytest.param(
            with_row("03.Set.26", "3.355e0", "3.365"),
            r"period 3 \('03.Set.26'\): value '3.355e0' is neither 'n.d.' nor a decimal string$",
            id="exponent",
        ),
        pytest.param(
            replace_once(REAL, "01.Set.26", "01.Sep.26"),
            r"period 1 \('01.Sep.26'\): unknown month 'Sep'",
            id="month-sep",
        ),
        pytest.param(
            replace_once(REAL, VENTA_NAME, EURO_VENTA_NAME),
            r"are not those of PD04639PD and PD04640PD",
            id="euro-column",
        ),
    ],
)
def test_format_change_message_names_the_row_or_the_series(body: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse(body)


def test_status_does_not_matter_only_the_bytes() -> None:
    # The parser never sees the status: a 200 challenge page fails exactly like any HTML page.
    assert bcrp_recording().status == 200
    with pytest.raises(SourceFormatError):
        parse(INCAPSULA_PAGE.encode("utf-8"))


# --- columns: by name, never by position alone ------------------------------------------------


def swap_columns(swap_values: bool) -> str:
    head = REAL[: REAL.index('"periods":')]
    swapped_head = (
        head.replace(COMPRA_NAME, "\0").replace(VENTA_NAME, COMPRA_NAME).replace("\0", VENTA_NAME)
    )
    rows = [
        (label, venta, compra) if swap_values else (label, compra, venta)
        for label, compra, venta in REAL_ROWS
    ]
    return with_rows(rows, head=swapped_head)


def test_columns_in_the_other_order_are_read_by_their_names() -> None:
    swapped = parse(swap_columns(swap_values=True))
    real = parse(REAL)
    assert [(r.fecha_serie, r.compra, r.venta) for r in swapped.rates] == [
        (r.fecha_serie, r.compra, r.venta) for r in real.rates
    ]
    assert swapped.rates[0].fragmento == row_text("01.Set.26", "3.368", "3.36")


def test_names_decide_the_side_even_when_the_figures_look_swapped() -> None:
    # Names say venta first, figures kept in request order: the names win, compra > venta is
    # then what the source published, for the plausibility check to mark.
    answer = parse(swap_columns(swap_values=False))
    first = answer.rates[0]
    assert (first.compra_cruda, first.venta_cruda) == ("3.368", "3.36")


def cierre_observation(rate: ParsedRate) -> Observation:
    return Observation(
        id="00000000-0000-4000-8000-000000000010",
        revision_creada=1,
        moneda="USD",
        serie="cierre",
        fecha_serie=rate.fecha_serie.isoformat(),
        compra=rate.compra,
        venta=rate.venta,
        compra_cruda=rate.compra_cruda,
        venta_cruda=rate.venta_cruda,
        fuente="centralbank",
        identidad_consulta=f"GET {bcrp_recording().uri}",
        fragmento=rate.fragmento,
        version_parser=PARSER_VERSION,
        capturado_en="2026-09-09T10:59:35.000000Z",
        ejecucion_id="00000000-0000-4000-8000-000000000001",
        evidencia_id="00000000-0000-4000-8000-000000000002",
        supersedes=None,
    )


def test_euro_sized_figure_under_the_right_name_is_kept_and_marked_implausible() -> None:
    # The bytes cannot tell a euro figure from a dollar one when the name is right: the value is
    # recorded as published and the plausibility check flags the move
    # (docs/decisions.md#plausibility).
    answer = parse(with_row("07.Set.26", "3.351", "3.951"))
    previous, last = answer.rates[-2], answer.rates[-1]
    assert (last.compra, last.venta) == ("3.351", "3.951")
    reasons = plausibility_reasons(
        last.fecha_serie,
        last.compra,
        last.venta,
        cierre_observation(previous),
        TODAY,
        Decimal("3"),
    )
    assert [(reason["motivo"], reason["lado"]) for reason in reasons] == [("movimiento", "venta")]


# --- n.d. -------------------------------------------------------------------------------------


def test_nd_followed_by_a_later_value_is_declared() -> None:
    answer = parse(with_row("03.Set.26", "n.d.", "n.d."))
    (declared,) = answer.declared_nd
    assert declared.fecha_serie == date(2026, 9, 3)
    assert declared.declared is True
    assert declared.fragmento == row_text("03.Set.26", "n.d.", "n.d.")
    assert [day.fecha_serie for day in answer.pending] == [date(2026, 9, 8)]
    assert date(2026, 9, 3) not in {rate.fecha_serie for rate in answer.rates}


@pytest.mark.parametrize(
    ("compra", "venta"),
    [
        pytest.param("n.d.", "3.365", id="compra-nd"),
        pytest.param("3.355", "n.d.", id="venta-nd"),
    ],
)
def test_row_with_one_side_nd_counts_as_nd_and_keeps_its_raw_values(
    compra: str, venta: str
) -> None:
    answer = parse(with_row("03.Set.26", compra, venta))
    (declared,) = answer.declared_nd
    assert (declared.fecha_serie, declared.compra_cruda, declared.venta_cruda) == (
        date(2026, 9, 3),
        compra,
        venta,
    )
    assert len(answer.rates) == 4


def test_one_side_nd_on_the_last_row_is_pending() -> None:
    answer = parse(with_row("08.Set.26", "3.352", "n.d."))
    assert answer.declared_nd == ()
    assert [(d.fecha_serie, d.compra_cruda) for d in answer.pending] == [
        (date(2026, 9, 8), "3.352")
    ]


def test_trailing_run_of_nd_is_all_pending_and_earlier_run_all_declared() -> None:
    rows = [
        ("01.Set.26", "n.d.", "n.d."),
        ("02.Set.26", "n.d.", "n.d."),
        ("03.Set.26", "3.355", "3.365"),
        ("04.Set.26", "n.d.", "n.d."),
        ("07.Set.26", "n.d.", "3.372"),
        ("08.Set.26", "n.d.", "n.d."),
    ]
    answer = parse(with_rows(rows))
    assert [d.fecha_serie.day for d in answer.declared_nd] == [1, 2]
    assert [d.fecha_serie.day for d in answer.pending] == [4, 7, 8]
    assert [d.fecha_serie.day for d in answer.rates] == [3]


def test_all_nd_is_all_pending() -> None:
    answer = parse(with_rows([(label, "n.d.", "n.d.") for label, _, _ in REAL_ROWS]))
    assert answer.rates == ()
    assert answer.declared_nd == ()
    assert len(answer.pending) == 6


def test_no_periods_at_all_is_an_empty_answer() -> None:
    answer = parse(with_rows([]))
    assert answer.days == ()


def test_weekend_listed_as_nd_is_declared_when_monday_has_a_value() -> None:
    rows = [
        *REAL_ROWS[:4],
        ("05.Set.26", "n.d.", "n.d."),
        ("06.Set.26", "n.d.", "n.d."),
        *REAL_ROWS[4:],
    ]
    answer = parse(with_rows(rows))
    assert [d.fecha_serie.day for d in answer.declared_nd] == [5, 6]


# --- decimals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        pytest.param("3.4555", "3.456", id="four-decimals-half-rounds-up"),
        pytest.param("3.4554", "3.455", id="four-decimals-below-half-rounds-down"),
        pytest.param("3.4545", "3.455", id="half-up-not-half-even"),
        pytest.param("3.44", "3.440", id="dropped-trailing-zero"),
        pytest.param("3.4", "3.400", id="two-dropped-zeros"),
        pytest.param("3", "3.000", id="no-decimals"),
        pytest.param("3.9995", "4.000", id="rounds-into-the-unit"),
        pytest.param("3.35514", "3.355", id="five-decimals"),
        pytest.param("3.35114285714286", "3.351", id="fourteen-decimals"),
        pytest.param("3.35450000000000", "3.355", id="fourteen-decimals-half-rounds-up"),
        pytest.param("3.3544999999999999999999", "3.354", id="just-below-half-rounds-down"),
    ],
)
def test_values_become_three_decimals_half_up_and_keep_their_raw_text(
    raw: str, canonical: str
) -> None:
    answer = parse(with_row("07.Set.26", raw, raw))
    last = answer.rates[-1]
    assert (last.compra_cruda, last.venta_cruda) == (raw, raw)
    assert (last.compra, last.venta) == (canonical, canonical)
    assert last.fragmento == row_text("07.Set.26", raw, raw)


def four_decimal_text(units: int) -> str:
    return f"{units // 10_000}.{units % 10_000:04d}"


def half_up_oracle(units: int) -> str:
    # Integer arithmetic on ten-thousandths, independent of Decimal's rounding modes.
    thousandths = (units + 5) // 10
    return f"{thousandths // 1000}.{thousandths % 1000:03d}"


# Every value served inside (0.5, 20): 0.5005 is served as 0.501, 19.9994 as 19.999; below or
# above, the value served is no rate (invariants, above).
SERVED_AS_A_RATE = st.integers(min_value=5_005, max_value=199_994)


@given(units=SERVED_AS_A_RATE, drop_zeros=st.booleans())
def test_any_value_of_up_to_four_decimals_rounds_half_up(units: int, drop_zeros: bool) -> None:
    raw = four_decimal_text(units)
    if drop_zeros:
        raw = raw.rstrip("0").removesuffix(".")
    last = parse(with_row("07.Set.26", raw, raw)).rates[-1]
    assert last.compra_cruda == raw
    assert last.compra == last.venta == half_up_oracle(units)


@given(units=SERVED_AS_A_RATE, tail=st.text(alphabet="0123456789", min_size=1, max_size=20))
def test_any_value_of_more_decimals_rounds_half_up_on_its_first_four(units: int, tail: str) -> None:
    # docs/decisions.md#canonical-values: the central bank may carry more than 3 decimals. Half-up
    # at 3 places depends on the 4th decimal alone, whatever digits follow it.
    raw = four_decimal_text(units) + tail
    last = parse(with_row("07.Set.26", raw, "3.372")).rates[-1]
    assert last.compra_cruda == raw
    assert last.compra == half_up_oracle(units)


# --- labels -----------------------------------------------------------------------------------

SPANISH = ("Ene", "Feb", "Mar", "Abr", "May", "Jun", "Jul", "Ago", "Set", "Oct", "Nov", "Dic")
ENGLISH_BUT_SET = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Set",
    "Oct",
    "Nov",
    "Dec",
)


def label(day: date, months: tuple[str, ...]) -> str:
    return f"{day.day:02d}.{months[day.month - 1]}.{day.year % 100:02d}"


@given(
    day=st.dates(min_value=date(1997, 1, 2), max_value=date(2090, 12, 31)),
    months=st.sampled_from([SPANISH, ENGLISH_BUT_SET]),
    before=st.integers(min_value=0, max_value=4000),
    after=st.integers(min_value=0, max_value=4000),
)
def test_any_label_of_either_language_round_trips_to_its_date(
    day: date, months: tuple[str, ...], before: int, after: int
) -> None:
    start, end = day - timedelta(days=before), day + timedelta(days=after)
    answer = parse(with_rows([(label(day, months), "3.36", "3.368")]), start, end, day)
    (rate,) = answer.rates
    assert rate.fecha_serie == day


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("03.Ene.26", date(2026, 1, 3), id="spanish-january"),
        pytest.param("03.Jan.26", date(2026, 1, 3), id="english-january"),
        pytest.param("21.May.26", date(2026, 5, 21), id="may-both-languages"),
        pytest.param("17.Ago.26", date(2026, 8, 17), id="spanish-august"),
        pytest.param("17.Aug.26", date(2026, 8, 17), id="english-august"),
        pytest.param("15.Dic.25", date(2025, 12, 15), id="spanish-december"),
        pytest.param("15.Dec.25", date(2025, 12, 15), id="english-december"),
        pytest.param("02.Jan.97", date(1997, 1, 2), id="last-century"),
    ],
)
def test_month_labels_of_both_tables(text: str, expected: date) -> None:
    answer = parse(with_rows([(text, "3.36", "3.368")]), date(1997, 1, 1), date(2026, 9, 8))
    assert answer.rates[0].fecha_serie == expected


# --- invariants -------------------------------------------------------------------------------

INVARIANT_FAILURES = [
    pytest.param(with_row("03.Set.26", "-3.355", "3.365"), id="negative-compra"),
    pytest.param(with_row("03.Set.26", "3.355", "-3.365"), id="negative-venta"),
    pytest.param(with_row("03.Set.26", "0", "3.365"), id="zero-compra"),
    pytest.param(with_row("03.Set.26", "3.355", "0.000"), id="zero-venta"),
    pytest.param(with_row("03.Set.26", "0.0004", "3.365"), id="served-as-zero-compra"),
    pytest.param(with_row("03.Set.26", "3.355", "0.0004999"), id="served-as-zero-venta"),
    pytest.param(with_row("03.Set.26", "3355", "3365"), id="absurd-magnitude"),
    pytest.param(with_row("03.Set.26", "3.355", "19.9996"), id="served-as-twenty"),
    pytest.param(with_row("03.Set.26", "3.355", "33.65"), id="absurd-magnitude-venta-only"),
    pytest.param(with_row("03.Set.26", "0.003", "0.004"), id="absurd-magnitude-small"),
    pytest.param(with_row("03.Set.26", "0.3355", "3.365"), id="absurd-magnitude-shifted-point"),
    pytest.param(with_row("03.Set.26", "3.355", "0.5004"), id="served-as-the-lower-bound"),
    pytest.param(replace_once(REAL, "03.Set.26", "31.Set.26"), id="impossible-date-31-september"),
    pytest.param(replace_once(REAL, "03.Set.26", "00.Set.26"), id="impossible-date-day-zero"),
]


@pytest.mark.parametrize("body", INVARIANT_FAILURES)
def test_row_that_cannot_be_a_rate_fails_the_whole_answer(body: str) -> None:
    with pytest.raises(InvariantError, match=r"period 3 \('[0-9]{2}.Set.26'\)") as raised:
        parse(body)
    assert type(raised.value) is InvariantError
    assert raised.value.alert_type == "invariante_fallida"


def test_date_more_than_a_day_after_today_in_lima_fails_an_invariant() -> None:
    with pytest.raises(InvariantError, match=r"period 5 \('07.Set.26'\).*more than one day after"):
        parse(REAL, today=date(2026, 9, 5))


def test_tomorrow_in_lima_parses_for_plausibility_to_mark() -> None:
    assert parse(REAL, today=date(2026, 9, 6)).rates[-1].fecha_serie == date(2026, 9, 7)


def test_tomorrow_after_the_requested_range_parses_for_plausibility_to_mark() -> None:
    # A capture asks up to today in Lima: a row dated tomorrow is after the range, yet what the
    # source published (docs/decisions.md#plausibility), not a format change.
    answer = parse(REAL, end=date(2026, 9, 6), today=date(2026, 9, 6))
    assert answer.rates[-1].fecha_serie == date(2026, 9, 7)
    assert [d.fecha_serie for d in answer.pending] == [date(2026, 9, 8)]


def test_tomorrow_in_the_next_year_takes_the_next_year() -> None:
    rows = [("30.Dic.26", "3.36", "3.368"), ("01.Ene.27", "3.351", "3.372")]
    answer = parse(with_rows(rows), date(2026, 12, 24), date(2026, 12, 31), date(2026, 12, 31))
    assert [r.fecha_serie for r in answer.rates] == [date(2026, 12, 30), date(2027, 1, 1)]


def test_two_days_after_the_requested_range_and_today_fails_an_invariant() -> None:
    with pytest.raises(InvariantError, match=r"period 5 \('07.Set.26'\).*more than one day after"):
        parse(REAL, end=date(2026, 9, 5), today=date(2026, 9, 5))


@pytest.mark.parametrize(
    ("end", "today"),
    [
        pytest.param(date(2026, 9, 4), date(2026, 9, 9), id="after-the-range-before-today"),
        pytest.param(date(2026, 9, 4), date(2026, 9, 7), id="after-the-range-on-today"),
    ],
)
def test_a_date_after_the_range_but_not_after_today_is_a_format_change(
    end: date, today: date
) -> None:
    # A backfill asks for a range that ended before today: a row after it was never asked for.
    with pytest.raises(SourceFormatError, match=r"period 5 \('07.Set.26'\).*outside the range"):
        parse(REAL, end=end, today=today)


def test_nd_rows_are_not_checked_as_rates() -> None:
    assert parse(with_row("03.Set.26", "n.d.", "0.000")).declared_nd[0].venta_cruda == "0.000"


@pytest.mark.parametrize(
    ("start", "end"),
    [
        pytest.param(END, START, id="start-after-end"),
        pytest.param(date(1990, 1, 1), date(2090, 1, 1), id="a-century-of-two-digit-years"),
    ],
)
def test_a_bad_requested_range_is_the_callers_error(start: date, end: date) -> None:
    with pytest.raises(ValueError) as raised:
        parse(REAL, start, end)
    assert not isinstance(raised.value, SourceFormatError | InvariantError)
