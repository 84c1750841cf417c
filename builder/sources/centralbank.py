"""Parser of the central bank's (BCRP) statistics API answer for the SBS close, serie ``cierre``.

One request asks for the two daily series of the banking regulator's (SBS) close, buy
``PD04639PD`` and sell ``PD04640PD``, over a date range (:func:`query_url`). The answer is JSON
served as ``text/html`` (docs/sources.md#central-bank-json)::

    {"config": {"title": "Tipo de cambio", "series": [{"name": "...", "dec": "3"}, ...]},
     "periods": [{"name": "01.Set.26", "values": ["3.36", "3.368"]}, ...]}

:func:`parse_response` accepts exactly that shape and nothing looser. It raises
``SourceFormatError`` (``cambio_formato``) for a body that is not it: an HTML page (the WAF's
challenge answers 200 too), invalid JSON or anything after it, a missing or unexpected key, series
names that are not the two SBS names, a value that is neither a decimal string nor ``n.d.``, a
label that is not ``DD.Mon.YY`` with a known month, a date before the requested range (or after
it and not after today in Lima), or dates not strictly ascending (duplicates included). It raises
``InvariantError`` (``invariante_fallida``) for a well-formed row that cannot be a rate
(impossible date, value not positive or absurd, date more than one day after today in Lima). A
rate dated tomorrow in Lima is what the source published: it is returned like any other, and the
capture marks it ``plausibilidad_baja`` (``builder.capture.plausibility``). The answer is one
piece of evidence: the first row that breaks a rule fails all of it, and the message names that
row.

Columns are matched to sides by the names the API returns, never by position alone: the two
names must be exactly the SBS buy and sell names of the BCRP metadata
(docs/sources.md#series-codes). A column named after another series (interbank, 11:00 AM, 13:30
close, euro) is refused. A figure of another currency under the right name cannot be told from the
bytes: it is recorded as published and the plausibility check (a move above the threshold) flags it.

Month labels: with ``/ing`` the API writes English abbreviations except September, which stays
``Set``; with ``/esp`` Spanish ones (docs/sources.md#central-bank-json). Both tables are accepted
(no abbreviation means two different months). ``Sep`` is refused: no source shows the API writing
it.

Values are plain decimal strings with any number of decimals (trailing zeros may be dropped,
``3.36``; a value without decimals is accepted for the same reason). The raw text is kept and
the canonical value is rounded half-up to 3 places (docs/decisions.md#canonical-values): the SBS
series declare 3, but the central bank may carry more (``3.35114285714286`` gives ``3.351``).
Anything else (an exponent, a sign other than ``-``, a comma, spaces) is not a decimal string.

A row with either side ``n.d.`` is ``n.d.`` for that date (docs/decisions.md#cross-checks). It is
the source declaring no data (``nd_fuente``) only when a later date of the same answer has a value;
otherwise the date is pending: nothing to record yet. Dates the answer omits (weekends, usually)
are simply absent.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import date, timedelta
from types import MappingProxyType
from typing import Any

from builder.core.vocabulary import CENTRALBANK
from builder.sources.common import (
    InvariantError,
    ParsedRate,
    SourceFormatError,
    check_rate_invariants,
)
from builder.sources.jsontext import answer_text, array_elements, expect, expect_end, skip, value_at

FUENTE = CENTRALBANK
SERIE = "cierre"
PARSER_VERSION = "centralbank_json-1.0"
LANGUAGES = ("ing", "esp")
NO_DATA = "n.d."
# The HTML pages the bank's API is known to answer instead of JSON: a marker in the page, its name.
KNOWN_PAGES = {"_Incapsula_Resource": "a WAF challenge page"}


@dataclasses.dataclass(frozen=True, slots=True)
class SeriesCodes:
    """The BCRP codes of one serie's buy and sell sides."""

    compra: str
    venta: str


SERIES_CODES: Mapping[str, SeriesCodes] = MappingProxyType(
    {SERIE: SeriesCodes(compra="PD04639PD", venta="PD04640PD")}
)

# The names the API returns in ``config.series[].name``: the metadata name
# (docs/sources.md#series-codes) after the group "Tipo de cambio", exactly as in the recorded
# answer.
SERIES_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "PD04639PD": "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Compra",
        "PD04640PD": "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Venta",
    }
)

_MONTHS_ESP = ("Ene", "Feb", "Mar", "Abr", "May", "Jun", "Jul", "Ago", "Set", "Oct", "Nov", "Dic")
_MONTHS_ING = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Set", "Oct", "Nov", "Dec")
MONTHS: Mapping[str, int] = MappingProxyType(
    {name: number for table in (_MONTHS_ESP, _MONTHS_ING) for number, name in enumerate(table, 1)}
)

_LABEL = re.compile(r"([0-9]{2})\.([A-Za-z]{3})\.([0-9]{2})")
_VALUE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")  # ASCII digits; any number of decimals
_ROW_KEYS = {"name", "values"}
_TOP_KEYS = {"config", "periods"}


@dataclasses.dataclass(frozen=True, slots=True)
class NoData:
    """A date the answer lists with ``n.d.`` on either side, raw row kept.

    ``declared`` is True when a later date of the same answer has a value: the source declares
    no data for this date (``nd_fuente``). False means pending: not published yet.
    """

    fecha_serie: date
    compra_cruda: str
    venta_cruda: str
    fragmento: str
    declared: bool


@dataclasses.dataclass(frozen=True, slots=True)
class CentralBankAnswer:
    """Every date the answer lists, ascending: a rate or ``n.d.``; omitted dates are absent."""

    days: tuple[ParsedRate | NoData, ...]

    @property
    def rates(self) -> tuple[ParsedRate, ...]:
        return tuple(day for day in self.days if isinstance(day, ParsedRate))

    @property
    def declared_nd(self) -> tuple[NoData, ...]:
        return tuple(day for day in self.days if isinstance(day, NoData) and day.declared)

    @property
    def pending(self) -> tuple[NoData, ...]:
        return tuple(day for day in self.days if isinstance(day, NoData) and not day.declared)


def query_url(base_url: str, start: date, end: date, lang: str = "ing") -> str:
    """The API URL of the SBS close from ``start`` to ``end`` (both included), daily form.

    >>> query_url("https://example.test/api/", date(2026, 9, 1), date(2026, 9, 8))
    'https://example.test/api/PD04639PD-PD04640PD/json/2026-09-01/2026-09-08/ing'
    """
    _check_range(start, end)
    if lang not in LANGUAGES:
        raise ValueError(f"lang {lang!r}: expected one of {LANGUAGES}")
    codes = SERIES_CODES[SERIE]
    return (
        f"{base_url.rstrip('/')}/{codes.compra}-{codes.venta}/json/"
        f"{start.isoformat()}/{end.isoformat()}/{lang}"
    )


def parse_response(body: bytes, *, start: date, end: date, today_lima: date) -> CentralBankAnswer:
    """Parse the answer to :func:`query_url` for ``start``..``end``; see the module docstring.

    Raises ``SourceFormatError`` or ``InvariantError``; ``ValueError`` for a bad range.
    """
    _check_range(start, end)
    top, rows = _split_document(answer_text(body, KNOWN_PAGES))
    compra_index, venta_index = _column_indexes(top["config"])
    width = len(top["config"]["series"])
    days: list[ParsedRate | NoData] = []
    for position, (row, fragment) in enumerate(rows, 1):
        where = f"period {position} ({_label_for(row)})"
        fecha, values = _read_row(row, width, where, start, end, today_lima)
        if days and fecha <= days[-1].fecha_serie:
            problem = "repeats" if fecha == days[-1].fecha_serie else "comes before"
            raise SourceFormatError(f"{where}: date {fecha} {problem} the previous period's")
        compra, venta = values[compra_index], values[venta_index]
        if NO_DATA in (compra, venta):
            days.append(NoData(fecha, compra, venta, fragment, declared=False))
            continue
        rate = ParsedRate(
            fecha_serie=fecha, compra_cruda=compra, venta_cruda=venta, fragmento=fragment
        )
        try:
            check_rate_invariants(rate, today_lima)
        except InvariantError as error:
            raise InvariantError(f"{where}: {error}") from None
        days.append(rate)
    return CentralBankAnswer(days=_classify_no_data(days))


def _label_for(row: object) -> str:
    """The row's label for messages: its ``name`` when it has one."""
    if isinstance(row, dict) and isinstance(row.get("name"), str):
        return repr(row["name"])
    return "no label"


def _check_range(start: date, end: date) -> None:
    if start > end:
        raise ValueError(f"start {start} is after end {end}")
    if end.year - start.year >= 100:
        raise ValueError("a range of 100 years or more makes two-digit years ambiguous")


def _split_document(text: str) -> tuple[dict[str, Any], list[tuple[Any, str]]]:
    """The top-level object, and each ``periods`` element with its exact text.

    The standard decoder reads every value; this walk only keeps where each period row starts
    and ends, so that a row's ``fragmento`` is the very text the source sent.
    """
    pos = expect(text, skip(text, 0), "{", "to open the JSON object")
    members: dict[str, Any] = {}
    rows: list[tuple[Any, str]] = []
    pos = skip(text, pos)
    closed = text.startswith("}", pos)
    while not closed:
        expect(text, pos, '"', "to open a key")
        key, pos = value_at(text, pos, "a key")
        pos = skip(text, expect(text, skip(text, pos), ":", f"after key {key!r}"))
        if key in members:
            raise SourceFormatError(f"JSON object repeats the key {key!r}")
        if key == "periods":
            rows, pos = array_elements(text, pos, "'periods'", "period")
            members[key] = [row for row, _ in rows]
        else:
            members[key], pos = value_at(text, pos, repr(key))
        pos = skip(text, pos)
        if text.startswith(",", pos):
            pos = skip(text, pos + 1)
        else:
            expect(text, pos, "}", "or ',' after a member")
            closed = True
    expect_end(text, pos + 1, "JSON object")
    missing = sorted(_TOP_KEYS - members.keys())
    if missing:
        raise SourceFormatError(f"JSON object lacks {', '.join(map(repr, missing))}")
    unexpected = sorted(members.keys() - _TOP_KEYS)
    if unexpected:
        raise SourceFormatError(f"JSON object has unexpected keys {unexpected}")
    return members, rows


def _column_indexes(config: object) -> tuple[int, int]:
    """Positions of the buy and sell columns, found by the names the API returned."""
    if not isinstance(config, dict):
        raise SourceFormatError("'config' is not an object")
    series = config.get("series")
    if not isinstance(series, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in series
    ):
        raise SourceFormatError("'config.series' is not a list of objects with a 'name'")
    names = [entry["name"] for entry in series]
    codes = SERIES_CODES[SERIE]
    expected = [SERIES_NAMES[codes.compra], SERIES_NAMES[codes.venta]]
    if len(names) != len(expected) or sorted(names) != sorted(expected):
        raise SourceFormatError(
            f"series names {names} are not those of {codes.compra} and {codes.venta}: {expected}"
        )
    return names.index(expected[0]), names.index(expected[1])


def _read_row(
    row: object, width: int, where: str, start: date, end: date, today_lima: date
) -> tuple[date, list[str]]:
    """A row's date and raw values, checked for form; the date as :func:`_label_date` allows."""
    if not isinstance(row, dict) or row.keys() != _ROW_KEYS:
        keys = sorted(row) if isinstance(row, dict) else type(row).__name__
        raise SourceFormatError(f"{where}: expected an object with 'name' and 'values', got {keys}")
    values = row["values"]
    if not isinstance(values, list) or len(values) != width:
        raise SourceFormatError(f"{where}: 'values' is not a list of {width} values")
    for value in values:
        if not isinstance(value, str) or not (value == NO_DATA or _VALUE.fullmatch(value)):
            raise SourceFormatError(
                f"{where}: value {value!r} is neither {NO_DATA!r} nor a decimal string"
            )
    fecha = _label_date(row["name"], where, start, end, today_lima)
    return fecha, values


def _label_date(label: object, where: str, start: date, end: date, today_lima: date) -> date:
    """The date of a ``DD.Mon.YY`` label, its century taken from the requested range.

    A date before ``start``, or after ``end`` but not after today in Lima, is outside what was
    asked: a format error. A date after both ``end`` and today is returned: it is the
    invariants' to judge (:func:`check_rate_invariants`: more than one day ahead fails) and the
    plausibility check's to mark (tomorrow), as for any source (docs/decisions.md#plausibility).
    """
    match = _LABEL.fullmatch(label) if isinstance(label, str) else None
    if match is None:
        raise SourceFormatError(f"{where}: label is not DD.Mon.YY")
    day, month_name, two_digits = match.groups()
    month = MONTHS.get(month_name)
    if month is None:
        raise SourceFormatError(f"{where}: unknown month {month_name!r}")
    latest = max(end, today_lima + timedelta(days=1))
    years = [y for y in range(start.year, latest.year + 1) if y % 100 == int(two_digits)]
    if not years:
        raise SourceFormatError(f"{where}: year '{two_digits}' is outside {start}..{latest}")
    try:
        fecha = date(years[0], month, int(day))
    except ValueError:
        raise InvariantError(f"{where}: date does not exist") from None
    if fecha < start or end < fecha <= today_lima:
        raise SourceFormatError(f"{where}: date {fecha} is outside the range {start}..{end}")
    return fecha


def _classify_no_data(days: list[ParsedRate | NoData]) -> tuple[ParsedRate | NoData, ...]:
    """Mark each ``n.d.`` date declared when a later date has a value, else leave it pending."""
    valued = [day.fecha_serie for day in days if isinstance(day, ParsedRate)]
    last_valued = max(valued, default=None)
    return tuple(
        dataclasses.replace(day, declared=True)
        if isinstance(day, NoData) and last_valued is not None and day.fecha_serie < last_valued
        else day
        for day in days
    )
