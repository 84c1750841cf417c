"""Pure rendering: registry records -> the exact JSON bytes the API serves.

This is where the spec's Spanish field names meet the code, in one place. Bodies are stored as
*prefixes*: a JSON object without its closing brace, so the gateway appends what only it knows
(the envelope; ``superseded_por`` from the published map) without re-encoding anything.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from datetime import date
from typing import Any

import orjson

from builder import business_days
from builder.registry.records import Annotation, Cotejo, Event, Observation

SCHEMA_VERSION = "1.0"
ITEM_TAIL = b',"superseded_por":'
GAP_CRITERION = (
    "Días hábiles (lunes a viernes, menos los feriados del Perú y los días no laborables "
    "declarados) entre la primera y la última fecha_serie válidas que no tienen observación "
    "válida. motivo: nd_fuente si la fuente declaró no tener dato, fallo si una captura de "
    "esa fecha esperada falló (fuente_no_disponible, invariante_fallida, cambio_formato, "
    "tunel_caido), sin_dato en otro caso."
)
FAILURE_TYPES = ("fuente_no_disponible", "invariante_fallida", "cambio_formato", "tunel_caido")


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def prefix_of(value: dict[str, Any]) -> bytes:
    """A JSON object's bytes without the closing brace."""
    encoded = _dumps(value)
    return encoded[:-1]


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
    return any(result == "discrepante" for result in last.values())


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


def splice_item(prefix: bytes, superseded_por: str | None) -> bytes:
    value = b"null" if superseded_por is None else b'"' + superseded_por.encode() + b'"'
    return prefix + value + b"}"


# -- month chunks and tree nodes -----------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Chunk:
    """The items of one month: dates ascending, their observation ids, item prefixes."""

    fechas: tuple[str, ...]
    ids: tuple[str, ...]
    prefixes: tuple[bytes, ...]

    def encode(self) -> bytes:
        offsets = [0]
        for prefix in self.prefixes:
            offsets.append(offsets[-1] + len(prefix))
        header = _dumps({"fechas": self.fechas, "ids": self.ids, "offsets": offsets})
        return header + b"\n" + b"".join(self.prefixes)

    @classmethod
    def decode(cls, data: bytes) -> Chunk:
        newline = data.index(b"\n")
        header = orjson.loads(data[:newline])
        base = newline + 1
        offsets = [base + offset for offset in header["offsets"]]
        prefixes = tuple([data[a:b] for a, b in itertools.pairwise(offsets)])
        return cls(tuple(header["fechas"]), tuple(header["ids"]), prefixes)

    def replaced(self, updates: dict[str, tuple[str, bytes] | None]) -> Chunk:
        """This chunk with some dates set to (id, prefix), or removed where the value is None."""
        entries = {f: (i, p) for f, i, p in zip(self.fechas, self.ids, self.prefixes, strict=True)}
        for fecha, value in updates.items():
            if value is None:
                entries.pop(fecha, None)
            else:
                entries[fecha] = value
        ordered = sorted(entries.items())
        return Chunk(
            tuple(f for f, _ in ordered),
            tuple(v[0] for _, v in ordered),
            tuple(v[1] for _, v in ordered),
        )

    def span(self, start: str, end: str) -> tuple[int, int]:
        """Index range of dates within [start, end]."""
        return bisect.bisect_left(self.fechas, start), bisect.bisect_right(self.fechas, end)


EMPTY_CHUNK = Chunk((), (), ())


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """An inner node: sorted keys (years or months), child hashes and item counts."""

    keys: tuple[str, ...]
    hashes: tuple[str, ...]
    counts: tuple[int, ...]

    def encode(self) -> bytes:
        return _dumps({"k": self.keys, "h": self.hashes, "n": self.counts})

    @classmethod
    def decode(cls, data: bytes) -> Node:
        value = orjson.loads(data)
        return cls(tuple(value["k"]), tuple(value["h"]), tuple(value["n"]))

    @property
    def total(self) -> int:
        return sum(self.counts)

    def child(self, key: str) -> tuple[str, int] | None:
        index = bisect.bisect_left(self.keys, key)
        if index < len(self.keys) and self.keys[index] == key:
            return self.hashes[index], self.counts[index]
        return None

    def replaced(self, key: str, child: tuple[str, int] | None) -> Node:
        entries = {k: (h, n) for k, h, n in zip(self.keys, self.hashes, self.counts, strict=True)}
        if child is None or child[1] == 0:
            entries.pop(key, None)
        else:
            entries[key] = child
        ordered = sorted(entries.items())
        return Node(
            tuple(k for k, _ in ordered),
            tuple(v[0] for _, v in ordered),
            tuple(v[1] for _, v in ordered),
        )


EMPTY_NODE = Node((), (), ())


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
        reason = "nd_fuente" if text in declared else "fallo" if text in failures else "sin_dato"
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
