"""``fxev backfill``'s recording: a source's history for a range as one revision
(docs/operating/capture.md#backfill).

The central bank answers under ``responses``: its real recorded answer, and longer ranges built
in that answer's exact layout from real values (the SBS close of D is the tax authority's
publication of D+1, docs/sources.md#previous-day). The tax authority's monthly history is a saved
file in its documented shape built from the real history (no raw answer was ever recorded,
docs/sources.md#recordings).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import responses

from builder.capture.backfill import backfill_centralbank, backfill_taxauth
from builder.capture.centralbank import capture_centralbank
from builder.capture.importer import import_csv
from builder.capture.run import CaptureResult, Stores
from builder.core.business_days import business_days_between
from builder.core.settings import Settings
from builder.sources.taxauth_monthly import ENDPOINT
from tests.builder.conftest import PCT, lima, txt_line
from tests.realdata import SunatDay, bcrp_recording

BASE = "https://centralbank.test/estadisticas/series/api"
RECORDED = bcrp_recording()
HTML = (("Content-Type", "text/html; charset=UTF-8"),)
MONTHS_ING = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Set", "Oct", "Nov", "Dec")
Row = tuple[str, str, str]


# -- the central bank's answer, in the recorded layout ------------------------------------


def label(day: date) -> str:
    return f"{day:%d}.{MONTHS_ING[day.month - 1]}.{day:%y}"


def bcrp_body(rows: list[Row]) -> bytes:
    """An answer laid out exactly as the recorded one: its head, then one block per row."""
    text = RECORDED.body.decode()
    head = text[: text.index('"periods":\n[\n') + len('"periods":\n[\n')]
    blocks = [f'{{\n"name":"{name}",\n"values":["{buy}","{sell}"]\n}}' for name, buy, sell in rows]
    return (head + ",\n".join(blocks) + "\n]\n}").encode()


RECORDED_ROWS: list[Row] = [
    ("01.Set.26", "3.36", "3.368"),
    ("02.Set.26", "3.353", "3.36"),
    ("03.Set.26", "3.355", "3.365"),
    ("04.Set.26", "3.36", "3.369"),
    ("07.Set.26", "3.351", "3.372"),
    ("08.Set.26", "n.d.", "n.d."),
]


def test_the_layout_reproduces_the_recorded_answer_byte_for_byte() -> None:
    assert bcrp_body(RECORDED_ROWS) == RECORDED.body


def real_closes(sunat: dict[date, SunatDay], start: date, end: date) -> dict[date, SunatDay]:
    """The SBS close of every business day of the range: the publication of the next day."""
    return {day: sunat[day + timedelta(days=1)] for day in business_days_between(start, end)}


def rows_for(
    closes: dict[date, SunatDay], nd: tuple[date, ...] = (), drop: tuple[date, ...] = ()
) -> list[Row]:
    listed = sorted((set(closes) | set(nd)) - set(drop))
    return [
        (label(d), "n.d.", "n.d.") if d in nd else (label(d), closes[d].compra, closes[d].venta)
        for d in listed
    ]


@pytest.fixture
def cb_settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(FXEV_CENTRALBANK_URL=BASE)


BackfillCb = Callable[..., CaptureResult]


@pytest.fixture
def backfill_cb(
    source: responses.RequestsMock, stores: Stores, cb_settings: Settings
) -> Iterator[BackfillCb]:
    """Run one central bank backfill of ``start``..``end`` against a source answering ``body``."""
    seen: list[Any] = []

    def run(start: date, end: date, body: bytes, now: datetime, status: int = 200) -> CaptureResult:
        def reply(request: Any) -> tuple[int, list[tuple[str, str]], bytes]:
            seen.append(request)
            return status, list(HTML), body

        path = f"/PD04639PD-PD04640PD/json/{start}/{end}/ing"
        source.reset()
        source.add_callback(responses.GET, BASE + path, callback=reply, content_type=None)
        return backfill_centralbank(stores, cb_settings, now, start, end)

    run.seen = seen  # type: ignore[attr-defined]
    yield run


def revision_kinds(stores: Stores, revision: int) -> tuple[str, list[str]]:
    conn = stores.registry.conn
    kind = conn.execute("SELECT kind FROM revisions WHERE revision = ?", (revision,)).fetchone()
    executions = conn.execute("SELECT kind FROM executions WHERE revision = ?", (revision,))
    return kind[0], [row[0] for row in executions]


def execution_detail(stores: Stores, revision: int) -> dict[str, Any]:
    (row,) = stores.registry.conn.execute(
        "SELECT detalle FROM executions WHERE revision = ?", (revision,)
    ).fetchall()
    return json.loads(row[0])


def manifest(stores: Stores) -> list[tuple[str, ...]]:
    rows = stores.registry.conn.execute(
        "SELECT fecha, estado, fuente, serie FROM manifest_entries ORDER BY fecha"
    )
    return [tuple(row) for row in rows]


def cotejos(stores: Stores) -> list[dict[str, Any]]:
    rows = stores.registry.conn.execute("SELECT * FROM cotejos ORDER BY revision, seq")
    return [dict(row) for row in rows]


def valid(stores: Stores, serie: str, day: date | str):  # type: ignore[no-untyped-def]
    return stores.registry.valid_observation("USD", serie, str(day))


def import_publications(stores: Stores, tmp_path: Path, days: list[SunatDay], now: datetime):
    rows = "".join(f"{d.fecha.isoformat()},{d.compra},{d.venta}\n" for d in days)
    path = tmp_path / "sunat.csv"
    path.write_text("fecha_serie,compra,venta\n" + rows, encoding="utf-8")
    return import_csv(stores, path, "tests", "the tax authority's real history (fixture)", now, PCT)


# -- central bank -------------------------------------------------------------------------

SEP_1, SEP_8 = date(2026, 9, 1), date(2026, 9, 8)


def test_the_recorded_answer_is_one_backfill_revision_with_nothing_missing(
    backfill_cb: BackfillCb, stores: Stores
) -> None:
    result = backfill_cb(SEP_1, SEP_8, RECORDED.body, lima(SEP_8, 20))
    assert (result.revision, result.outcome, result.observacion_id) == (1, "nueva", None)
    assert [o.fecha_serie for o in result.observaciones] == [
        "2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-07",
    ]  # fmt: skip
    assert result.alertas == ()  # 08 Sep is n.d. with nothing after it: still pending
    assert revision_kinds(stores, 1) == ("backfill", ["backfill"])
    assert execution_detail(stores, 1) == {
        "fechas": 5,
        "nd_fuente": [],
        "desde": "2026-09-01",
        "hasta": "2026-09-08",
        "faltantes": [],
    }
    close = valid(stores, "cierre", "2026-09-01")
    assert (close.compra, close.venta, close.compra_cruda) == ("3.360", "3.368", "3.36")
    assert close.fuente == "centralbank" and close.version_parser == "centralbank_json-1.0"
    evidence = stores.registry.evidence(close.evidencia_id)
    assert stores.blobs.read(evidence.sha256) == RECORDED.body
    assert evidence.content_type == "text/html; charset=UTF-8"
    assert backfill_cb.seen[0].headers["User-Agent"].startswith("fxev/")  # type: ignore[attr-defined]
    assert result.to_json().keys() == {
        "revision", "outcome", "observacion_id", "observaciones", "alerta", "alertas",
    }  # fmt: skip


def test_a_saved_answer_is_read_as_the_fetched_one_would_be(
    stores: Stores, cb_settings: Settings
) -> None:
    """``--from-file`` for the central bank: the answer to the range's request, saved by an
    operator, is recorded as the fetched answer is; its bytes are the evidence (no HTTP status or
    headers: none were seen), its identity the request it answered. Nothing is fetched (no
    ``responses`` here: a request would fail the test)."""
    result = backfill_centralbank(
        stores, cb_settings, lima(SEP_8, 20), SEP_1, SEP_8, saved=RECORDED.body,
        file_name="bcrp.json",
    )  # fmt: skip
    assert (result.revision, result.outcome) == (1, "nueva")
    assert [o.fecha_serie for o in result.observaciones][-1] == "2026-09-07"
    assert execution_detail(stores, 1)["archivo"] == "bcrp.json"
    close = valid(stores, "cierre", "2026-09-01")
    assert (close.compra, close.venta) == ("3.360", "3.368")
    url = f"{BASE}/PD04639PD-PD04640PD/json/2026-09-01/2026-09-08/ing"
    assert close.identidad_consulta == f"GET {url}"
    evidence = stores.registry.evidence(close.evidencia_id)
    assert stores.blobs.read(evidence.sha256) == RECORDED.body
    assert (evidence.content_type, evidence.http_status) == ("application/json", None)


def test_a_saved_page_that_is_not_the_answer_is_a_failure_kept_as_evidence(
    stores: Stores, cb_settings: Settings
) -> None:
    page = b"<html><body>Request Rejected</body></html>"
    result = backfill_centralbank(
        stores, cb_settings, lima(SEP_8, 20), SEP_1, SEP_8, saved=page, file_name="blocked.html"
    )
    assert result.outcome == "fallo"
    assert [a.tipo for a in result.alertas] == ["cambio_formato"]
    [evidence] = stores.registry.conn.execute("SELECT sha256, content_type FROM evidence")
    assert (stores.blobs.read(evidence[0]), evidence[1]) == (page, "text/html")


def test_a_trailing_n_d_stays_pending_however_late(backfill_cb: BackfillCb, stores: Stores) -> None:
    """DECISIONS 11: n.d. with no later value in the same response is pending: "no manifest
    entry, no cotejo, no alert". A week later the close of 08 Sep is long due, and the same
    answer still declares nothing and leaves nothing missing."""
    result = backfill_cb(SEP_1, SEP_8, RECORDED.body, lima(date(2026, 9, 15)))
    assert result.outcome == "nueva"
    assert len(result.observaciones) == 5  # the data is recorded
    assert result.alertas == ()
    assert manifest(stores) == []  # n.d. with nothing after it is never a declaration
    assert execution_detail(stores, 1)["faltantes"] == []


def test_a_trailing_date_left_out_long_past_its_publication_is_missing(
    backfill_cb: BackfillCb, stores: Stores
) -> None:
    """A date the answer does not list at all is no declaration either: once due, missing."""
    body = bcrp_body(RECORDED_ROWS[:-1])  # 08 Sep left out, not n.d.
    result = backfill_cb(SEP_1, SEP_8, body, lima(date(2026, 9, 15)))
    assert result.outcome == "nueva"
    assert len(result.observaciones) == 5  # the data is still recorded
    (alert,) = result.alertas
    assert (alert.tipo, alert.fuente) == ("backfill_incompleto", "centralbank")
    assert alert.fecha_serie is None  # one alert per source, not per date
    assert alert.detalle["fechas"] == ["2026-09-08"]
    assert alert.detalle["revision"] == result.revision
    assert result.to_json()["alerta"]["id"] == alert.id
    assert manifest(stores) == []
    assert execution_detail(stores, 1)["faltantes"] == ["2026-09-08"]


JUL_1, AUG_31 = date(2026, 7, 1), date(2026, 8, 31)
SILENT = date(2026, 8, 13)  # a Thursday the answer leaves out without a word

# Declared n.d. (later dates have values): the one-off 27 July and the two July holidays.
DECLARED = (date(2026, 7, 27), date(2026, 7, 28), date(2026, 7, 29))


def test_a_long_range_records_every_close_declares_n_d_and_alerts_on_the_silent_gap(
    backfill_cb: BackfillCb, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    closes = real_closes(sunat, JUL_1, AUG_31)
    assert SILENT in closes and not set(DECLARED) & set(closes)
    body = bcrp_body(rows_for(closes, nd=DECLARED, drop=(SILENT,)))
    result = backfill_cb(JUL_1, AUG_31, body, lima(date(2026, 9, 2)))
    assert result.revision == 1 and result.outcome == "nueva"
    recorded = [o.fecha_serie for o in result.observaciones]
    assert recorded == [d.isoformat() for d in sorted(closes) if d != SILENT]
    for day, publication in closes.items():
        close = valid(stores, "cierre", day)
        if day == SILENT:
            assert close is None  # never derived from a neighbour
        else:
            assert close.compra_cruda == publication.compra
            assert close.venta_cruda == publication.venta
    assert manifest(stores) == [
        (d.isoformat(), "nd_fuente", "centralbank", "cierre") for d in DECLARED
    ]
    (alert,) = [a for a in result.alertas if a.tipo == "backfill_incompleto"]
    assert alert.detalle["fechas"] == ["2026-08-13"]
    assert (alert.detalle["desde"], alert.detalle["hasta"]) == ("2026-07-01", "2026-08-31")
    assert stores.registry.head().revision == 1  # one revision for the whole range


def test_the_alert_is_de_duplicated_and_keeps_every_listed_date(
    backfill_cb: BackfillCb, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    closes = real_closes(sunat, JUL_1, AUG_31)
    body = bcrp_body(rows_for(closes, nd=DECLARED, drop=(SILENT,)))
    now = lima(date(2026, 9, 2))
    first = backfill_cb(JUL_1, AUG_31, body, now)
    again = backfill_cb(JUL_1, AUG_31, body, now + timedelta(hours=1))
    assert again.outcome == "identica" and again.revision == 2
    assert again.alertas[0].id == first.alertas[0].id
    assert again.alertas[0].contador == 2
    assert len(manifest(stores)) == len(DECLARED)  # declared once, not again
    other_gap = date(2026, 7, 9)
    body = bcrp_body(rows_for(closes, nd=DECLARED, drop=(other_gap,)))
    third = backfill_cb(JUL_1, AUG_31, body, now + timedelta(hours=2))
    assert third.alertas[0].id == first.alertas[0].id
    assert third.alertas[0].detalle["fechas"] == ["2026-07-09", "2026-08-13"]
    assert third.alertas[0].detalle["faltantes"] == ["2026-07-09"]


def test_closes_cross_check_the_publications_they_back(
    backfill_cb: BackfillCb, stores: Stores, sunat: dict[date, SunatDay], tmp_path: Path
) -> None:
    now = lima(date(2026, 9, 2))
    august = [sunat[date(2026, 8, d)] for d in range(1, 32)]
    import_publications(stores, tmp_path, august, now)
    closes = real_closes(sunat, JUL_1, AUG_31)
    result = backfill_cb(JUL_1, AUG_31, bcrp_body(rows_for(closes, drop=(SILENT,))), now)
    written = [c for c in cotejos(stores) if c["revision"] == result.revision]
    assert written and {c["resultado"] for c in written} == {"ok"}
    on_publications = {
        stores.registry.observation(c["observacion_id"]).fecha_serie: c["contraparte_fecha"]
        for c in written
        if c["contraparte"] == "centralbank"
    }
    # The publication of 14 Aug points to the missing close of the 13th: no cotejo yet.
    assert "2026-08-14" not in on_publications
    assert on_publications["2026-08-13"] == "2026-08-12"
    assert on_publications["2026-08-03"] == "2026-07-31"  # over a weekend
    assert on_publications["2026-08-07"] == "2026-08-05"  # over the 6 Aug holiday
    assert not [a for a in result.alertas if a.tipo == "discrepancia"]


def test_a_close_differing_from_an_earlier_capture_is_a_correction(
    backfill_cb: BackfillCb, stores: Stores, source: responses.RequestsMock, cb_settings: Settings
) -> None:
    source.add(
        responses.GET,
        BASE + "/PD04639PD-PD04640PD/json/2026-09-01/2026-09-08/ing",
        body=RECORDED.body,
        headers=dict(HTML),
    )
    capture_centralbank(stores, cb_settings, lima(SEP_8, 20), start=SEP_1, end=SEP_8)
    captured = valid(stores, "cierre", "2026-09-03")
    rows = [r if r[0] != "03.Set.26" else ("03.Set.26", "3.355", "3.366") for r in RECORDED_ROWS]
    result = backfill_cb(SEP_1, SEP_8, bcrp_body(rows), lima(SEP_8, 21))
    assert result.outcome == "correccion"
    outcomes = {o.fecha_serie: o.outcome for o in result.observaciones}
    assert outcomes["2026-09-03"] == "correccion" and outcomes["2026-09-01"] == "identica"
    assert valid(stores, "cierre", "2026-09-03").supersedes == captured.id


EMPTY_PERIODS = RECORDED.body[: RECORDED.body.index(b'"periods"')] + b'"periods":\n[\n]\n}'
INCAPSULA = (
    b'<html><head><script src="/_Incapsula_Resource?SWJIYLWA=719d34"></script></head></html>'
)


@pytest.mark.parametrize(
    ("body", "status", "tipo"),
    [
        (EMPTY_PERIODS, 200, "fuente_no_disponible"),
        (INCAPSULA, 200, "cambio_formato"),
        (RECORDED.body + b"<br />\n<b>Warning</b>: pg_connect()", 200, "cambio_formato"),
        (b"Service Unavailable", 503, "fuente_no_disponible"),
    ],
    ids=["empty-periods", "html-challenge", "php-warning-appended", "http-503"],
)  # fmt: skip
def test_a_failed_answer_is_a_recorded_fallo_for_every_requested_date(
    backfill_cb: BackfillCb, stores: Stores, body: bytes, status: int, tipo: str
) -> None:
    result = backfill_cb(SEP_1, SEP_8, body, lima(SEP_8, 20), status)
    assert (result.revision, result.outcome) == (1, "fallo")
    assert [a.tipo for a in result.alertas] == [tipo]
    expected = [f"2026-09-0{d}" for d in range(1, 9)]
    assert [(o.fecha_serie, o.outcome) for o in result.observaciones] == [
        (d, "fallo") for d in expected
    ]
    events = stores.registry.events_of_revision(1)
    assert [(e.tipo, e.fecha_serie) for e in events] == [(tipo, d) for d in expected]
    assert revision_kinds(stores, 1) == ("backfill", ["backfill"])
    assert valid(stores, "cierre", "2026-09-01") is None
    evidence = stores.registry.evidence(events[0].evidencia_id)
    assert stores.blobs.read(evidence.sha256) == body


def test_an_answer_with_no_value_for_a_past_range_is_a_fallo_not_no_data(
    backfill_cb: BackfillCb, stores: Stores
) -> None:
    # docs/sources.md#central-bank-url: a blocked or misread request can answer the right skeleton,
    # every value n.d.
    rows = [(name, "n.d.", "n.d.") for name, _, _ in RECORDED_ROWS]
    result = backfill_cb(SEP_1, SEP_8, bcrp_body(rows), lima(date(2026, 9, 30)))
    assert result.outcome == "fallo"
    assert [a.tipo for a in result.alertas] == ["fuente_no_disponible"]
    assert manifest(stores) == []


def test_a_range_still_entirely_pending_records_nothing(
    backfill_cb: BackfillCb, stores: Stores
) -> None:
    day = date(2026, 9, 8)
    body = bcrp_body([("08.Set.26", "n.d.", "n.d.")])
    result = backfill_cb(day, day, body, lima(day, 20))
    assert (result.revision, result.outcome, result.alertas) == (None, "sin_cambios", ())
    assert stores.registry.head() is None


def test_a_backfill_leaves_source_failure_alerts_to_the_next_capture(
    backfill_cb: BackfillCb, source: responses.RequestsMock, stores: Stores, cb_settings: Settings
) -> None:
    source.add(responses.GET, BASE + "/PD04639PD-PD04640PD/json/2026-09-01/2026-09-08/ing",
               body=b"<html></html>", headers=dict(HTML))  # fmt: skip
    failed = capture_centralbank(stores, cb_settings, lima(SEP_8, 19), start=SEP_1, end=SEP_8)
    result = backfill_cb(SEP_1, SEP_8, RECORDED.body, lima(SEP_8, 20))
    assert result.outcome == "nueva" and result.alertas == ()
    assert stores.alerts.get(failed.alertas[0].id).estado == "abierta"


# -- the tax authority's monthly history --------------------------------------------------


def monthly(days: list[SunatDay]) -> bytes:
    """A saved answer in the documented shape: compact rows, C then V, dates ascending."""
    rows = [
        {"fecPublica": d.fecha.strftime("%d/%m/%Y"), "valTipo": value, "codTipo": side}
        for d in days
        for side, value in (("C", d.compra), ("V", d.venta))
    ]
    return json.dumps(rows, separators=(",", ":")).encode()


def month_of(sunat: dict[date, SunatDay], year: int, month: int) -> list[SunatDay]:
    return [d for f, d in sorted(sunat.items()) if (f.year, f.month) == (year, month)]


NOV_1, NOV_30 = date(2025, 11, 1), date(2025, 11, 30)
DEC_1 = lima(date(2025, 12, 1), 9)


def run_taxauth(
    stores: Stores, settings: Settings, start: date, end: date, saved: bytes, now: datetime = DEC_1
) -> CaptureResult:
    return backfill_taxauth(stores, settings, now, start, end, saved, "noviembre.json")


def test_a_saved_month_is_one_backfill_revision_of_publications(
    stores: Stores, settings: Settings, sunat: dict[date, SunatDay]
) -> None:
    november = month_of(sunat, 2025, 11)
    saved = monthly(november)
    result = run_taxauth(stores, settings, NOV_1, NOV_30, saved)
    assert (result.revision, result.outcome, result.alertas) == (1, "nueva", ())
    assert [o.fecha_serie for o in result.observaciones] == [d.fecha.isoformat() for d in november]
    assert {o.serie for o in result.observaciones} == {"publicado"}
    assert revision_kinds(stores, 1) == ("backfill", ["backfill"])
    first = valid(stores, "publicado", NOV_1)
    assert (first.compra, first.venta) == ("3.372", canonical(november[0].venta))
    assert first.fuente == "taxauth_txt"
    assert first.version_parser == "taxauth_mensual-1.0"
    assert first.identidad_consulta == f"POST {ENDPOINT}?anio=2025&mes=10"
    assert first.fragmento in saved.decode()
    evidence = stores.registry.evidence(first.evidencia_id)
    assert stores.blobs.read(evidence.sha256) == saved
    assert (evidence.content_type, evidence.http_status, evidence.headers) == (
        "application/json", None, [],
    )  # fmt: skip
    assert execution_detail(stores, 1)["archivo"] == "noviembre.json"


def canonical(raw: str) -> str:
    return str(Decimal(raw).quantize(Decimal("0.001")))


def test_only_the_dates_of_the_range_are_recorded(
    stores: Stores, settings: Settings, sunat: dict[date, SunatDay]
) -> None:
    saved = monthly(month_of(sunat, 2025, 11))
    result = run_taxauth(stores, settings, date(2025, 11, 10), date(2025, 11, 20), saved)
    assert [o.fecha_serie for o in result.observaciones] == [f"2025-11-{d}" for d in range(10, 21)]


def test_a_real_silent_gap_raises_backfill_incompleto_and_records_the_rest(
    stores: Stores, settings: Settings, sunat: dict[date, SunatDay]
) -> None:
    # docs/sources.md#which-days: 27 to 30 July 2024 are missing from the calendar; only the 30th (a
    # Tuesday) is a business day: the 28th is a Sunday and the 29th a holiday.
    july = month_of(sunat, 2024, 7)
    start, end = date(2024, 7, 1), date(2024, 7, 31)
    result = run_taxauth(stores, settings, start, end, monthly(july), lima(date(2024, 8, 2)))
    assert len(result.observaciones) == len(july) == 27
    (alert,) = [a for a in result.alertas if a.tipo == "backfill_incompleto"]
    assert (alert.fuente, alert.detalle["fechas"]) == ("taxauth_txt", ["2024-07-30"])
    assert valid(stores, "publicado", "2024-07-30") is None  # never filled from the 26th


def test_a_value_differing_from_the_text_file_is_a_correction(
    capture: Callable[..., CaptureResult],
    stores: Stores,
    settings: Settings,
    sunat: dict[date, SunatDay],
) -> None:
    sunday = sunat[date(2026, 9, 20)]
    captured = capture("20/09/2026|3.357|3.365|\r\n")
    september = [d for d in month_of(sunat, 2026, 9) if d.fecha <= sunday.fecha]
    now = lima(date(2026, 9, 20), 14)
    result = run_taxauth(
        stores, settings, date(2026, 9, 1), date(2026, 9, 20), monthly(september), now
    )
    assert result.outcome == "correccion"
    outcomes = {o.fecha_serie: o.outcome for o in result.observaciones}
    assert outcomes["2026-09-20"] == "correccion"
    assert {v for k, v in outcomes.items() if k != "2026-09-20"} == {"nueva"}
    corrected = valid(stores, "publicado", "2026-09-20")
    assert (corrected.compra, corrected.venta) == (sunday.compra, sunday.venta)
    assert corrected.supersedes == captured.observacion_id
    events = stores.registry.events_of(corrected.id)
    assert [e.tipo for e in events] == ["capturada", "correccion"]
    assert events[1].detalle["supersede"] == captured.observacion_id


def test_the_same_value_as_the_text_file_is_an_identical_recapture(
    capture: Callable[..., CaptureResult],
    stores: Stores,
    settings: Settings,
    sunat: dict[date, SunatDay],
) -> None:
    sunday = sunat[date(2026, 9, 20)]
    captured = capture(txt_line(sunday))
    day = date(2026, 9, 20)
    result = run_taxauth(stores, settings, day, day, monthly([sunday]), lima(day, 14))
    assert result.outcome == "identica"
    assert result.observaciones[0].observacion_id == captured.observacion_id


def test_a_backfilled_value_supersedes_an_import_as_new_data(
    stores: Stores, settings: Settings, sunat: dict[date, SunatDay], tmp_path: Path
) -> None:
    november = month_of(sunat, 2025, 11)
    import_publications(stores, tmp_path, november[:5], DEC_1)
    result = run_taxauth(stores, settings, NOV_1, NOV_30, monthly(november))
    assert result.outcome == "nueva"
    assert valid(stores, "publicado", NOV_1).fuente == "taxauth_txt"


def test_publications_cross_check_the_closes_already_recorded(
    backfill_cb: BackfillCb, stores: Stores, settings: Settings, sunat: dict[date, SunatDay]
) -> None:
    backfill_cb(SEP_1, SEP_8, RECORDED.body, lima(SEP_8, 20))
    september = [d for d in month_of(sunat, 2026, 9) if date(2026, 9, 2) <= d.fecha <= SEP_8]
    result = run_taxauth(
        stores, settings, date(2026, 9, 2), SEP_8, monthly(september), lima(SEP_8, 21)
    )
    written = [c for c in cotejos(stores) if c["revision"] == result.revision]
    assert len(written) == 2 * 7 and {c["resultado"] for c in written} == {"ok"}


@pytest.mark.parametrize(
    ("saved", "tipo"),
    [
        (b"[]", "fuente_no_disponible"),
        (b"[]\n", "fuente_no_disponible"),
        (b"<html><head><title>Request Rejected</title></head></html>", "cambio_formato"),
        (b'[{"fecPublica":"01/11/2025","valTipo":"3.372"}]', "cambio_formato"),
        (b'[{"fecPublica":"01/11/2025","valTipo":"3.372","codTipo":"C"}', "cambio_formato"),
        (b'[{"fecPublica":"01/11/2025","valTipo":"-3.372","codTipo":"C"},'
         b'{"fecPublica":"01/11/2025","valTipo":"3.378","codTipo":"V"}]', "invariante_fallida"),
    ],
    ids=["empty-array", "empty-array-lf", "firewall-page", "missing-key", "truncated", "negative"],
)  # fmt: skip
def test_a_bad_saved_answer_is_a_recorded_fallo_never_no_data(
    stores: Stores, settings: Settings, saved: bytes, tipo: str
) -> None:
    result = run_taxauth(stores, settings, NOV_1, NOV_30, saved)
    assert (result.revision, result.outcome) == (1, "fallo")
    assert [a.tipo for a in result.alertas] == [tipo]
    assert result.alertas[0].fuente == "taxauth_txt"
    assert len(result.observaciones) == 30
    events = stores.registry.events_of_revision(1)
    assert [e.fecha_serie for e in events] == [f"2025-11-{d:02d}" for d in range(1, 31)]
    assert {e.tipo for e in events} == {tipo}
    evidence = stores.registry.evidence(events[0].evidencia_id)
    assert stores.blobs.read(evidence.sha256) == saved
    assert evidence.identidad_consulta == f"POST {ENDPOINT}?anio=2025&mes=10"
    assert revision_kinds(stores, 1) == ("backfill", ["backfill"])
