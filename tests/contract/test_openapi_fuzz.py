"""Schemathesis against a real gateway: every answer conforms to the OpenAPI document; none is 5xx.

The gateway runs over a private copy of the demo (its own ledger, raised rate limits) with a real
token, to which two annotations are added and the close series is put in production, so that
the demo holds every kind of record: imported, captured, corrected, cross-checked, annotated and
central-bank observations. The document is ``gateway.openapi.DOCUMENT``, the one the gateway
serves byte for byte (test_openapi.py), with every object schema that lists its fields closed
(``additionalProperties: false``), so an undocumented field fails.

Three ways in, each bounded in time:

- the walk (test_every_record_of_the_demo_conforms_to_the_document): every observation and
  evidence id of the demo, every page of every served series at the published revision and of
  September at every revision, every alert, annotation and health answer, each validated with
  the validator schemathesis uses;
- generated cases (deterministic, MAX_EXAMPLES per operation and phase, a deadline each): cases
  are generated from the document at collection, before the gateway runs, so the token and the
  path ids are placeholders swapped in at call time, one per kind of record (ID_KINDS); besides
  conformance of status, headers, content type and body, schemathesis checks that no answer is
  a 5xx, that a missing token gets 401, that schema-violating input is refused and that
  undeclared methods get 405;
- the stateful phase (test_answers_reached_by_links_conform): scenarios that follow the
  document's links from a page of rates to its observations, their chain, counterparts and
  evidence (STATEFUL_SCENARIOS scenarios of at most STATEFUL_STEPS calls each).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.stateful import run_state_machine_as_test

from gateway import openapi
from tests.contract.conftest import Gateway, _running, copy_demo, fxev
from tests.contract.openapi_checks import closed

MAX_EXAMPLES = 25
DEADLINE = timedelta(seconds=3)
REQUEST_TIMEOUT_S = 10
STATEFUL_SCENARIOS = 25
STATEFUL_STEPS = 6
WALK_THREADS = 6
# Dates inside the demo's history, around its correction of 2026-09-21 (revision 4).
RATES_EXAMPLES = {"from": "2026-09-15", "to": "2026-09-30", "as_of_revision": 3}
SEPTEMBER = "from=2026-09-01&to=2026-09-30"
# Whole history in windows of at most five years (the API's limit).
WINDOWS = (("2021-01-01", "2025-12-31"), ("2026-01-01", "2026-12-31"))
ANNOTATIONS = (
    ("--fecha", "2026-09-07", "--texto", "Cierre revisado a mano", "--actor", "ana",
     "--justification", "llamada a la SBS", "--serie", "publicado",
     "--compra", "3.351", "--venta", "3.372"),
    ("--fecha", "2026-09-21", "--texto", "Corrección de la fuente", "--actor", "ana",
     "--justification", "aviso de la fuente"),
)  # fmt: skip
PUBLISH_CIERRE = ("series", "publish", "cierre", "--actor", "ops", "--justification", "fuzz")
PLACEHOLDER_TOKEN = "fxev_placeholder"
# One placeholder path id per kind of record; swapped for a real id of the demo at call time.
ID_KINDS = {
    "obs_id": (
        "corrected",
        "superseded_capture",
        "superseded_import",
        "cross_checked_import",
        "central_bank",
    ),
    "ev_id": ("capture", "import_file", "central_bank", "failure"),
}
# The log's path parameters: real paths of the demo's log (its tree of 6 leaves, before the
# fuzzed gateway's own build makes it 8), whatever the demo's ids.
LOG_EXAMPLES = {
    "tile": {"hashes": "0/000.p/6", "bundle": "entries/000.p/6", "outside": "0/x001/000"},
    "revision": {"import": "1", "capture": "3"},
}
PLACEHOLDERS = {
    (name, kind): f"00000000-0000-4000-8000-{index:012x}"
    for index, (name, kind) in enumerate(
        (name, kind) for name, kinds in ID_KINDS.items() for kind in kinds
    )
}


@pytest.fixture(scope="module")
def fuzzed_gateway(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("fuzz")
    env, token = copy_demo(demo_home, base)
    for note in ANNOTATIONS:
        fxev(env, "annotate", *note)
    fxev(env, *PUBLISH_CIERRE)
    fxev(env, "build")
    yield from _running(base, env, token)


def with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """Dates inside the demo; path ids get one placeholder per kind of record, swapped for a
    real id at call time (the demo's ids are random, known only once it runs)."""
    document = copy.deepcopy(document)
    for parameter in document["components"]["parameters"].values():
        if parameter["name"] in RATES_EXAMPLES:
            parameter["example"] = RATES_EXAMPLES[parameter["name"]]
    for item in document["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter["name"] in LOG_EXAMPLES:
                    examples = LOG_EXAMPLES[parameter["name"]].items()
                    parameter["examples"] = {kind: {"value": value} for kind, value in examples}
                elif parameter.get("in") == "path":
                    name = parameter["name"]
                    parameter["examples"] = {
                        kind: {"value": PLACEHOLDERS[(name, kind)]} for kind in ID_KINDS[name]
                    }
    return document


CONFIG = SchemathesisConfig.from_dict(
    {
        "request-timeout": REQUEST_TIMEOUT_S,
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        # Stateful: test_answers_reached_by_links_conform runs it; no parametrized case does.
        "phases": {"stateful": {"enabled": True}},
        "operations": [
            {
                # Rules across parameters that a schema cannot state (from after to, a range
                # over five years, an as_of_revision above the published one, a page_token's
                # MAC): a schema-valid request may rightly get 400 INVALID_PARAMS here.
                "include-path": ["/v1/rates", "/v1/annotations"],
                "checks": {"positive_data_acceptance": {"expected-statuses": [200, 304, 400, 404]}},
            }
        ],
    }
)
# The module's document is the one served: test_openapi.py checks the bytes are identical.
schema = schemathesis.openapi.from_dict(with_examples(closed(openapi.DOCUMENT)), config=CONFIG)


@schema.auth(refresh_interval=None)
class PlaceholderToken:
    """Set on every case but those whose negative variant drops the token; swapped for the
    gateway's real token at call time (cases are generated before the gateway runs)."""

    def get(self, case: Any, ctx: Any) -> str:
        return PLACEHOLDER_TOKEN

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


# -- the demo's ids ---------------------------------------------------------------------------


class Demo:
    """A session on the fuzzed gateway whose every answer is checked against the document."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {gateway.token}"

    def fetch(self, path: str) -> requests.Response:
        return self.session.get(self.gateway.url(path), timeout=REQUEST_TIMEOUT_S)

    def check(self, template: str, resp: requests.Response, empty_ok: bool = False) -> Any:
        """Validate an answer to ``template`` as schemathesis does; its body (a 200's), or None
        for a 404 NO_OBSERVATIONS when ``empty_ok``."""
        schema[template]["GET"].validate_response(resp)
        if empty_ok and resp.status_code == 404:
            assert resp.json()["code"] == "NO_OBSERVATIONS", resp.text
            return None
        assert resp.status_code == 200, (resp.url, resp.status_code, resp.text[:300])
        return resp.json() if resp.headers["Content-Type"] == "application/json" else resp.content

    def get(self, template: str, path: str, empty_ok: bool = False) -> Any:
        return self.check(template, self.fetch(path), empty_ok)

    def all(self, template: str, paths: list[str]) -> list[Any]:
        with ThreadPoolExecutor(WALK_THREADS) as pool:
            answers = list(pool.map(self.fetch, paths))
        return [self.check(template, resp) for resp in answers]

    def pages(self, query: str) -> Iterator[dict[str, Any]]:
        """Every page of a /v1/rates query; none when its range holds nothing."""
        token = ""
        while True:
            page = self.get("/v1/rates", f"/v1/rates?{query}{token}", empty_ok=True)
            if page is None:
                return
            yield page
            if page["next_page_token"] is None:
                return
            token = f"&page_token={page['next_page_token']}"


def id_examples(demo: Demo) -> dict[str, str]:
    """The real id of each placeholder: the demo's records of each kind."""
    latest = demo.get("/v1/rates/latest", "/v1/rates/latest?currency=USD&series=publicado")
    corrected = demo.get(
        "/v1/observations/{obs_id}", f"/v1/observations/{latest['observacion_id']}"
    )
    imported, captured = corrected["cadena"]["ancestros"]  # oldest first
    september = next(demo.pages(f"currency=USD&series=publicado&{SEPTEMBER}"))
    checked = next(item for item in september["items"] if item["cotejos"])
    close = checked["cotejos"][0]["contraparte_observacion_id"]
    central = demo.get("/v1/observations/{obs_id}", f"/v1/observations/{close}")
    alerts = demo.get("/v1/alerts", "/v1/alerts?open=false")["items"]
    failure = next(a["detalle"] for a in alerts if a["tipo"] == "fuente_no_disponible")
    real = {
        ("obs_id", "corrected"): latest["observacion_id"],
        ("obs_id", "superseded_capture"): captured["id"],
        ("obs_id", "superseded_import"): imported["id"],
        ("obs_id", "cross_checked_import"): checked["observacion_id"],
        ("obs_id", "central_bank"): close,
        ("ev_id", "capture"): corrected["observacion"]["evidencia_id"],
        ("ev_id", "import_file"): imported["evidencia_id"],
        ("ev_id", "central_bank"): central["observacion"]["evidencia_id"],
        ("ev_id", "failure"): failure["evidencia_id"],
    }
    assert imported["fuente"] == "importado" and central["observacion"]["fuente"] == "centralbank"
    return {PLACEHOLDERS[key]: value for key, value in real.items()}


@pytest.fixture(scope="module")
def real_ids(fuzzed_gateway: Gateway) -> dict[str, str]:
    return id_examples(Demo(fuzzed_gateway))


def swap_placeholders(case: Any, gateway: Gateway, real: dict[str, str]) -> None:
    for name, value in (case.path_parameters or {}).items():
        if value in real:
            case.path_parameters[name] = real[value]
    if (case.headers or {}).get("Authorization") == f"Bearer {PLACEHOLDER_TOKEN}":
        case.headers["Authorization"] = f"Bearer {gateway.token}"


# -- the walk -----------------------------------------------------------------------------------


def test_every_record_of_the_demo_conforms_to_the_document(fuzzed_gateway: Gateway) -> None:
    demo = Demo(fuzzed_gateway)
    pending: set[str] = set()
    fuentes: set[str] = set()
    annotated: set[str] = set()
    for serie in ("publicado", "cierre"):
        latest = demo.get("/v1/rates/latest", f"/v1/rates/latest?currency=USD&series={serie}")
        pending.add(latest["observacion_id"])
        for start, end in WINDOWS:
            query = f"currency=USD&series={serie}&from={start}&to={end}&include_annotations=true"
            for page in demo.pages(query):
                for item in page["items"]:
                    pending.add(item["observacion_id"])
                    pending |= {c["contraparte_observacion_id"] for c in item["cotejos"]}
                    fuentes.add(item["fuente"])
                annotated |= {note["fecha"] for note in page["annotations"]}
    published = demo.get("/v1/health/freshness", "/v1/health/freshness")["dataset_revision"]
    for revision in range(1, published + 1):  # September as of every revision
        query = f"currency=USD&series=publicado&{SEPTEMBER}&as_of_revision={revision}"
        for page in demo.pages(query + "&include_annotations=true"):
            pending |= {item["observacion_id"] for item in page["items"]}

    # Every observation reachable from those: chains and counterparts; their evidence.
    seen: dict[str, dict[str, Any]] = {}
    evidence: set[str] = set()
    while pending:
        batch = sorted(pending - set(seen))
        pending.clear()
        paths = [f"/v1/observations/{obs_id}" for obs_id in batch]
        for obs_id, detail in zip(batch, demo.all("/v1/observations/{obs_id}", paths), strict=True):
            seen[obs_id] = detail
            chain = detail["cadena"]["ancestros"] + detail["cadena"]["sucesoras"]
            pending |= {o["id"] for o in chain} | {
                c["contraparte_observacion_id"] for c in detail["cotejos"]
            }
            evidence.add(detail["observacion"]["evidencia_id"])
            evidence |= {e["evidencia_id"] for e in detail["eventos"] if e["evidencia_id"]}

    alerts = demo.get("/v1/alerts", "/v1/alerts?open=false")["items"]
    evidence |= {a["detalle"]["evidencia_id"] for a in alerts if a["detalle"].get("evidencia_id")}
    demo.all("/v1/evidence/{ev_id}", [f"/v1/evidence/{ev_id}" for ev_id in sorted(evidence)])
    notes = demo.get("/v1/annotations", "/v1/annotations")["items"]
    for template in ("/v1/coverage", "/v1/health/ready", "/v1/alerts"):
        demo.get(template, template)
    demo.get("/v1/revisions", "/v1/revisions?at=2026-09-21T20:00:00Z")

    # The walk reached every kind of record the demo holds, not a subset that happens to pass.
    kinds = {e["tipo"] for detail in seen.values() for e in detail["eventos"]}
    assert {"importada", "capturada", "recaptura_identica", "correccion", "supersedida"} <= kinds
    assert fuentes == {"importado", "taxauth_txt", "centralbank"}
    assert {d["observacion"]["serie"] for d in seen.values()} == {"publicado", "cierre"}
    assert any(d["superseded"] for d in seen.values()) and any(d["cotejos"] for d in seen.values())
    assert annotated == {"2026-09-07", "2026-09-21"} and len(notes) == 2
    assert len(seen) > 1900 and len(evidence) >= 4 and alerts


# -- generated cases ---------------------------------------------------------------------------


@schema.parametrize()
@settings(deadline=DEADLINE)
def test_every_answer_conforms_to_the_openapi_document(
    case: Any, fuzzed_gateway: Gateway, real_ids: dict[str, str]
) -> None:
    swap_placeholders(case, fuzzed_gateway, real_ids)
    case.call_and_validate(base_url=fuzzed_gateway.base_url)


# -- the stateful phase: following the document's links ----------------------------------------


def test_answers_reached_by_links_conform(
    fuzzed_gateway: Gateway, real_ids: dict[str, str]
) -> None:
    reached: list[str] = []

    class FollowLinks(schema.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: Any) -> None:
            swap_placeholders(case, fuzzed_gateway, real_ids)

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": fuzzed_gateway.base_url}

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            if response.status_code == 200 and case.operation.method.upper() == "GET":
                reached.append(case.operation.path)

    run_state_machine_as_test(
        FollowLinks,
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    # Links were followed into the records, not only the entry points (the walk above reaches
    # every evidence id; a few scenarios may or may not go that deep).
    assert "/v1/observations/{obs_id}" in reached
