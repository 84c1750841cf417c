"""The central bank's close (``cierre``) through a real gateway: stored from the start, served only
from the revision of ``fxev series publish cierre``, cross-checked with publications both ways,
annotations as of the queried revision, and freshness judged on the business calendar."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from builder.capture.crosscheck import RULE_TEXT
from tests.builder.localserver import LocalServer
from tests.contract.conftest import (
    Gateway,
    _running,
    copy_demo,
    fxev,
    home_env,
    issue_token,
    run_fxev,
)
from tests.contract.test_api import PUBLISHED, assert_api_error
from tests.realdata import bcrp_recording

CIERRE = "/v1/rates?currency=USD&series=cierre&from=2026-09-01&to=2026-09-30"
PUBLICADO = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-10"
LATEST_CIERRE = "/v1/rates/latest?currency=USD&series=cierre"
PUBLISH = ("series", "publish", "cierre", "--actor", "ops", "--justification", "validated")


def by_date(body: dict) -> dict[str, dict]:
    return {item["fecha_serie"]: item for item in body["items"]}


def test_publications_carry_their_cross_check_before_cierre_is_served(gateway: Gateway) -> None:
    items = by_date(gateway.get(PUBLICADO).json())
    friday_close = None
    for fecha in ("2026-09-05", "2026-09-06", "2026-09-07"):
        (cotejo,) = items[fecha]["cotejos"]
        assert cotejo["contraparte"] == "centralbank"
        assert cotejo["resultado"] == "ok"
        assert cotejo["revision"] == PUBLISHED
        assert cotejo["contraparte_fecha"] == "2026-09-04"
        assert cotejo["regla"] == RULE_TEXT  # the rule applied, served as recorded
        friday_close = friday_close or cotejo["contraparte_observacion_id"]
        assert cotejo["contraparte_observacion_id"] == friday_close
        assert items[fecha]["tiene_discrepancia_abierta"] is False
    assert items["2026-09-01"]["cotejos"] == []  # its close (31 August) was never captured
    # Before it, the publication carried no cotejo: as of revision 5 the close did not exist.
    earlier = by_date(gateway.get(PUBLICADO + "&as_of_revision=5").json())
    assert earlier["2026-09-07"]["cotejos"] == []
    # cierre is stored and reachable by id, but not served as a series yet.
    detail = gateway.get(f"/v1/observations/{friday_close}").json()
    assert detail["observacion"]["serie"] == "cierre"
    assert detail["observacion"]["fuente"] == "centralbank"
    assert (detail["observacion"]["compra"], detail["observacion"]["venta"]) == ("3.360", "3.369")
    assert sorted(c["contraparte_fecha"] for c in detail["cotejos"]) == [
        "2026-09-05",
        "2026-09-06",
        "2026-09-07",
    ]
    assert_api_error(gateway.get(CIERRE), 404, "NO_OBSERVATIONS")
    assert_api_error(gateway.get(LATEST_CIERRE), 404, "NO_OBSERVATIONS")
    coverage = gateway.get("/v1/coverage").json()["series"]
    assert [entry["serie"] for entry in coverage] == ["publicado"]
    freshness = gateway.get("/v1/health/freshness").json()["series"]
    assert [entry["serie"] for entry in freshness] == ["publicado"]


@pytest.mark.gateway_env(FXEV_NOW="2026-09-08T19:00:00-05:00")
def test_series_publish_serves_cierre_from_its_revision_on(private_gateway: Gateway) -> None:
    gw = private_gateway
    result = orjson.loads(fxev(gw.env, *PUBLISH)[-1])
    assert (result["revision"], result["outcome"]) == (PUBLISHED + 1, "nueva")
    again = orjson.loads(fxev(gw.env, *PUBLISH)[-1])
    assert (again["revision"], again["outcome"]) == (None, "sin_cambios")
    assert orjson.loads(fxev(gw.env, "build")[-1])["published_revision"] == PUBLISHED + 1

    body = gw.get(CIERRE).json()
    assert body["dataset_revision"] == PUBLISHED + 1
    items = by_date(body)
    assert list(items) == ["2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-07"]
    assert [c["contraparte_fecha"] for c in items["2026-09-04"]["cotejos"]] == [
        "2026-09-05",
        "2026-09-06",
        "2026-09-07",
    ]
    assert {c["contraparte"] for c in items["2026-09-04"]["cotejos"]} == {"importado"}
    # Below the switch, the same as-of query keeps answering NO_OBSERVATIONS.
    assert_api_error(gw.get(CIERRE + f"&as_of_revision={PUBLISHED}"), 404, "NO_OBSERVATIONS")
    assert gw.get(CIERRE + f"&as_of_revision={PUBLISHED + 1}").status_code == 200

    latest = gw.get(LATEST_CIERRE).json()
    assert latest["fecha_serie"] == "2026-09-07"
    # Tuesday evening: the close expected is Monday's (published the next day), so up to date.
    assert latest["frescura"] == latest["frescura"] | {
        "estado": "al_dia",
        "n_dias_habiles": 0,
        "fecha_esperada": "2026-09-07",
        "hoy_lima": "2026-09-08",
    }
    coverage = {e["serie"]: e for e in gw.get("/v1/coverage").json()["series"]}
    assert coverage["cierre"] | {"huecos": None} == coverage["cierre"] | {
        "primera": "2026-09-01",
        "ultima": "2026-09-07",
        "total_fechas": 5,
        "huecos": None,
    }
    assert coverage["cierre"]["huecos"] == []
    freshness = gw.get("/v1/health/freshness").json()["series"]
    assert [e["serie"] for e in freshness] == ["cierre", "publicado"]


def test_a_sunday_with_fridays_close_is_al_dia(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A home of its own: the central bank's answer cut at Friday 4 September, read on Sunday."""
    document = json.loads(bcrp_recording().body)
    document["periods"] = document["periods"][:4]  # 1..4 September
    env = home_env(tmp_path) | {
        "FXEV_NOW": "2026-09-06T11:00:00-05:00",
        "FXEV_CENTRALBANK_DAYS": "6",
    }
    with LocalServer(
        json.dumps(document).encode(),
        headers={"Content-Type": "text/html; charset=UTF-8"},
        path="/api",
    ) as source:
        done = run_fxev(env, "capture", "--source", "centralbank", "--url", source.url)
        assert done.returncode == 0, done.stderr
        assert orjson.loads(done.stdout.splitlines()[-1])["outcome"] == "nueva"
    fxev(env, *PUBLISH)
    fxev(env, "build")
    _, token = issue_token(env, "sunday")
    for gw in _running(tmp_path, env, token):
        latest = gw.get(LATEST_CIERRE).json()
        assert latest["fecha_serie"] == "2026-09-04"
        assert latest["frescura"]["estado"] == "al_dia"
        assert latest["frescura"]["n_dias_habiles"] == 0


def test_annotations_are_served_as_of_the_queried_revision(tmp_path: Path, demo_home: Path) -> None:
    env, token = copy_demo(demo_home, tmp_path)
    note = orjson.loads(
        fxev(
            env, "annotate", "--fecha", "2026-09-07", "--texto", "Cierre revisado a mano",
            "--actor", "ana", "--justification", "llamada a la SBS", "--serie", "publicado",
            "--compra", "3.3510", "--venta", "3.372",
        )[-1]
    )  # fmt: skip
    assert note["revision"] == PUBLISHED + 1
    everywhere = orjson.loads(
        fxev(env, "annotate", "--fecha", "2026-09-08", "--texto", "Feriado regional",
             "--actor", "ana", "--justification", "aviso")[-1]
    )  # fmt: skip
    assert everywhere["revision"] == PUBLISHED + 2
    bad = run_fxev(env, "annotate", "--fecha", "2026-09-31", "--texto", "x", "--actor", "a",
                   "--justification", "j")  # fmt: skip
    assert bad.returncode != 0 and bad.stderr.startswith("fxev: ")
    fxev(env, "build")
    for gw in _running(tmp_path, env, token):
        item, general = gw.get("/v1/annotations?currency=USD&series=publicado").json()["items"]
        assert (general["fecha"], general["serie"]) == ("2026-09-08", None)
        assert item == item | {
            "fecha": "2026-09-07",
            "moneda": "USD",
            "serie": "publicado",
            "texto": "Cierre revisado a mano",
            "compra": "3.351",
            "venta": "3.372",
            "actor": "ana",
            "justificacion": "llamada a la SBS",
            "revision": PUBLISHED + 1,
        }
        assert gw.get("/v1/annotations?series=cierre").json()["items"] == [general]
        with_notes = gw.get(PUBLICADO + "&include_annotations=true").json()
        assert [a["id"] for a in with_notes["annotations"]] == [item["id"], general["id"]]
        before = gw.get(PUBLICADO + f"&include_annotations=true&as_of_revision={PUBLISHED}")
        assert before.json()["annotations"] == []
        # The annotation never becomes the value.
        official = by_date(with_notes)["2026-09-07"]
        assert (official["compra"], official["fuente"]) == ("3.360", "importado")
