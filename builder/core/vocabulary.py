"""The API's fixed words, defined once: currency, series, schema version, zone, cache headers.

Every other module (builder, gateway, tokens, verifier) takes these names from here, so a
spelling the contract fixes has one place to audit.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

CURRENCY = "USD"
CURRENCIES = (CURRENCY,)
SERIES = ("publicado", "cierre")
# Served from the first revision; ``cierre`` only from its ``fxev series publish`` revision.
ALWAYS_SERVED = ("publicado",)
SCHEMA_VERSION = "1.0"
LIMA = ZoneInfo("America/Lima")

# Event types that record a failed capture of an expected date (coverage's ``fallo``).
FAILURE_TYPES = ("fuente_no_disponible", "invariante_fallida", "cambio_formato", "tunel_caido")

# Cache headers: as-of answers and evidence are immutable; everything else is no-store.
NO_STORE = "no-store"
IMMUTABLE = "private, max-age=31536000, immutable"
CDN_IMMUTABLE = "max-age=31536000"


def cache_tag(moneda: str, serie: str, year: int | str) -> str:
    """The ``Cache-Tag`` of one year of a series: an as-of page carries one for each year it
    covers, and a build lists the ones a correction invalidated (DECISIONS 5)."""
    return f"{moneda}/{serie}/{year}"
