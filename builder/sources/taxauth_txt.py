"""Parser of the tax authority's exchange-rate text file: one line ``DD/MM/YYYY|compra|venta|``.

Surrounding white space and line ends are accepted; anything else that departs from the
documented shape is a format change. Values carry 1 to 3 decimals (trailing zeros may be
dropped); a fourth decimal is a format change, not something to round.
"""

from __future__ import annotations

import re
from datetime import date

from builder.core.vocabulary import TAXAUTH_TXT
from builder.sources.common import (
    InvariantError,
    ParsedRate,
    SourceFormatError,
    check_rate_invariants,
)

FUENTE = TAXAUTH_TXT
SERIE = "publicado"
PARSER_VERSION = "taxauth_txt-1.0"

_DATE = re.compile(r"([0-9]{2})/([0-9]{2})/([0-9]{4})")
_VALUE = re.compile(r"-?[0-9]+\.([0-9]+)")
_WHITE_SPACE = " \t\r\n\f\v"  # ASCII white space and line ends (str.strip would take \x1c-\x1f too)


def parse_taxauth_txt(body: bytes, today_lima: date) -> ParsedRate:
    """Parse the file's bytes; raise ``SourceFormatError`` or ``InvariantError``."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise SourceFormatError("body is not ASCII text (wrong encoding)") from None
    line = text.strip(_WHITE_SPACE)
    if not line:
        raise SourceFormatError("body is empty")
    if "<" in line or ">" in line:
        raise SourceFormatError("body looks like an HTML page, not the text file")
    if "\n" in line or "\r" in line:
        raise SourceFormatError("body has more than one line")
    if "|" not in line:
        raise SourceFormatError("no '|' separator in the line")
    fields = line.split("|")
    if len(fields) != 4 or fields[3] != "":
        raise SourceFormatError(
            f"expected 'fecha|compra|venta|' (3 fields and a trailing '|'), got {len(fields)} parts"
        )
    raw_date, compra, venta = fields[0], fields[1], fields[2]
    if not _DATE.fullmatch(raw_date):
        raise SourceFormatError(f"date {raw_date!r} is not DD/MM/YYYY")
    for side, raw in (("compra", compra), ("venta", venta)):
        match = _VALUE.fullmatch(raw)
        if not match:
            raise SourceFormatError(f"{side} {raw!r} is not a decimal number with a '.'")
        if len(match.group(1)) > 3:
            raise SourceFormatError(f"{side} {raw!r} has more than 3 decimals")
    day, month, year = (int(part) for part in _DATE.fullmatch(raw_date).groups())
    try:
        fecha = date(year, month, day)
    except ValueError:
        raise InvariantError(f"date {raw_date!r} does not exist") from None
    rate = ParsedRate(fecha_serie=fecha, compra_cruda=compra, venta_cruda=venta, fragmento=line)
    check_rate_invariants(rate, today_lima)
    return rate
