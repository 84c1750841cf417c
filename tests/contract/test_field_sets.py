"""The field set of every response kind, against a checked-in snapshot
(docs/decisions.md#field-additions).

docs/decisions.md#field-additions: in ``/v1`` fields are only added, never removed or renamed.
``tests/fixtures/field_sets.json`` (shared with tests/unit/test_openapi.py)
holds, per response kind, the sorted key paths of its JSON body: ``a.b`` for a key of a nested
object, ``a[].b`` for a key of the objects inside an array (the union over its elements, and every
element must have every key its siblings have). The ``detalle`` of events and alerts depends on the
type, so it is snapshotted per type. Header names the API sets are snapshotted per response kind.

A path in the snapshot that a response lacks is a removal or a rename: the test fails. A path the
snapshot lacks fails too: an addition is allowed, but it is made deliberately, by adding the path
to the snapshot in the same commit.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests

from tests.contract.conftest import Gateway, _running, copy_demo, fxev

SNAPSHOT_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "field_sets.json"
SNAPSHOT: dict[str, Any] = orjson.loads(SNAPSHOT_PATH.read_bytes())

RATES = "/v1/rates?currency=USD&series=publicado&from=2026-09-15&to=2026-09-30"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
AS_OF = RATES + "&as_of_revision=3"  # before the demo's correction: superseded_por is set
WITH_ANNOTATIONS = RATES + "&include_annotations=true"
# Publications of 2-8 September carry cross-checks against the demo's central bank closes.
CROSS_CHECKED = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-10"
UNKNOWN_UUID = "00000000-0000-4000-8000-000000000000"
# Keys that depend on the record's type, snapshotted per type in SNAPSHOT["detalle"].
OPAQUE = {
    "observation": {"eventos[].detalle"},
    "observation_cross_checked": {"eventos[].detalle"},
    "alerts": {"items[].detalle"},
}
# Headers of the HTTP transport, not of the API.
TRANSPORT_HEADERS = {"connection", "keep-alive", "content-length", "transfer-encoding", "date"}


# -- key paths (pure) --------------------------------------------------------------------------


def key_paths(value: Any, opaque: Collection[str] = (), prefix: str = "") -> set[str]:
    """Every key path of a JSON value; nothing is listed below a path in ``opaque``."""
    paths: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else key
            paths.add(path)
            if path not in opaque:
                paths |= key_paths(child, opaque, path)
    elif isinstance(value, list):
        for element in value:
            paths |= key_paths(element, opaque, prefix + "[]")
    return paths


def uneven_paths(value: Any, opaque: Collection[str] = (), prefix: str = "") -> set[str]:
    """Paths ``a[].b`` where some objects of the array ``a`` lack a key their siblings have."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if path not in opaque:
                found |= uneven_paths(child, opaque, path)
    elif isinstance(value, list):
        objects = [element for element in value if isinstance(element, dict)]
        every_key = set().union(*objects)
        for obj in objects:
            found |= {f"{prefix}[].{key}" for key in every_key - set(obj)}
        for element in value:
            found |= uneven_paths(element, opaque, prefix + "[]")
    return found


def differences(where: str, seen: Iterable[str], expected: Iterable[str]) -> list[str]:
    """What a developer must hear: removals and renames, then additions not yet snapshotted."""
    present, wanted = set(seen), set(expected)
    problems = [
        f"{where}: {path!r} is in the snapshot but not in the response: removed or renamed"
        " (fields are only ever added)"
        for path in sorted(wanted - present)
    ]
    problems += [
        f"{where}: {path!r} is new: if the addition is deliberate, add it to"
        f" tests/fixtures/{SNAPSHOT_PATH.name} in the same commit"
        for path in sorted(present - wanted)
    ]
    return problems


def body_problems(kind: str, body: Any) -> list[str]:
    opaque = OPAQUE.get(kind, set())
    problems = differences(kind, key_paths(body, opaque), SNAPSHOT["bodies"][kind])
    problems += [
        f"{kind}: {path!r} is missing from some elements of its array"
        for path in sorted(uneven_paths(body, opaque))
    ]
    return problems


def api_headers(resp: requests.Response) -> set[str]:
    return {name.lower() for name in resp.headers} - TRANSPORT_HEADERS


# -- one response of every kind, from the demo gateway -----------------------------------------


def observation_ids(gateway: Gateway) -> tuple[str, str, str]:
    """(import, corrected capture, correction) of 2026-09-21: the demo's supersession chain."""
    corrected = gateway.get(AS_OF).json()["items"][-1]["observacion_id"]
    detail = gateway.get(f"/v1/observations/{corrected}").json()
    [imported] = [o["id"] for o in detail["cadena"]["ancestros"]]
    [correction] = [o["id"] for o in detail["cadena"]["sucesoras"]]
    return imported, corrected, correction


@pytest.fixture(scope="module")
def observations(gateway: Gateway) -> list[dict[str, Any]]:
    """Details of the three observations of the chain; the corrected one comes first, since
    it alone has both ``ancestros`` and ``sucesoras``."""
    imported, corrected, correction = observation_ids(gateway)
    return [gateway.get(f"/v1/observations/{i}").json() for i in (corrected, imported, correction)]


@pytest.fixture(scope="module")
def annotated(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    """A copy of the demo with two annotations: one with a series and values, one general."""
    base = tmp_path_factory.mktemp("annotated")
    env, token = copy_demo(demo_home, base)
    fxev(env, "annotate", "--fecha", "2026-09-16", "--texto", "Revisado", "--actor", "ana",
         "--justification", "control", "--serie", "publicado", "--compra", "3.4",
         "--venta", "3.41")  # fmt: skip
    fxev(env, "annotate", "--fecha", "2026-09-17", "--texto", "Aviso", "--actor", "ana",
         "--justification", "control")  # fmt: skip
    fxev(env, "build")
    yield from _running(base, env, token)


@pytest.fixture(scope="module")
def bodies(
    gateway: Gateway, annotated: Gateway, observations: list[dict[str, Any]]
) -> dict[str, list[Any]]:
    """Kind -> the bodies of that kind; each is checked on its own against the snapshot."""
    plain = {
        "rates": [RATES, AS_OF],
        "rates_with_annotations": [WITH_ANNOTATIONS, WITH_ANNOTATIONS + "&as_of_revision=3"],
        "rates_latest": [LATEST],
        "annotations": ["/v1/annotations"],
        "coverage": ["/v1/coverage"],
        "revisions": ["/v1/revisions?at=2026-09-21T20:00:00Z"],
        "alerts": ["/v1/alerts?open=false"],
        "health_freshness": ["/v1/health/freshness"],
        "health_ready": ["/v1/health/ready"],
        "health_live": ["/v1/health/live"],
        "validation_error": ["/v1/observations/not-a-uuid", "/v1/evidence/12345"],
    }
    found: dict[str, list[Any]] = {}
    for kind, paths in plain.items():
        responses = [gateway.get(path) for path in paths]
        for resp in responses:
            assert resp.status_code in (200, 422), (resp.url, resp.text)
        found[kind] = [resp.json() for resp in responses]
    found["observation"] = [observations[0]]
    # The demo has no annotation: the fields of annotation records come from a copy with two.
    listed = annotated.get("/v1/annotations").json()
    with_notes = annotated.get(WITH_ANNOTATIONS).json()
    assert len(listed["items"]) == len(with_notes["annotations"]) == 2
    found["annotations_listed"] = [listed]
    found["rates_annotated"] = [with_notes]
    checked = gateway.get(CROSS_CHECKED).json()
    found["rates_cross_checked"] = [checked]
    close_id = next(i for i in checked["items"] if i["cotejos"])["cotejos"][0][
        "contraparte_observacion_id"
    ]
    found["observation_cross_checked"] = [gateway.get(f"/v1/observations/{close_id}").json()]
    errors = [
        gateway.get(RATES.replace("2026-09-15", "2026-10-15")),  # 400: from after to
        gateway.get("/v1/coverage", token=None),  # 401
        gateway.get("/v1/rates/latest?currency=EUR&series=publicado"),  # 404 UNSUPPORTED_CURRENCY
        gateway.get(f"/v1/evidence/{UNKNOWN_UUID}"),  # 404 NOT_FOUND
        gateway.request("POST", "/v1/coverage"),  # 405 METHOD_NOT_ALLOWED
    ]
    assert [resp.status_code for resp in errors] == [400, 401, 404, 404, 405]
    found["error"] = [resp.json() for resp in errors]
    return found


@pytest.fixture(scope="module")
def headers(gateway: Gateway, observations: list[dict[str, Any]]) -> dict[str, requests.Response]:
    as_of = gateway.get(AS_OF)
    evidence = f"/v1/evidence/{observations[0]['observacion']['evidencia_id']}"
    found = {
        "fresh": gateway.get("/v1/coverage"),
        "as_of": as_of,
        "as_of_not_modified": gateway.get(AS_OF, headers={"If-None-Match": as_of.headers["ETag"]}),
        "evidence": gateway.get(evidence),
        "unauthorized": gateway.get("/v1/coverage", token=None),
        "method_not_allowed": gateway.request("POST", "/v1/coverage"),
    }
    statuses = {kind: resp.status_code for kind, resp in found.items()}
    assert statuses == {
        "fresh": 200,
        "as_of": 200,
        "as_of_not_modified": 304,
        "evidence": 200,
        "unauthorized": 401,
        "method_not_allowed": 405,
    }
    return found


def typed_records(records: Iterable[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for record in records:
        yield record["tipo"], record["detalle"]


# -- the tests ---------------------------------------------------------------------------------


def test_snapshot_and_fetched_kinds_are_the_same(
    bodies: dict[str, list[Any]], headers: dict[str, requests.Response]
) -> None:
    assert set(bodies) == set(SNAPSHOT["bodies"])
    assert set(headers) == set(SNAPSHOT["headers"])
    for paths in [*SNAPSHOT["bodies"].values(), *SNAPSHOT["headers"].values()]:
        assert paths == sorted(set(paths)), "keep the snapshot's lists sorted and unique"


@pytest.mark.parametrize("kind", sorted(SNAPSHOT["bodies"]))
def test_body_field_set_matches_the_snapshot(bodies: dict[str, list[Any]], kind: str) -> None:
    problems = [problem for body in bodies[kind] for problem in body_problems(kind, body)]
    assert problems == [], "\n".join(problems)


def test_event_detalle_field_set_per_type_matches_the_snapshot(
    observations: list[dict[str, Any]],
) -> None:
    expected: dict[str, list[str]] = SNAPSHOT["detalle"]["eventos"]
    events = [event for detail in observations for event in detail["eventos"]]
    problems: list[str] = []
    seen_types = set()
    for tipo, detalle in typed_records(events):
        seen_types.add(tipo)
        if tipo not in expected:
            problems.append(f"event type {tipo!r} is new: add its detalle to the snapshot")
            continue
        problems += differences(f"eventos[tipo={tipo}].detalle", key_paths(detalle), expected[tipo])
    problems += [
        f"event type {tipo!r} is in the snapshot but the demo shows none: it is unchecked"
        for tipo in sorted(set(expected) - seen_types)
    ]
    assert problems == [], "\n".join(problems)


def test_alert_detalle_field_set_per_type_matches_the_snapshot(
    bodies: dict[str, list[Any]],
) -> None:
    expected: dict[str, list[str]] = SNAPSHOT["detalle"]["alerts"]
    [listing] = bodies["alerts"]
    problems: list[str] = []
    # Per type, the union over its alerts: a plausibilidad_baja's reasons have the keys of their
    # motivo (a move, compra above venta), and the demo shows both.
    seen: dict[str, set[str]] = {}
    for tipo, detalle in typed_records(listing["items"]):
        seen.setdefault(tipo, set()).update(key_paths(detalle))
    seen_types = set(seen)
    for tipo, paths in sorted(seen.items()):
        if tipo not in expected:
            problems.append(f"alert type {tipo!r} is new: add its detalle to the snapshot")
            continue
        problems += differences(f"alerts[tipo={tipo}].detalle", paths, expected[tipo])
    problems += [
        f"alert type {tipo!r} is in the snapshot but the demo shows none: it is unchecked"
        for tipo in sorted(set(expected) - seen_types)
    ]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("kind", sorted(SNAPSHOT["headers"]))
def test_header_names_match_the_snapshot(headers: dict[str, requests.Response], kind: str) -> None:
    problems = differences(f"{kind} headers", api_headers(headers[kind]), SNAPSHOT["headers"][kind])
    assert problems == [], "\n".join(problems)


# -- the key-path function itself --------------------------------------------------------------


SAMPLE = {
    "items": [
        {"fecha_serie": "2026-09-20", "cotejos": [], "marcas": ["importada"]},
        {"fecha_serie": "2026-09-21", "cotejos": [{"regla": "r", "resultado": "ok"}], "marcas": []},
    ],
    "cadena": {"ancestros": [{"id": "a"}], "sucesoras": []},
    "eventos": [{"tipo": "capturada", "detalle": {"sha256": "x"}}],
    "total": 2,
}


def test_key_paths_are_the_union_over_array_elements() -> None:
    assert key_paths(SAMPLE, {"eventos[].detalle"}) == {
        "items",
        "items[].fecha_serie",
        "items[].cotejos",
        "items[].cotejos[].regla",
        "items[].cotejos[].resultado",
        "items[].marcas",
        "cadena",
        "cadena.ancestros",
        "cadena.ancestros[].id",
        "cadena.sucesoras",
        "eventos",
        "eventos[].tipo",
        "eventos[].detalle",
        "total",
    }
    assert "eventos[].detalle.sha256" in key_paths(SAMPLE)


def test_a_removed_nested_field_is_reported_as_removed_or_renamed() -> None:
    expected = sorted(key_paths(SAMPLE))
    changed = orjson.loads(orjson.dumps(SAMPLE))
    del changed["items"][1]["cotejos"][0]["regla"]
    [problem] = differences("rates", key_paths(changed), expected)
    assert "'items[].cotejos[].regla'" in problem
    assert "removed or renamed" in problem


def test_a_renamed_field_is_reported_both_ways() -> None:
    expected = sorted(key_paths(SAMPLE))
    changed = orjson.loads(orjson.dumps(SAMPLE))
    changed["cadena"]["ancestors"] = changed["cadena"].pop("ancestros")
    problems = differences("observation", key_paths(changed), expected)
    assert any("'cadena.ancestros[].id'" in p and "removed or renamed" in p for p in problems)
    assert any("'cadena.ancestors'" in p and "is new" in p for p in problems)


def test_a_field_missing_from_one_element_of_an_array_is_reported() -> None:
    changed = orjson.loads(orjson.dumps(SAMPLE))
    del changed["items"][0]["marcas"]
    assert key_paths(changed) == key_paths(SAMPLE)  # the union hides it ...
    assert uneven_paths(changed) == {"items[].marcas"}  # ... the evenness check does not
    assert uneven_paths(SAMPLE) == set()
