"""The API's fixed words, defined once: currency, series, schema version, zone, the values of
every enumerated field, cache headers.

Every other module (builder, gateway, tokens, verifier) takes these names from here, so a
spelling the contract fixes has one place to audit.
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

CURRENCY = "USD"
CURRENCIES = (CURRENCY,)
SERIES = ("publicado", "cierre")
# Served from the first revision; ``cierre`` only from its ``fxev series publish`` revision.
ALWAYS_SERVED = ("publicado",)
SCHEMA_VERSION = "1.0"
LIMA = ZoneInfo("America/Lima")
# An id as the API writes and reads it (lower-cased first): a 36-character hyphenated UUID.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# The values of the API's enumerated fields (the OpenAPI document's ``enum`` lists), each named
# where code writes or tests it.
TAXAUTH_TXT, CENTRALBANK, IMPORTADO = FUENTES = ("taxauth_txt", "centralbank", "importado")
CAPTURED_SOURCES = (TAXAUTH_TXT, CENTRALBANK)  # the sources fxev fetches (importado is a file)
(
    FUENTE_NO_DISPONIBLE,
    INVARIANTE_FALLIDA,
    DISCREPANCIA,
    PLAUSIBILIDAD_BAJA,
    CAMBIO_FORMATO,
    TUNEL_CAIDO,
    BACKFILL_INCOMPLETO,
    DISCO,
    RELOJ_FUERA_DE_TOLERANCIA,
) = ALERT_TYPES = (
    "fuente_no_disponible",
    "invariante_fallida",
    "discrepancia",
    "plausibilidad_baja",
    "cambio_formato",
    "tunel_caido",
    "backfill_incompleto",
    "disco",
    "reloj_fuera_de_tolerancia",
)
ABIERTA, RECONOCIDA, RESUELTA = ALERT_STATES = ("abierta", "reconocida", "resuelta")
OPEN_ALERT_STATES = (ABIERTA, RECONOCIDA)
AL_DIA, ATRASADA = FRESHNESS_STATES = ("al_dia", "atrasada")  # freshness's ``estado``
SIN_DATO, FALLO, ND_FUENTE = GAP_REASONS = ("sin_dato", "fallo", "nd_fuente")  # a gap's ``motivo``
SINCRONIZADO, NO_SINCRONIZADO, NO_VERIFICADO = NTP_STATES = (
    "sincronizado",
    "no_sincronizado",
    "no_verificado",
)
OK, DISCREPANTE = COTEJO_RESULTS = ("ok", "discrepante")  # a cotejo's ``resultado``

# Event types that record a failed capture of an expected date (coverage's ``fallo``).
FAILURE_TYPES = (FUENTE_NO_DISPONIBLE, INVARIANTE_FALLIDA, CAMBIO_FORMATO, TUNEL_CAIDO)

# Cache headers: as-of answers and evidence are immutable; everything else is no-store.
NO_STORE = "no-store"
IMMUTABLE = "private, max-age=31536000, immutable"
CDN_IMMUTABLE = "max-age=31536000"
# The transparency log is public (DECISIONS 13): tiles and entry bundles never change, the
# checkpoint moves with each build, the verifier key seldom.
PUBLIC_IMMUTABLE = "public, max-age=31536000, immutable"
LOG_CHECKPOINT_CACHE = "public, max-age=5"
LOG_KEY_CACHE = "public, max-age=300"


def cache_tag(moneda: str, serie: str, year: int | str) -> str:
    """The ``Cache-Tag`` of one year of a series: an as-of page carries one for each year it
    covers, and a build lists the ones a correction invalidated (DECISIONS 5)."""
    return f"{moneda}/{serie}/{year}"
