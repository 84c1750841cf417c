"""Typed rows of the registry. One frozen dataclass per table; field names are column names."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

JsonDict = dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Revision:
    revision: int
    ts_commit: str
    kind: str
    summary: JsonDict
    prev_hash: str
    hash: str


@dataclasses.dataclass(frozen=True, slots=True)
class Execution:
    id: str
    revision: int
    kind: str
    fuente: str | None
    started_at: str
    outcome: str
    detalle: JsonDict


@dataclasses.dataclass(frozen=True, slots=True)
class Evidence:
    id: str
    revision: int
    ejecucion_id: str
    sha256: str
    size: int
    content_type: str
    http_status: int | None
    http_reason: str | None
    headers: list[list[str]]
    identidad_consulta: str
    capturado_en: str
    truncated: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Observation:
    id: str
    revision_creada: int
    moneda: str
    serie: str
    fecha_serie: str
    compra: str
    venta: str
    compra_cruda: str
    venta_cruda: str
    fuente: str
    identidad_consulta: str
    fragmento: str
    version_parser: str
    capturado_en: str
    ejecucion_id: str
    evidencia_id: str
    supersedes: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    id: str
    revision: int
    seq: int
    tipo: str
    ts: str
    ejecucion_id: str
    evidencia_id: str | None
    observacion_id: str | None
    fuente: str
    moneda: str
    serie: str
    fecha_serie: str | None
    detalle: JsonDict


@dataclasses.dataclass(frozen=True, slots=True)
class Cotejo:
    id: str
    revision: int
    seq: int
    observacion_id: str
    contraparte: str
    contraparte_observacion_id: str
    contraparte_fecha: str
    resultado: str
    regla: str


@dataclasses.dataclass(frozen=True, slots=True)
class Annotation:
    id: str
    revision: int
    fecha: str
    moneda: str
    serie: str | None
    texto: str
    compra: str | None
    venta: str | None
    actor: str
    justificacion: str
    ts: str


@dataclasses.dataclass(frozen=True, slots=True)
class ManifestEntry:
    id: str
    revision: int
    fuente: str
    moneda: str
    serie: str
    fecha: str
    estado: str
    ejecucion_id: str
    evidencia_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class SeriesSwitch:
    id: str
    revision: int
    moneda: str
    serie: str
    estado: str
    actor: str
    justificacion: str
    ts: str


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """How one record type is stored: its table, the column holding its revision, JSON columns."""

    name: str
    record: type
    revision_column: str = "revision"
    json_columns: frozenset[str] = frozenset()
    bool_columns: frozenset[str] = frozenset()


# Every table whose rows a revision writes, in the fixed order the hash chain encodes them.
DATA_TABLES: tuple[Table, ...] = (
    Table("executions", Execution, json_columns=frozenset({"detalle"})),
    Table(
        "evidence",
        Evidence,
        json_columns=frozenset({"headers"}),
        bool_columns=frozenset({"truncated"}),
    ),
    Table("observations", Observation, revision_column="revision_creada"),
    Table("events", Event, json_columns=frozenset({"detalle"})),
    Table("cotejos", Cotejo),
    Table("annotations", Annotation),
    Table("manifest_entries", ManifestEntry),
    Table("series_switches", SeriesSwitch),
)
TABLE_OF: dict[type, Table] = {table.record: table for table in DATA_TABLES}


def canonical_json(value: Any) -> str:
    """The one JSON encoding stored in the registry and hashed by the chain."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def to_row(record: Any) -> dict[str, Any]:
    """A record as the column values stored in SQLite."""
    table = TABLE_OF[type(record)]
    row = {}
    for field in dataclasses.fields(record):
        value = getattr(record, field.name)
        if field.name in table.json_columns:
            value = canonical_json(value)
        elif field.name in table.bool_columns:
            value = int(value)
        row[field.name] = value
    return row


def from_row(table: Table, row: Any) -> Any:
    """Rebuild a record from a ``sqlite3.Row``."""
    values = {}
    for field in dataclasses.fields(table.record):
        value = row[field.name]
        if field.name in table.json_columns:
            value = orjson.loads(value)
        elif field.name in table.bool_columns:
            value = bool(value)
        values[field.name] = value
    return table.record(**values)
