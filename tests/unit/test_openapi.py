"""The OpenAPI document: valid 3.1, deterministic, and agreeing with the gateway and the snapshot.

The snapshot of every response's field set (``tests/fixtures/field_sets.json``) is what the API
really sends; every path in it must be described by the document's schema of that response.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator

from builder.capture.plausibility import plausibility_reasons
from builder.core.vocabulary import ALERT_TYPES
from builder.ops.health import check_clock, check_disk
from builder.registry.records import Observation
from builder.sources.import_csv import parse_import_csv
from gateway import app, errors, openapi
from gateway.api import pagetoken, params
from tests.contract.openapi_checks import closed

SNAPSHOT = orjson.loads((Path(__file__).parents[1] / "fixtures" / "field_sets.json").read_bytes())
DOC = openapi.DOCUMENT
PUBLISHED = 42
SECRET = b"k" * 32
RATES_QUERY = {"currency": "USD", "series": "publicado", "from": "2026-09-01", "to": "2026-09-30"}
SIGNED_PAGE_TOKEN = pagetoken.sign(
    SECRET, 5, params.rates_query(RATES_QUERY, PUBLISHED, SECRET).query_key, 366
)
# Response kind of the snapshot -> (path, status) of the document that describes it.
KINDS = {
    "alerts": ("/v1/alerts", "200"),
    "annotations": ("/v1/annotations", "200"),
    "annotations_listed": ("/v1/annotations", "200"),
    "coverage": ("/v1/coverage", "200"),
    "error": ("/v1/coverage", "401"),
    "health_freshness": ("/v1/health/freshness", "200"),
    "health_live": ("/v1/health/live", "200"),
    "health_ready": ("/v1/health/ready", "200"),
    "observation": ("/v1/observations/{obs_id}", "200"),
    "observation_cross_checked": ("/v1/observations/{obs_id}", "200"),
    "rates": ("/v1/rates", "200"),
    "rates_cross_checked": ("/v1/rates", "200"),
    "rates_latest": ("/v1/rates/latest", "200"),
    "rates_with_annotations": ("/v1/rates", "200"),
    "rates_annotated": ("/v1/rates", "200"),
    "revisions": ("/v1/revisions", "200"),
    "validation_error": ("/v1/evidence/{ev_id}", "422"),
}
HEADER_KINDS = {
    "fresh": ("/v1/coverage", "200"),
    "as_of": ("/v1/rates", "200"),
    "as_of_not_modified": ("/v1/rates", "304"),
    "evidence": ("/v1/evidence/{ev_id}", "200"),
    "unauthorized": ("/v1/coverage", "401"),
    "method_not_allowed": None,  # answered on any path by an undeclared method
}
# The type-dependent objects the snapshot lists per type (test_field_sets.py: OPAQUE).
OPAQUE = {"eventos[].detalle", "items[].detalle"}


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        *_, section, name = node["$ref"].split("/")
        node = DOC["components"][section][name]
    return node


def properties(schema: dict[str, Any]) -> dict[str, Any]:
    schema = resolve(schema)
    found = dict(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        found |= properties(part)
    return found


def schema_paths(schema: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """Every key path the schema describes, in the snapshot's notation (``a.b``, ``a[].b``)."""
    schema = resolve(schema)
    if schema.get("type") == "array" or "items" in schema:
        yield from schema_paths(schema["items"], prefix + "[]")
        return
    for name, child in properties(schema).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path
        if path not in OPAQUE:
            yield from schema_paths(child, path)


def response(path: str, status: str, method: str = "get") -> dict[str, Any]:
    return resolve(DOC["paths"][path][method]["responses"][status])


def body_schema(path: str, status: str) -> dict[str, Any]:
    return response(path, status)["content"]["application/json"]["schema"]


def test_document_is_valid_openapi_3_1() -> None:
    assert DOC["openapi"].startswith("3.1.")
    OpenAPIV31SpecValidator(DOC).validate()


def test_document_bytes_are_deterministic_and_carry_their_hash() -> None:
    assert orjson.dumps(openapi.build_document()) == openapi.BODY
    assert orjson.loads(openapi.BODY) == DOC
    assert hashlib.sha256(openapi.BODY).hexdigest() == openapi.SHA256


def test_every_route_is_described_with_get_and_head_and_nothing_else() -> None:
    routes = {re.sub(r"<(\w+):\w+>", r"{\1}", path) for path, _, _ in app.ROUTES}
    assert set(DOC["paths"]) == routes
    for path, item in DOC["paths"].items():
        assert set(item) == {"get", "head"}, path
        for method in ("get", "head"):
            assert "200" in item[method]["responses"], (path, method)
        for status, head in item["head"]["responses"].items():
            assert "content" not in resolve(head), (path, status)


def test_public_operations_are_exactly_the_routes_without_a_token() -> None:
    public = {path for path, _, needs_token in app.ROUTES if not needs_token}
    described = {path for path, item in DOC["paths"].items() if item["get"].get("security") == []}
    log = {"/v1/log/checkpoint", "/v1/log/key", "/v1/log/tile/{tile}", "/v1/log/rows/{revision}"}
    public = {re.sub(r"<(\w+):\w+>", r"{\1}", path) for path in public}
    assert described == public == {"/v1/health/live", "/v1/openapi.json"} | log
    assert DOC["security"] == [{"bearerAuth": []}]
    assert DOC["components"]["securitySchemes"]["bearerAuth"] == {
        **DOC["components"]["securitySchemes"]["bearerAuth"],
        "type": "http",
        "scheme": "bearer",
    }


@pytest.mark.parametrize("kind", sorted(SNAPSHOT["bodies"]))
def test_every_field_of_the_snapshot_is_described(kind: str) -> None:
    described = set(schema_paths(body_schema(*KINDS[kind])))
    missing = sorted(set(SNAPSHOT["bodies"][kind]) - described)
    assert not missing, f"{kind}: the OpenAPI schema does not describe {missing}"


@pytest.mark.parametrize(
    ("family", "prefix"), [("eventos", "DetalleEvento_"), ("alerts", "DetalleAlerta_")]
)
def test_every_detalle_of_the_snapshot_is_described(family: str, prefix: str) -> None:
    schemas = DOC["components"]["schemas"]
    for tipo, paths in SNAPSHOT["detalle"][family].items():
        assert prefix + tipo in schemas, f"no schema for the detalle of {tipo}"
        missing = sorted(set(paths) - set(schema_paths(schemas[prefix + tipo])))
        assert not missing, f"{tipo}: detalle fields not described: {missing}"


def test_every_header_of_the_snapshot_is_described() -> None:
    for kind, names in SNAPSHOT["headers"].items():
        where = HEADER_KINDS[kind]
        described = {
            name.lower()
            for name in (
                DOC["components"]["responses"]["MethodNotAllowed"]
                if where is None
                else response(*where)
            )["headers"]
        }
        # Content-Type is the media type of the content, never a header in OpenAPI.
        missing = sorted(set(names) - described - {"content-type"})
        assert not missing, f"{kind}: headers not described: {missing}"


def test_error_codes_are_those_of_the_gateway() -> None:
    # The API's own errors; the explorer (outside /v1) defines a few more of its own.
    classes = [errors.ApiError, *errors.ApiError.__subclasses__()]
    codes = {c.code for c in classes if c.status != 422 and c.__module__ == errors.__name__}
    described = resolve({"$ref": "#/components/schemas/Error"})["properties"]["code"]["enum"]
    assert set(described) == codes


def test_query_parameters_are_those_the_gateway_accepts() -> None:
    described = {resolve(p)["name"] for p in DOC["paths"]["/v1/rates"]["get"]["parameters"]}
    assert described == set(params.RATES_PARAMS)
    latest = DOC["paths"]["/v1/rates/latest"]["get"]["parameters"]
    assert [resolve(p)["name"] for p in latest] == ["currency", "series"]


def documented(schema: dict[str, Any], value: str) -> bool:
    """Whether a query value has the form the document's parameter schema gives."""
    if "pattern" in schema:
        return re.fullmatch(schema["pattern"], value) is not None
    assert schema["type"] == "integer", schema
    return re.fullmatch(r"-?[0-9]+", value) is not None and int(value) >= schema["minimum"]


def gateway_accepts(parameter: str, value: str) -> bool:
    """Whether the gateway's own validation takes ``value`` (the rest of the query valid)."""
    try:
        if parameter == "at":
            params.revisions_at({"at": value})
        else:
            params.rates_query(RATES_QUERY | {parameter: value}, PUBLISHED, SECRET)
    except errors.InvalidParams:
        return False
    return True


@pytest.mark.parametrize(
    ("parameter", "accepted", "refused"),
    [
        ("as_of_revision", ["1", "42"], ["0", "-1", "1.0", "x", ""]),
        ("from", ["2026-09-21", "2026-09-01"], ["2026-9-21", "21/09/2026", "2026-09-21T00:00Z"]),
        (
            "at",
            ["2026-09-21T20:00Z", "2026-09-21T20:00:00.5-05:00"],
            ["2026-09-21T20:00:00", "2026-09-21", "2026-09-21T20Z"],
        ),
        ("page_token", [SIGNED_PAGE_TOKEN], ["abc", "0.0." + "A" * 43, "5.366." + "A" * 42]),
    ],
)
def test_parameter_forms_are_those_the_gateway_checks(
    parameter: str, accepted: list[str], refused: list[str]
) -> None:
    schema = DOC["components"]["parameters"][parameter]["schema"]
    for value in accepted:
        assert documented(schema, value) and gateway_accepts(parameter, value), value
    for value in refused:
        assert not documented(schema, value) and not gateway_accepts(parameter, value), value


def test_path_ids_are_uuids_of_any_case() -> None:
    schema = DOC["paths"]["/v1/evidence/{ev_id}"]["get"]["parameters"][0]["schema"]
    for value in ("ae837d67-1520-44f3-b959-0020d7590bb0", "AE837D67-1520-44F3-B959-0020D7590BB0"):
        assert re.fullmatch(schema["pattern"], value)
        assert params.path_uuid("ev_id", value) == value.lower()
    assert not re.fullmatch(schema["pattern"], "ae837d671520-44f3-b959-0020d7590bb0")


def required(schema: dict[str, Any]) -> set[str]:
    schema = resolve(schema)
    found = set(schema.get("required", []))
    for part in schema.get("allOf", []):
        found |= required(part)
    return found


def named_properties(node: Any, names: set[str], where: str = "") -> Iterator[tuple[str, Any]]:
    """Every property of the document called one of ``names``, with where it is."""
    if isinstance(node, dict):
        for name, child in node.get("properties", {}).items():
            if name in names:
                yield f"{where}.{name}", child
        for key, child in node.items():
            yield from named_properties(child, names, f"{where}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from named_properties(child, names, f"{where}[{index}]")


def test_every_compra_and_venta_is_text_with_exactly_three_decimals() -> None:
    """The guidance "parse compra and venta with a decimal type": never a JSON number."""
    found = list(named_properties(DOC, {"compra", "venta"}))
    assert len(found) >= 10  # rates, latest, observation, events, annotations
    for where, schema in found:
        schema = resolve(schema)
        assert schema["type"] in ("string", ["string", "null"]), where
        assert re.fullmatch(schema["pattern"], "3.360"), where
        for other in ("3.36", "3.3600", "3", "3.36e0", "-3.360"):
            assert not re.fullmatch(schema["pattern"], other), (where, other)


@pytest.mark.parametrize(
    ("path", "holder"),
    [
        ("/v1/rates", ("items",)),
        ("/v1/rates/latest", ()),
        ("/v1/observations/{obs_id}", ("observacion",)),
    ],
)
def test_every_value_served_comes_with_its_observation_id_and_the_dataset_revision(
    path: str, holder: tuple[str, ...]
) -> None:
    """The guidance "keep observacion_id and dataset_revision with every value taken"."""
    body = body_schema(path, "200")
    assert "dataset_revision" in required(body)
    assert resolve(properties(body)["dataset_revision"]) == {
        **resolve(properties(body)["dataset_revision"]),
        "type": "integer",
        "minimum": 1,
    }
    values = body
    for name in holder:
        values = resolve(properties(values)[name])
        values = values.get("items", values)
    assert {"compra", "venta"} <= required(values)
    assert required(values) & {"observacion_id", "id"}


# -- every detalle the write side records conforms to the document ----------------------------

STRICT = closed(DOC)
SHA = "5cc9dc8e7078b36c7908f318e245d7f61dd2a73d2aab57d049fd1db66cf20e64"
IDS = [f"0b6f3c1e-0000-4000-8000-00000000000{n}" for n in range(10)]
NOW = datetime(2026, 9, 21, 20, tzinfo=UTC)


def violations(name: str, instance: Any) -> list[str]:
    """What the closed document's schema ``name`` refuses in ``instance`` (the validator of
    JSON Schema 2020-12, which OpenAPI 3.1 uses)."""
    validator = Draft202012Validator({**STRICT, "$ref": f"#/components/schemas/{name}"})
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(instance)
    ]


def motives() -> list[dict[str, Any]]:
    """Every reason the plausibility rule gives, as it gives it."""
    previous = Observation(
        IDS[1], 3, "USD", "publicado", "2026-09-18", "3.356", "3.364", "3.356", "3.364",
        "taxauth_txt", "GET x", "x", "taxauth_txt-1.0", "2026-09-18T20:00:00.000000Z",
        IDS[2], IDS[3], None,
    )  # fmt: skip
    found = plausibility_reasons(
        date(2026, 9, 22), "3.900", "3.800", previous, date(2026, 9, 21), Decimal("3")
    )
    assert {m["motivo"] for m in found} == {"movimiento", "compra_mayor_que_venta", "fecha_futura"}
    return found


def import_line() -> int:
    csv = b"fecha_serie,compra,venta\n2026-09-18,3.360,3.370\n"
    return parse_import_csv(csv, date(2026, 9, 21))[0].line


# What builder/capture writes for each event type of an observation (record.py, importer.py).
EVENT_DETAILS: dict[str, list[dict[str, Any]]] = {
    "capturada": [{"compra": "3.356", "venta": "3.364", "sha256": SHA}],
    "recaptura_identica": [{"sha256": SHA}],
    "correccion": [
        {"supersede": IDS[1], "anterior": {"compra": "3.354", "venta": "3.362"}},  # a capture
        {"supersede": IDS[1]},  # an import correcting an import
    ],
    "supersedida": [{"superseded_por": IDS[1]}],
    "plausibilidad_baja": [{"motivos": "MOTIVES"}],
    "importada": [
        {"actor": "fxev-demo", "justificacion": "SUNAT", "linea": "LINE", "sha256": SHA},
    ],
}


def side(n: int) -> dict[str, str]:
    return {
        "observacion_id": IDS[n],
        "fecha_serie": "2026-09-07",
        "compra": "3.351",
        "venta": "3.372",
    }


class Alerts:
    """Stands in for the alert store: keeps the detalle ``builder.ops.health`` raises."""

    def __init__(self) -> None:
        self.raised: dict[str, dict[str, Any]] = {}

    def raise_alert(self, tipo: str, now: datetime, **keywords: Any) -> None:
        self.raised[tipo] = keywords["detalle"]


def health_details() -> dict[str, dict[str, Any]]:
    alerts = Alerts()
    check_disk(alerts, Path("/srv/fxev"), 10**9, NOW, measure=lambda _: 12345)  # type: ignore[arg-type]
    late = [("Date", "Mon, 21 Sep 2026 19:58:59 GMT")]
    check_clock(alerts, "taxauth_txt", late, NOW, 30, now=NOW)  # type: ignore[arg-type]
    return alerts.raised


FAILURE = {
    "mensaje": "HTTP 503 Service Unavailable",
    "revision": 5,
    "ejecucion_id": IDS[4],
    "evidencia_id": IDS[5],
    "fecha_esperada": ["2026-09-21"],
}
# What builder/capture/alerting.py raises for each alert type.
ALERT_DETAILS: dict[str, list[dict[str, Any]]] = {
    **{
        tipo: [FAILURE, FAILURE | {"evidencia_id": None, "fecha_esperada": []}]
        for tipo in ("fuente_no_disponible", "invariante_fallida", "cambio_formato", "tunel_caido")
    },
    "discrepancia": [{"revision": 6, "publicado": side(1), "cierre": side(2)}],
    "plausibilidad_baja": [{"observacion_id": IDS[1], "revision": 4, "motivos": "MOTIVES"}],
    "backfill_incompleto": [
        {
            "mensaje": "2 business days from 2026-09-01 to 2026-09-08 are neither ...",
            "serie": serie,
            "fechas": ["2026-09-02", "2026-09-03"],
            "faltantes": ["2026-09-03"],
            "desde": "2026-09-01",
            "hasta": "2026-09-08",
            "revision": 7,
            "ejecucion_id": IDS[6],
        }
        for serie in ("cierre", None)
    ],
    "disco": ["HEALTH"],
    "reloj_fuera_de_tolerancia": ["HEALTH"],
}


def filled(tipo: str, detail: Any) -> dict[str, Any]:
    if detail == "HEALTH":
        return health_details()[tipo]
    if "motivos" in detail:
        return detail | {"motivos": motives()}
    if "linea" in detail:
        return detail | {"linea": import_line()}
    return detail


def event(tipo: str, detalle: dict[str, Any]) -> dict[str, Any]:
    stamp = "2026-09-21T20:00:00.000000Z"
    return {"id": IDS[7], "tipo": tipo, "ts": stamp, "revision": 1, "ejecucion_id": IDS[8],
            "evidencia_id": IDS[9], "detalle": detalle}  # fmt: skip


def alert(tipo: str, detalle: dict[str, Any]) -> dict[str, Any]:
    stamp = "2026-09-21T20:00:00.000000Z"
    return {"id": IDS[7], "tipo": tipo, "estado": "abierta", "condicion": f"{tipo}|x",
            "fuente": "taxauth_txt", "fecha_serie": None, "contador": 1, "primera_vez": stamp,
            "ultima_vez": stamp, "detalle": detalle, "reconocida_por": None,
            "reconocida_en": None, "resuelta_por": None, "resuelta_en": None}  # fmt: skip


@pytest.mark.parametrize(
    ("tipo", "detail"), [(t, d) for t, ds in EVENT_DETAILS.items() for d in ds]
)
def test_every_event_detalle_the_write_side_records_conforms(tipo: str, detail: Any) -> None:
    assert violations("Evento", event(tipo, filled(tipo, detail))) == []


@pytest.mark.parametrize(
    ("tipo", "detail"), [(t, d) for t, ds in ALERT_DETAILS.items() for d in ds]
)
def test_every_alert_detalle_the_write_side_records_conforms(tipo: str, detail: Any) -> None:
    assert violations("Alert", alert(tipo, filled(tipo, detail))) == []


def test_every_event_and_alert_type_has_its_detalle_schema() -> None:
    schemas = DOC["components"]["schemas"]
    assert {n.removeprefix("DetalleEvento_") for n in schemas if "Evento_" in n} == set(
        EVENT_DETAILS
    )
    assert {n.removeprefix("DetalleAlerta_") for n in schemas if "Alerta_" in n} == set(ALERT_TYPES)
    assert set(ALERT_DETAILS) == set(ALERT_TYPES)
    # The schemas bind: a detalle of the wrong shape for its tipo is refused.
    assert violations("Evento", event("importada", {"sha256": SHA}))
    assert violations("Alert", alert("disco", {"ruta": 1}))
    assert violations("MotivoPlausibilidad", {"motivo": "movimiento", "lado": "compra"})


# -- links: from the ids an answer carries to the operations that take them ------------------


def schema_at(schema: dict[str, Any], pointer: str) -> dict[str, Any]:
    """The schema of the value a JSON pointer names in a body of ``schema``."""
    for token in pointer.strip("/").split("/"):
        schema = resolve(schema)
        schema = schema["items"] if token.isdigit() else properties(schema)[token]
    return resolve(schema)


def test_links_lead_from_the_ids_of_an_answer_to_the_operations_that_take_them() -> None:
    operations = {
        operation["operationId"]: operation
        for item in DOC["paths"].values()
        for operation in item.values()
    }
    linked: dict[str, set[str]] = {}
    for path, item in DOC["paths"].items():
        for status, answer in item["get"]["responses"].items():
            for name, link in resolve(answer).get("links", {}).items():
                assert status == "200", (path, status, name)
                target = operations[link["operationId"]]
                path_ids = {p["name"] for p in target["parameters"] if p["in"] == "path"}
                assert set(link["parameters"]) == path_ids, (path, name)
                for expression in link["parameters"].values():
                    assert expression.startswith("$response.body#/"), (path, name)
                    field = schema_at(body_schema(path, status), expression.split("#", 1)[1])
                    assert field.get("format") == "uuid", (path, name, field)
                linked.setdefault(path, set()).add(link["operationId"])
        for answer in item["head"]["responses"].values():  # no body to take an id from
            assert "links" not in resolve(answer), path
    assert linked == {
        "/v1/rates": {"getObservation"},
        "/v1/rates/latest": {"getObservation"},
        "/v1/observations/{obs_id}": {"getObservation", "getEvidence"},
    }
