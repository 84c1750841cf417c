"""Capture of the central bank's SBS close on its recorded real answer and hostile variants of it,
and the cross-checks against the tax authority's real publications of the same days."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
import responses

from builder.capture.centralbank import capture_centralbank
from builder.capture.crosscheck import RULE_TEXT
from builder.capture.importer import import_csv
from builder.capture.run import CaptureResult, Stores
from builder.core.settings import Settings
from tests.builder.conftest import PCT, lima
from tests.realdata import SunatDay, bcrp_recording

BASE = "https://centralbank.test/estadisticas/series/api"
RECORDED = bcrp_recording()
PATH = "/PD04639PD-PD04640PD/json/2026-09-01/2026-09-08/ing"
NOW = lima(date(2026, 9, 8), 20)  # the recording asked for 1..8 September on the 9th
HTML = (("Content-Type", "text/html; charset=UTF-8"),)
# The recorded closes (SBS date -> compra, venta), as published (trailing zeros dropped).
CLOSES = {
    "2026-09-01": ("3.360", "3.368"),
    "2026-09-02": ("3.353", "3.360"),
    "2026-09-03": ("3.355", "3.365"),
    "2026-09-04": ("3.360", "3.369"),
    "2026-09-07": ("3.351", "3.372"),
}
# Each publication of the tax authority and the close it must equal
# (docs/decisions.md#cross-checks).
COUNTERPART = {
    "2026-09-02": "2026-09-01",
    "2026-09-03": "2026-09-02",
    "2026-09-04": "2026-09-03",
    "2026-09-05": "2026-09-04",
    "2026-09-06": "2026-09-04",
    "2026-09-07": "2026-09-04",
    "2026-09-08": "2026-09-07",
}


@pytest.fixture
def cb_settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(FXEV_CENTRALBANK_URL=BASE, FXEV_CENTRALBANK_DAYS="8")


@pytest.fixture
def capture_cb(
    source: responses.RequestsMock, stores: Stores, cb_settings: Settings
) -> Iterator[Callable[..., CaptureResult]]:
    seen: list[object] = []

    def run(body: bytes = RECORDED.body, status: int = 200, now: datetime = NOW) -> CaptureResult:
        def reply(request: object) -> tuple[int, list[tuple[str, str]], bytes]:
            seen.append(request)
            return status, list(HTML), body

        source.reset()
        source.add_callback(responses.GET, BASE + path_for(now), callback=reply, content_type=None)
        return capture_centralbank(stores, cb_settings, now)

    run.seen = seen  # type: ignore[attr-defined]
    yield run


def path_for(now: datetime) -> str:
    """The API path a capture at ``now`` asks for: the 8 days up to today in Lima."""
    end = now.date()
    return f"/PD04639PD-PD04640PD/json/{end - timedelta(days=7)}/{end}/ing"


def periods(body: bytes = RECORDED.body) -> dict[str, object]:
    return json.loads(body)


def with_values(changes: dict[str, list[str]]) -> bytes:
    """The recorded answer with some periods' values replaced (by label)."""
    document = periods()
    for period in document["periods"]:  # type: ignore[union-attr]
        if period["name"] in changes:
            period["values"] = changes[period["name"]]
    return json.dumps(document).encode()


def cierre(stores: Stores, fecha: str):  # type: ignore[no-untyped-def]
    return stores.registry.valid_observation("USD", "cierre", fecha)


def import_publications(stores: Stores, tmp_path: Path, days: list[SunatDay]) -> None:
    rows = "".join(f"{d.fecha.isoformat()},{d.compra},{d.venta}\n" for d in days)
    path = tmp_path / "sunat.csv"
    path.write_text("fecha_serie,compra,venta\n" + rows, encoding="utf-8")
    import_csv(stores, path, "tests", "the tax authority's real history (fixture)", NOW, PCT)


def all_cotejos(stores: Stores) -> list[dict[str, object]]:
    rows = stores.registry.conn.execute("SELECT * FROM cotejos ORDER BY revision, seq")
    return [dict(row) for row in rows]


def test_the_recorded_answer_gives_five_closes_in_one_revision(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    result = capture_cb()
    assert result.revision == 1
    assert result.outcome == "nueva"
    assert result.observacion_id is None
    assert [(o.fecha_serie, o.serie, o.outcome) for o in result.observaciones] == [
        (fecha, "cierre", "nueva") for fecha in CLOSES
    ]
    for fecha, (compra, venta) in CLOSES.items():
        observation = cierre(stores, fecha)
        assert (observation.compra, observation.venta) == (compra, venta)
        assert observation.fuente == "centralbank"
        assert observation.version_parser == "centralbank_json-1.0"
        assert observation.identidad_consulta == f"GET {BASE}{PATH}"
        assert observation.fragmento in RECORDED.body.decode()
    assert cierre(stores, "2026-09-01").compra_cruda == "3.36"  # kept as published
    assert cierre(stores, "2026-09-08") is None  # n.d. with nothing after it: pending
    evidence = stores.registry.evidence(cierre(stores, "2026-09-01").evidencia_id)
    assert evidence.content_type == "text/html; charset=UTF-8"
    assert stores.blobs.read(evidence.sha256) == RECORDED.body
    request = capture_cb.seen[0]  # type: ignore[attr-defined]
    assert request.headers["User-Agent"].startswith("fxev/")
    assert stores.registry.conn.execute("SELECT count(*) FROM manifest_entries").fetchone()[0] == 0


def test_a_second_identical_answer_is_a_recapture_and_a_changed_close_a_correction(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    capture_cb()
    again = capture_cb()
    assert again.outcome == "identica"
    assert {o.outcome for o in again.observaciones} == {"identica"}
    old = cierre(stores, "2026-09-03")
    corrected = capture_cb(with_values({"03.Set.26": ["3.355", "3.366"]}))
    assert corrected.outcome == "correccion"
    new = cierre(stores, "2026-09-03")
    assert new.supersedes == old.id and new.venta == "3.366"


def test_a_close_with_many_decimals_is_rounded_half_up_and_kept_raw(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    # docs/decisions.md#canonical-values: the central bank may carry more than 3 decimals.
    result = capture_cb(with_values({"07.Set.26": ["3.35114285714286", "3.37250"]}))
    assert result.outcome == "nueva"
    close = cierre(stores, "2026-09-07")
    assert (close.compra, close.venta) == ("3.351", "3.373")
    assert (close.compra_cruda, close.venta_cruda) == ("3.35114285714286", "3.37250")


def test_a_close_dated_tomorrow_in_lima_is_recorded_and_marked(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    # On Sunday 6 September the answer lists Monday 7 September: after the requested range
    # (which ends today), published all the same (docs/decisions.md#plausibility).
    result = capture_cb(now=lima(date(2026, 9, 6), 20))
    assert result.outcome == "nueva"
    assert [o.fecha_serie for o in result.observaciones][-1] == "2026-09-07"
    assert [a.condicion for a in result.alertas] == ["plausibilidad_baja:centralbank:2026-09-07"]
    close = cierre(stores, "2026-09-07")
    (mark,) = [e for e in stores.registry.events_of(close.id) if e.tipo == "plausibilidad_baja"]
    assert mark.detalle["motivos"] == [{"motivo": "fecha_futura", "hoy_lima": "2026-09-06"}]


def test_a_close_dated_two_days_ahead_is_an_invariant_failure_with_no_observation(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    result = capture_cb(now=lima(date(2026, 9, 5), 20))
    assert result.outcome == "fallo"
    assert [a.tipo for a in result.alertas] == ["invariante_fallida"]
    assert "more than one day after today in Lima" in result.alertas[0].detalle["mensaje"]
    assert [o.fecha_serie for o in result.observaciones][-1] == "2026-09-05"  # requested dates
    assert cierre(stores, "2026-09-07") is None and cierre(stores, "2026-09-01") is None


def test_every_date_pending_is_sin_cambios_without_a_revision(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    body = json.dumps(
        periods() | {"periods": [{"name": "08.Set.26", "values": ["n.d.", "n.d."]}]}
    ).encode()
    result = capture_cb(body)
    assert (result.revision, result.outcome, result.observaciones) == (None, "sin_cambios", ())
    assert stores.registry.head() is None


def test_n_d_before_a_published_date_is_declared_and_moves_the_counterpart(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    sunat: dict[date, SunatDay],
    tmp_path: Path,
) -> None:
    import_publications(stores, tmp_path, [sunat[date(2026, 9, 8)]])
    body = with_values({"07.Set.26": ["n.d.", "n.d."], "08.Set.26": ["3.351", "3.372"]})
    result = capture_cb(body)
    assert result.revision == 2
    entries = stores.registry.conn.execute(
        "SELECT fecha, estado, fuente, serie FROM manifest_entries"
    ).fetchall()
    assert [tuple(e) for e in entries] == [("2026-09-07", "nd_fuente", "centralbank", "cierre")]
    # The publication of the 8th now points to the close of the 4th (the 7th declared n.d.).
    (pair,) = [c for c in all_cotejos(stores) if c["contraparte"] == "centralbank"]
    assert pair["contraparte_fecha"] == "2026-09-04"
    again = capture_cb(body)
    assert again.outcome == "identica"  # declared once, not again
    assert stores.registry.conn.execute("SELECT count(*) FROM manifest_entries").fetchone()[0] == 1


def test_a_close_published_later_for_a_declared_date_is_its_counterpart_again(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    sunat: dict[date, SunatDay],
    tmp_path: Path,
) -> None:
    """The 7th is declared n.d., so the 8th's publication is checked against the 4th; when the
    central bank later publishes a close for the 7th, the declaration moves nothing any more and
    the 8th is checked against the 7th again (docs/decisions.md#cross-checks)."""
    import_publications(stores, tmp_path, [sunat[date(2026, 9, 8)]])
    capture_cb(with_values({"07.Set.26": ["n.d.", "n.d."], "08.Set.26": ["3.351", "3.372"]}))
    later = capture_cb()  # the recorded answer: the 7th closed at 3.351 / 3.372
    assert (cierre(stores, "2026-09-07").compra, later.revision) == ("3.351", 3)
    publication = stores.registry.valid_observation("USD", "publicado", "2026-09-08")
    newest = [
        c
        for c in all_cotejos(stores)
        if c["observacion_id"] == publication.id and c["revision"] == later.revision
    ]
    assert [(c["contraparte_fecha"], c["resultado"]) for c in newest] == [("2026-09-07", "ok")]
    seventh = cierre(stores, "2026-09-07")
    assert [
        c["contraparte_fecha"] for c in all_cotejos(stores) if c["observacion_id"] == seventh.id
    ] == ["2026-09-08"]


def test_closes_and_publications_agree_on_the_real_days(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    sunat: dict[date, SunatDay],
    tmp_path: Path,
) -> None:
    days = [sunat[date.fromisoformat(d)] for d in COUNTERPART]
    import_publications(stores, tmp_path, days)
    assert all_cotejos(stores) == []  # no counterpart yet: nothing is written
    result = capture_cb()
    cotejos = all_cotejos(stores)
    assert {c["revision"] for c in cotejos} == {result.revision}
    assert {c["resultado"] for c in cotejos} == {"ok"}
    assert {c["regla"] for c in cotejos} == {RULE_TEXT}
    on_publications = {
        stores.registry.observation(c["observacion_id"]).fecha_serie: c["contraparte_fecha"]
        for c in cotejos
        if c["contraparte"] == "centralbank"
    }
    assert on_publications == COUNTERPART
    # The close of the 4th carries one cotejo per publication that points to it.
    friday = cierre(stores, "2026-09-04")
    assert sorted(c["contraparte_fecha"] for c in cotejos if c["observacion_id"] == friday.id) == [
        "2026-09-05",
        "2026-09-06",
        "2026-09-07",
    ]
    assert not [a for a in result.alertas if a.tipo == "discrepancia"]
    # An identical re-capture changes no valid observation: no new cotejo.
    capture_cb()
    assert len(all_cotejos(stores)) == len(cotejos)


@pytest.mark.parametrize(
    ("label", "values", "why"),
    [
        ("03.Set.26", ["3.355", "3.366"], "one thousandth off on the sell side"),
        ("02.Set.26", ["3.922", "3.931"], "another currency's figure in the column"),
    ],
)
def test_a_disagreement_is_exposed_and_alerted_never_resolved(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    sunat: dict[date, SunatDay],
    tmp_path: Path,
    label: str,
    values: list[str],
    why: str,
) -> None:
    days = [sunat[date.fromisoformat(d)] for d in COUNTERPART]
    import_publications(stores, tmp_path, days)
    result = capture_cb(with_values({label: values}))
    close_date = f"2026-09-{label[:2]}"
    bad = [c for c in all_cotejos(stores) if c["resultado"] == "discrepante"]
    publication_dates = [p for p, c in COUNTERPART.items() if c == close_date]
    assert len(bad) == 2 * len(publication_dates), why
    alerts = [a for a in result.alertas if a.tipo == "discrepancia"]
    assert [a.fecha_serie for a in alerts] == publication_dates
    assert alerts[0].detalle["cierre"]["fecha_serie"] == close_date
    # Both observations stay valid: the service never picks a winner.
    assert cierre(stores, close_date) is not None
    for fecha in publication_dates:
        assert stores.registry.valid_observation("USD", "publicado", fecha) is not None


def test_a_publication_captured_after_its_close_is_checked_then(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    sunat: dict[date, SunatDay],
    tmp_path: Path,
) -> None:
    capture_cb()
    import_publications(stores, tmp_path, [sunat[date(2026, 9, 8)]])
    (on_publication,) = [c for c in all_cotejos(stores) if c["contraparte"] == "centralbank"]
    assert on_publication["contraparte_fecha"] == "2026-09-07"
    assert on_publication["resultado"] == "ok"


@pytest.mark.parametrize(
    ("body", "status", "tipo"),
    [
        (b"<html><head><script>_Incapsula_Resource</script></head></html>", 200, "cambio_formato"),
        (
            b'{"config": {"series": [{"name": "Tipo de cambio - TC Interbancario (S/ por US$) - '
            b'Compra"}, {"name": "x"}]}, "periods": []}',
            200,
            "cambio_formato",
        ),
        (b'{"config": ', 200, "cambio_formato"),
        (b"Service Unavailable", 503, "fuente_no_disponible"),
    ],
    ids=["html-challenge", "other-series", "truncated-json", "http-503"],
)
def test_a_failure_is_recorded_for_every_requested_date(
    capture_cb: Callable[..., CaptureResult],
    stores: Stores,
    body: bytes,
    status: int,
    tipo: str,
) -> None:
    result = capture_cb(body, status)
    assert result.outcome == "fallo"
    assert [a.tipo for a in result.alertas] == [tipo]
    expected = [f"2026-09-0{d}" for d in range(1, 9)]
    assert [o.fecha_serie for o in result.observaciones] == expected
    events = stores.registry.events_of_revision(result.revision)
    assert [(e.tipo, e.fecha_serie, e.serie) for e in events] == [
        (tipo, d, "cierre") for d in expected
    ]
    assert cierre(stores, "2026-09-01") is None


def test_an_answer_listing_no_date_is_a_failure_not_no_data(
    capture_cb: Callable[..., CaptureResult],
) -> None:
    result = capture_cb(json.dumps(periods() | {"periods": []}).encode())
    assert result.outcome == "fallo"
    assert result.alertas[0].tipo == "fuente_no_disponible"


def test_the_next_good_capture_resolves_the_source_failure(
    capture_cb: Callable[..., CaptureResult],
) -> None:
    failed = capture_cb(b"<html></html>")
    good = capture_cb()
    (resolved,) = [a for a in good.alertas if a.id == failed.alertas[0].id]
    assert (resolved.estado, resolved.resuelta_por) == ("resuelta", "sistema")


def test_a_good_capture_with_every_date_pending_resolves_the_source_failure(
    capture_cb: Callable[..., CaptureResult], stores: Stores
) -> None:
    # DECISIONS 7: resolved when the next capture of that source succeeds. One whose dates are
    # all still pending records no revision (sin_cambios), and is a success all the same.
    failed = capture_cb(b"<html></html>")
    pending = json.dumps(
        periods() | {"periods": [{"name": "08.Set.26", "values": ["n.d.", "n.d."]}]}
    ).encode()
    good = capture_cb(pending)
    assert (good.revision, good.outcome) == (None, "sin_cambios")
    [resolved] = good.alertas
    assert (resolved.id, resolved.estado, resolved.resuelta_por) == (
        failed.alertas[0].id,
        "resuelta",
        "sistema",
    )
    assert stores.alerts.list(open_only=True) == []
    assert stores.registry.head().revision == failed.revision  # still nothing recorded
