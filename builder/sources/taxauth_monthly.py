"""Parser of the tax authority's monthly history answer (``listarTipoCambio``), serie ``publicado``.

The tax authority's calendar page asks ``POST {ENDPOINT}`` with the JSON body
``{"anio": 2025, "mes": 10, "token": "..."}``, where ``mes`` counts from 0 (``mes=10`` is
November) and ``token`` is a reCAPTCHA token only a browser obtains
(docs/sources.md#monthly-history). The answer is a JSON array with two rows per date, buy (``C``)
and sell (``V``), every field a string::

    [{"fecPublica":"01/11/2025","valTipo":"3.372","codTipo":"C"},
     {"fecPublica":"01/11/2025","valTipo":"3.378","codTipo":"V"}, ...]

Dates with no publication are simply absent; there is no placeholder row. A missing or refused
token gets ``200`` with ``[]``, which looks like "no data" and is not: :func:`parse_monthly`
returns an empty answer and the caller records a failure.

:func:`parse_monthly` accepts exactly that shape and nothing looser. It raises
``SourceFormatError`` (``cambio_formato``) for a body that is not it: not UTF-8, an HTML page
(the firewall's "Request Rejected" page included), invalid JSON or anything after it, a top
level that is not an array, a row that is not an object with exactly the three keys, a field
that is not a string, a date that is not ``DD/MM/YYYY`` or lies outside the month asked, a
``codTipo`` other than ``C`` or ``V``, a value that is not a decimal with 1 to 3 decimals (the
tax authority's published precision; a fourth decimal is a format change, as in the text file),
a side given twice for one date, or a date with only one side. It raises ``InvariantError``
(``invariante_fallida``) for a well-formed date that cannot be a rate (impossible date, value
not positive or absurd, more than one day after today in Lima). The answer is one piece of
evidence: the first row that breaks a rule fails all of it, and the message names that row.

Rows may come in any order; dates come out ascending. A date's ``fragmento`` is the exact text
of its buy row, a comma, and the exact text of its sell row.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import date
from typing import Any

from builder.core.vocabulary import TAXAUTH_TXT
from builder.sources.common import (
    InvariantError,
    ParsedRate,
    SourceFormatError,
    check_rate_invariants,
)
from builder.sources.jsontext import answer_text, array_elements, expect_end, skip

FUENTE = TAXAUTH_TXT
SERIE = "publicado"
PARSER_VERSION = "taxauth_mensual-1.0"
# The JSON endpoint behind the calendar page (docs/sources.md#monthly-history); another host than
# the text file's.
ENDPOINT = "https://e-consulta.sunat.gob.pe/cl-at-ittipcam/tcS01Alias/listarTipoCambio"
SIDES = {"C": "compra", "V": "venta"}
# The HTML page the endpoint answers instead of JSON (its firewall): a marker in it, its name.
KNOWN_PAGES = {"Request Rejected": "the firewall's rejection page"}

_ROW_KEYS = {"fecPublica", "valTipo", "codTipo"}
_DATE = re.compile(r"([0-9]{2})/([0-9]{2})/([0-9]{4})")
_VALUE = re.compile(r"-?[0-9]+\.([0-9]+)")


@dataclasses.dataclass(frozen=True, slots=True)
class MonthlyAnswer:
    """Every date the answer gives, ascending; ``rows`` counts the array's elements."""

    rates: tuple[ParsedRate, ...]
    rows: int

    @property
    def empty(self) -> bool:
        """The answer is ``[]``: what a missing or refused token gets, never "no data"."""
        return self.rows == 0


def query_identity(url: str, year: int, month: int) -> str:
    """The ``identidad_consulta`` of the answer for ``month`` (1 to 12) of ``year``.

    The query string carries the body's fields as the endpoint receives them, ``mes`` counting
    from 0, without the token:

    >>> query_identity("https://taxauth.test/listarTipoCambio", 2025, 11)
    'POST https://taxauth.test/listarTipoCambio?anio=2025&mes=10'
    """
    if not 1 <= month <= 12:
        raise ValueError(f"month {month}: expected 1 to 12")
    return f"POST {url}?anio={year}&mes={month - 1}"


def parse_monthly(body: bytes, *, year: int, month: int, today_lima: date) -> MonthlyAnswer:
    """Parse the answer for ``month`` (1 to 12) of ``year``; see the module docstring.

    Raises ``SourceFormatError`` or ``InvariantError``.
    """
    text = answer_text(body, KNOWN_PAGES)
    elements, end = array_elements(text, skip(text, 0), "the answer", "row")
    expect_end(text, end, "JSON array")
    sides: dict[date, dict[str, tuple[str, str]]] = {}
    for position, (row, fragment) in enumerate(elements, 1):
        where = f"row {position}"
        fecha, side, value = _read_row(row, where, year, month)
        found = sides.setdefault(fecha, {})
        if side in found:
            raise SourceFormatError(f"{where}: {SIDES[side]} of {fecha} is given twice")
        found[side] = (value, fragment)
    rates = []
    for fecha in sorted(sides):
        found = sides[fecha]
        absent = [SIDES[side] for side in SIDES if side not in found]
        if absent:
            raise SourceFormatError(f"{fecha} has no {absent[0]} row")
        (compra, compra_text), (venta, venta_text) = found["C"], found["V"]
        rate = ParsedRate(fecha, compra, venta, f"{compra_text},{venta_text}")
        try:
            check_rate_invariants(rate, today_lima)
        except InvariantError as error:
            raise InvariantError(f"{fecha}: {error}") from None
        rates.append(rate)
    return MonthlyAnswer(rates=tuple(rates), rows=len(elements))


def _read_row(row: Any, where: str, year: int, month: int) -> tuple[date, str, str]:
    """A row's date, side (``C`` or ``V``) and raw value, checked for form."""
    if not isinstance(row, dict) or row.keys() != _ROW_KEYS:
        keys = sorted(row) if isinstance(row, dict) else type(row).__name__
        raise SourceFormatError(
            f"{where}: expected an object with 'fecPublica', 'valTipo' and 'codTipo', got {keys}"
        )
    for key in sorted(_ROW_KEYS):
        if not isinstance(row[key], str):
            raise SourceFormatError(f"{where}: {key} {row[key]!r} is not a string")
    raw_date, value, side = row["fecPublica"], row["valTipo"], row["codTipo"]
    if side not in SIDES:
        raise SourceFormatError(f"{where}: codTipo {side!r} is neither 'C' nor 'V'")
    match = _VALUE.fullmatch(value)
    if match is None:
        raise SourceFormatError(f"{where}: valTipo {value!r} is not a decimal number with a '.'")
    if len(match.group(1)) > 3:
        raise SourceFormatError(f"{where}: valTipo {value!r} has more than 3 decimals")
    parts = _DATE.fullmatch(raw_date)
    if parts is None:
        raise SourceFormatError(f"{where}: fecPublica {raw_date!r} is not DD/MM/YYYY")
    day, row_month, row_year = (int(part) for part in parts.groups())
    if (row_year, row_month) != (year, month):
        raise SourceFormatError(
            f"{where}: fecPublica {raw_date!r} is outside the month asked ({year}-{month:02d})"
        )
    try:
        fecha = date(row_year, row_month, day)
    except ValueError:
        raise InvariantError(f"{where}: fecPublica {raw_date!r} does not exist") from None
    return fecha, side, value
