"""The operator's command line against the rules of docs/decisions.md (commands, observations,
alerts, sources), run as the real ``fxev`` command.

Every check runs the installed console script as a subprocess in its own temporary
``FXEV_HOME``/``FXEV_SITE``, against a local HTTP server (``tests/builder/localserver.py``) that
serves the recorded bytes of the sources (the tax authority's documented line, the central bank's
recorded answer), and reads back the real SQLite registry.

Each test pins a rule of docs/decisions.md that no other test checked from outside.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from builder.core.business_days import today_in_lima
from builder.registry.store import Registry
from tests.builder.localserver import LocalServer
from tests.realdata import bcrp_recording
from tests.support.cli import FXEV, Fxev, Ran, clean_env, run

# 2026-09-08 20:00 in Lima: the central bank recording asked for 1..8 September.
NOW_CB = "2026-09-08T20:00:00-05:00"
CAPTURE_KEYS = {"revision", "outcome", "observacion_id", "observaciones", "alerta", "alertas"}
DATE_OUTCOME_KEYS = {"fecha_serie", "serie", "outcome", "observacion_id"}
RECORDED = bcrp_recording()


def run_fxev(cwd: Path, env: dict[str, str], *args: str) -> Ran:
    return run([FXEV, *args], cwd, env)


@pytest.fixture
def txt_server() -> Iterator[LocalServer]:
    with LocalServer(body=b"08/09/2026|3.351|3.372|\r\n") as local:
        yield local


@pytest.fixture
def cb_server() -> Iterator[LocalServer]:
    with LocalServer(
        body=RECORDED.body, headers={"Content-Type": "text/html; charset=UTF-8"}, path="/api"
    ) as local:
        yield local


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def fxev(tmp_path: Path, home: Path, txt_server: LocalServer, cb_server: LocalServer) -> Fxev:
    """``fxev ARGS`` with its own home and site, both sources on the local servers."""
    env = clean_env(
        FXEV_HOME=str(home),
        FXEV_SITE=str(tmp_path / "site"),
        FXEV_NOW=NOW_CB,
        FXEV_TAXAUTH_URL=txt_server.url,
        FXEV_CENTRALBANK_URL=cb_server.url,
        FXEV_CENTRALBANK_DAYS="8",
    )

    def run(*args: str, now: str | None = None) -> Ran:
        return run_fxev(tmp_path, env | ({"FXEV_NOW": now} if now else {}), *args)

    return run


def ok(ran: Ran) -> dict[str, Any]:
    assert ran.code == 0, ran
    assert "Traceback" not in ran.stderr, ran.stderr
    return ran.last


def write_csv(path: Path, *rows: str, header: str = "fecha_serie,compra,venta") -> Path:
    path.write_text(header + "\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def with_periods(changes: dict[str, list[str]]) -> bytes:
    document = json.loads(RECORDED.body)
    for period in document["periods"]:
        if period["name"] in changes:
            period["values"] = changes[period["name"]]
    return json.dumps(document).encode()


def event_types(registry: Registry, observation_id: str) -> list[str]:
    return [event.tipo for event in registry.events_of(observation_id)]


# == Section 3: the CLI table, end to end ==================================================


def test_every_command_of_the_table_prints_its_documented_last_line(
    fxev: Fxev, tmp_path: Path
) -> None:
    """Section 3 table: capture (both sources), import, annotate, series publish, build (twice),
    alerts list/ack/resolve, token issue/list/revoke, registry verify, export warc, log key."""
    taxauth = ok(fxev("capture"))
    assert set(taxauth) == CAPTURE_KEYS
    assert taxauth["outcome"] == "nueva" and taxauth["revision"] == 1
    assert taxauth["observacion_id"] == taxauth["observaciones"][0]["observacion_id"]

    closes = ok(fxev("capture", "--source", "centralbank"))
    assert set(closes) == CAPTURE_KEYS
    assert closes["observacion_id"] is None  # several dates: null
    assert all(set(item) == DATE_OUTCOME_KEYS for item in closes["observaciones"])
    assert [i["fecha_serie"] for i in closes["observaciones"]] == [
        "2026-09-01",
        "2026-09-02",
        "2026-09-03",
        "2026-09-04",
        "2026-09-07",
    ]  # fmt: skip  (2026-09-08 is n.d. with nothing after it: pending, not listed)
    assert closes["outcome"] == "nueva"

    csv = write_csv(tmp_path / "seed.csv", "2026-09-02,3.360,3.368", "2026-09-03,3.353,3.360")
    imported = ok(fxev("import", str(csv), "--actor", "ana", "--justification", "fixture"))
    assert set(imported) == CAPTURE_KEYS and imported["outcome"] == "nueva"

    annotated = ok(
        fxev("annotate", "--fecha", "2026-09-03", "--texto", "t", "--actor", "a",
             "--justification", "j")
    )  # fmt: skip
    assert set(annotated) == CAPTURE_KEYS
    switched = ok(fxev("series", "publish", "cierre", "--actor", "a", "--justification", "j"))
    assert set(switched) == CAPTURE_KEYS and isinstance(switched["revision"], int)

    built = ok(fxev("build"))
    head = switched["revision"]
    assert built["published_revision"] == head
    again = ok(fxev("build"))  # nothing new: the same N, exit 0
    assert again["published_revision"] == head

    listed = ok(fxev("alerts", "list"))
    assert set(listed) == {"items"}
    for alert in listed["items"]:
        assert {"id", "tipo", "estado", "condicion", "contador", "primera_vez", "ultima_vez",
                "detalle", "resuelta_por"} <= set(alert)  # fmt: skip
    # The import's publications were cross-checked against the closes (imports included).
    assert all(a["tipo"] != "discrepancia" for a in listed["items"]), listed

    issued = fxev("token", "issue", "acme")
    assert issued.code == 0, issued
    lines = issued.stdout.splitlines()
    first = json.loads(lines[0])
    assert first["name"] == "acme" and lines[-1].startswith("fxev_")
    tokens = ok(fxev("token", "list"))
    assert set(tokens) == {"items"} and [t["id"] for t in tokens["items"]] == [first["id"]]
    ok(fxev("token", "revoke", first["id"]))

    verified = fxev("registry", "verify")
    assert verified.code == 0
    *plain, last = verified.stdout.splitlines()
    assert plain and all(not line.startswith("{") for line in plain)
    assert json.loads(last)["ok"] is True and json.loads(last)["findings"] == []

    exported = ok(fxev("export", "warc", str(tmp_path / "out.warc")))
    assert (tmp_path / "out.warc").stat().st_size > 0 and exported
    key = fxev("log", "key")
    assert key.code == 0 and key.stdout.count("\n") == 1 and "+" in key.stdout


@pytest.mark.parametrize(
    ("args", "extra", "missing"),
    [
        (("publish",), {"FXEV_STORE_URL": "s3://bucket/prefix"}, "var/registry.sqlite"),
        (("ledger", "ship"), {"FXEV_STORE_URL": "s3://bucket/prefix"}, "var/ledger"),
        (("log", "key"), {"FXEV_LOG_ORIGIN": "example.org/log"}, "var"),
    ],
    ids=["publish", "ledger ship", "log key with its origin set"],
)
def test_commands_refuse_a_home_without_their_store(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str], missing: str
) -> None:
    """Section 3: "`publish` need[s] the registry ... `ledger ship` a ledger. One line naming the
    resolved path, exit 1; such a command never creates an empty home." (not in the existing
    REFUSING table of test_newcomer_paths.py). `log key` keeps its key in the home, so with its
    origin given (no registry needed to name the log) it still needs the home to exist."""
    done = run_fxev(tmp_path, clean_env(**extra), *args)
    assert done.code == 1, done
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and str(tmp_path / missing) in done.stderr
    assert list(tmp_path.iterdir()) == []


# -- DISCREPANCIES of section 3 ------------------------------------------------------------


FAILING_WRITES = {
    "import of a missing file": ("import", "/nonexistent/x.csv", "--actor", "a",
                                 "--justification", "j"),
    "series publish of publicado": ("series", "publish", "publicado", "--actor", "a",
                                    "--justification", "j"),
    "alerts ack of an unknown id": ("alerts", "ack", "no-such-alert", "--actor", "a"),
    "alerts resolve of an unknown id": ("alerts", "resolve", "no-such-alert", "--actor", "a"),
    "token issue with an empty name": ("token", "issue", " "),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FAILING_WRITES))
def test_a_command_that_fails_changes_nothing_not_even_creating_the_home(
    tmp_path: Path, name: str
) -> None:
    """Errors go to stderr with a non-zero exit and change nothing: a refused command leaves no
    ``./var`` (no empty store) that a later ``fxev build`` would take for a home."""
    done = run_fxev(tmp_path, clean_env(), *FAILING_WRITES[name])
    assert done.code != 0, done
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the failed command created a home"


def test_a_bad_import_header_changes_nothing(tmp_path: Path) -> None:
    """The same rule for a CSV with a bad header (rejected whole)."""
    work = tmp_path / "work"
    work.mkdir()
    csv = write_csv(tmp_path / "bad.csv", "2026-09-18,3.35", header="fecha,valor")
    done = run_fxev(work, clean_env(), "import", str(csv), "--actor", "a", "--justification", "j")
    assert done.code == 1 and done.stderr.startswith("fxev: line 1: header must be")
    assert list(work.iterdir()) == [], "the rejected import created a home"


@pytest.mark.parametrize(
    "args",
    [
        ("capture", "--source", "nope"),
        ("import", "file.csv", "--actor", "a"),  # --justification missing
        ("alerts", "ack", "some-id"),  # --actor missing
    ],
    ids=["bad choice", "missing --justification", "missing --actor"],
)
def test_a_usage_error_is_one_line_on_stderr(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Every CLI error is one line on stderr, a usage error too (argparse's usage block is not
    printed)."""
    done = run_fxev(tmp_path, clean_env(FXEV_HOME=str(tmp_path / "h")), *args)
    assert done.code != 0
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_token_issue_prints_id_and_name_then_the_token(fxev: Fxev) -> None:
    """`token issue` prints `{"id": ..., "name": ...}`, then the token alone on the last line."""
    # A date still to come in Lima whenever the suite runs: the command refuses one already over.
    expires = today_in_lima(datetime.now(UTC)) + timedelta(days=365)
    issued = fxev("token", "issue", "acme", "--expires", expires.isoformat())
    assert issued.code == 0, issued
    first, token = issued.stdout.splitlines()
    assert set(json.loads(first)) == {"id", "name"}
    assert token.startswith("fxev_")


def test_an_annotation_about_every_series_reports_serie_null(fxev: Fxev) -> None:
    """An annotation without --serie is about all series: `"serie": null` in what `annotate`
    prints, as in the annotation record."""
    printed = ok(
        fxev("annotate", "--fecha", "2026-09-03", "--texto", "t", "--actor", "a",
             "--justification", "j")
    )  # fmt: skip
    assert [item["serie"] for item in printed["observaciones"]] == [None]


# == Section 6: observations, values, plausibility ==========================================


def test_central_bank_values_with_many_decimals_are_rounded_half_up(
    fxev: Fxev, cb_server: LocalServer, home: Path
) -> None:
    """The central bank may carry more than 3 decimals: rounded half-up, the raw text kept."""
    raw = "3.35114285714286"
    cb_server.set(body=with_periods({"07.Set.26": [raw, "3.3725"]}))
    result = ok(fxev("capture", "--source", "centralbank"))
    assert result["outcome"] == "nueva", result
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-07")
        assert close is not None
        assert (close.compra, close.venta) == ("3.351", "3.373")
        assert (close.compra_cruda, close.venta_cruda) == (raw, "3.3725")
    finally:
        registry.close()


def test_central_bank_four_decimals_are_rounded_half_up_and_kept_raw(
    fxev: Fxev, cb_server: LocalServer, home: Path
) -> None:
    """Section 6: half-up (not banker's) rounding of a 4-decimal close, raw text kept."""
    cb_server.set(body=with_periods({"07.Set.26": ["3.3505", "3.3725"]}))
    ok(fxev("capture", "--source", "centralbank"))
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-07")
        assert close is not None
        assert (close.compra, close.venta) == ("3.351", "3.373")
        assert (close.compra_cruda, close.venta_cruda) == ("3.3505", "3.3725")
    finally:
        registry.close()


def test_imports_round_many_decimals_half_up_and_record_their_origin(
    fxev: Fxev, tmp_path: Path, home: Path
) -> None:
    """Section 6: imports may carry more decimals, rounded half-up; evidence is the CSV,
    `identidad_consulta` `IMPORT <file name>`, `fragmento` its line, `version_parser`
    `importado_csv-1.0`, event `importada` with actor, justification, line and sha256; optional
    `moneda,serie` columns."""
    csv = write_csv(
        tmp_path / "hist.csv",
        "2026-09-02,3.35950000000001,3.3604999,USD,cierre",
        "2026-09-03,2.0005,2.0015,USD,publicado",
        header="fecha_serie,compra,venta,moneda,serie",
    )
    result = ok(fxev("import", str(csv), "--actor", "ana", "--justification", "from a test"))
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-02")
        published = registry.valid_observation("USD", "publicado", "2026-09-03")
        assert close is not None and published is not None
        assert (close.compra, close.venta) == ("3.360", "3.360")
        assert (published.compra, published.venta) == ("2.001", "2.002")
        assert close.compra_cruda == "3.35950000000001"
        assert published.identidad_consulta == "IMPORT hist.csv"
        assert published.fragmento == "2026-09-03,2.0005,2.0015,USD,publicado"
        assert published.version_parser == "importado_csv-1.0"
        assert published.fuente == "importado"
        (event,) = registry.events_of(published.id)
        assert event.tipo == "importada"
        assert {"actor", "justificacion", "sha256"} <= set(event.detalle)
        assert event.detalle["actor"] == "ana"
        assert result["revision"] == close.revision_creada == published.revision_creada
    finally:
        registry.close()


def test_plausibility_threshold_is_strictly_above_and_imports_count_as_previous(
    fxev: Fxev, txt_server: LocalServer, tmp_path: Path, home: Path
) -> None:
    """Section 6: `plausibilidad_baja` for "a move of either side strictly above the threshold
    (default 3%) from the valid observation of the same series with the greatest earlier
    `fecha_serie` (imports included)"; the value is kept, an alert keyed type+source+date."""
    csv = write_csv(tmp_path / "base.csv", "2026-09-17,3.000,3.000", "2026-09-19,3.000,3.000")
    ok(
        fxev("import", str(csv), "--actor", "a", "--justification", "test base",
             now="2026-09-20T13:00:00-05:00")
    )  # fmt: skip
    txt_server.set(body=b"18/09/2026|3.090|3.090|\r\n")  # exactly +3.000%: not marked
    exact = ok(fxev("capture", now="2026-09-18T13:00:00-05:00"))
    txt_server.set(body=b"20/09/2026|3.091|3.091|\r\n")  # +3.033% from the 19th's import
    above = ok(fxev("capture", now="2026-09-20T13:00:00-05:00"))
    assert exact["outcome"] == above["outcome"] == "nueva"
    assert [a["tipo"] for a in exact["alertas"]] == []
    assert [a["tipo"] for a in above["alertas"]] == ["plausibilidad_baja"]
    assert above["alerta"]["condicion"] == "plausibilidad_baja:taxauth_txt:2026-09-20"
    registry = Registry.open(home)
    try:
        exact_id = exact["observaciones"][0]["observacion_id"]
        above_id = above["observaciones"][0]["observacion_id"]
        assert event_types(registry, exact_id) == ["capturada"]
        assert event_types(registry, above_id) == ["capturada", "plausibilidad_baja"]
        (mark,) = [e for e in registry.events_of(above_id) if e.tipo == "plausibilidad_baja"]
        references = {m.get("referencia_fecha_serie") for m in mark.detalle["motivos"]}
        assert references == {"2026-09-19"}
    finally:
        registry.close()


def test_a_jump_inside_one_central_bank_answer_is_marked_against_the_earlier_date_of_it(
    fxev: Fxev, cb_server: LocalServer, home: Path
) -> None:
    """Section 6: within one multi-date run the previous valid observation is the earlier date
    recorded by the same run (one revision)."""
    cb_server.set(body=with_periods({"07.Set.26": ["3.500", "3.510"]}))  # +4.2% from the 4th
    result = ok(fxev("capture", "--source", "centralbank"))
    assert [a["condicion"] for a in result["alertas"]] == [
        "plausibilidad_baja:centralbank:2026-09-07"
    ]
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-07")
        assert close is not None and close.compra == "3.500"
        assert event_types(registry, close.id) == ["capturada", "plausibilidad_baja"]
    finally:
        registry.close()


def test_a_correction_of_the_central_bank_is_one_revision_with_the_documented_events(
    fxev: Fxev, cb_server: LocalServer, home: Path
) -> None:
    """Section 6: `capturada` then `correccion` (`detalle.supersede`) on the new observation,
    `supersedida` (`detalle.superseded_por`) on the old one; `identica` dates get
    `recaptura_identica` with the new evidence's sha256; outcome is the worst (correccion)."""
    first = ok(fxev("capture", "--source", "centralbank"))
    cb_server.set(body=with_periods({"03.Set.26": ["3.356", "3.365"]}))
    second = ok(fxev("capture", "--source", "centralbank"))
    assert second["outcome"] == "correccion"
    outcomes = {i["fecha_serie"]: i["outcome"] for i in second["observaciones"]}
    assert outcomes["2026-09-03"] == "correccion"
    assert {v for k, v in outcomes.items() if k != "2026-09-03"} == {"identica"}
    old_id = {i["fecha_serie"]: i["observacion_id"] for i in first["observaciones"]}["2026-09-03"]
    registry = Registry.open(home)
    try:
        new = registry.valid_observation("USD", "cierre", "2026-09-03")
        assert new is not None and new.supersedes == old_id
        events = registry.events_of(new.id)
        assert [e.tipo for e in events] == ["capturada", "correccion"]
        assert events[1].detalle["supersede"] == old_id
        old_events = registry.events_of(old_id)
        assert [e.tipo for e in old_events][-1] == "supersedida"
        assert old_events[-1].detalle["superseded_por"] == new.id
        assert {e.revision for e in events} | {old_events[-1].revision} == {second["revision"]}
        same = registry.valid_observation("USD", "cierre", "2026-09-01")
        assert same is not None
        recapture = registry.events_of(same.id)[-1]
        assert recapture.tipo == "recaptura_identica"
        evidence_sha = registry.events_of(new.id)[0].detalle["sha256"]
        assert recapture.detalle["sha256"] == evidence_sha
    finally:
        registry.close()


# == Section 7: alerts ======================================================================


def test_a_central_bank_outage_alerts_once_per_source_and_the_next_capture_resolves_it(
    fxev: Fxev, cb_server: LocalServer
) -> None:
    """Section 7: key type + source for source failures (one alert for the run, every requested
    date in the events); bumped while open; resolved by the system (`resuelta_por: "sistema"`)
    when the next capture of that source succeeds; an operator may resolve `abierta` directly."""
    cb_server.set(status=503, body=b"<html>down</html>")
    down = ok(fxev("capture", "--source", "centralbank"))
    assert down["outcome"] == "fallo" and len(down["observaciones"]) == 8
    assert {i["outcome"] for i in down["observaciones"]} == {"fallo"}
    assert down["alerta"]["condicion"] == "fuente_no_disponible:centralbank"
    again = ok(fxev("capture", "--source", "centralbank"))
    assert again["alerta"]["id"] == down["alerta"]["id"] and again["alerta"]["contador"] == 2
    cb_server.set(status=200, body=RECORDED.body)
    back = ok(fxev("capture", "--source", "centralbank"))
    resolved = [a for a in back["alertas"] if a["id"] == down["alerta"]["id"]]
    assert resolved and resolved[0]["estado"] == "resuelta"
    assert resolved[0]["resuelta_por"] == "sistema"
    assert ok(fxev("alerts", "list"))["items"] == []
    cb_server.set(status=503)
    reopened = ok(fxev("capture", "--source", "centralbank"))
    assert reopened["alerta"]["id"] != down["alerta"]["id"]  # after resuelta: a new alert
    closed = ok(fxev("alerts", "resolve", reopened["alerta"]["id"], "--actor", "ana"))
    assert closed["estado"] == "resuelta" and closed["resuelta_por"] == "ana"


# == Section 11: cross-checks ===============================================================


def test_a_weekend_publication_is_checked_against_fridays_close_and_the_close_lists_it(
    fxev: Fxev, txt_server: LocalServer, home: Path
) -> None:
    """Section 11: the value published on D (Saturday 2026-09-05 and Monday 2026-09-07) equals
    the SBS close of the last business day before D (Friday 2026-09-04); the close carries one
    cotejo per publication that points to it, with `contraparte_observacion_id` and
    `contraparte_fecha`."""
    ok(fxev("capture", "--source", "centralbank"))
    for day in ("05", "07"):
        txt_server.set(body=f"{day}/09/2026|3.360|3.369|\r\n".encode())
        result = ok(fxev("capture", now=f"2026-09-{day}T13:00:00-05:00"))
        assert result["alertas"] == [], result
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-04")
        assert close is not None
        rows = registry.conn.execute(
            "SELECT * FROM cotejos WHERE observacion_id = ? ORDER BY revision, seq", (close.id,)
        ).fetchall()
        assert [(r["contraparte"], r["contraparte_fecha"], r["resultado"]) for r in rows] == [
            ("taxauth_txt", "2026-09-05", "ok"),
            ("taxauth_txt", "2026-09-07", "ok"),
        ]
        publication = registry.valid_observation("USD", "publicado", "2026-09-07")
        assert publication is not None
        (mine,) = registry.conn.execute(
            "SELECT * FROM cotejos WHERE observacion_id = ?", (publication.id,)
        ).fetchall()
        assert (mine["contraparte"], mine["contraparte_fecha"]) == ("centralbank", "2026-09-04")
        assert mine["contraparte_observacion_id"] == close.id
    finally:
        registry.close()


# -- dates after today in a central-bank answer (section 6) ---------------------------------


def test_a_central_bank_close_dated_tomorrow_is_recorded_and_marked(fxev: Fxev, home: Path) -> None:
    """A close dated tomorrow in Lima is recorded and marked `plausibilidad_baja`, with its
    alert: on Sunday 2026-09-06 the recorded answer lists Monday 2026-09-07."""
    result = ok(fxev("capture", "--source", "centralbank", now="2026-09-06T20:00:00-05:00"))
    assert result["outcome"] == "nueva", result["alerta"]
    assert [a["condicion"] for a in result["alertas"]] == [
        "plausibilidad_baja:centralbank:2026-09-07"
    ]
    registry = Registry.open(home)
    try:
        close = registry.valid_observation("USD", "cierre", "2026-09-07")
        assert close is not None
        assert "plausibilidad_baja" in event_types(registry, close.id)
    finally:
        registry.close()


def test_a_central_bank_close_dated_two_days_ahead_is_invariante_fallida(fxev: Fxev) -> None:
    """A date more than one day after today in Lima is `invariante_fallida`, no observation:
    on Saturday 2026-09-05 the answer's 2026-09-07 row is two days ahead."""
    result = ok(fxev("capture", "--source", "centralbank", now="2026-09-05T20:00:00-05:00"))
    assert result["outcome"] == "fallo"
    assert result["alerta"]["tipo"] == "invariante_fallida", result["alerta"]["detalle"]
