"""The sources' remaining behaviours, from the ``fxev`` CLI through the tree to a real gateway.

On a copy of the demo (revision 6: real history imported, captures, the central bank's recorded
closes of 1-8 September):

7. ``fxev backfill`` of the tax authority's August from a saved monthly answer (built from the
   real history in the endpoint's documented shape): its dates become ``taxauth_txt``
   observations superseding the imports, with the saved bytes as their evidence.
8. A central-bank capture whose 3 September close holds another currency's figure (a euro-like
   3.9): the publication of the 4th, which carries that close, is cross-checked ``discrepante``,
   ``tiene_discrepancia_abierta`` turns true, and one ``discrepancia`` alert opens; both values
   stay served, no winner is picked.
9. A capture with free disk under ``FXEV_MIN_FREE_BYTES``: a ``disco`` alert, served by
   ``/v1/alerts`` and counted by ``/v1/health/freshness``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from demo import CENTRALBANK_SEED, local_source
from tests.builder.test_cli_backfill_end_to_end import saved_month
from tests.contract.conftest import ROOT, Gateway, _running, copy_demo, fxev

AUGUST = "/v1/rates?currency=USD&series=publicado&from=2026-08-01&to=2026-08-31"
SEPTEMBER = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-10"
RECORDED = ROOT / "builder" / "data" / "seed" / CENTRALBANK_SEED
OTHER_CURRENCY = (
    b'"03.Set.26",\n"values":["3.355","3.365"]',
    b'"03.Set.26",\n"values":["3.912","3.958"]',
)


def last_json(lines: list[str]) -> dict[str, Any]:
    return orjson.loads(lines[-1])


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("sources")
    env, token = copy_demo(demo_home, base)
    saved = saved_month(base / "agosto.json", 2026, 8)
    august = ("--from", "2026-08-01", "--to", "2026-08-31", "--from-file", str(saved))
    backfilled = last_json(fxev(env, "backfill", "--source", "taxauth_txt", *august))
    assert (backfilled["revision"], backfilled["outcome"]) == (7, "nueva")
    recorded = RECORDED.read_bytes()
    assert recorded.count(OTHER_CURRENCY[0]) == 1
    with local_source() as (local, answer):
        answer[0] = (200, recorded.replace(*OTHER_CURRENCY), "text/html; charset=UTF-8")
        wrong = last_json(fxev(env | {"FXEV_CENTRALBANK_DAYS": "21"}, "capture", "--source",
                               "centralbank", "--url", local + "/api"))  # fmt: skip
        assert (wrong["revision"], wrong["outcome"]) == (8, "correccion")
        answer[0] = (200, b"21/09/2026|3.356|3.364|\r\n", "text/plain")
        low = last_json(fxev(env | {"FXEV_MIN_FREE_BYTES": str(2**62)}, "capture", "--url",
                             local + "/a/txt/tipoCambio.txt"))  # fmt: skip
    assert "disco" in [alert["tipo"] for alert in low["alertas"]]
    assert last_json(fxev(env, "build"))["published_revision"] == low["revision"]
    yield from _running(base, env, token)


def test_a_backfilled_month_supersedes_its_imports_with_the_saved_bytes(sources: Gateway) -> None:
    items = sources.get(AUGUST).json()["items"]
    assert len(items) == 31  # the tax authority publishes a value for every calendar day
    assert {item["fuente"] for item in items} == {"taxauth_txt"}
    detail = sources.get(f"/v1/observations/{items[0]['observacion_id']}").json()
    assert [o["fuente"] for o in detail["cadena"]["ancestros"]] == ["importado"]
    evidence = sources.get(f"/v1/evidence/{detail['observacion']['evidencia_id']}")
    saved = (sources.home.parent / "agosto.json").read_bytes()
    assert evidence.content == saved
    assert evidence.headers["X-Sha256"] == hashlib.sha256(saved).hexdigest()
    # Before the backfill's revision, the same query answers the imports.
    before = sources.get(AUGUST + "&as_of_revision=6").json()["items"]
    assert {item["fuente"] for item in before} == {"importado"}
    assert [i["compra"] for i in before] == [i["compra"] for i in items]


def test_another_currencys_close_is_discrepant_and_alerted_not_resolved(sources: Gateway) -> None:
    items = {i["fecha_serie"]: i for i in sources.get(SEPTEMBER).json()["items"]}
    flagged = [fecha for fecha, item in items.items() if item["tiene_discrepancia_abierta"]]
    assert flagged == ["2026-09-04"]
    [bad] = [c for c in items["2026-09-04"]["cotejos"] if c["resultado"] == "discrepante"]
    assert (bad["contraparte"], bad["contraparte_fecha"]) == ("centralbank", "2026-09-03")
    close = sources.get(f"/v1/observations/{bad['contraparte_observacion_id']}").json()
    assert (close["observacion"]["venta"], close["observacion"]["serie"]) == ("3.958", "cierre")
    # The publication (the recorded close's 3.365) is still the value served for the 4th.
    assert (items["2026-09-04"]["venta"], items["2026-09-04"]["fuente"]) == ("3.365", "importado")
    alerts = sources.get("/v1/alerts").json()["items"]
    assert [(a["fuente"], a["fecha_serie"]) for a in alerts if a["tipo"] == "discrepancia"] == [
        ("importado", "2026-09-04")
    ]
    # As of the demo's revision the same publication agreed with the recorded close.
    before = sources.get(SEPTEMBER + "&as_of_revision=6").json()["items"]
    assert not any(item["tiene_discrepancia_abierta"] for item in before)


def test_low_disk_is_an_open_alert_on_the_api(sources: Gateway) -> None:
    [disco] = [a for a in sources.get("/v1/alerts").json()["items"] if a["tipo"] == "disco"]
    assert disco["estado"] == "abierta"
    freshness = sources.get("/v1/health/freshness").json()
    assert freshness["alertas_abiertas"] >= 1
