"""Schemathesis against a real gateway: every answer conforms to the OpenAPI document; none is 5xx.

The gateway runs over a private copy of the demo (its own ledger, raised rate limits) with a real
token. The document is ``gateway.openapi.DOCUMENT``, the one the gateway serves byte for byte
(test_openapi.py); cases are generated from it at collection, before the gateway runs, so the
token and the demo's random ids are placeholders swapped in at call time. Two things make the
run stricter than a client's reading: every object schema that lists its fields is closed
(``additionalProperties: false``), so an undocumented field fails; and the path ids and dates get
examples inside the demo, so the 200 answers of observations, evidence and as-of rates are
exercised, not only their 404s. Besides conformance of status, headers, content type and body,
schemathesis checks that no answer is a 5xx, that a missing token gets 401, that schema-violating
input is refused and that undeclared methods get 405.

Bounded: deterministic generation (the same cases each run), MAX_EXAMPLES per operation and
phase, a deadline per example, no stateful phase.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import settings
from schemathesis.config import SchemathesisConfig

from gateway import openapi
from tests.contract.conftest import Gateway, _running, copy_demo
from tests.contract.openapi_checks import closed

MAX_EXAMPLES = 25
DEADLINE = timedelta(seconds=3)
REQUEST_TIMEOUT_S = 10
# Dates inside the demo's history, around its correction of 2026-09-21 (revision 4).
RATES_EXAMPLES = {"from": "2026-09-15", "to": "2026-09-30", "as_of_revision": 3}
PLACEHOLDER = "00000000-0000-4000-8000-00000000e1d0"
PLACEHOLDER_TOKEN = "fxev_placeholder"


@pytest.fixture(scope="module")
def fuzzed_gateway(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("fuzz")
    env, token = copy_demo(demo_home, base)
    yield from _running(base, env, token)


def demo_ids(gateway: Gateway) -> dict[str, str]:
    """A real observation and evidence id of the demo: the corrected capture of 2026-09-21."""
    latest = gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
    detail = gateway.get(f"/v1/observations/{latest['observacion_id']}").json()
    return {"obs_id": latest["observacion_id"], "ev_id": detail["observacion"]["evidencia_id"]}


def with_examples(document: dict[str, Any]) -> dict[str, Any]:
    """Dates inside the demo; path ids get PLACEHOLDER, swapped for a real id at call time
    (the demo's ids are random, known only once it runs)."""
    document = copy.deepcopy(document)
    for parameter in document["components"]["parameters"].values():
        if parameter["name"] in RATES_EXAMPLES:
            parameter["example"] = RATES_EXAMPLES[parameter["name"]]
    for item in document["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    parameter["example"] = PLACEHOLDER
    return document


CONFIG = SchemathesisConfig.from_dict(
    {
        "request-timeout": REQUEST_TIMEOUT_S,
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        "phases": {"stateful": {"enabled": False}},
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


@pytest.fixture(scope="module")
def real_ids(fuzzed_gateway: Gateway) -> dict[str, str]:
    return demo_ids(fuzzed_gateway)


@schema.parametrize()
@settings(deadline=DEADLINE)
def test_every_answer_conforms_to_the_openapi_document(
    case: Any, fuzzed_gateway: Gateway, real_ids: dict[str, str]
) -> None:
    for name, value in (case.path_parameters or {}).items():
        if value == PLACEHOLDER:
            case.path_parameters[name] = real_ids[name]
    if (case.headers or {}).get("Authorization") == f"Bearer {PLACEHOLDER_TOKEN}":
        case.headers["Authorization"] = f"Bearer {fuzzed_gateway.token}"
    case.call_and_validate(base_url=fuzzed_gateway.base_url)
