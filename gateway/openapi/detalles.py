"""The ``detalle`` of every event and alert type: what the write side records, field by field.

Events are written by ``builder/capture/record.py`` (captures, corrections, plausibility) and
``builder/capture/importer.py`` (imports); alerts by ``builder/capture/alerting.py`` (source
failures, discrepancies, plausibility, incomplete backfills, all derived from the registry) and
``builder/ops/health.py`` (disk, clock).
The types the schemas give are those the writers put in the JSON (the CSV line of an import is a
number, a clock offset a float). Objects stay open like the rest of the document.
"""

from __future__ import annotations

from builder.core.vocabulary import (
    BACKFILL_INCOMPLETO,
    CAMBIO_FORMATO,
    DISCO,
    DISCREPANCIA,
    FUENTE_NO_DISPONIBLE,
    INVARIANTE_FALLIDA,
    PLAUSIBILIDAD_BAJA,
    RELOJ_FUERA_DE_TOLERANCIA,
    SERIES,
    TUNEL_CAIDO,
)
from gateway.openapi.json_schema import (
    SHA256,
    Schema,
    array,
    date,
    integer,
    nullable,
    obj,
    ref,
    text,
    uuid,
    value,
)

PCT = "^[0-9]+\\.[0-9]{2}$"
# builder/capture/plausibility.py: each reason is an object whose fields depend on its motivo.
MOTIVES: dict[str, dict[str, Schema]] = {
    "movimiento": {
        "lado": text("The side that moved.", enum=["compra", "venta"]),
        "variacion_pct": text("The move in percent, 2 decimals.", pattern=PCT),
        "umbral_pct": text("The threshold in percent, as configured."),
        "referencia_observacion_id": uuid("The previous valid observation."),
        "referencia_fecha_serie": date("Its fecha_serie."),
        "referencia_valor": value("Its value on the same side."),
    },
    "compra_mayor_que_venta": {
        "compra": value("The buy value, above the sell value."),
        "venta": value("The sell value."),
    },
    "fecha_futura": {"hoy_lima": date("Today in Lima at capture; fecha_serie is tomorrow.")},
}
MOTIVO: Schema = obj(
    {
        "motivo": text(
            "movimiento: a side moved more than the threshold against the previous valid "
            "observation; compra_mayor_que_venta; fecha_futura: fecha_serie is tomorrow in Lima.",
            enum=list(MOTIVES),
        )
    }
    | {name: field for fields in MOTIVES.values() for name, field in fields.items()},
    "One reason the values look implausible; which fields it has depends on motivo.",
    optional=tuple(name for fields in MOTIVES.values() for name in fields),
)
MOTIVO["allOf"] = [
    {
        "if": {"properties": {"motivo": {"const": motivo}}},
        "then": {"properties": fields, "required": list(fields)},
    }
    for motivo, fields in MOTIVES.items()
]

EVENT_DETALLE: dict[str, Schema] = {
    "capturada": obj(
        {
            "compra": value("Canonical buy value captured."),
            "venta": value("Canonical sell value captured."),
            "sha256": text("SHA-256 of the captured bytes.", pattern=SHA256),
        }
    ),
    "recaptura_identica": obj(
        {"sha256": text("SHA-256 of the new capture's bytes.", pattern=SHA256)}
    ),
    "correccion": obj(
        {
            "supersede": uuid("The observation this one corrects."),
            "anterior": obj(
                {"compra": value("Previous buy."), "venta": value("Previous sell.")},
                "The corrected values; absent when an import corrects an earlier import.",
            ),
        },
        optional=("anterior",),
    ),
    "supersedida": obj({"superseded_por": uuid("The direct successor.")}),
    PLAUSIBILIDAD_BAJA: obj(
        {"motivos": array(ref("MotivoPlausibilidad"), "Every reason found, at least one.")},
    ),
    "importada": obj(
        {
            "actor": text("Who imported the file."),
            "justificacion": text("Where the imported values came from."),
            "linea": integer("Number of the CSV line the values come from (1: the header).", 2),
            "sha256": text("SHA-256 of the CSV file.", pattern=SHA256),
        }
    ),
}

SIDE: Schema = obj(
    {
        "observacion_id": uuid(),
        "fecha_serie": date(),
        "compra": value("Its buy value."),
        "venta": value("Its sell value."),
    }
)
# Every source failure has the same detail (builder/capture/alerting.py).
SOURCE_FAILURE: Schema = obj(
    {
        "ejecucion_id": uuid("The failed run."),
        "evidencia_id": nullable(
            uuid("What arrived (zero bytes when nothing did); null for a run expecting no date.")
        ),
        "fecha_esperada": array(date(), "The dates the failed run expected."),
        "mensaje": text("What went wrong, for people."),
        "revision": integer("Revision recording the failure.", minimum=1),
    }
)

ALERT_DETALLE: dict[str, Schema] = {
    FUENTE_NO_DISPONIBLE: SOURCE_FAILURE,
    INVARIANTE_FALLIDA: SOURCE_FAILURE,
    CAMBIO_FORMATO: SOURCE_FAILURE,
    TUNEL_CAIDO: SOURCE_FAILURE,
    DISCREPANCIA: obj(
        {
            "revision": integer("Revision of the discrepant cross-check.", minimum=1),
            "publicado": SIDE,
            "cierre": SIDE,
        }
    ),
    PLAUSIBILIDAD_BAJA: obj(
        {
            "observacion_id": uuid("The implausible observation."),
            "revision": integer("Revision that recorded it.", minimum=1),
            "motivos": array(ref("MotivoPlausibilidad"), "Every reason found."),
        }
    ),
    BACKFILL_INCOMPLETO: obj(
        {
            "mensaje": text("What is missing, for people."),
            "serie": nullable(text("null when the run recorded no event.", enum=[*SERIES, None])),
            "fechas": array(date(), "Every date listed missing since the alert opened."),
            "faltantes": array(date(), "The dates the latest backfill found missing."),
            "desde": date("First date the latest backfill asked for."),
            "hasta": date("Last date it asked for."),
            "revision": integer("Revision of the latest backfill.", minimum=1),
            "ejecucion_id": uuid("The latest backfill's run."),
        }
    ),
    DISCO: obj(
        {
            "ruta": text("FXEV_HOME."),
            "libres": integer("Free bytes measured."),
            "minimo": integer("FXEV_MIN_FREE_BYTES."),
        }
    ),
    RELOJ_FUERA_DE_TOLERANCIA: obj(
        {
            "desfase_s": {
                "type": "number",
                "description": "Seconds our clock is ahead of the source's Date (negative: "
                "behind), 3 decimals.",
            },
            "tolerancia_s": {"type": "number", "description": "FXEV_CLOCK_TOLERANCE_S."},
            "date_fuente": text("The source's Date header, ISO-8601.", format="date-time"),
        }
    ),
}


def by_tipo(details: dict[str, Schema], prefix: str) -> list[Schema]:
    """``allOf`` members: when ``tipo`` is one of ``details``, ``detalle`` is its schema."""
    return [
        {
            "if": {"properties": {"tipo": {"const": tipo}}},
            "then": {"properties": {"detalle": ref(prefix + tipo)}},
        }
        for tipo in details
    ]
