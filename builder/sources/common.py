"""What every source parser shares: its two failure kinds and the invariants of a rate.

A parser raises ``SourceFormatError`` when the bytes are not in the shape it knows (the source
changed its format: alert ``cambio_formato``) and ``InvariantError`` when they are well formed but
say something no exchange rate can be (alert ``invariante_fallida``).
"""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from decimal import Decimal

from builder.core.canonical import canonical_rate
from builder.core.vocabulary import CAMBIO_FORMATO, INVARIANTE_FALLIDA

# A USD/PEN rate outside this open interval is not a misprint to keep but a broken value (a
# shifted decimal point, another currency's figure). The sol has traded between about 0.8 and
# 4.1 to the dollar since it replaced the inti in 1991; a historical import stays inside.
MIN_PLAUSIBLE_RATE = Decimal("0.5")
MAX_PLAUSIBLE_RATE = Decimal("20")


class SourceFormatError(ValueError):
    """The payload is not in the format the parser knows."""

    alert_type = CAMBIO_FORMATO


class InvariantError(ValueError):
    """The payload is well formed but cannot be an exchange rate."""

    alert_type = INVARIANTE_FALLIDA


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedRate:
    """One date's values as a source published them, with their canonical form."""

    fecha_serie: date
    compra_cruda: str
    venta_cruda: str
    fragmento: str

    @property
    def compra(self) -> str:
        return canonical_rate(self.compra_cruda)

    @property
    def venta(self) -> str:
        return canonical_rate(self.venta_cruda)


def check_rate_invariants(rate: ParsedRate, today_lima: date) -> None:
    """Raise ``InvariantError`` when ``rate`` cannot be a USD/PEN exchange rate."""
    for side, raw in (("compra", rate.compra_cruda), ("venta", rate.venta_cruda)):
        # Both the text as published and the 3-decimal value served: 0.0004 is positive but
        # would be served as 0.000, and 19.9996 as 20.000.
        value, served = Decimal(raw), Decimal(canonical_rate(raw))
        shown = raw if value == served else f"{raw} (served as {served})"
        if min(value, served) <= 0:
            raise InvariantError(f"{side} {shown} is not positive")
        if min(value, served) <= MIN_PLAUSIBLE_RATE or max(value, served) >= MAX_PLAUSIBLE_RATE:
            raise InvariantError(f"{side} {shown} is an absurd magnitude for USD/PEN")
    if rate.fecha_serie > today_lima + timedelta(days=1):
        raise InvariantError(
            f"fecha_serie {rate.fecha_serie} is more than one day after today in Lima "
            f"({today_lima})"
        )


def content_type_of(body: bytes) -> str:
    """The content type a saved answer's bytes show: JSON, an HTML page, or unknown bytes."""
    start = body.lstrip(b" \t\r\n")[:1]
    if start in (b"[", b"{"):
        return "application/json"
    if start == b"<":
        return "text/html"
    return "application/octet-stream"
