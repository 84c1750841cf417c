"""The JSON Schemas of the OpenAPI document: every body the API sends (docs/api.md).

Pure data, built once. Field names are the spec's Spanish names; ``required`` lists every field a
body always carries, and nullable fields say so (``["string", "null"]``). Objects stay open to
added fields (docs/decisions.md#field-additions), so a client must ignore a field it does
not know; the contract suite closes them to check that nothing undocumented is sent.
"""

from __future__ import annotations

from builder.core.vocabulary import (
    ALERT_STATES,
    ALERT_TYPES,
    COTEJO_RESULTS,
    CURRENCIES,
    FRESHNESS_STATES,
    FUENTES,
    GAP_REASONS,
    LIMA,
    NTP_STATES,
    SCHEMA_VERSION,
    SERIES,
)
from gateway.openapi.detalles import ALERT_DETALLE, EVENT_DETALLE, MOTIVO, by_tipo
from gateway.openapi.json_schema import (
    Schema,
    array,
    date,
    integer,
    nullable,
    obj,
    ref,
    text,
    timestamp,
    uuid,
    value,
)

ERROR_CODES = (
    "INVALID_PARAMS",
    "UNAUTHORIZED",
    "UNSUPPORTED_CURRENCY",
    "UNSUPPORTED_SERIES",
    "NO_OBSERVATIONS",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "REQUEST_TIMEOUT",
    "RATE_LIMITED",
    "INTERNAL",
)


ENVELOPE: dict[str, Schema] = {
    "dataset_revision": integer(
        "Revision of the dataset the response was answered at (for an as_of_revision query, "
        "that revision).",
        minimum=1,
    ),
    "request_id": uuid(
        "Unique id of the request: the X-Request-Id, except on as-of answers, where it is a "
        "name-based UUID5 of the canonical request."
    ),
    "schema_version": {
        "type": "string",
        "const": SCHEMA_VERSION,
        "description": "Response schema version.",
    },
}


def enveloped(
    properties: dict[str, Schema], description: str, optional: tuple[str, ...] = ()
) -> Schema:
    """A body with the common envelope after its own fields."""
    return obj(properties | ENVELOPE, description, optional)


COTEJO: dict[str, Schema] = {
    "contraparte": text("The counterpart's fuente.", enum=list(FUENTES)),
    "resultado": text(
        "ok or discrepante; the service never picks a winner.", enum=list(COTEJO_RESULTS)
    ),
    "regla": text("The cross-check rule, in words a person can check."),
    "revision": integer("Revision at which the cross-check was written.", minimum=1),
    "contraparte_observacion_id": uuid("The counterpart observation."),
    "contraparte_fecha": date("The counterpart's fecha_serie."),
}

RATE_ITEM: dict[str, Schema] = {
    "fecha_serie": date(
        "Date the value corresponds to according to the source, not the capture date."
    ),
    "compra": value("Canonical buy value as text."),
    "venta": value("Canonical sell value as text."),
    "fuente": text(
        "taxauth_txt (the tax authority's text file), centralbank (closing series) or importado "
        "(human import: only fills dates with no direct observation, never replaces one).",
        enum=list(FUENTES),
    ),
    "cotejos": array(
        ref("Cotejo"), "Cross-checks against another source; empty: no counterpart to check yet."
    ),
    "tiene_discrepancia_abierta": {
        "type": "boolean",
        "description": "true when a discrepante cross-check is later than the last ok against "
        "the same counterpart (same contraparte and counterpart date).",
    },
    "marcas": array(
        text(),
        "Distinct event types of the observation as of the queried revision, in order of first "
        "occurrence (capturada, recaptura_identica, plausibilidad_baja, ...).",
    ),
    "observacion_id": uuid("The immutable observation backing the value; keep it with the value."),
    "capturado_en": timestamp("Instant the service observed the source."),
    "superseded": {
        "type": "boolean",
        "const": False,
        "description": "Always false in a served item: at the queried revision it is the "
        "valid one.",
    },
    "superseded_por": nullable(
        uuid(
            "The observation that corrected this one as of the latest revision of the dataset, "
            "or null: on a historical revision it shows whether a correction exists today."
        )
    ),
}

OBSERVACION: dict[str, Schema] = {
    "id": uuid("Observation id."),
    "moneda": text("Currency.", enum=list(CURRENCIES)),
    "serie": text(enum=list(SERIES)),
    "fecha_serie": date("As in the rate item."),
    "compra": value("Canonical buy value."),
    "venta": value("Canonical sell value."),
    "compra_cruda": text("Buy value as the source published it."),
    "venta_cruda": text("Sell value as the source published it."),
    "fuente": text("Source identifier.", enum=list(FUENTES)),
    "identidad_consulta": text("What was queried: <HTTP method> <source URL> (IMPORT <file>)."),
    "fragmento": text("Exact portion of the payload the value was parsed from."),
    "version_parser": text("<parser_name>-<version>."),
    "capturado_en": timestamp("Capture instant."),
    "ejecucion_id": uuid("The run that captured it."),
    "evidencia_id": uuid("The raw bytes, served at /v1/evidence/{ev_id}."),
    "revision_creada": integer("Revision at which the observation was created.", minimum=1),
}

EVENTO: Schema = obj(
    {
        "id": uuid(),
        "tipo": text(
            "Event type: capturada, recaptura_identica, correccion, supersedida, "
            "plausibilidad_baja or importada; a client ignores a type it does not know."
        ),
        "ts": timestamp(),
        "revision": integer(minimum=1),
        "ejecucion_id": uuid(),
        "evidencia_id": nullable(uuid()),
        "detalle": {
            "type": "object",
            "description": "Contents depend on tipo: DetalleEvento_<tipo>.",
        },
    },
    "A recorded fact about an observation, with its own revision.",
)
EVENTO["allOf"] = by_tipo(EVENT_DETALLE, "DetalleEvento_")

ALERT: Schema = obj(
    {
        "id": uuid(),
        "tipo": text(enum=list(ALERT_TYPES)),
        "estado": text("Lifecycle state.", enum=list(ALERT_STATES)),
        "condicion": text("De-duplication key: type + source (+ fecha_serie for data alerts)."),
        "fuente": nullable(text()),
        "fecha_serie": nullable(date()),
        "contador": integer("How many times the condition occurred while open.", minimum=1),
        "primera_vez": timestamp(),
        "ultima_vez": timestamp("Last occurrence."),
        "detalle": {
            "type": "object",
            "description": "Contents depend on tipo: DetalleAlerta_<tipo>.",
        },
        "reconocida_por": nullable(text()),
        "reconocida_en": nullable(timestamp()),
        "resuelta_por": nullable(text("An operator, or sistema.")),
        "resuelta_en": nullable(timestamp()),
    },
    "An operational incident. The same condition does not open a duplicate: it updates contador "
    "and ultima_vez.",
)
ALERT["allOf"] = by_tipo(ALERT_DETALLE, "DetalleAlerta_")

ANNOTATION: Schema = obj(
    {
        "id": uuid(),
        "fecha": date(),
        "moneda": text(enum=list(CURRENCIES)),
        "serie": nullable(text("null: every series.", enum=[*SERIES, None])),
        "texto": text(),
        "compra": nullable(value("Annotated buy value, or null.")),
        "venta": nullable(value("Annotated sell value, or null.")),
        "actor": text(),
        "justificacion": text(),
        "revision": integer(minimum=1),
        "ts": timestamp(),
    },
    "A human annotation: a parallel record, never part of an official series.",
)

FRESCURA: Schema = obj(
    {
        "estado": text(
            "al_dia when fecha_serie >= fecha_esperada, else atrasada.", enum=list(FRESHNESS_STATES)
        ),
        "n_dias_habiles": integer("Business days in (fecha_serie, fecha_esperada]."),
        "fecha_esperada": date(
            "publicado: today in Lima; cierre: the business day before the last business day on "
            "or before today (the close of D is published on D+1)."
        ),
        "hoy_lima": date("Reference date."),
        "zona": {"type": "string", "const": LIMA.key},
    }
)

VALIDATION_ERROR: Schema = obj(
    {
        "loc": array({"type": ["string", "integer"]}, '["path", "obs_id"] or ["path", "ev_id"].'),
        "msg": text(),
        "type": text("uuid_parsing for a malformed path id."),
        "input": {"description": "The value received."},
        "ctx": {"type": "object"},
    },
    optional=("input", "ctx"),
)

ERROR: Schema = obj(
    {
        "code": text("Stable code.", enum=list(ERROR_CODES)),
        "message": text("For people; INTERNAL never carries detail."),
        "request_id": uuid("Equal to the X-Request-Id header."),
        "retryable": {"type": "boolean"},
    },
    "The error body of every error but the 422.",
)

SCHEMAS: dict[str, Schema] = {
    "RateItem": obj(RATE_ITEM, "A valid observation of a series, as of the queried revision."),
    "Cotejo": obj(COTEJO, "A cross-check against an observation of another source."),
    "CotejoDeObservacion": obj(
        COTEJO | {"id": uuid("Cross-check id.")}, "A cross-check of an observation."
    ),
    "Frescura": FRESCURA,
    "Observacion": obj(OBSERVACION, "The full, immutable record of an observation."),
    "Evento": EVENTO,
    **{f"DetalleEvento_{tipo}": schema for tipo, schema in EVENT_DETALLE.items()},
    "MotivoPlausibilidad": MOTIVO,
    "Annotation": ANNOTATION,
    "Alert": ALERT,
    **{f"DetalleAlerta_{tipo}": schema for tipo, schema in ALERT_DETALLE.items()},
    "Error": ERROR,
    "ValidationError": VALIDATION_ERROR,
    "HTTPValidationError": obj({"detail": array(ref("ValidationError"))}),
    "RatesPage": enveloped(
        {
            "items": array(ref("RateItem"), "At most 366 per page, ascending fecha_serie."),
            "total": integer("Items of the whole range at the queried revision, not of the page."),
            "next_page_token": nullable(
                text("Send it back as page_token; null when there is no further page.")
            ),
            "annotations": array(
                ref("Annotation"),
                "Only with include_annotations=true: the annotations of the whole range, on "
                "every page.",
            ),
        },
        "A page of /v1/rates.",
        optional=("annotations",),
    ),
    "RateLatest": enveloped(
        RATE_ITEM | {"frescura": ref("Frescura")},
        "The most recent valid observation as a rate item, with frescura, at the top level.",
    ),
    "ObservationDetail": enveloped(
        {
            "observacion": ref("Observacion"),
            "cadena": obj(
                {
                    "ancestros": array(ref("Observacion"), "Oldest first."),
                    "sucesoras": array(ref("Observacion"), "Nearest first."),
                },
                "The supersession chain.",
            ),
            "eventos": array(ref("Evento")),
            "cotejos": array(ref("CotejoDeObservacion")),
            "superseded": {"type": "boolean", "description": "true once a successor exists."},
        },
        "An observation with its chain, events and cross-checks.",
    ),
    "AnnotationList": enveloped(
        {"items": array(ref("Annotation"), "By fecha, then revision."), "total": integer()},
        "Human annotations.",
    ),
    "AlertList": enveloped(
        {"items": array(ref("Alert"), "Newest ultima_vez first, then id."), "total": integer()},
        "Alerts.",
    ),
    "Coverage": enveloped(
        {
            "series": array(
                obj(
                    {
                        "moneda": text(),
                        "serie": text(enum=list(SERIES)),
                        "primera": date("First valid fecha_serie."),
                        "ultima": date("Last valid fecha_serie."),
                        "total_fechas": integer("Distinct valid fecha_serie of any fuente."),
                        "huecos": array(
                            obj(
                                {
                                    "fecha": date(),
                                    "motivo": text(enum=list(GAP_REASONS)),
                                }
                            ),
                            "Business days between primera and ultima without a value, ascending.",
                        ),
                        "criterio_huecos": text("The gap criterion, in words."),
                    }
                ),
                "One entry per served series with data.",
            )
        },
        "Coverage of the served series.",
    ),
    "HealthFreshness": enveloped(
        {
            "series": array(
                obj(
                    {
                        "moneda": text(),
                        "serie": text(enum=list(SERIES)),
                        "ultima_fecha_serie": date(),
                        "fecha_esperada": date(),
                        "edad_dias_habiles": integer(),
                    }
                )
            ),
            "alertas_abiertas": integer("The total of /v1/alerts?open=true."),
            "hoy_lima": date(),
            "ntp": text(
                "Server clock state; revision timestamps depend on it.",
                enum=list(NTP_STATES),
            ),
        },
        "Freshness of each served series, open alerts and clock state.",
    ),
    "RevisionAt": enveloped(
        {
            "revision": integer("Last published revision committed at or before at.", minimum=1),
            "ts_commit": timestamp("Commit instant of that revision."),
        },
        "dataset_revision is the published revision, not the resolved one.",
    ),
    "Live": obj({"status": {"type": "string", "const": "alive"}}),
    "Ready": obj({"status": {"type": "string", "const": "ready"}}),
}
