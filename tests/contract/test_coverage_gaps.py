"""Coverage through the gateway: every gap reason of docs/decisions.md#coverage and their
precedence.

A fresh home is filled only through the ``fxev`` CLI, from a local HTTP server standing in for
the central bank:

1. Friday 2026-09-04: the source is unreachable, so the run records a failure expecting every
   business day of its window (1-4 September).
2. Thursday 2026-09-10: the source answers 1-9 September, declaring the 2nd ``n.d.``
   (before published dates: declared, not pending) and silently omitting the 4th and the 7th.
3. ``cierre`` is put in production, the tree is built and a real gateway serves it.

So the 2nd is ``nd_fuente`` although a failure expected it too (``nd_fuente`` > ``fallo``), the
4th is ``fallo`` (a failure expected it and nothing came), the 7th is ``sin_dato`` (no run
expected it and nothing was declared), and the 1st and 3rd, failed first and recorded later, are
no gaps at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import orjson
import pytest

from demo import local_source
from tests.contract.conftest import Gateway, _running, fxev, home_env, issue_token
from tests.support.ports import free_port

ANSWER = {
    "config": {
        "title": "Tipo de cambio",
        "series": [
            {"name": "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Compra", "dec": "3"},
            {"name": "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Venta", "dec": "3"},
        ],
    },
    "periods": [
        {"name": "01.Set.26", "values": ["3.36", "3.368"]},
        {"name": "02.Set.26", "values": ["n.d.", "n.d."]},
        {"name": "03.Set.26", "values": ["3.355", "3.365"]},
        {"name": "08.Set.26", "values": ["3.351", "3.372"]},
        {"name": "09.Set.26", "values": ["3.349", "3.37"]},
    ],
}


def capture_at(env: dict[str, str], now: str, url: str, days: str) -> dict[str, object]:
    lines = fxev(
        env | {"FXEV_NOW": now, "FXEV_CENTRALBANK_DAYS": days},
        "capture", "--source", "centralbank", "--url", url,
    )  # fmt: skip
    return orjson.loads(lines[-1])


@pytest.fixture(scope="module")
def gaps_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("gaps")
    env = home_env(base) | {"FXEV_NOW": "2026-09-10T19:00:00-05:00"}
    closed_port = f"http://127.0.0.1:{free_port()}/api"
    failed = capture_at(env, "2026-09-04T19:00:00-05:00", closed_port, "4")
    assert (failed["revision"], failed["outcome"]) == (1, "fallo")
    with local_source() as (local, answer):
        answer[0] = (200, json.dumps(ANSWER).encode(), "text/html; charset=UTF-8")
        recorded = capture_at(env, "2026-09-10T19:00:00-05:00", local + "/api", "10")
    assert (recorded["revision"], recorded["outcome"]) == (2, "nueva")
    fxev(env, "series", "publish", "cierre", "--actor", "ops", "--justification", "test")
    assert orjson.loads(fxev(env, "build")[-1])["published_revision"] == 3
    _, token = issue_token(env, "gaps")
    yield from _running(base, env, token)


def test_each_gap_carries_its_reason_by_precedence(gaps_gateway: Gateway) -> None:
    [cierre] = gaps_gateway.get("/v1/coverage").json()["series"]
    assert cierre | {"huecos": None, "criterio_huecos": None} == {
        "moneda": "USD",
        "serie": "cierre",
        "primera": "2026-09-01",
        "ultima": "2026-09-09",
        "total_fechas": 4,
        "huecos": None,
        "criterio_huecos": None,
    }
    assert cierre["huecos"] == [
        {"fecha": "2026-09-02", "motivo": "nd_fuente"},
        {"fecha": "2026-09-04", "motivo": "fallo"},
        {"fecha": "2026-09-07", "motivo": "sin_dato"},
    ]
    for reason in ("nd_fuente", "fallo", "sin_dato"):
        assert reason in cierre["criterio_huecos"]


def test_gaps_are_explained_never_filled(gaps_gateway: Gateway) -> None:
    # The declared, failed and silent days have no item: no value is ever derived for them.
    body = gaps_gateway.get("/v1/rates?currency=USD&series=cierre&from=2026-09-01&to=2026-09-10")
    assert [item["fecha_serie"] for item in body.json()["items"]] == [
        "2026-09-01",
        "2026-09-03",
        "2026-09-08",
        "2026-09-09",
    ]
