"""docs/decisions.md sections 7 (alerts), 8 (calendar, freshness, coverage) and 11 (sources,
series, cross-checks), and the SPEC endpoints they touch (/v1/alerts, /v1/coverage,
/v1/rates/latest ``frescura``, /v1/health/freshness, cotejos, marcas), checked from outside.

Every home is filled only through the real ``fxev`` console script in a subprocess, against
local HTTP servers on 127.0.0.1 (``tests/builder/localserver.py``) that answer in the sources'
recorded shapes: the central bank's recorded answer (``tests/realdata.bcrp_recording``) and
answers laid out byte for byte like it, with real values (SBS sell from the pen-radar CSV, SBS buy
from the tax authority's next publication, which SOURCES.md 1.3 shows equal), and the tax
authority's documented one-line file. A real gateway (``python -m gateway serve``, 2 workers)
then serves the published tree; the tests talk to it over HTTP. Every story runs once per module
in its fixture (mutations included) and the tests only read what it recorded and what the
gateway serves, so their order does not matter.

Each test names, in its docstring, the rule it holds the system to.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from email.utils import formatdate
from pathlib import Path
from typing import Any

import holidays
import pytest

from tests.builder.localserver import LocalServer
from tests.builder.test_cli_backfill_end_to_end import saved_month
from tests.contract.conftest import Gateway, home_env
from tests.realdata import bcrp_recording, sbs_venta_history, sunat_history
from tests.support.cli import FXEV, Ran, run
from tests.support.ports import free_port
from tests.unit.test_centralbank import REAL_ROWS as RECORDED_ROWS

TEXT = {"Content-Type": "text/plain"}
BCRP_TYPE = {"Content-Type": "text/html; charset=UTF-8"}  # JSON served as text/html (SOURCES 3.2)
RECORDED = bcrp_recording()
COMPRA_NAME = "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Compra"
VENTA_NAME = "Tipo de cambio - TC Sistema bancario SBS (S/ por US$) - Venta"
MONTHS_ING = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Set", "Oct", "Nov", "Dec")
# What an Imperva challenge looks like to a client without a browser (SOURCES 3.2: HTTP 200).
CHALLENGE = b'<html><head><script src="/_Incapsula_Resource"></script></head><body></body></html>'


# -- helpers --------------------------------------------------------------------------------


def lima(day: str, hour: int = 13) -> str:
    """``hour`` o'clock of ``day`` in Lima, as FXEV_NOW takes it."""
    return f"{day}T{hour:02d}:00:00-05:00"


def fx(cwd: Path, env: dict[str, str], *args: str, now: str | None = None) -> Ran:
    return run([FXEV, *args], cwd, env | ({"FXEV_NOW": now} if now else {}))


def ok(ran: Ran) -> dict[str, Any]:
    assert ran.code == 0, (ran.code, ran.stderr)
    assert "Traceback" not in ran.stderr, ran.stderr
    return ran.last


def issue(cwd: Path, env: dict[str, str], name: str) -> str:
    ran = fx(cwd, env, "token", "issue", name)
    assert ran.code == 0, ran.stderr
    return ran.stdout.splitlines()[-1]


def bcrp_body(rows: Sequence[tuple[str, str, str]], swapped: bool = False) -> bytes:
    """An answer laid out exactly like the recorded one (one token per line); ``rows`` are
    ``(label, compra, venta)``. ``swapped`` lists the sell series first, values in that order."""
    names = [COMPRA_NAME, VENTA_NAME][::-1] if swapped else [COMPRA_NAME, VENTA_NAME]
    series = ",\n".join('{\n"name":"' + name + '",\n"dec":"3"\n}' for name in names)
    periods = ",\n".join(
        '{\n"name":"'
        + period
        + '",\n"values":["'
        + '","'.join((venta, compra) if swapped else (compra, venta))
        + '"]\n}'
        for period, compra, venta in rows
    )
    return (
        '{\n"config":\n{\n"title":"Tipo de cambio",\n"series":\n[\n'
        + series
        + ']\n},\n"periods":\n[\n'
        + periods
        + "\n]\n}"
    ).encode()


def label(day: date) -> str:
    return f"{day.day:02d}.{MONTHS_ING[day.month - 1]}.{day.year % 100:02d}"


def by_date(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert "items" in body, body
    return {item["fecha_serie"]: item for item in body["items"]}


def checks(item: dict[str, Any]) -> list[tuple[str, str, int]]:
    """An item's cotejos as (contraparte_fecha, resultado, revision)."""
    return [(c["contraparte_fecha"], c["resultado"], c["revision"]) for c in item["cotejos"]]


def publicado(gw: Gateway, start: str, end: str, as_of: int | None = None) -> dict[str, Any]:
    query = f"/v1/rates?currency=USD&series=publicado&from={start}&to={end}"
    return by_date(gw.get(query + (f"&as_of_revision={as_of}" if as_of else "")).json())


def cierre(gw: Gateway, start: str, end: str, as_of: int | None = None) -> dict[str, Any]:
    query = f"/v1/rates?currency=USD&series=cierre&from={start}&to={end}"
    return by_date(gw.get(query + (f"&as_of_revision={as_of}" if as_of else "")).json())


def by_condition(alerts: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for alert in alerts:
        assert alert["condicion"] not in found, ("two alerts of one condition", alerts)
        found[alert["condicion"]] = alert
    return found


@dataclasses.dataclass
class Story:
    """What a module's story printed (CLI last lines) and saw (HTTP bodies), by step."""

    gw: Gateway
    env: dict[str, str]
    printed: dict[str, Any] = dataclasses.field(default_factory=dict)
    seen: dict[str, Any] = dataclasses.field(default_factory=dict)


def test_the_answer_layout_is_the_recordings() -> None:
    """Harness check: ``bcrp_body`` reproduces the recorded central-bank answer byte for byte,
    so every answer built with it has the real source's layout."""
    assert bcrp_body(RECORDED_ROWS) == RECORDED.body


# == 1. An operator's week with the tax authority's file failing in every way ==================
#
# Mon 14: good file (its Date header 2 h off the real clock)  -> revision 1, reloj alert; built
# Tue 15: 503                        -> revision 2, fuente_no_disponible (checked live, unbuilt)
#         alerts ack                 -> no revision
# Wed 16: 503 again                  -> revision 3, the same alert bumped while reconocida
# Thu 17: an HTML page (200)         -> revision 4, cambio_formato
# Fri 18: a date two days ahead      -> revision 5, invariante_fallida
# Mon 21: proxy unreachable          -> revision 6, tunel_caido
# Tue 22: central bank 503, low disk -> revision 7, fuente_no_disponible:centralbank + disco
#                                       (same instant: a tie in ultima_vez)
# Wed 23: good file, compra > venta  -> revision 8, every taxauth failure resolved, plausibilidad
# Thu 24: good file                  -> revision 9
# series publish cierre (no close)   -> revision 10; build; then refused transitions.


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    base = tmp_path_factory.mktemp("week")
    with (
        LocalServer(b"14/09/2026|3.350|3.360|\r\n", headers=TEXT) as txt,
        LocalServer(b"<html>down</html>", status=503, path="/api") as bank,
    ):
        env = home_env(base) | {
            "FXEV_TAXAUTH_URL": txt.url,
            "FXEV_CENTRALBANK_URL": bank.url,
            "FXEV_CENTRALBANK_DAYS": "1",
        }
        printed: dict[str, Any] = {}
        seen: dict[str, Any] = {}
        off = formatdate(time.time() + 7200, usegmt=True)  # the source's clock 2 hours ahead
        txt.set(headers={**TEXT, "Date": off})
        printed["mon14"] = ok(fx(base, env, "capture", now=lima("2026-09-14")))
        txt.set(headers=TEXT)
        ok(fx(base, env, "build"))
        gw = Gateway(env=env, token=issue(base, env, "week"), log_path=base / "gateway.log")
        gw.start()
        try:
            story = Story(gw, env, printed, seen)
            txt.set(status=503, body=b"<html><body>Service Unavailable</body></html>",
                    headers={"Content-Type": "text/html"})  # fmt: skip
            printed["tue15"] = ok(fx(base, env, "capture", now=lima("2026-09-15")))
            seen["tue15"] = gw.get("/v1/alerts").json()
            first_id = printed["tue15"]["alerta"]["id"]
            printed["ack"] = ok(fx(base, env, "alerts", "ack", first_id, "--actor", "ops"))
            seen["ack"] = gw.get("/v1/alerts").json()
            printed["wed16"] = ok(fx(base, env, "capture", now=lima("2026-09-16")))
            seen["wed16"] = gw.get("/v1/alerts").json()
            txt.set(status=200, body=b"<html><body>Mantenimiento</body></html>")
            printed["thu17"] = ok(fx(base, env, "capture", now=lima("2026-09-17")))
            txt.set(body=b"20/09/2026|3.351|3.361|\r\n", headers=TEXT)
            printed["fri18"] = ok(fx(base, env, "capture", now=lima("2026-09-18")))
            tunnel = env | {"FXEV_PROXY": f"http://127.0.0.1:{free_port()}"}
            printed["mon21"] = ok(fx(base, tunnel, "capture", now=lima("2026-09-21")))
            low_disk = env | {"FXEV_MIN_FREE_BYTES": str(2**62)}
            printed["tue22"] = ok(
                fx(base, low_disk, "capture", "--source", "centralbank", now=lima("2026-09-22"))
            )
            txt.set(body=b"23/09/2026|3.370|3.365|\r\n")
            printed["wed23"] = ok(fx(base, env, "capture", now=lima("2026-09-23")))
            txt.set(body=b"24/09/2026|3.362|3.372|\r\n")
            printed["thu24"] = ok(fx(base, env, "capture", now=lima("2026-09-24")))
            printed["publish"] = ok(
                fx(
                    base,
                    env,
                    "series",
                    "publish",
                    "cierre",
                    "--actor",
                    "ops",
                    "--justification",
                    "audit",
                )
            )
            for fecha, texto in (("2026-09-20", "b"), ("2026-09-18", "a"), ("2026-09-20", "c")):
                ok(fx(base, env, "annotate", "--fecha", fecha, "--texto", texto, "--actor", "ana",
                      "--justification", "audit", now=lima("2026-09-24", 18)))  # fmt: skip
            printed["build"] = ok(fx(base, env, "build"))
            seen["final"] = gw.get("/v1/alerts?open=false").json()
            # Refused transitions on an alert the system resolved; nothing may change.
            printed["ack_resolved"] = fx(base, env, "alerts", "ack", first_id, "--actor", "ops")
            printed["resolve_resolved"] = fx(
                base, env, "alerts", "resolve", first_id, "--actor", "ops"
            )
            seen["after_refused"] = gw.get("/v1/alerts?open=false").json()
            yield story
        finally:
            gw.stop()


def test_a_new_alert_is_served_live_without_a_build(week: Story) -> None:
    """DECISIONS 7: alerts are their "own store, not revisioned; the gateway reads it live": the
    failure of revision 2 is on /v1/alerts before any build, while the API still answers at the
    published revision 1."""
    body = week.seen["tue15"]
    assert body["dataset_revision"] == 1
    assert {a["condicion"] for a in body["items"]} == {
        "reloj_fuera_de_tolerancia:taxauth_txt",  # Monday's, still open
        "fuente_no_disponible:taxauth_txt",
    }
    assert week.printed["tue15"]["revision"] == 2


def test_acknowledging_an_alert_makes_no_revision(week: Story) -> None:
    """DECISIONS 4/7: alerts are not the registry, changing them makes no revision: after
    ``alerts ack`` the next capture is revision 3, and the ack is visible at once (reconocida,
    ``reconocida_por``) with the API still at revision 1."""
    assert week.printed["ack"]["estado"] == "reconocida"
    (acked,) = [a for a in week.seen["ack"]["items"] if a["tipo"] == "fuente_no_disponible"]
    assert (acked["estado"], acked["reconocida_por"]) == ("reconocida", "ops")
    assert week.seen["ack"]["dataset_revision"] == 1
    assert week.printed["wed16"]["revision"] == week.printed["tue15"]["revision"] + 1


def test_the_same_failure_on_another_day_bumps_the_acknowledged_alert(week: Story) -> None:
    """DECISIONS 7: the key of a source failure is type + source (not the date); "the same
    condition while abierta or reconocida increments contador and moves ultima_vez" (it stays
    reconocida; primera_vez stays)."""
    first = week.printed["tue15"]["alerta"]
    (bumped,) = [a for a in week.seen["wed16"]["items"] if a["tipo"] == "fuente_no_disponible"]
    assert bumped["id"] == first["id"]
    assert bumped["condicion"] == "fuente_no_disponible:taxauth_txt"
    assert (bumped["estado"], bumped["contador"]) == ("reconocida", 2)
    assert bumped["primera_vez"] == first["primera_vez"] == "2026-09-15T18:00:00.000000Z"
    assert bumped["ultima_vez"] == "2026-09-16T18:00:00.000000Z"


def test_each_failure_type_of_a_source_is_a_condition_of_its_own(week: Story) -> None:
    """DECISIONS 7 (key type + source) and 6 (failure types): an HTML page is cambio_formato, a
    date two days ahead invariante_fallida, an unreachable proxy tunel_caido; each its own
    alert, and the central bank's outage another one."""
    expected = {
        "thu17": "cambio_formato:taxauth_txt",
        "fri18": "invariante_fallida:taxauth_txt",
        "mon21": "tunel_caido:taxauth_txt",
    }
    for step, condition in expected.items():
        assert week.printed[step]["outcome"] == "fallo", week.printed[step]
        assert [a["condicion"] for a in week.printed[step]["alertas"]] == [condition]
    alerts = by_condition(week.seen["final"]["items"])
    assert {
        "fuente_no_disponible:taxauth_txt",
        "cambio_formato:taxauth_txt",
        "invariante_fallida:taxauth_txt",
        "tunel_caido:taxauth_txt",
        "fuente_no_disponible:centralbank",
    } <= set(alerts)
    assert alerts["fuente_no_disponible:taxauth_txt"]["contador"] == 2
    for condition in expected.values():
        assert alerts[condition]["contador"] == 1


def test_the_next_good_capture_resolves_that_sources_failures_and_nothing_else(
    week: Story,
) -> None:
    """DECISIONS 7: fuente_no_disponible, cambio_formato, tunel_caido and invariante_fallida
    "are also resolved by the system when the next capture of that source succeeds"
    (``resuelta_por: "sistema"``), an acknowledged one too; the central bank's failure, the
    plausibility, disk and clock alerts are not (not that source, or not those types)."""
    alerts = by_condition(week.seen["final"]["items"])
    for condition in (
        "fuente_no_disponible:taxauth_txt",
        "cambio_formato:taxauth_txt",
        "invariante_fallida:taxauth_txt",
        "tunel_caido:taxauth_txt",
    ):
        alert = alerts[condition]
        assert (alert["estado"], alert["resuelta_por"]) == ("resuelta", "sistema"), alert
    for condition in (
        "fuente_no_disponible:centralbank",
        "disco:-",
        "plausibilidad_baja:taxauth_txt:2026-09-23",
        "reloj_fuera_de_tolerancia:taxauth_txt",
    ):
        assert (alerts[condition]["estado"], alerts[condition]["resuelta_por"]) == (
            "abierta",
            None,
        ), alerts[condition]
    resolved_by = {a["condicion"] for a in week.printed["wed23"]["alertas"]}
    assert "fuente_no_disponible:taxauth_txt" in resolved_by  # reported by that capture


def test_alerts_are_ordered_by_ultima_vez_descending_then_id(week: Story) -> None:
    """DECISIONS 7: "/v1/alerts orders by ultima_vez descending, then id" (two alerts of one
    run share ultima_vez: the outage and the low disk of Tuesday 22); open=false lists all."""
    items = week.seen["final"]["items"]
    assert week.seen["final"]["total"] == len(items) == 8
    keys = [(a["ultima_vez"], a["id"]) for a in items]
    assert keys == sorted(sorted(keys, key=lambda k: k[1]), key=lambda k: k[0], reverse=True)
    tie = [a for a in items if a["ultima_vez"] == "2026-09-22T18:00:00.000000Z"]
    assert sorted(a["condicion"] for a in tie) == ["disco:-", "fuente_no_disponible:centralbank"]
    assert [a["id"] for a in tie] == sorted(a["id"] for a in tie)
    open_items = week.gw.get("/v1/alerts").json()["items"]
    assert [a["id"] for a in open_items] == [a["id"] for a in items if a["estado"] != "resuelta"]


def test_alertas_abiertas_is_the_count_of_open_alerts(week: Story) -> None:
    """DECISIONS 7: ``alertas_abiertas`` is the count of /v1/alerts?open=true."""
    open_alerts = week.gw.get("/v1/alerts").json()
    freshness = week.gw.get("/v1/health/freshness").json()
    assert freshness["alertas_abiertas"] == open_alerts["total"] == 4


def test_a_source_clock_off_its_date_header_raises_reloj(week: Story) -> None:
    """DECISIONS 11: ``reloj_fuera_de_tolerancia`` compares the (real) clock with the source's
    HTTP ``Date`` at capture: a source 2 hours ahead raises it, keyed by type + source, and the
    capture is still recorded."""
    mon = week.printed["mon14"]
    assert mon["outcome"] == "nueva"
    (alert,) = [a for a in mon["alertas"] if a["tipo"] == "reloj_fuera_de_tolerancia"]
    assert alert["condicion"] == "reloj_fuera_de_tolerancia:taxauth_txt"
    assert 7100 < abs(alert["detalle"]["desfase_s"]) < 7300
    # No other capture of the week (the local server's Date is the real clock's) raised it again.
    assert by_condition(week.seen["final"]["items"])[alert["condicion"]]["contador"] == 1


def test_every_recorded_failure_type_explains_a_gap_as_fallo(week: Story) -> None:
    """DECISIONS 8 (override, widening) and SPEC coverage: ``fallo`` when a
    fuente_no_disponible, invariante_fallida, cambio_formato or tunel_caido event carries that
    expected date; a date whose only failure is another series' (the central bank's, Tuesday
    22) is ``sin_dato``; gaps ascending; total_fechas the valid dates."""
    series = week.gw.get("/v1/coverage").json()["series"]
    (entry,) = [e for e in series if e["serie"] == "publicado"]
    assert (entry["primera"], entry["ultima"], entry["total_fechas"]) == (
        "2026-09-14",
        "2026-09-24",
        3,
    )
    assert entry["huecos"] == [
        {"fecha": "2026-09-15", "motivo": "fallo"},
        {"fecha": "2026-09-16", "motivo": "fallo"},
        {"fecha": "2026-09-17", "motivo": "fallo"},
        {"fecha": "2026-09-18", "motivo": "fallo"},
        {"fecha": "2026-09-21", "motivo": "fallo"},
        {"fecha": "2026-09-22", "motivo": "sin_dato"},
    ]


def test_a_served_series_without_data_has_no_coverage_freshness_or_latest(week: Story) -> None:
    """DECISIONS 8 / SPEC: coverage and freshness entries are "per series with data": cierre put
    in production with no close recorded (only a failed run) is in neither, and its latest is
    NO_OBSERVATIONS."""
    assert week.printed["publish"]["revision"] == 10
    assert [e["serie"] for e in week.gw.get("/v1/coverage").json()["series"]] == ["publicado"]
    fresh = week.gw.get("/v1/health/freshness").json()["series"]
    assert [e["serie"] for e in fresh] == ["publicado"]
    latest = week.gw.get("/v1/rates/latest?currency=USD&series=cierre")
    assert (latest.status_code, latest.json()["code"]) == (404, "NO_OBSERVATIONS")


def test_a_plausibility_alert_is_keyed_by_date_and_the_value_is_served_marked(
    week: Story,
) -> None:
    """DECISIONS 6/7 and SPEC ``marcas``: compra above venta is recorded as published, with
    event and marca ``plausibilidad_baja`` (distinct event types in order of first occurrence)
    and an alert keyed type + source + fecha_serie."""
    wed = week.printed["wed23"]
    assert wed["outcome"] == "nueva"
    conditions = [a["condicion"] for a in wed["alertas"] if a["tipo"] == "plausibilidad_baja"]
    assert conditions == ["plausibilidad_baja:taxauth_txt:2026-09-23"]
    item = publicado(week.gw, "2026-09-23", "2026-09-23")["2026-09-23"]
    assert (item["compra"], item["venta"], item["fuente"]) == ("3.370", "3.365", "taxauth_txt")
    assert item["marcas"] == ["capturada", "plausibilidad_baja"]


def test_annotations_are_ordered_by_fecha_then_revision(week: Story) -> None:
    """DECISIONS 11: the annotation record is {id, fecha, moneda, serie (or null: all series),
    texto, compra, venta (or null), actor, justificacion, revision, ts}, "ordered by fecha then
    revision" (annotated 20, 18, 20 September at revisions 11, 12, 13)."""
    body = week.gw.get("/v1/annotations").json()
    assert [(a["fecha"], a["texto"], a["revision"]) for a in body["items"]] == [
        ("2026-09-18", "a", 12),
        ("2026-09-20", "b", 11),
        ("2026-09-20", "c", 13),
    ]
    for note in body["items"]:
        assert set(note) == {
            "id", "fecha", "moneda", "serie", "texto", "compra", "venta", "actor",
            "justificacion", "revision", "ts",
        }  # fmt: skip
        assert (note["moneda"], note["serie"], note["compra"], note["venta"]) == (
            "USD", None, None, None,
        )  # fmt: skip
        assert (note["actor"], note["justificacion"]) == ("ana", "audit")


def test_a_resolved_alert_cannot_be_acknowledged_or_resolved_again(week: Story) -> None:
    """DECISIONS 7 / SPEC states: the lifecycle is abierta -> reconocida -> resuelta (and, by
    override, abierta -> resuelta); ``resuelta`` is final (the condition then opens a new alert).
    DECISIONS 3: an error is one line on stderr, non-zero exit, and changes nothing."""
    for key in ("ack_resolved", "resolve_resolved"):
        ran: Ran = week.printed[key]
        assert ran.code != 0, (key, ran.stdout)
        assert len(ran.stderr.splitlines()) == 1, ran.stderr
    assert week.seen["after_refused"]["items"] == week.seen["final"]["items"]


def test_every_registry_write_under_the_free_disk_floor_raises_disco(tmp_path: Path) -> None:
    """DECISIONS 2: ``FXEV_MIN_FREE_BYTES`` is the "free disk under which writes raise
    ``disco``"; DECISIONS 4 names the registry writes: "a capture run, a recorded failure, an
    import, an annotation, a backfill, a series switch" (docs/operating/alerts.md: "fell under
    FXEV_MIN_FREE_BYTES before a write (the write still happened)"). With the floor above any
    disk, an import, an annotation, a backfill and a series switch each write their revision and
    each raises (or bumps) the one ``disco`` alert, as a capture does."""
    env = home_env(tmp_path) | {"FXEV_MIN_FREE_BYTES": str(2**62), "FXEV_NOW": lima("2026-09-20")}
    csv = tmp_path / "uno.csv"
    csv.write_text("fecha_serie,compra,venta\n2026-09-02,3.36,3.368\n", encoding="utf-8")
    saved = saved_month(tmp_path / "agosto.json", 2026, 8)
    writes = {
        "import": ("import", str(csv), "--actor", "ana", "--justification", "audit"),
        "annotate": ("annotate", "--fecha", "2026-09-02", "--texto", "t", "--actor", "ana",
                     "--justification", "audit"),
        "backfill": ("backfill", "--source", "taxauth_txt", "--from", "2026-08-01", "--to",
                     "2026-08-31", "--from-file", str(saved)),
        "series publish": ("series", "publish", "cierre", "--actor", "ana",
                           "--justification", "audit"),
    }  # fmt: skip
    raised = {}
    for name, args in writes.items():
        printed = ok(fx(tmp_path, env, *args))
        assert isinstance(printed["revision"], int), (name, printed)  # the write happened
        raised[name] = [a["tipo"] for a in printed["alertas"]]
    listed = ok(fx(tmp_path, env, "alerts", "list"))["items"]
    assert raised == {name: ["disco"] for name in writes}, (raised, listed)
    (disco,) = [a for a in listed if a["tipo"] == "disco"]
    assert disco["contador"] == len(writes)


# == 2. July 2026: holidays, the listed non-working day, pending closes =========================
#
# Revision 1: import of the tax authority's real publications of 17 July to 7 August 2026, one
#   of them altered on purpose (30 July, venta 3.421 instead of 3.411) to have a discrepancy.
# Revision 2: central bank on Thu 30 July, 20:00 (20-30 July): SBS closes of 20, 21, 22 and 24;
#   23 (holiday) n.d. before a value -> declared; 27 (listed non-working day), 28, 29 (holidays)
#   and 30 n.d. with nothing after -> pending.
# Revision 3: series publish cierre; build; a gateway on Fri 31 July 10:00 looks.
# Revision 4: central bank on Fri 7 August, 20:00 (20 July - 7 August): adds 30, 31 July, 3, 4,
#   5 August; 27-29 July are now declared n.d. (30 July has a value); 6 (holiday) and 7 August
#   pending. Build; a gateway on Saturday 8 August 09:00 looks.

JULY_FIRST, JULY_LAST = date(2026, 7, 17), date(2026, 8, 7)
ALTERED = (date(2026, 7, 30), "3.421")  # the real venta is 3.411


def july_answer(start: date, end: date, published_through: date) -> bytes:
    """Weekdays from ``start`` to ``end``: the real SBS close where there was one and it was out
    by then, else n.d.; weekends omitted, as in the recording."""
    sunat = {day.fecha: day for day in sunat_history()}
    sbs = sbs_venta_history()
    rows = []
    day = start
    while day <= end:
        if day.weekday() < 5:
            if day in sbs and day <= published_through:
                # The close of D is what the tax authority publishes on D + 1 (SOURCES 1.3).
                rows.append((label(day), sunat[day + timedelta(days=1)].compra, sbs[day]))
            else:
                rows.append((label(day), "n.d.", "n.d."))
        day += timedelta(days=1)
    return bcrp_body(rows)


@pytest.fixture(scope="module")
def july(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    base = tmp_path_factory.mktemp("july")
    lines = ["fecha_serie,compra,venta"]
    for day in sunat_history():
        if JULY_FIRST <= day.fecha <= JULY_LAST:
            venta = ALTERED[1] if day.fecha == ALTERED[0] else day.venta
            lines.append(f"{day.fecha.isoformat()},{day.compra},{venta}")
    csv = base / "publicaciones.csv"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = july_answer(date(2026, 7, 20), date(2026, 7, 30), date(2026, 7, 24))
    with LocalServer(first, headers=BCRP_TYPE, path="/api") as bank:
        env = home_env(base) | {"FXEV_CENTRALBANK_URL": bank.url}
        printed: dict[str, Any] = {}
        seen: dict[str, Any] = {}
        printed["import"] = ok(
            fx(
                base,
                env,
                "import",
                str(csv),
                "--actor",
                "audit",
                "--justification",
                "SUNAT real history (tests/fixtures/real), 30 July altered on purpose",
                now=lima("2026-08-07", 20),
            )
        )
        printed["closes1"] = ok(
            fx(
                base,
                env | {"FXEV_CENTRALBANK_DAYS": "11"},
                "capture",
                "--source",
                "centralbank",
                now=lima("2026-07-30", 20),
            )
        )
        ok(fx(base, env, "series", "publish", "cierre", "--actor", "ops", "--justification", "a"))
        assert ok(fx(base, env, "build"))["published_revision"] == 3
        token = issue(base, env, "july")
        early = Gateway(
            env=env | {"FXEV_NOW": lima("2026-07-31", 10)},
            token=token,
            log_path=base / "gateway-31jul.log",
        )
        early.start()
        try:
            seen["latest_cierre_31jul"] = early.get("/v1/rates/latest?currency=USD&series=cierre")
            seen["freshness_31jul"] = early.get("/v1/health/freshness").json()
            seen["alerts_rev3"] = early.get("/v1/alerts?open=false").json()
        finally:
            early.stop()
        bank.set(body=july_answer(date(2026, 7, 20), date(2026, 8, 7), date(2026, 8, 5)))
        printed["closes2"] = ok(
            fx(
                base,
                env | {"FXEV_CENTRALBANK_DAYS": "19"},
                "capture",
                "--source",
                "centralbank",
                now=lima("2026-08-07", 20),
            )
        )
        assert ok(fx(base, env, "build"))["published_revision"] == 4
        gw = Gateway(
            env=env | {"FXEV_NOW": lima("2026-08-08", 9)},
            token=token,
            log_path=base / "gateway-8aug.log",
        )
        gw.start()
        try:
            yield Story(gw, env, printed, seen)
        finally:
            gw.stop()


# Publication date -> the close it must equal (the last business day before it), July 2026:
# 23 July, 28 July, 29 July, 6 August are holidays; 27 July is the listed non-working day.
COUNTERPARTS_REV2 = {
    "2026-07-21": "2026-07-20",
    "2026-07-22": "2026-07-21",
    "2026-07-23": "2026-07-22",
    "2026-07-24": "2026-07-22",
    "2026-07-25": "2026-07-24",
    "2026-07-26": "2026-07-24",
    "2026-07-27": "2026-07-24",
    "2026-07-28": "2026-07-24",
    "2026-07-29": "2026-07-24",
}
COUNTERPARTS_REV4 = {
    "2026-07-31": "2026-07-30",
    "2026-08-01": "2026-07-31",
    "2026-08-02": "2026-07-31",
    "2026-08-03": "2026-07-31",
    "2026-08-04": "2026-08-03",
    "2026-08-05": "2026-08-04",
    "2026-08-06": "2026-08-05",
    "2026-08-07": "2026-08-05",
}


def test_counterparts_skip_holidays_and_the_listed_non_working_day(july: Story) -> None:
    """DECISIONS 11 cross-check rule with DECISIONS 8's calendar (Peru's holidays from
    ``holidays`` plus the repo's list of extra non-working days): the value published on D
    equals the SBS close of the last business day before D. On the real July 2026 data every
    such pair agrees; ``contraparte`` is the counterpart's fuente; imported values are checked
    too; the 20th, whose close (17th) was never captured, has none."""
    items = publicado(july.gw, "2026-07-17", "2026-08-07", as_of=2)
    for fecha, close in COUNTERPARTS_REV2.items():
        (cotejo,) = items[fecha]["cotejos"]
        assert (cotejo["contraparte_fecha"], cotejo["resultado"], cotejo["revision"]) == (
            close,
            "ok",
            2,
        ), fecha
        assert cotejo["contraparte"] == "centralbank"
        assert items[fecha]["tiene_discrepancia_abierta"] is False
    assert items["2026-07-20"]["cotejos"] == []
    closes = cierre(july.gw, "2026-07-17", "2026-08-07")
    for close_date in ("2026-07-22", "2026-07-24"):
        for cotejo in closes[close_date]["cotejos"]:
            assert cotejo["contraparte"] == "importado"


def test_a_publication_whose_close_is_pending_gets_its_cotejo_when_the_close_arrives(
    july: Story,
) -> None:
    """DECISIONS 11: "No cotejo is written while the counterpart is absent or pending", and a
    cotejo "is written in the revision where either side's valid observation changes": 31 July
    points to the close of the 30th, pending at revision 2, recorded at revision 4. No alert
    for a pending date."""
    before = publicado(july.gw, "2026-07-31", "2026-08-07", as_of=2)
    assert all(item["cotejos"] == [] for item in before.values())
    after = publicado(july.gw, "2026-07-31", "2026-08-07")
    for fecha, close in COUNTERPARTS_REV4.items():
        assert checks(after[fecha]) == [(close, "ok", 4)], fecha
    # The only alert so far is the altered 30 July's discrepancy: none about pending dates.
    conditions = [a["condicion"] for a in july.seen["alerts_rev3"]["items"]]
    assert conditions == ["discrepancia:importado:2026-07-30"]


def test_a_close_carries_one_cotejo_per_publication_that_points_to_it(july: Story) -> None:
    """DECISIONS 11: "a cierre item carries one cotejo per publicado date that points to it",
    and a cotejo "is written in the revision where either side's valid observation changes".
    Revision 4 re-captured the close of 24 July identically and changed none of the
    publications of 25-30 July; it only declared 27-29 July (non-working days, listed n.d. by
    the central bank) without data, which moves no counterpart (none of them is a business day).
    So the close of the 24th still carries exactly one cotejo for each of 25-30 July, all of
    revision 2, and so do those publications."""
    close = cierre(july.gw, "2026-07-24", "2026-07-24")["2026-07-24"]
    pointing = sorted(c["contraparte_fecha"] for c in close["cotejos"])
    assert pointing == [
        "2026-07-25",
        "2026-07-26",
        "2026-07-27",
        "2026-07-28",
        "2026-07-29",
        "2026-07-30",
    ], checks(close)
    items = publicado(july.gw, "2026-07-25", "2026-07-30")
    for fecha in ("2026-07-28", "2026-07-29", "2026-07-30"):
        assert [c[2] for c in checks(items[fecha])] == [2], (fecha, checks(items[fecha]))


def test_a_discrepancy_nobody_re_observed_is_not_counted_again(july: Story) -> None:
    """DECISIONS 7: only "the same condition" recurring increments ``contador``. The altered
    publication of 30 July disagrees with the close of the 24th (revision 2: one
    ``discrepancia``). Revision 4 changed neither side (the close was re-captured identically;
    the n.d. it declared were non-working days, moving no counterpart): the alert must still
    count 1."""
    (before,) = [a for a in july.seen["alerts_rev3"]["items"] if a["tipo"] == "discrepancia"]
    assert (before["condicion"], before["contador"]) == ("discrepancia:importado:2026-07-30", 1)
    (after,) = [
        a for a in july.gw.get("/v1/alerts?open=false").json()["items"]
        if a["tipo"] == "discrepancia"
    ]  # fmt: skip
    assert after["id"] == before["id"]
    assert (after["contador"], after["ultima_vez"]) == (1, before["ultima_vez"]), after


def test_cierre_freshness_counts_business_days_across_holidays_and_the_listed_day(
    july: Story,
) -> None:
    """DECISIONS 8: cierre's ``fecha_esperada`` is "the business day before the last business
    day on or before today"; ``n_dias_habiles`` counts business days in (fecha_serie,
    fecha_esperada], and ``edad_dias_habiles`` is the same count. Fri 31 July with the 24th's
    close: expected the 30th, 1 business day late (27 July is a listed non-working day, 28 and
    29 are holidays). Sat 8 August with the 5th's close: expected the 5th (6 August is a
    holiday), al_dia."""
    early = july.seen["latest_cierre_31jul"].json()
    assert early["fecha_serie"] == "2026-07-24"
    assert early["frescura"] == {
        "estado": "atrasada",
        "n_dias_habiles": 1,
        "fecha_esperada": "2026-07-30",
        "hoy_lima": "2026-07-31",
        "zona": "America/Lima",
    }
    entries = {e["serie"]: e for e in july.seen["freshness_31jul"]["series"]}
    assert entries["cierre"] == {
        "moneda": "USD",
        "serie": "cierre",
        "ultima_fecha_serie": "2026-07-24",
        "fecha_esperada": "2026-07-30",
        "edad_dias_habiles": 1,
    }
    late = july.gw.get("/v1/rates/latest?currency=USD&series=cierre").json()
    assert late["fecha_serie"] == "2026-08-05"
    assert late["frescura"] == late["frescura"] | {
        "estado": "al_dia",
        "n_dias_habiles": 0,
        "fecha_esperada": "2026-08-05",
        "hoy_lima": "2026-08-08",
    }


def test_a_saturday_morning_with_fridays_publication_is_atrasada_with_zero(july: Story) -> None:
    """DECISIONS 8: for publicado ``fecha_esperada`` is today in Lima; "a Saturday morning with
    Friday's value is atrasada with 0"; the freshness entry carries the same count."""
    latest = july.gw.get("/v1/rates/latest?currency=USD&series=publicado").json()
    assert latest["fecha_serie"] == "2026-08-07"
    assert latest["frescura"] == {
        "estado": "atrasada",
        "n_dias_habiles": 0,
        "fecha_esperada": "2026-08-08",
        "hoy_lima": "2026-08-08",
        "zona": "America/Lima",
    }
    entries = {e["serie"]: e for e in july.gw.get("/v1/health/freshness").json()["series"]}
    assert entries["publicado"]["edad_dias_habiles"] == 0
    assert entries["publicado"]["fecha_esperada"] == "2026-08-08"


def test_cierre_coverage_has_no_gap_on_holidays_or_the_listed_day(july: Story) -> None:
    """DECISIONS 8 / SPEC gap criterion: business days between the first and last date, minus
    holidays and the listed non-working days: the closes of 20 July - 5 August have no gap
    (23, 27, 28, 29 July are not business days); a pending date is no gap."""
    entry = {e["serie"]: e for e in july.gw.get("/v1/coverage").json()["series"]}["cierre"]
    assert (entry["primera"], entry["ultima"], entry["total_fechas"]) == (
        "2026-07-20",
        "2026-08-05",
        9,
    )
    assert entry["huecos"] == []


# == 3. September 2026: the central bank's answers and a discrepancy's life ====================
#
# Revision 1: central bank on 8 Sept 20:00 answers an Imperva challenge page (200)
# Revision 2: import of the publications of 2, 4-9 Sept (see PUBLICATIONS)
# Revision 3: 8 Sept 20:00, the recording with 1 Sept's venta mistyped (3.386) and 3 Sept's venta
#             n.d. (one side: the date is n.d., and declared: later dates have values)
# Revision 4: 8 Sept 21:00, 1 Sept mistyped again (compra 3.306): a correction, still discrepant
# Revision 5: 10 Sept 20:00, 1 Sept right again; 8 Sept n.d. and 9 Sept published -> 8 declared
# Revision 6: 10 Sept 21:00, the same answer with the sell series listed first
# Revision 7: series publish cierre; build; a gateway on 10 Sept 21:30.

# The publications as the rule expects them if 3 and 8 September had no close: 4 Sept repeats
# the close of the 2nd, 9 Sept the close of the 7th (2 and 5-8 Sept are the real values).
PUBLICATIONS = {
    "2026-09-02": ("3.36", "3.368"),
    "2026-09-04": ("3.353", "3.36"),
    "2026-09-05": ("3.36", "3.369"),
    "2026-09-06": ("3.36", "3.369"),
    "2026-09-07": ("3.36", "3.369"),
    "2026-09-08": ("3.351", "3.372"),
    "2026-09-09": ("3.351", "3.372"),
}


def september_rows(first: tuple[str, str], with_ninth: bool) -> list[tuple[str, str, str]]:
    rows = [("01.Set.26", *first), *RECORDED_ROWS[1:]]
    rows[2] = ("03.Set.26", "3.355", "n.d.")
    if with_ninth:
        rows.append(("09.Set.26", "3.349", "3.37"))
    return rows


@pytest.fixture(scope="module")
def september(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    base = tmp_path_factory.mktemp("september")
    csv = base / "publicaciones.csv"
    csv.write_text(
        "fecha_serie,compra,venta\n"
        + "".join(f"{d},{c},{v}\n" for d, (c, v) in PUBLICATIONS.items()),
        encoding="utf-8",
    )
    with LocalServer(CHALLENGE, headers={"Content-Type": "text/html"}, path="/api") as bank:
        env = home_env(base) | {"FXEV_CENTRALBANK_URL": bank.url, "FXEV_CENTRALBANK_DAYS": "8"}
        ten = env | {"FXEV_CENTRALBANK_DAYS": "10"}
        printed: dict[str, Any] = {}
        seen: dict[str, Any] = {}

        def capture(name: str, body: bytes, when: str, where: dict[str, str] = env) -> None:
            bank.set(body=body, headers=BCRP_TYPE)
            printed[name] = ok(fx(base, where, "capture", "--source", "centralbank", now=when))

        printed["challenge"] = ok(
            fx(base, env, "capture", "--source", "centralbank", now=lima("2026-09-08", 20))
        )
        printed["import"] = ok(
            fx(base, env, "import", str(csv), "--actor", "audit", "--justification",
               "publications shaped by the cross-check rule", now=lima("2026-09-10", 8))
        )  # fmt: skip
        typo = september_rows(("3.36", "3.386"), False)  # 1 Sept venta mistyped
        capture("typo", bcrp_body(typo), lima("2026-09-08", 20))
        typo2 = september_rows(("3.306", "3.368"), False)  # 1 Sept compra mistyped
        capture("typo2", bcrp_body(typo2), lima("2026-09-08", 21))
        right = september_rows(("3.36", "3.368"), True)
        capture("right", bcrp_body(right), lima("2026-09-10", 20), ten)
        capture("swapped", bcrp_body(right, swapped=True), lima("2026-09-10", 21), ten)
        ok(fx(base, env, "series", "publish", "cierre", "--actor", "ops", "--justification", "a"))
        assert ok(fx(base, env, "build"))["published_revision"] == 7
        gw = Gateway(
            env=env | {"FXEV_NOW": lima("2026-09-10", 21)},
            token=issue(base, env, "september"),
            log_path=base / "gateway.log",
        )
        gw.start()
        try:
            yield Story(gw, env, printed, seen)
        finally:
            gw.stop()


def test_a_challenge_page_is_cambio_formato_resolved_by_the_next_good_capture(
    september: Story,
) -> None:
    """DECISIONS 11: the central bank "may answer 200 with an HTML page ... HTML is
    cambio_formato"; DECISIONS 7: resolved by the system when the next capture of that source
    succeeds."""
    challenge = september.printed["challenge"]
    assert challenge["outcome"] == "fallo"
    assert [a["condicion"] for a in challenge["alertas"]] == ["cambio_formato:centralbank"]
    alerts = by_condition(september.gw.get("/v1/alerts?open=false").json()["items"])
    alert = alerts["cambio_formato:centralbank"]
    assert (alert["estado"], alert["resuelta_por"]) == ("resuelta", "sistema")
    assert alert["resuelta_en"] == "2026-09-09T01:00:00.000000Z"  # the next capture's instant


def test_a_discrepancy_alert_is_keyed_by_date_bumped_when_it_recurs_never_auto_resolved(
    september: Story,
) -> None:
    """DECISIONS 7: data alerts are keyed type + source + fecha_serie; the same condition while
    abierta increments contador and moves ultima_vez; ``discrepancia`` is not among the types the
    system resolves, so the closes that later agree leave it open. DECISIONS 11: the service
    never picks a winner."""
    typo = september.printed["typo"]
    assert [a["condicion"] for a in typo["alertas"] if a["tipo"] == "discrepancia"] == [
        "discrepancia:importado:2026-09-02"
    ]
    alerts = by_condition(september.gw.get("/v1/alerts?open=false").json()["items"])
    alert = alerts["discrepancia:importado:2026-09-02"]
    assert (alert["estado"], alert["contador"], alert["fecha_serie"]) == (
        "abierta",
        2,
        "2026-09-02",
    )
    assert alert["primera_vez"] == "2026-09-09T01:00:00.000000Z"
    assert alert["ultima_vez"] == "2026-09-09T02:00:00.000000Z"
    item = publicado(september.gw, "2026-09-02", "2026-09-02")["2026-09-02"]
    assert (item["compra"], item["venta"], item["fuente"]) == ("3.360", "3.368", "importado")


def test_tiene_discrepancia_abierta_follows_the_last_check_against_the_same_counterpart(
    september: Story,
) -> None:
    """SPEC ``tiene_discrepancia_abierta``: true when a discrepante cross-check is later than the
    last ok against the same counterpart (DECISIONS 11: same contraparte and counterpart date);
    cotejos are those of the queried revision; an identical re-capture writes none."""
    expected = {
        2: ([], False),
        3: ([("2026-09-01", "discrepante", 3)], True),
        4: ([("2026-09-01", "discrepante", 3), ("2026-09-01", "discrepante", 4)], True),
        5: (
            [
                ("2026-09-01", "discrepante", 3),
                ("2026-09-01", "discrepante", 4),
                ("2026-09-01", "ok", 5),
            ],
            False,
        ),
    }
    expected[6] = expected[5]
    expected[7] = expected[5]
    for revision, (cotejos, flag) in expected.items():
        item = publicado(september.gw, "2026-09-02", "2026-09-02", as_of=revision)["2026-09-02"]
        assert (checks(item), item["tiene_discrepancia_abierta"]) == (cotejos, flag), revision


def test_a_row_with_one_side_n_d_is_a_declared_gap_that_moves_the_counterpart(
    september: Story,
) -> None:
    """DECISIONS 11: "A row with either side n.d. counts as n.d. for that date (the raw row stays
    in the evidence)"; n.d. before a later value is nd_fuente, which "moves the counterpart one
    business day earlier": the publication of 4 Sept is checked against the close of the 2nd.
    DECISIONS 8: the gap's motivo is nd_fuente (8 Sept too, declared once the 9th had a value)."""
    closes = cierre(september.gw, "2026-09-01", "2026-09-09")
    assert list(closes) == ["2026-09-01", "2026-09-02", "2026-09-04", "2026-09-07", "2026-09-09"]
    entry = {e["serie"]: e for e in september.gw.get("/v1/coverage").json()["series"]}["cierre"]
    assert entry["huecos"] == [
        {"fecha": "2026-09-03", "motivo": "nd_fuente"},
        {"fecha": "2026-09-08", "motivo": "nd_fuente"},
    ]
    fourth = publicado(september.gw, "2026-09-04", "2026-09-04", as_of=3)["2026-09-04"]
    assert checks(fourth) == [("2026-09-02", "ok", 3)]
    detail = september.gw.get(f"/v1/observations/{closes['2026-09-02']['observacion_id']}").json()
    evidence = september.gw.get(f"/v1/evidence/{detail['observacion']['evidencia_id']}")
    assert b'"name":"03.Set.26",\n"values":["3.355","n.d."]' in evidence.content


def test_a_pending_close_declared_later_moves_the_counterpart_in_that_revision(
    september: Story,
) -> None:
    """DECISIONS 11: a trailing n.d. is pending (no cotejo, no alert); once a later date has a
    value it is nd_fuente and moves the counterpart: the publication of 9 Sept has no cotejo
    until revision 5, then one against the close of the 7th."""
    assert checks(publicado(september.gw, "2026-09-09", "2026-09-09", as_of=4)["2026-09-09"]) == []
    now = publicado(september.gw, "2026-09-09", "2026-09-09")["2026-09-09"]
    assert checks(now) == [("2026-09-07", "ok", 5)]
    every = september.gw.get("/v1/alerts?open=false").json()["items"]
    assert [a for a in every if a["fecha_serie"] in ("2026-09-08", "2026-09-09")] == []


def test_columns_are_matched_to_sides_by_the_series_names(september: Story) -> None:
    """DECISIONS 11: cierre is PD04639PD (compra) and PD04640PD (venta): "check the codes
    against the names the API returns (config.series[].name)". The same answer with the sell
    series listed first is an identical re-capture of every date, not a swap of the values."""
    swapped = september.printed["swapped"]
    assert swapped["outcome"] == "identica", swapped
    assert {o["outcome"] for o in swapped["observaciones"]} == {"identica"}
    closes = cierre(september.gw, "2026-09-01", "2026-09-09")
    assert (closes["2026-09-07"]["compra"], closes["2026-09-07"]["venta"]) == ("3.351", "3.372")
    assert closes["2026-09-07"]["marcas"] == ["capturada", "recaptura_identica"]
    detail = september.gw.get(f"/v1/observations/{closes['2026-09-07']['observacion_id']}")
    assert "/PD04639PD-PD04640PD/json/" in detail.json()["observacion"]["identidad_consulta"]


# == 4. The real 2021-2026 history (the demo) against the business calendar ====================


def test_publicado_coverage_of_the_real_history_follows_the_business_calendar(
    gateway: Gateway,
) -> None:
    """DECISIONS 8: business day = Monday to Friday minus Peru's public holidays (``holidays``,
    PE) minus the repo's listed non-working days (2026-07-27, SOURCES 7); coverage gaps are
    exactly the business days between the first and last real publication without one,
    ``sin_dato`` (no run failed on them); ``total_fechas`` counts the distinct valid dates, the
    imported and the captured alike."""
    dates = {day.fecha for day in sunat_history()}
    peru = holidays.country_holidays("PE", years=range(2021, 2027))
    # SOURCES 7 lists 2024-2026 by hand: the package installed agrees with it.
    for listed in ("2024-07-29", "2025-10-08", "2026-04-03", "2026-08-06", "2026-10-08"):
        assert date.fromisoformat(listed) in peru
    closed = set(peru) | {date(2026, 7, 27)}
    expected = []
    day = min(dates)
    while day <= max(dates):
        if day.weekday() < 5 and day not in closed and day not in dates:
            expected.append({"fecha": day.isoformat(), "motivo": "sin_dato"})
        day += timedelta(days=1)
    (entry,) = gateway.get("/v1/coverage").json()["series"]
    assert (entry["primera"], entry["ultima"]) == ("2021-01-01", "2026-09-21")
    assert entry["total_fechas"] == len(dates)
    assert entry["huecos"] == expected
    assert {"fecha": "2024-07-30", "motivo": "sin_dato"} in expected  # SOURCES 2.3: missing
