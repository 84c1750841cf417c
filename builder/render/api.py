"""Pure rendering: registry records -> the exact JSON bytes the API serves.

This is where the spec's Spanish field names meet the code, in one place. Bodies are stored as
*prefixes*: a JSON object without its closing brace, so the gateway appends what only it knows
(the envelope; ``superseded_por`` from the published map) without re-encoding anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

from builder.core import business_days
from builder.core.vocabulary import DISCREPANTE, FALLO, ND_FUENTE, SIN_DATO
from builder.core.wire import ITEM_TAIL, prefix_of
from builder.registry.records import Annotation, Cotejo, Event, Observation

GAP_CRITERION = (
    "Días hábiles (lunes a viernes, menos los feriados del Perú y los días no laborables "
    "declarados) entre la primera y la última fecha_serie válidas que no tienen observación "
    "válida. motivo: nd_fuente si la fuente declaró no tener dato, fallo si una captura de "
    "esa fecha esperada falló (fuente_no_disponible, invariante_fallida, cambio_formato, "
    "tunel_caido), sin_dato en otro caso."
)


# -- rate items -----------------------------------------------------------------------------


def marcas(events: Iterable[Event]) -> list[str]:
    """Distinct event types in order of first occurrence."""
    return list(dict.fromkeys(event.tipo for event in events))


def cotejo_entry(cotejo: Cotejo) -> dict[str, Any]:
    return {
        "contraparte": cotejo.contraparte,
        "resultado": cotejo.resultado,
        "regla": cotejo.regla,
        "revision": cotejo.revision,
        "contraparte_observacion_id": cotejo.contraparte_observacion_id,
        "contraparte_fecha": cotejo.contraparte_fecha,
    }


def open_discrepancy(cotejos: Sequence[Cotejo]) -> bool:
    """A ``discrepante`` later than the last ``ok`` against the same counterpart (and date)."""
    last: dict[tuple[str, str], str] = {}
    for cotejo in sorted(cotejos, key=lambda c: (c.revision, c.seq)):
        last[(cotejo.contraparte, cotejo.contraparte_fecha)] = cotejo.resultado
    return any(result == DISCREPANTE for result in last.values())


def item_prefix(
    observation: Observation, events: Sequence[Event], cotejos: Sequence[Cotejo]
) -> bytes:
    """A rate item up to ``"superseded_por":``; the gateway splices the value and ``}``."""
    item = {
        "fecha_serie": observation.fecha_serie,
        "compra": observation.compra,
        "venta": observation.venta,
        "fuente": observation.fuente,
        "cotejos": [cotejo_entry(c) for c in cotejos],
        "tiene_discrepancia_abierta": open_discrepancy(cotejos),
        "marcas": marcas(events),
        "observacion_id": observation.id,
        "capturado_en": observation.capturado_en,
        "superseded": False,
    }
    return prefix_of(item) + ITEM_TAIL


# -- observation detail and records --------------------------------------------------------


def observation_record(observation: Observation) -> dict[str, Any]:
    return {
        "id": observation.id,
        "moneda": observation.moneda,
        "serie": observation.serie,
        "fecha_serie": observation.fecha_serie,
        "compra": observation.compra,
        "venta": observation.venta,
        "compra_cruda": observation.compra_cruda,
        "venta_cruda": observation.venta_cruda,
        "fuente": observation.fuente,
        "identidad_consulta": observation.identidad_consulta,
        "fragmento": observation.fragmento,
        "version_parser": observation.version_parser,
        "capturado_en": observation.capturado_en,
        "ejecucion_id": observation.ejecucion_id,
        "evidencia_id": observation.evidencia_id,
        "revision_creada": observation.revision_creada,
    }


def event_record(event: Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "tipo": event.tipo,
        "ts": event.ts,
        "revision": event.revision,
        "ejecucion_id": event.ejecucion_id,
        "evidencia_id": event.evidencia_id,
        "detalle": event.detalle,
    }


def detail_prefix(
    observation: Observation,
    ancestors: Sequence[Observation],
    successors: Sequence[Observation],
    events: Sequence[Event],
    cotejos: Sequence[Cotejo],
) -> bytes:
    """``/v1/observations/{id}`` without the envelope and closing brace."""
    return prefix_of(
        {
            "observacion": observation_record(observation),
            "cadena": {
                "ancestros": [observation_record(o) for o in ancestors],
                "sucesoras": [observation_record(o) for o in successors],
            },
            "eventos": [event_record(e) for e in events],
            "cotejos": [cotejo_entry(c) | {"id": c.id} for c in cotejos],
            "superseded": bool(successors),
        }
    )


def annotation_record(annotation: Annotation) -> dict[str, Any]:
    return {
        "id": annotation.id,
        "fecha": annotation.fecha,
        "moneda": annotation.moneda,
        "serie": annotation.serie,
        "texto": annotation.texto,
        "compra": annotation.compra,
        "venta": annotation.venta,
        "actor": annotation.actor,
        "justificacion": annotation.justificacion,
        "revision": annotation.revision,
        "ts": annotation.ts,
    }


# -- coverage -------------------------------------------------------------------------------


def coverage_entry(
    moneda: str,
    serie: str,
    fechas: Sequence[str],
    failure_dates: Iterable[str],
    nd_dates: Iterable[str],
) -> dict[str, Any] | None:
    """One series' coverage from its valid dates; None when it has no data."""
    if not fechas:
        return None
    present = set(fechas)
    failures, declared = set(failure_dates), set(nd_dates)
    first, last = min(present), max(present)
    gaps = []
    for day in business_days.business_days_between(
        date.fromisoformat(first), date.fromisoformat(last)
    ):
        text = day.isoformat()
        if text in present:
            continue
        reason = ND_FUENTE if text in declared else FALLO if text in failures else SIN_DATO
        gaps.append({"fecha": text, "motivo": reason})
    return {
        "moneda": moneda,
        "serie": serie,
        "primera": first,
        "ultima": last,
        "total_fechas": len(present),
        "huecos": gaps,
        "criterio_huecos": GAP_CRITERION,
    }
