"""The issue's "done when", end to end: the real ``fxev capture`` against a real HTTP server.

Each step is a subprocess of the installed console script; the source is a local
``ThreadingHTTPServer`` serving the tax authority's documented shape
(``20/09/2026|3.354|3.362|\\r\\n``). Every run exits 0, a recorded failure too, and prints its
result as the last line of stdout.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builder.localserver import LocalServer
from tests.support.cli import FXEV, run

NOW = "2026-09-20T13:05:00-05:00"  # 2026-09-20 in Lima
DOCUMENTED = b"20/09/2026|3.354|3.362|\r\n"
CHANGED = b"20/09/2026|3.357|3.365|\r\n"
OUTAGE = b"<html><body>Service Unavailable</body></html>"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer(body=DOCUMENTED, headers={"Content-Type": "text/plain"}) as local:
        yield local


Fxev = Callable[..., dict[str, Any]]


@pytest.fixture
def fxev(tmp_path: Path, server: LocalServer) -> Fxev:
    """Run ``fxev ARGS...`` with its own FXEV_HOME and the local server as the source."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update(
        {"FXEV_HOME": str(tmp_path / "home"), "FXEV_TAXAUTH_URL": server.url, "FXEV_NOW": NOW}
    )

    def fxev_run(*args: str) -> dict[str, Any]:
        ran = run([FXEV, *args], tmp_path, env)
        assert ran.code == 0, (args, ran.code, ran.stderr)
        return ran.last

    return fxev_run


def assert_capture_shape(result: dict[str, Any]) -> None:
    assert set(result) == {
        "revision",
        "outcome",
        "observacion_id",
        "observaciones",
        "alerta",
        "alertas",
    }


def test_documented_file_is_nueva_then_identica_then_a_changed_file_is_correccion(
    server: LocalServer, fxev: Fxev
) -> None:
    first = fxev("capture")
    assert_capture_shape(first)
    assert first["outcome"] == "nueva"
    assert first["revision"] == 1
    assert first["observacion_id"]
    assert first["observaciones"] == [
        {
            "fecha_serie": "2026-09-20",
            "serie": "publicado",
            "outcome": "nueva",
            "observacion_id": first["observacion_id"],
        }
    ]
    assert (first["alerta"], first["alertas"]) == (None, [])

    again = fxev("capture")
    assert again["outcome"] == "identica"
    assert again["revision"] == 2
    assert again["observacion_id"] == first["observacion_id"]
    assert again["observaciones"][0]["outcome"] == "identica"
    assert (again["alerta"], again["alertas"]) == (None, [])

    server.set(body=CHANGED)
    corrected = fxev("capture")
    assert corrected["outcome"] == "correccion"
    assert corrected["revision"] == 3
    assert corrected["observacion_id"] not in (None, first["observacion_id"])
    assert corrected["observaciones"] == [
        {
            "fecha_serie": "2026-09-20",
            "serie": "publicado",
            "outcome": "correccion",
            "observacion_id": corrected["observacion_id"],
        }
    ]
    assert server.requests == 3


def test_503_is_a_recorded_fallo_whose_alert_counts_up_and_the_next_good_capture_resolves_it(
    server: LocalServer, fxev: Fxev
) -> None:
    assert fxev("capture")["outcome"] == "nueva"

    server.set(body=OUTAGE, status=503, headers={"Content-Type": "text/html"})
    failed = fxev("capture")
    assert_capture_shape(failed)
    assert failed["outcome"] == "fallo"
    assert failed["revision"] == 2
    assert failed["observacion_id"] is None
    assert failed["observaciones"] == [
        {
            "fecha_serie": "2026-09-20",
            "serie": "publicado",
            "outcome": "fallo",
            "observacion_id": None,
        }
    ]
    alert = failed["alerta"]
    assert alert is not None
    assert failed["alertas"] == [alert]
    assert alert["tipo"] == "fuente_no_disponible"
    assert alert["estado"] == "abierta"
    assert alert["fuente"] == "taxauth_txt"
    assert alert["contador"] == 1

    failed_again = fxev("capture")
    assert failed_again["outcome"] == "fallo"
    assert failed_again["revision"] == 3
    assert failed_again["alerta"]["id"] == alert["id"]
    assert failed_again["alerta"]["contador"] == 2
    assert failed_again["alerta"]["estado"] == "abierta"
    assert failed_again["alerta"]["primera_vez"] == alert["primera_vez"]

    listed = fxev("alerts", "list")
    assert [item["id"] for item in listed["items"]] == [alert["id"]]
    assert listed["items"][0]["contador"] == 2

    server.set(body=DOCUMENTED, status=200, headers={"Content-Type": "text/plain"})
    recovered = fxev("capture")
    assert recovered["outcome"] == "identica"
    assert recovered["revision"] == 4
    resolved = recovered["alerta"]
    assert recovered["alertas"] == [resolved]
    assert resolved["id"] == alert["id"]
    assert resolved["estado"] == "resuelta"
    assert resolved["resuelta_por"] == "sistema"
    assert resolved["contador"] == 2

    assert fxev("alerts", "list") == {"items": []}
    history = fxev("alerts", "list", "--all")["items"]
    assert [(item["id"], item["estado"]) for item in history] == [(alert["id"], "resuelta")]


def test_a_new_outage_after_resolution_opens_a_new_alert(server: LocalServer, fxev: Fxev) -> None:
    assert fxev("capture")["outcome"] == "nueva"
    server.set(body=OUTAGE, status=503)
    first_alert = fxev("capture")["alerta"]
    server.set(body=DOCUMENTED, status=200)
    assert fxev("capture")["alerta"]["estado"] == "resuelta"

    server.set(body=OUTAGE, status=503)
    second = fxev("capture")

    assert second["outcome"] == "fallo"
    assert second["alerta"]["id"] != first_alert["id"]
    assert second["alerta"]["contador"] == 1
    assert second["alerta"]["estado"] == "abierta"


def test_capture_history_verifies_after_the_whole_scenario(server: LocalServer, fxev: Fxev) -> None:
    fxev("capture")
    server.set(body=CHANGED)
    fxev("capture")
    server.set(body=OUTAGE, status=503)
    fxev("capture")

    report = fxev("registry", "verify")

    assert report == {"ok": True, "findings": []}
