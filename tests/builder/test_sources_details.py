"""Sources, series, cross-checks, observations and capture outcomes in detail, from outside.

Every test runs the real ``fxev`` console script as a subprocess with its own ``FXEV_HOME`` under
``tmp_path``; sources are served by a real local HTTP server (``tests.builder.localserver``) from
recorded bytes (``tests/fixtures/real``); results are read from the CLI's last JSON line, the
WARC export, or a real gateway (``python -m gateway serve``, stopped by its PID) over the built
tree. Each test quotes the rule it checks (DECISIONS and SPEC).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.builder.localserver import LocalServer
from tests.contract.conftest import Gateway, _running
from tests.realdata import bcrp_recording, sunat_history
from tests.support.clock import clear_of_lima_midnight

FXEV = Path(sys.executable).with_name("fxev")
ROOT = Path(__file__).resolve().parents[2]
LIMA = ZoneInfo("America/Lima")
TXT_NOW = "2026-09-20T13:05:00-05:00"  # a Sunday in Lima; the real file said 20/09/2026 that day
CB_NOW = "2026-09-08T20:00:00-05:00"  # the recording asked for 1..8 September
DOCUMENTED = b"20/09/2026|3.354|3.362|\r\n"
HTML_UTF8 = {"Content-Type": "text/html; charset=UTF-8"}
SHAPE = {"revision", "outcome", "observacion_id", "observaciones", "alerta", "alertas"}


# -- helpers ---------------------------------------------------------------------------------


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess[bytes]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout.decode()
        self.stderr = proc.stderr.decode()

    @property
    def last(self) -> dict[str, Any]:
        return json.loads(self.stdout.splitlines()[-1])


class Home:
    """One FXEV_HOME / FXEV_SITE pair and the ``fxev`` command run against it."""

    def __init__(self, base: Path, now: str, **settings: str) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
        self.env |= {
            "FXEV_HOME": str(base / "home"),
            "FXEV_SITE": str(base / "site"),
            "FXEV_NOW": now,
            "FXEV_MIN_FREE_BYTES": "0",
            "PYTHONPATH": str(ROOT),
            "FXEV_RATE_LIMIT_PER_MIN": "100000",
            "FXEV_RATE_LIMIT_PER_DAY": "1000000",
            **settings,
        }

    @property
    def home(self) -> Path:
        return self.base / "home"

    def run(self, *args: str, **extra: str) -> Ran:
        proc = subprocess.run(
            [str(FXEV), *args],
            env=self.env | extra,
            cwd=self.base,
            capture_output=True,
            timeout=90,
            check=False,
        )
        return Ran(proc)

    def ok(self, *args: str, **extra: str) -> dict[str, Any]:
        ran = self.run(*args, **extra)
        assert ran.code == 0, (args, ran.code, ran.stderr)
        return ran.last

    def gateway(self) -> Iterator[Gateway]:
        issued = self.run("token", "issue", "reader")
        assert issued.code == 0, issued.stderr
        yield from _running(self.base, self.env, issued.stdout.splitlines()[-1])


def one_line_error(ran: Ran) -> None:
    assert ran.code != 0, ran.stdout
    assert ran.stdout == "", ran.stdout
    assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "Traceback" not in ran.stderr


def cb_body(changes: dict[str, list[str]] | None = None, drop: tuple[str, ...] = ()) -> bytes:
    """The recorded central-bank answer (exact bytes when unchanged), periods edited by label."""
    recorded = bcrp_recording().body
    if not changes and not drop:
        return recorded
    document = json.loads(recorded)
    periods = []
    for period in document["periods"]:
        if period["name"] in drop:
            continue
        if changes and period["name"] in changes:
            period["values"] = changes[period["name"]]
        periods.append(period)
    document["periods"] = periods
    return json.dumps(document).encode()


def publications_csv(path: Path, start: date, end: date) -> Path:
    rows = [d for d in sunat_history() if start <= d.fecha <= end]
    text = "fecha_serie,compra,venta\n" + "".join(f"{d.fecha},{d.compra},{d.venta}\n" for d in rows)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def txt_server() -> Iterator[LocalServer]:
    with LocalServer(body=DOCUMENTED, headers={"Content-Type": "text/plain"}) as server:
        yield server


@pytest.fixture
def cb_server() -> Iterator[LocalServer]:
    with LocalServer(body=cb_body(), headers=HTML_UTF8, path="/api") as server:
        yield server


@pytest.fixture
def txt_home(tmp_path: Path, txt_server: LocalServer) -> Home:
    return Home(tmp_path / "t", TXT_NOW, FXEV_TAXAUTH_URL=txt_server.url)


@pytest.fixture
def cb_home(tmp_path: Path, cb_server: LocalServer) -> Home:
    return Home(
        tmp_path / "c", CB_NOW, FXEV_CENTRALBANK_URL=cb_server.url, FXEV_CENTRALBANK_DAYS="8"
    )


# -- 11. the tax authority's text file ----------------------------------------------------------

WHITESPACE_VARIANTS = {
    "crlf": b"20/09/2026|3.354|3.362|\r\n",
    "lf": b"20/09/2026|3.354|3.362|\n",
    "cr": b"20/09/2026|3.354|3.362|\r",
    "none": b"20/09/2026|3.354|3.362|",
    "blank-lines-around": b"\r\n\r\n20/09/2026|3.354|3.362|\r\n\r\n\r\n",
    "spaces-and-tabs": b" \t 20/09/2026|3.354|3.362| \t\r\n",
    "form-feed": b"20/09/2026|3.354|3.362|\x0c",
    "vertical-tab": b"\x0b20/09/2026|3.354|3.362|\r\n",
}


@pytest.mark.parametrize("name", sorted(WHITESPACE_VARIANTS))
def test_the_text_file_accepts_surrounding_white_space_and_line_ends(
    name: str, txt_server: LocalServer, txt_home: Home
) -> None:
    """DECISIONS 11: "The tax authority's text file is one line `DD/MM/YYYY|compra|venta|`; accept
    surrounding white space and line ends"."""
    txt_server.set(body=WHITESPACE_VARIANTS[name])
    result = txt_home.ok("capture")
    assert (result["revision"], result["outcome"]) == (1, "nueva"), result
    assert result["observaciones"][0]["fecha_serie"] == "2026-09-20"


def test_a_white_space_variant_of_the_same_line_is_an_identical_recapture_with_its_own_bytes(
    txt_server: LocalServer, txt_home: Home
) -> None:
    """DECISIONS 6: "Same source, series and `fecha_serie` with the same canonical values: event
    `recaptura_identica` on the existing observation (its `detalle` carries the new evidence's
    sha256)"; 11: "keep the bytes ... exactly as received"."""
    first = txt_home.ok("capture")
    txt_server.set(body=b"  20/09/2026|3.354|3.362|\n\n")
    again = txt_home.ok("capture")
    assert (again["revision"], again["outcome"]) == (2, "identica")
    assert again["observacion_id"] == first["observacion_id"]
    assert txt_home.ok("build")["published_revision"] == 2
    for gw in txt_home.gateway():
        detail = gw.get(f"/v1/observations/{first['observacion_id']}").json()
        assert detail["observacion"]["fragmento"] == "20/09/2026|3.354|3.362|"
        events = {e["tipo"]: e for e in detail["eventos"]}
        assert set(events) == {"capturada", "recaptura_identica"}
        sha_new = events["recaptura_identica"]["detalle"]["sha256"]
        evid = events["recaptura_identica"]["evidencia_id"]
        evidence = gw.get(f"/v1/evidence/{evid}")
        assert evidence.status_code == 200
        assert evidence.content == b"  20/09/2026|3.354|3.362|\n\n"
        assert evidence.headers["X-Sha256"] == sha_new


def test_a_500_carrying_a_well_formed_line_is_fuente_no_disponible_and_observes_nothing(
    txt_server: LocalServer, txt_home: Home
) -> None:
    """DECISIONS 14: "Status before size. A non-2xx answer is `fuente_no_disponible` whatever its
    body's size or form." DECISIONS 6: "non-2xx -> `fuente_no_disponible`"."""
    txt_server.set(status=500, body=DOCUMENTED)
    failed = txt_home.ok("capture")
    assert (failed["revision"], failed["outcome"], failed["observacion_id"]) == (1, "fallo", None)
    assert [a["tipo"] for a in failed["alertas"]] == ["fuente_no_disponible"]
    # The same bytes with a 200 are then a new observation, not an identical re-capture.
    txt_server.set(status=200)
    good = txt_home.ok("capture")
    assert (good["revision"], good["outcome"]) == (2, "nueva")


def test_a_huge_500_html_page_is_fuente_no_disponible_not_cambio_formato(
    txt_server: LocalServer, txt_home: Home
) -> None:
    """DECISIONS 14: "A non-2xx answer is `fuente_no_disponible` whatever its body's size or
    form" (here: an HTML page twice the cap, gzip-compressed on the wire)."""
    page = b"<html><body>" + b"x" * 4096 + b"</body></html>"
    page = page * 64  # > 2 x the cap below once decompressed
    txt_server.set(
        status=500,
        body=gzip.compress(page),
        headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
    )
    failed = txt_home.ok("capture", FXEV_MAX_BODY_BYTES="131072")
    assert failed["outcome"] == "fallo"
    assert [a["tipo"] for a in failed["alertas"]] == ["fuente_no_disponible"], failed["alertas"]


def test_an_unusable_url_option_is_an_operator_error_that_records_nothing(
    txt_home: Home,
) -> None:
    """DECISIONS 3: "errors go to stderr with a non-zero exit and change nothing". A `--url`
    that is not a URL at all (no scheme) is the operator's mistake, not the tax authority being
    unreachable: it must not become a recorded `fuente_no_disponible` revision with an alert
    against the source."""
    ran = txt_home.run("capture", "--url", "notaurl")
    one_line_error(ran)
    assert not (txt_home.home / "registry.sqlite").exists()


def test_a_deadline_hit_mid_body_of_a_500_keeps_the_prefix_as_truncated_evidence(
    tmp_path: Path, txt_server: LocalServer, txt_home: Home
) -> None:
    """DECISIONS 14: "past it the run is a `fallo` with `fuente_no_disponible` (detail says
    deadline), the bytes received so far kept as evidence and marked truncated"; "Status before
    size" (a 500 whose body is still arriving at the deadline)."""
    body = b"<html>Internal error " + b"." * 200 + b"</html>"
    txt_server.set(status=500, body=body, headers={"Content-Type": "text/html"}, drip_s=0.25)
    failed = txt_home.ok("capture", FXEV_CAPTURE_DEADLINE_S="2")
    txt_server.set(drip_s=0.0)
    assert failed["outcome"] == "fallo"
    [alert] = failed["alertas"]
    assert alert["tipo"] == "fuente_no_disponible"
    assert "deadline" in alert["detalle"]["mensaje"], alert["detalle"]["mensaje"]
    warc = tmp_path / "out.warc"
    txt_home.ok("export", "warc", str(warc))
    data = warc.read_bytes()
    assert b"WARC-Truncated: length" in data
    assert b"HTTP/1.1 500" in data or b" 500 " in data


# -- 11. the central bank's JSON ----------------------------------------------------------------


def test_an_html_challenge_with_200_is_cambio_formato_for_every_requested_date(
    cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 11: "The central bank's API may answer 200 with an HTML page (send a
    `User-Agent`: HTML is `cambio_formato`)"; 6: failures carry "each requested date for the
    central bank"; 3: "`alertas` lists every alert touched (`alerta` is the first)"."""
    cb_server.set(body=b'<html><script src="/_Incapsula_Resource?x=1"></script></html>')
    failed = cb_home.ok("capture", "--source", "centralbank")
    assert set(failed) == SHAPE
    assert (failed["revision"], failed["outcome"], failed["observacion_id"]) == (1, "fallo", None)
    assert [o["fecha_serie"] for o in failed["observaciones"]] == [
        f"2026-09-0{d}" for d in range(1, 9)
    ]
    assert {(o["serie"], o["outcome"], o["observacion_id"]) for o in failed["observaciones"]} == {
        ("cierre", "fallo", None)
    }
    assert [a["tipo"] for a in failed["alertas"]] == ["cambio_formato"]
    assert failed["alerta"] == failed["alertas"][0]
    # JSON served as text/html is the normal answer; it resolves the failure by the system.
    cb_server.set(body=cb_body())
    good = cb_home.ok("capture", "--source", "centralbank")
    assert (good["revision"], good["outcome"]) == (2, "nueva")
    listed = cb_home.ok("alerts", "list", "--all")["items"]
    [formato] = [a for a in listed if a["tipo"] == "cambio_formato"]
    assert (formato["estado"], formato["resuelta_por"]) == ("resuelta", "sistema")


def test_a_correction_a_new_date_and_identical_dates_are_one_revision_with_the_worst_outcome(
    tmp_path: Path, cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 3: "A run touching several dates ... is one revision holding all its
    observations ... lists them in `observaciones` as {"fecha_serie", "serie", "outcome",
    "observacion_id"}; its top-level `outcome` is the worst of them (`fallo` > `correccion` >
    `nueva` > `identica`), `observacion_id` is null"."""
    cb_server.set(body=cb_body({"07.Set.26": ["n.d.", "n.d."]}, drop=("08.Set.26",)))
    first = cb_home.ok("capture", "--source", "centralbank")
    assert (first["revision"], first["outcome"]) == (1, "nueva")
    assert [o["fecha_serie"] for o in first["observaciones"]] == [
        "2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04",
    ]  # fmt: skip
    ids = {o["fecha_serie"]: o["observacion_id"] for o in first["observaciones"]}

    cb_server.set(body=cb_body({"03.Set.26": ["3.356", "3.366"], "08.Set.26": ["n.d.", "n.d."]}))
    second = cb_home.ok("capture", "--source", "centralbank")
    assert set(second) == SHAPE
    assert (second["revision"], second["outcome"], second["observacion_id"]) == (
        2, "correccion", None,
    )  # fmt: skip
    outcomes = {o["fecha_serie"]: o for o in second["observaciones"]}
    assert list(outcomes) == sorted(outcomes)
    assert {d: o["outcome"] for d, o in outcomes.items()} == {
        "2026-09-01": "identica",
        "2026-09-02": "identica",
        "2026-09-03": "correccion",
        "2026-09-04": "identica",
        "2026-09-07": "nueva",
    }
    assert {o["serie"] for o in second["observaciones"]} == {"cierre"}
    assert outcomes["2026-09-01"]["observacion_id"] == ids["2026-09-01"]
    assert outcomes["2026-09-03"]["observacion_id"] not in (None, ids["2026-09-03"])

    assert cb_home.ok("build")["published_revision"] == 2
    for gw in cb_home.gateway():
        new_id = outcomes["2026-09-03"]["observacion_id"]
        detail = gw.get(f"/v1/observations/{new_id}").json()
        assert [o["id"] for o in detail["cadena"]["ancestros"]] == [ids["2026-09-03"]]
        tipos = [e["tipo"] for e in detail["eventos"]]
        assert tipos[:2] == ["capturada", "correccion"], tipos
        old = gw.get(f"/v1/observations/{ids['2026-09-03']}").json()
        assert [o["id"] for o in old["cadena"]["sucesoras"]] == [new_id]
        [gone] = [e for e in old["eventos"] if e["tipo"] == "supersedida"]
        assert gone["detalle"]["superseded_por"] == new_id


def test_a_declared_n_d_later_published_moves_the_cross_check_back_to_that_close(
    tmp_path: Path, cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 11: "the value published on day D equals the SBS close of the last business day
    before D; only a declared `nd_fuente` for that day moves the counterpart one business day
    earlier" and "A cotejo is written in the revision where either side's valid observation
    changes". Once the central bank publishes the 7 September close it first declared `n.d.`,
    the publication of the 8th (which is that close) is checked against it. The discrepancy
    against the 4th's close stays open all the same: SPEC's `tiene_discrepancia_abierta` is "a
    `discrepante` cross-check ... later than the last `ok` against the same counterpart", and
    the same counterpart is the same date (DECISIONS 11); no `ok` against the 4th follows it."""
    csv = publications_csv(tmp_path / "sunat.csv", date(2026, 9, 1), date(2026, 9, 8))
    cb_home.ok("import", str(csv), "--actor", "ana", "--justification", "real history fixture")
    cb_server.set(body=cb_body({"07.Set.26": ["n.d.", "n.d."], "08.Set.26": ["3.355", "3.370"]}))
    declared = cb_home.ok("capture", "--source", "centralbank")
    assert declared["outcome"] == "nueva"
    assert "2026-09-07" not in [o["fecha_serie"] for o in declared["observaciones"]]
    cb_server.set(body=cb_body({"08.Set.26": ["3.355", "3.370"]}))  # the 7th now has its close
    later = cb_home.ok("capture", "--source", "centralbank")
    assert {o["fecha_serie"]: o["outcome"] for o in later["observaciones"]}["2026-09-07"] == "nueva"
    cb_home.ok("build")
    for gw in cb_home.gateway():
        rates = gw.get(
            "/v1/rates?currency=USD&series=publicado&from=2026-09-08&to=2026-09-08"
        ).json()["items"]
        [eighth] = rates
        checked = {(c["contraparte_fecha"], c["resultado"]) for c in eighth["cotejos"]}
        assert checked == {("2026-09-04", "discrepante"), ("2026-09-07", "ok")}, checked
        latest = max(eighth["cotejos"], key=lambda c: c["revision"])
        assert (latest["contraparte_fecha"], latest["resultado"]) == ("2026-09-07", "ok")
        assert eighth["tiene_discrepancia_abierta"] is True, eighth["cotejos"]


def test_one_side_n_d_before_a_value_is_nd_fuente_in_coverage_and_a_trailing_one_is_pending(
    tmp_path: Path, cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 11: "A row with either side `n.d.` counts as `n.d.` for that date ... `n.d.` is
    the source declaring no data (`nd_fuente`) only when a later date in the same response has a
    value; otherwise the date is pending: no manifest entry, no cotejo, no alert." DECISIONS 8:
    gap `motivo` "nd_fuente"."""
    csv = publications_csv(tmp_path / "sunat.csv", date(2026, 9, 1), date(2026, 9, 8))
    cb_home.ok("import", str(csv), "--actor", "ana", "--justification", "real history fixture")
    cb_server.set(body=cb_body({"03.Set.26": ["3.355", "n.d."], "08.Set.26": ["3.355", "n.d."]}))
    result = cb_home.ok("capture", "--source", "centralbank")
    assert [o["fecha_serie"] for o in result["observaciones"]] == [
        "2026-09-01", "2026-09-02", "2026-09-04", "2026-09-07",
    ]  # fmt: skip
    cb_home.ok("series", "publish", "cierre", "--actor", "ana", "--justification", "test")
    cb_home.ok("build")
    for gw in cb_home.gateway():
        series = {s["serie"]: s for s in gw.get("/v1/coverage").json()["series"]}
        cierre = series["cierre"]
        assert (cierre["primera"], cierre["ultima"]) == ("2026-09-01", "2026-09-07")
        assert {"fecha": "2026-09-03", "motivo": "nd_fuente"} in cierre["huecos"]
        # The publication of the 4th (close of the 3rd, declared n.d.) is checked one business
        # day earlier, against the 2nd's close.
        [fourth] = gw.get(
            "/v1/rates?currency=USD&series=publicado&from=2026-09-04&to=2026-09-04"
        ).json()["items"]
        assert [c["contraparte_fecha"] for c in fourth["cotejos"]] == ["2026-09-02"]
        # The 9th is not imported; the pending 8th wrote no cotejo against anything.
        [eighth] = gw.get(
            "/v1/rates?currency=USD&series=publicado&from=2026-09-08&to=2026-09-08"
        ).json()["items"]
        assert [c["contraparte_fecha"] for c in eighth["cotejos"]] == ["2026-09-07"]


def test_an_answer_entirely_n_d_is_sin_cambios_and_makes_no_revision(
    cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 3: "`sin_cambios` (nothing to record: no revision) ... `sin_cambios` only when
    every date was pending"; when one date has a value the run records (identical or not)."""
    every = {p: ["n.d.", "n.d."] for p in ("01", "02", "03", "04", "07", "08")}
    cb_server.set(body=cb_body({f"{d}.Set.26": v for d, v in every.items()}))
    nothing = cb_home.ok("capture", "--source", "centralbank")
    assert set(nothing) == SHAPE
    assert nothing["outcome"] == "sin_cambios"
    assert (nothing["revision"], nothing["observacion_id"], nothing["observaciones"]) == (
        None, None, [],
    )  # fmt: skip
    cb_server.set(body=cb_body({"08.Set.26": ["n.d.", "n.d."]}))
    recorded = cb_home.ok("capture", "--source", "centralbank")
    assert (recorded["revision"], recorded["outcome"]) == (1, "nueva")
    again = cb_home.ok("capture", "--source", "centralbank")
    assert (again["revision"], again["outcome"]) == (2, "identica")


def test_a_central_bank_clock_off_by_minutes_is_alerted_with_the_capture_still_recorded(
    cb_server: LocalServer, cb_home: Home
) -> None:
    """DECISIONS 11: "`reloj_fuera_de_tolerancia` compares the clock with the source's HTTP `Date`
    header at capture"; 2: `FXEV_CLOCK_TOLERANCE_S` "clock offset from the source's `Date` that
    raises `reloj_fuera_de_tolerancia`" (default 60)."""
    behind = datetime.now(UTC) - timedelta(minutes=5)
    cb_server.set(headers={**HTML_UTF8, "Date": behind.strftime("%a, %d %b %Y %H:%M:%S GMT")})
    result = cb_home.ok("capture", "--source", "centralbank")
    assert result["outcome"] == "nueva"
    assert [a["tipo"] for a in result["alertas"]] == ["reloj_fuera_de_tolerancia"]
    assert result["alertas"][0]["fuente"] == "centralbank"
    near = datetime.now(UTC) - timedelta(seconds=20)
    cb_server.set(headers={**HTML_UTF8, "Date": near.strftime("%a, %d %b %Y %H:%M:%S GMT")})
    assert cb_home.ok("capture", "--source", "centralbank")["alertas"] == []


# -- 11. backfill from a saved file ---------------------------------------------------------------


@pytest.mark.parametrize("saved", [b"[]", b"[ ]\r\n", b"\n[\n]\n"])
def test_an_empty_array_in_any_layout_is_a_fallo_never_no_data(
    saved: bytes, tmp_path: Path
) -> None:
    """DECISIONS 11: "`fxev backfill --source taxauth_txt` takes `--from-file` with a saved
    answer; its `[]` answer is a `fallo`, never "no data"" (white space around it included)."""
    home = Home(tmp_path / "b", "2026-09-20T14:00:00-05:00")
    path = tmp_path / "empty.json"
    path.write_bytes(saved)
    result = home.ok(
        "backfill", "--source", "taxauth_txt", "--from", "2026-09-01", "--to", "2026-09-10",
        "--from-file", str(path),
    )  # fmt: skip
    assert (result["revision"], result["outcome"]) == (1, "fallo")
    assert len(result["observaciones"]) == 10
    assert [a["tipo"] for a in result["alertas"]] == ["fuente_no_disponible"]


def test_a_saved_month_with_a_gap_records_the_rest_and_raises_backfill_incompleto(
    tmp_path: Path,
) -> None:
    """DECISIONS 11: "Dates missing without a declaration raise `backfill_incompleto`. Never
    derive a value that no source published"; the saved answer's rows may come in any order and
    pretty-printed with CRLF."""
    home = Home(tmp_path / "b", "2026-09-20T14:00:00-05:00")
    rows = [
        {"fecPublica": d.fecha.strftime("%d/%m/%Y"), "valTipo": v, "codTipo": side}
        for d in sunat_history()
        if date(2026, 8, 1) <= d.fecha <= date(2026, 8, 31) and d.fecha != date(2026, 8, 12)
        for side, v in (("V", d.venta), ("C", d.compra))
    ]
    rows.reverse()
    path = tmp_path / "agosto.json"
    path.write_bytes(json.dumps(rows, indent=2).replace("\n", "\r\n").encode())
    result = home.ok(
        "backfill", "--source", "taxauth_txt", "--from", "2026-08-01", "--to", "2026-08-31",
        "--from-file", str(path),
    )  # fmt: skip
    assert (result["revision"], result["outcome"], result["observacion_id"]) == (1, "nueva", None)
    fechas = [o["fecha_serie"] for o in result["observaciones"]]
    assert len(fechas) == 30 and "2026-08-12" not in fechas and fechas == sorted(fechas)
    [incomplete] = [a for a in result["alertas"] if a["tipo"] == "backfill_incompleto"]
    assert "2026-08-12" in incomplete["detalle"]["fechas"]


# -- 3 / 6. import ---------------------------------------------------------------------------------


def test_an_import_with_optional_columns_in_any_order_fills_both_series(tmp_path: Path) -> None:
    """DECISIONS 3: "CSV header `fecha_serie,compra,venta` (optional `moneda,serie`, default
    `USD`,`publicado`)"; 11: "Imported `publicado` values are checked too"."""
    home = Home(tmp_path / "i", TXT_NOW)
    path = tmp_path / "mixed.csv"
    path.write_text(
        "serie,venta,fecha_serie,moneda,compra\n"
        "cierre,3.368,2026-09-01,USD,3.36\n"
        ",3.368,2026-09-02,,3.360\n",
        encoding="utf-8",
    )
    result = home.ok("import", str(path), "--actor", "ana", "--justification", "fixture")
    assert (result["revision"], result["outcome"], result["observacion_id"]) == (1, "nueva", None)
    assert [(o["fecha_serie"], o["serie"]) for o in result["observaciones"]] == [
        ("2026-09-01", "cierre"),
        ("2026-09-02", "publicado"),
    ]
    assert result["alertas"] == []  # publication of the 2nd equals the close of the 1st


BAD_IMPORTS = {
    "a row with a fourth cell": "fecha_serie,compra,venta\n2026-09-01,3.36,3.368,9.999\n",
    "a repeated header column": "fecha_serie,compra,venta,compra\n2026-09-01,3.36,3.368,3.999\n",
    "a basic-format date": "fecha_serie,compra,venta\n20260901,3.36,3.368\n",
    "an ISO week date": "fecha_serie,compra,venta\n2026-W36-2,3.36,3.368\n",
}


@pytest.mark.parametrize("name", sorted(BAD_IMPORTS))
def test_a_malformed_import_line_rejects_the_file_and_changes_nothing(
    name: str, tmp_path: Path
) -> None:
    """DECISIONS 3: "`fxev import FILE.csv` ... CSV header `fecha_serie,compra,venta` (optional
    `moneda,serie`)"; "errors go to stderr with a non-zero exit and change nothing". A line that
    is not that shape (an extra value that would be silently dropped, two `compra` columns of
    which one is silently ignored, a date that is not `YYYY-MM-DD`) must not be imported."""
    home = Home(tmp_path / "i", TXT_NOW)
    path = tmp_path / "bad.csv"
    path.write_text(BAD_IMPORTS[name], encoding="utf-8")
    ran = home.run("import", str(path), "--actor", "ana", "--justification", "fixture")
    one_line_error(ran)
    assert not home.home.exists()


# -- 11. annotations -------------------------------------------------------------------------------


@pytest.mark.parametrize("only", [("--compra", "3.360"), ("--venta", "3.368")])
def test_an_annotation_with_one_value_only_is_refused_and_changes_nothing(
    only: tuple[str, str], tmp_path: Path
) -> None:
    """DECISIONS 3: "`fxev annotate --fecha D --texto T --actor A --justification J [--serie S]
    [--compra X --venta Y]`" (both values or none); "errors go to stderr with a non-zero exit
    and change nothing"."""
    home = Home(tmp_path / "a", TXT_NOW)
    ran = home.run(
        "annotate", "--fecha", "2026-09-01", "--texto", "t", "--actor", "a",
        "--justification", "j", *only,
    )  # fmt: skip
    one_line_error(ran)
    assert not home.home.exists()


def test_an_annotation_date_must_be_yyyy_mm_dd(tmp_path: Path) -> None:
    """DECISIONS 3: "`fxev annotate --fecha D`" with D a date `YYYY-MM-DD` (the command's own
    message: "is not a date YYYY-MM-DD"); "errors ... change nothing"."""
    home = Home(tmp_path / "a", TXT_NOW)
    ran = home.run(
        "annotate", "--fecha", "20260901", "--texto", "t", "--actor", "a", "--justification", "j"
    )
    one_line_error(ran)
    assert not home.home.exists()


def test_annotations_have_the_record_shape_and_are_ordered_by_fecha_then_revision(
    tmp_path: Path,
) -> None:
    """DECISIONS 11: "Annotation record: {"id", "fecha", "moneda", "serie" (or null: all series),
    "texto", "compra", "venta" (or null), "actor", "justificacion", "revision", "ts"}, ordered by
    `fecha` then `revision`"."""
    home = Home(tmp_path / "a", TXT_NOW)
    plan = [
        ("2026-09-10", None, None),
        ("2026-09-05", "publicado", None),
        ("2026-09-10", "cierre", ("3.36", "3.3685")),
        ("2026-09-05", None, None),
    ]
    for n, (fecha, serie, values) in enumerate(plan, 1):
        args = ["annotate", "--fecha", fecha, "--texto", f"nota {n}", "--actor", "ana",
                "--justification", f"motivo {n}"]  # fmt: skip
        if serie:
            args += ["--serie", serie]
        if values:
            args += ["--compra", values[0], "--venta", values[1]]
        assert home.ok(*args)["revision"] == n
    assert home.ok("build")["published_revision"] == 4
    for gw in home.gateway():
        body = gw.get("/v1/annotations").json()
        items = body["items"]
        assert body["total"] == 4
        assert [(i["fecha"], i["revision"]) for i in items] == [
            ("2026-09-05", 2), ("2026-09-05", 4), ("2026-09-10", 1), ("2026-09-10", 3),
        ]  # fmt: skip
        keys = {"id", "fecha", "moneda", "serie", "texto", "compra", "venta", "actor",
                "justificacion", "revision", "ts"}  # fmt: skip
        assert all(set(i) == keys for i in items), [sorted(i) for i in items]
        assert [i["serie"] for i in items] == ["publicado", None, None, "cierre"]
        assert (items[3]["compra"], items[3]["venta"]) == ("3.360", "3.369")
        assert (items[0]["compra"], items[0]["venta"]) == (None, None)
        assert {i["moneda"] for i in items} == {"USD"}
        assert items[0]["justificacion"] == "motivo 2"


# -- 11. token expiry ------------------------------------------------------------------------------


def test_a_token_expiring_today_in_lima_works_until_lima_midnight(tmp_path: Path) -> None:
    """DECISIONS 11: "Token expiry `--expires D` is valid through the end of D in Lima"; 2: "token
    expiry always use[s] the real clock, never `FXEV_NOW`". Between 00:00 and 05:00 UTC, Lima's
    today is UTC's yesterday: a UTC reading would refuse this token."""
    home = Home(tmp_path / "k", TXT_NOW)
    clear_of_lima_midnight(30)  # issued and judged on the same day in Lima
    lima_today = datetime.now(LIMA).date()
    issued = home.run("token", "issue", "lima", "--expires", lima_today.isoformat())
    assert issued.code == 0, issued.stderr
    [listed] = home.ok("token", "list")["items"]
    end = datetime.combine(lima_today + timedelta(days=1), datetime.min.time(), tzinfo=LIMA)
    assert listed["expires_at"] == end.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert listed["state"] == "active"
    yesterday = (lima_today - timedelta(days=1)).isoformat()
    one_line_error(home.run("token", "issue", "late", "--expires", yesterday))


# -- 14. a tree belongs to one registry ------------------------------------------------------------


def test_a_rebuild_onto_a_served_foreign_tree_serves_the_new_registry_on_the_next_request(
    tmp_path: Path, txt_server: LocalServer
) -> None:
    """DECISIONS 14: "`fxev build` on a site of another registry refuses (one line naming both,
    exit 1) unless `--rebuild`, which renders a fresh tree and swaps it in atomically"."""
    first = Home(tmp_path / "one", TXT_NOW, FXEV_TAXAUTH_URL=txt_server.url)
    first.ok("capture")
    first.ok("build")
    other = Home(tmp_path / "two", "2026-09-21T13:05:00-05:00", FXEV_TAXAUTH_URL=txt_server.url)
    other.env["FXEV_SITE"] = first.env["FXEV_SITE"]
    txt_server.set(body=b"21/09/2026|3.356|3.364|\r\n")
    other.ok("capture")
    for gw in first.gateway():
        assert gw.get("/v1/rates/latest?currency=USD&series=publicado").json()["compra"] == "3.354"
        refused = other.run("build")
        one_line_error(refused)
        assert gw.get("/v1/rates/latest?currency=USD&series=publicado").json()["compra"] == "3.354"
        rebuilt = other.ok("build", "--rebuild")
        assert rebuilt["published_revision"] == 1
        latest = gw.get("/v1/rates/latest?currency=USD&series=publicado").json()
        assert (latest["fecha_serie"], latest["compra"]) == ("2026-09-21", "3.356")
