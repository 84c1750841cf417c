"""Capture of the tax authority's text file, end to end against a mocked source.

Every test looks at what was recorded (registry revisions, observations, evidence rows and bytes,
events, alerts), not only at the outcome the run reports. Values come from the real history in
``tests/fixtures/real``; hostile variants are derived from it here.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import random
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from builder.capture.run import CaptureResult, DateOutcome, Stores
from builder.capture.taxauth import capture_taxauth_txt
from builder.cli import main
from builder.core.canonical import utc_timestamp
from builder.core.settings import Settings
from builder.ops.alerts import AlertError
from builder.registry.records import Event, Evidence, Observation
from tests.builder.conftest import NOW, TAXAUTH_URL, lima, txt_line
from tests.realdata import SunatDay

Capture = Callable[..., CaptureResult]

TODAY = NOW.date()  # 2026-09-20, a Sunday in Lima
TODAY_LINE = "20/09/2026|3.354|3.362|"  # the real file of that day
STAMP = "2026-09-20T18:00:00.000000Z"  # NOW in UTC, as the registry writes it


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def only(items: list[Any] | tuple[Any, ...]) -> Any:
    assert len(items) == 1, items
    return items[0]


def evidence_of(stores: Stores, record: Observation | Event) -> Evidence:
    assert record.evidencia_id is not None
    evidence = stores.registry.evidence(record.evidencia_id)
    assert evidence is not None
    return evidence


def failure_event(stores: Stores, revision: int) -> Event:
    """The one event of a failed run's revision, after checking it created no observation."""
    assert stores.registry.observations_of_revision(revision) == []
    return only(stores.registry.events_of_revision(revision))


# -- nueva ---------------------------------------------------------------------------------


def test_first_capture_records_observation_evidence_and_capturada_event(
    capture: Capture, stores: Stores, sunat: dict[date, SunatDay], home: Path
) -> None:
    day = sunat[date(2026, 4, 15)]  # the real file dropped trailing zeros: 3.38 and 3.39
    body = f"{txt_line(day)}\r\n".encode()
    headers = [
        ("Content-Type", "text/plain; charset=ISO-8859-1"),
        ("X-Fxev-Probe", "abc-123"),
        ("Set-Cookie", "TS01=one; Path=/"),
        ("Set-Cookie", "TS02=two; Path=/"),
        ("Server", "Oracle-HTTP-Server"),
    ]
    now = lima(day.fecha)

    result = capture(body=body, headers=headers, now=now)

    assert (result.revision, result.outcome, result.alertas) == (1, "nueva", ())
    observation = stores.registry.observation(result.observacion_id)
    assert observation is not None
    assert result.observaciones == (
        DateOutcome("2026-04-15", "publicado", "nueva", observation.id),
    )
    head = stores.registry.head()
    assert head is not None
    assert (head.revision, head.ts_commit) == (1, "2026-04-15T18:00:00.000000Z")

    evidence = evidence_of(stores, observation)
    assert dataclasses.asdict(observation) == {
        "id": result.observacion_id,
        "revision_creada": 1,
        "moneda": "USD",
        "serie": "publicado",
        "fecha_serie": "2026-04-15",
        "compra": "3.380",
        "venta": "3.390",
        "compra_cruda": "3.38",
        "venta_cruda": "3.39",
        "fuente": "taxauth_txt",
        "identidad_consulta": f"GET {TAXAUTH_URL}",
        "fragmento": "15/04/2026|3.38|3.39|",
        "version_parser": "taxauth_txt-1.0",
        "capturado_en": "2026-04-15T18:00:00.000000Z",
        "ejecucion_id": evidence.ejecucion_id,
        "evidencia_id": evidence.id,
        "supersedes": None,
    }

    digest = sha256(body)
    assert evidence.revision == 1
    assert evidence.sha256 == digest
    assert evidence.size == len(body)
    assert evidence.http_status == 200
    assert evidence.headers == [list(pair) for pair in headers]
    assert evidence.content_type == "text/plain; charset=ISO-8859-1"
    assert evidence.identidad_consulta == f"GET {TAXAUTH_URL}"
    assert evidence.capturado_en == "2026-04-15T18:00:00.000000Z"
    assert evidence.truncated is False
    assert stores.blobs.read(digest) == body
    assert (home / "evidence" / "sha256" / digest[:2] / digest).read_bytes() == body

    event = only(stores.registry.events_of(observation.id))
    assert (event.tipo, event.revision, event.fecha_serie) == ("capturada", 1, "2026-04-15")
    assert (event.ejecucion_id, event.evidencia_id) == (evidence.ejecucion_id, evidence.id)
    assert event.ts == "2026-04-15T18:00:00.000000Z"
    assert event.detalle == {"compra": "3.380", "venta": "3.390", "sha256": digest}
    assert stores.alerts.list(open_only=False) == []


def test_capture_sends_one_get_to_the_configured_url(
    capture: Capture, source: Any, stores: Stores
) -> None:
    capture(body=TODAY_LINE)

    call = only(list(source.calls))
    assert (call.request.method, call.request.url) == ("GET", TAXAUTH_URL)


# -- identica ------------------------------------------------------------------------------


def test_identical_values_make_a_revision_with_recaptura_identica_and_no_new_observation(
    capture: Capture, stores: Stores
) -> None:
    first = capture(body=TODAY_LINE)
    # Same values, different bytes (a line end now): new evidence, same observation.
    again_body = f"{TODAY_LINE}\r\n".encode()
    second = capture(body=again_body, now=NOW + timedelta(hours=1))

    assert (second.revision, second.outcome) == (2, "identica")
    assert second.observacion_id == first.observacion_id
    assert second.observaciones == (
        DateOutcome("2026-09-20", "publicado", "identica", first.observacion_id),
    )
    assert stores.registry.observations_of_revision(2) == []
    assert stores.registry.valid_observation("USD", "publicado", "2026-09-20") == (
        stores.registry.observation(first.observacion_id)
    )
    capturada, recaptura = stores.registry.events_of(first.observacion_id)
    assert (capturada.tipo, capturada.revision) == ("capturada", 1)
    assert (recaptura.tipo, recaptura.revision) == ("recaptura_identica", 2)
    new_evidence = evidence_of(stores, recaptura)
    assert new_evidence.revision == 2
    assert new_evidence.sha256 == sha256(again_body)
    assert recaptura.detalle == {"sha256": new_evidence.sha256}
    assert stores.blobs.read(new_evidence.sha256) == again_body


# -- correccion ----------------------------------------------------------------------------


def test_changed_values_supersede_the_observation_in_one_revision(
    capture: Capture, stores: Stores
) -> None:
    first = capture(body=TODAY_LINE)
    old = stores.registry.observation(first.observacion_id)
    corrected = b"20/09/2026|3.356|3.362|"
    second = capture(body=corrected, now=NOW + timedelta(hours=2))

    assert (second.revision, second.outcome) == (2, "correccion")
    new = stores.registry.observation(second.observacion_id)
    assert new is not None and old is not None
    assert new.supersedes == old.id
    assert (new.compra, new.venta, new.revision_creada) == ("3.356", "3.362", 2)
    assert [
        (e.tipo, e.observacion_id, e.detalle) for e in stores.registry.events_of_revision(2)
    ] == [
        ("capturada", new.id, {"compra": "3.356", "venta": "3.362", "sha256": sha256(corrected)}),
        (
            "correccion",
            new.id,
            {"supersede": old.id, "anterior": {"compra": "3.354", "venta": "3.362"}},
        ),
        ("supersedida", old.id, {"superseded_por": new.id}),
    ]
    assert stores.registry.observation(old.id) == old  # still readable, unchanged
    assert stores.registry.valid_observation("USD", "publicado", "2026-09-20") == new
    assert stores.registry.successor(old.id) == new
    assert [e.tipo for e in stores.registry.events_of(old.id)] == ["capturada", "supersedida"]
    head = stores.registry.head()
    assert head is not None and head.revision == 2


# -- content encoding ----------------------------------------------------------------------


def test_gzip_body_is_stored_decompressed_with_the_headers_as_received(
    capture: Capture, stores: Stores
) -> None:
    text = f"{TODAY_LINE}\n".encode()
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]

    result = capture(body=gzip.compress(text), headers=headers)

    assert result.outcome == "nueva"
    observation = stores.registry.observation(result.observacion_id)
    assert observation is not None
    evidence = evidence_of(stores, observation)
    assert evidence.sha256 == sha256(text)
    assert evidence.size == len(text)
    assert stores.blobs.read(evidence.sha256) == text
    assert evidence.headers == [list(pair) for pair in headers]
    assert observation.fragmento == TODAY_LINE


WIRE_HEADERS = [
    ("Content-Type", "text/plain"),
    ("Set-Cookie", "TS01=one; Path=/"),
    ("X-Fxev-Probe", "abc-123"),
    ("Set-Cookie", "TS02=two; Path=/"),
]


class _WireOrderHandler(BaseHTTPRequestHandler):
    """Answers the day's line with ``WIRE_HEADERS`` in that order, and nothing else."""

    def do_GET(self) -> None:
        body = TODAY_LINE.encode()
        self.send_response_only(200)
        for name, value in [*WIRE_HEADERS, ("Content-Length", str(len(body)))]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def wire_server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1: ``responses`` itself regroups duplicate headers."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _WireOrderHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/a/txt/tipoCambio.txt"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_evidence_keeps_interleaved_duplicate_headers_in_wire_order(
    wire_server: str, stores: Stores, settings: Settings
) -> None:
    result = capture_taxauth_txt(stores, settings, NOW, url=wire_server)

    assert result.outcome == "nueva"
    evidence = evidence_of(stores, only(stores.registry.events_of_revision(1)))
    assert evidence.headers == [
        *(list(pair) for pair in WIRE_HEADERS),
        ["Content-Length", str(len(TODAY_LINE))],
    ]


# -- failures ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Failure:
    body: bytes | BaseException
    alert: str
    status: int = 200
    env: tuple[tuple[str, str], ...] = ()
    content_type: str = "text/plain"

    @property
    def arrived(self) -> bool:
        return not isinstance(self.body, BaseException)


HTML_PAGE = b"<html><head><title>Error</title></head><body>Servicio no disponible</body></html>"
OVER_CAP = TODAY_LINE.encode() + b" " * 100  # would parse, but is 123 bytes against a 64 cap

FAILURES = {
    "connection_error": Failure(
        requests.exceptions.ConnectionError("connection refused"), "fuente_no_disponible"
    ),
    "connect_timeout": Failure(
        requests.exceptions.ConnectTimeout("connect timed out"), "fuente_no_disponible"
    ),
    "read_timeout": Failure(
        requests.exceptions.ReadTimeout("read timed out"), "fuente_no_disponible"
    ),
    "http_503": Failure(HTML_PAGE, "fuente_no_disponible", status=503, content_type="text/html"),
    "http_404": Failure(b"Not Found", "fuente_no_disponible", status=404),
    "proxy_unreachable": Failure(
        requests.exceptions.ProxyError("tunnel connection failed"),
        "tunel_caido",
        env=(("FXEV_PROXY", "http://proxy.test:3128"),),
    ),
    "html_page_with_200": Failure(HTML_PAGE, "cambio_formato", content_type="text/html"),
    "wrong_separator": Failure(b"20/09/2026;3.354;3.362;", "cambio_formato"),
    "extra_field": Failure(b"20/09/2026|3.354|3.362|3.370|", "cambio_formato"),
    "missing_field": Failure(b"20/09/2026|3.354|", "cambio_formato"),
    "utf16_body": Failure(TODAY_LINE.encode("utf-16"), "cambio_formato"),
    "empty_body": Failure(b"", "cambio_formato"),
    "body_over_size_cap": Failure(OVER_CAP, "cambio_formato", env=(("FXEV_MAX_BODY_BYTES", "64"),)),
    "four_decimals": Failure(b"20/09/2026|3.3540|3.362|", "cambio_formato"),
    "zero_value": Failure(b"20/09/2026|0.000|3.362|", "invariante_fallida"),
    "absurd_magnitude": Failure(b"20/09/2026|3354.000|3362.000|", "invariante_fallida"),
    "impossible_date": Failure(b"30/02/2026|3.354|3.362|", "invariante_fallida"),
    "date_two_days_ahead": Failure(b"22/09/2026|3.354|3.362|", "invariante_fallida"),
}


@pytest.mark.parametrize("case", FAILURES.values(), ids=list(FAILURES))
def test_failure_is_recorded_with_evidence_event_and_alert(
    case: Failure,
    capture: Capture,
    stores: Stores,
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(**dict(case.env))
    headers = [] if not case.arrived else [("Content-Type", case.content_type)]

    result = capture(body=case.body, status=case.status, headers=headers, settings=settings)

    assert (result.revision, result.outcome, result.observacion_id) == (1, "fallo", None)
    assert result.observaciones == (DateOutcome("2026-09-20", "publicado", "fallo", None),)
    alert = only(result.alertas)

    event = failure_event(stores, 1)
    assert (event.tipo, event.observacion_id, event.fecha_serie) == (case.alert, None, "2026-09-20")
    assert (event.fuente, event.serie, event.moneda) == ("taxauth_txt", "publicado", "USD")
    evidence = evidence_of(stores, event)
    assert evidence.revision == 1
    assert evidence.identidad_consulta == f"GET {TAXAUTH_URL}"
    assert event.detalle["fecha_esperada"] == "2026-09-20"
    assert event.detalle["sha256"] == evidence.sha256
    if case.arrived:
        assert isinstance(case.body, bytes)
        cap = settings.max_body_bytes
        kept = case.body[:cap]
        assert evidence.truncated is (len(case.body) > cap)
        assert (evidence.http_status, evidence.content_type) == (case.status, case.content_type)
        assert evidence.headers == [["Content-Type", case.content_type]]
    else:
        kept = b""
        assert evidence.truncated is False
        assert (evidence.http_status, evidence.content_type) == (None, "application/octet-stream")
        assert evidence.headers == []
    assert evidence.size == len(kept)
    assert evidence.sha256 == sha256(kept)
    assert stores.blobs.read(evidence.sha256) == kept

    assert stores.alerts.list() == [alert]
    assert (alert.tipo, alert.estado, alert.contador) == (case.alert, "abierta", 1)
    assert (alert.fuente, alert.fecha_serie) == ("taxauth_txt", None)
    assert (alert.primera_vez, alert.ultima_vez) == (STAMP, STAMP)
    assert alert.detalle["revision"] == 1
    assert alert.detalle["evidencia_id"] == evidence.id
    assert alert.detalle["fecha_esperada"] == ["2026-09-20"]


def test_over_cap_evidence_keeps_exactly_the_first_cap_bytes(
    capture: Capture, stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    result = capture(body=OVER_CAP, settings=make_settings(FXEV_MAX_BODY_BYTES="64"))

    evidence = evidence_of(stores, failure_event(stores, result.revision))
    assert evidence.truncated is True
    assert stores.blobs.read(evidence.sha256) == OVER_CAP[:64]


def test_decompression_bomb_is_cambio_formato_without_inflating_it_in_memory(
    capture: Capture, stores: Stores
) -> None:
    inflated = 16 * 1024 * 1024
    bomb = gzip.compress(b"\0" * inflated)  # about 16 KB on the wire
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]

    tracemalloc.start()
    try:
        result = capture(body=bomb, headers=headers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (result.outcome, only(result.alertas).tipo) == ("fallo", "cambio_formato")
    cap = 1024 * 1024  # the default FXEV_MAX_BODY_BYTES
    evidence = evidence_of(stores, failure_event(stores, 1))
    assert (evidence.size, evidence.truncated) == (cap, True)
    assert stores.blobs.read(evidence.sha256) == b"\0" * cap
    # Streaming stops at the cap: the run never holds the inflated body, nor half of it.
    assert peak < inflated // 2


@pytest.mark.parametrize(
    ("slack", "outcome"), [(0, "nueva"), (-1, "fallo")], ids=["exactly_at_cap", "one_byte_over"]
)
def test_size_cap_admits_a_body_of_exactly_the_cap(
    slack: int,
    outcome: str,
    capture: Capture,
    stores: Stores,
    make_settings: Callable[..., Settings],
) -> None:
    body = TODAY_LINE.encode()
    settings = make_settings(FXEV_MAX_BODY_BYTES=str(len(body) + slack))

    result = capture(body=body, settings=settings)

    assert result.outcome == outcome
    assert len(stores.registry.observations_of_revision(1)) == (outcome == "nueva")


@pytest.mark.parametrize("size", [16, 200 * 1024], ids=["one-read", "many-reads"])
def test_undecodable_gzip_is_cambio_formato_kept_whole(
    size: int, capture: Capture, stores: Stores
) -> None:
    """Nothing of it decodes, so its raw bytes are the evidence: all of them, read to the end
    past the failed decoding (over several reads too), and not marked truncated."""
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]
    body = (b"this is not gzip" * (size // 16 + 1))[:size]

    result = capture(body=body, headers=headers)

    assert (result.outcome, only(result.alertas).tipo) == ("fallo", "cambio_formato")
    assert "cannot be decompressed" in only(result.alertas).detalle["mensaje"]
    event = failure_event(stores, 1)
    assert (event.tipo, event.fecha_serie) == ("cambio_formato", "2026-09-20")
    evidence = evidence_of(stores, event)
    assert (evidence.http_status, evidence.truncated) == (200, False)
    assert stores.blobs.read(evidence.sha256) == body
    assert evidence.headers == [list(pair) for pair in headers]


def test_gzip_that_breaks_after_a_decoded_part_keeps_that_part_as_truncated(
    capture: Capture, stores: Stores
) -> None:
    """A body whose first reads decode and a later one does not: what decoded is the evidence,
    a part of the body, so marked truncated."""
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]
    content = random.Random(7).randbytes(200 * 1024)  # incompressible: several reads' worth
    compressor = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
    decodable = compressor.compress(content) + compressor.flush(zlib.Z_SYNC_FLUSH)
    broken = decodable + b"\xff" * 64  # then a block of the reserved type: zlib refuses it

    result = capture(body=broken, headers=headers)

    assert (result.outcome, only(result.alertas).tipo) == ("fallo", "cambio_formato")
    evidence = evidence_of(stores, failure_event(stores, 1))
    kept = stores.blobs.read(evidence.sha256)
    assert evidence.truncated is True
    assert len(kept) >= 64 * 1024 and content.startswith(kept)


@pytest.mark.parametrize("status", [200, 404])
def test_a_body_in_an_unknown_coding_is_kept_whole_and_not_marked_truncated(
    status: int, capture: Capture, stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    """A body in a coding fxev cannot decode is kept raw; all of it arrived, so it is not marked
    truncated (the WARC export wrote `WARC-Truncated: length` for such complete bodies); one
    over the cap still is."""
    headers = [("Content-Type", "text/plain"), ("Content-Encoding", "br")]
    body = b"\x8b\x02\x80brotli, which fxev does not decode\x03"

    capture(body=body, status=status, headers=headers)
    evidence = evidence_of(stores, failure_event(stores, 1))
    assert (evidence.http_status, evidence.truncated) == (status, False)
    assert stores.blobs.read(evidence.sha256) == body

    capture(
        body=body, status=status, headers=headers, settings=make_settings(FXEV_MAX_BODY_BYTES="8")
    )
    evidence = evidence_of(stores, failure_event(stores, 2))
    assert (evidence.size, evidence.truncated) == (8, True)


def test_dates_are_judged_in_lima_not_utc(capture: Capture, stores: Stores) -> None:
    # 03:00 UTC on the 21st is still the 20th in Lima: the 22nd is two days ahead.
    now = datetime(2026, 9, 21, 3, 0, tzinfo=UTC)

    result = capture(body="22/09/2026|3.354|3.362|", now=now)

    assert result.outcome == "fallo"
    event = failure_event(stores, 1)
    assert (event.tipo, event.fecha_serie) == ("invariante_fallida", "2026-09-20")


# -- alert de-duplication and lifecycle ------------------------------------------------------


def test_same_failure_twice_bumps_one_alert(capture: Capture, stores: Stores) -> None:
    first = capture(body=b"down", status=503)
    later = NOW + timedelta(hours=1)
    second = capture(body=b"down", status=503, now=later)

    assert (first.revision, second.revision) == (1, 2)
    assert failure_event(stores, 2).tipo == "fuente_no_disponible"
    alert = only(stores.alerts.list(open_only=False))
    assert alert.id == only(first.alertas).id == only(second.alertas).id
    assert (alert.contador, alert.estado) == (2, "abierta")
    assert (alert.primera_vez, alert.ultima_vez) == (STAMP, utc_timestamp(later))
    assert alert.detalle["revision"] == 2


def test_different_failure_type_opens_a_second_alert(capture: Capture, stores: Stores) -> None:
    capture(body=b"down", status=503)
    capture(body=HTML_PAGE, headers=[("Content-Type", "text/html")], now=NOW + timedelta(hours=1))

    alerts = stores.alerts.list()
    assert sorted((a.tipo, a.contador) for a in alerts) == [
        ("cambio_formato", 1),
        ("fuente_no_disponible", 1),
    ]


def test_good_capture_resolves_source_failure_alerts_as_sistema(
    capture: Capture, stores: Stores
) -> None:
    capture(body=b"down", status=503)
    capture(body=HTML_PAGE, now=NOW + timedelta(hours=1))
    later = NOW + timedelta(hours=2)

    result = capture(body=TODAY_LINE, now=later)

    assert result.outcome == "nueva"
    assert {a.tipo for a in result.alertas} == {"fuente_no_disponible", "cambio_formato"}
    for alert in result.alertas:
        assert (alert.estado, alert.resuelta_por) == ("resuelta", "sistema")
        assert alert.resuelta_en == utc_timestamp(later)
    assert stores.alerts.list() == []
    assert sorted(a.id for a in stores.alerts.list(open_only=False)) == sorted(
        a.id for a in result.alertas
    )


def test_good_capture_leaves_data_alerts_open(
    capture: Capture, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    anomaly = sunat[date(2021, 5, 13)]
    capture(body=txt_line(anomaly), now=lima(anomaly.fecha))
    capture(body=b"down", status=503, now=lima(anomaly.fecha, 14))

    result = capture(body=txt_line(anomaly), now=lima(anomaly.fecha, 15))

    assert result.outcome == "identica"
    assert [a.tipo for a in result.alertas] == ["fuente_no_disponible"]
    assert [(a.tipo, a.estado) for a in stores.alerts.list()] == [("plausibilidad_baja", "abierta")]


def test_same_failure_after_resolution_opens_a_new_alert(capture: Capture, stores: Stores) -> None:
    first = only(capture(body=b"down", status=503).alertas)
    capture(body=TODAY_LINE, now=NOW + timedelta(hours=1))
    later = NOW + timedelta(hours=2)

    again = only(capture(body=b"down", status=503, now=later).alertas)

    assert again.id != first.id
    assert (again.estado, again.contador, again.primera_vez) == ("abierta", 1, utc_timestamp(later))
    assert stores.alerts.get(first.id).estado == "resuelta"
    assert stores.alerts.list() == [again]


def test_operator_moves_alert_abierta_reconocida_resuelta_without_a_revision(
    capture: Capture, stores: Stores
) -> None:
    alert = only(capture(body=b"down", status=503).alertas)
    later = NOW + timedelta(minutes=5)

    acknowledged = stores.alerts.acknowledge(alert.id, "ana", later)
    assert (acknowledged.estado, acknowledged.reconocida_por) == ("reconocida", "ana")
    assert acknowledged.reconocida_en == utc_timestamp(later)
    assert stores.alerts.list() == [acknowledged]  # still open

    resolved = stores.alerts.resolve(alert.id, "bruno", later + timedelta(minutes=5))
    assert (resolved.estado, resolved.resuelta_por) == ("resuelta", "bruno")
    assert stores.alerts.list() == []

    with pytest.raises(AlertError):
        stores.alerts.acknowledge(alert.id, "carla", later + timedelta(minutes=10))
    assert stores.alerts.get(alert.id) == resolved
    head = stores.registry.head()
    assert head is not None and head.revision == 1  # alerts are not the registry


def test_operator_may_resolve_an_abierta_alert_directly(capture: Capture, stores: Stores) -> None:
    alert = only(capture(body=b"down", status=503).alertas)

    resolved = stores.alerts.resolve(alert.id, "ana", NOW)

    assert (resolved.estado, resolved.resuelta_por, resolved.reconocida_por) == (
        "resuelta",
        "ana",
        None,
    )


def test_recurring_failure_while_reconocida_bumps_the_same_alert(
    capture: Capture, stores: Stores
) -> None:
    alert = only(capture(body=b"down", status=503).alertas)
    stores.alerts.acknowledge(alert.id, "ana", NOW + timedelta(minutes=5))
    later = NOW + timedelta(hours=1)

    again = only(capture(body=b"down", status=503, now=later).alertas)

    assert again.id == alert.id
    assert (again.estado, again.contador, again.ultima_vez) == (
        "reconocida",
        2,
        utc_timestamp(later),
    )
    assert stores.alerts.list(open_only=False) == [again]


def test_good_capture_resolves_an_acknowledged_source_failure_alert_as_sistema(
    capture: Capture, stores: Stores
) -> None:
    alert = only(capture(body=b"down", status=503).alertas)
    stores.alerts.acknowledge(alert.id, "ana", NOW + timedelta(minutes=5))
    later = NOW + timedelta(hours=1)

    result = capture(body=TODAY_LINE, now=later)

    resolved = only(result.alertas)
    assert resolved.id == alert.id
    assert (resolved.estado, resolved.resuelta_por, resolved.reconocida_por) == (
        "resuelta",
        "sistema",
        "ana",
    )
    assert resolved.resuelta_en == utc_timestamp(later)
    assert stores.alerts.list() == []


# -- plausibility: recorded, kept, and marked -------------------------------------------------


def capture_real_days(
    capture: Capture, days: list[SunatDay], settings: Settings | None = None
) -> list[CaptureResult]:
    extra = {} if settings is None else {"settings": settings}
    return [capture(body=txt_line(day), now=lima(day.fecha), **extra) for day in days]


def test_compra_above_venta_as_published_on_2021_05_13_is_kept_and_marked(
    capture: Capture, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    before, anomaly = sunat[date(2021, 5, 12)], sunat[date(2021, 5, 13)]

    _, result = capture_real_days(capture, [before, anomaly])

    assert (result.revision, result.outcome) == (2, "nueva")
    observation = stores.registry.observation(result.observacion_id)
    assert observation is not None
    assert (observation.fecha_serie, observation.compra, observation.venta) == (
        "2021-05-13",
        "3.726",
        "3.725",
    )
    capturada, mark = stores.registry.events_of(observation.id)
    assert (capturada.tipo, mark.tipo, mark.revision) == ("capturada", "plausibilidad_baja", 2)
    assert mark.detalle == {
        "motivos": [{"motivo": "compra_mayor_que_venta", "compra": "3.726", "venta": "3.725"}]
    }
    alert = only(result.alertas)
    assert stores.alerts.list() == [alert]
    assert (alert.tipo, alert.fuente, alert.fecha_serie) == (
        "plausibilidad_baja",
        "taxauth_txt",
        "2021-05-13",
    )
    assert "2021-05-13" in alert.condicion
    assert alert.detalle["observacion_id"] == observation.id


def test_real_move_of_2026_06_10_is_marked_at_the_default_threshold(
    capture: Capture, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    before, moved = sunat[date(2026, 6, 9)], sunat[date(2026, 6, 10)]  # -3.33 % and -3.52 %

    first, result = capture_real_days(capture, [before, moved])

    assert result.outcome == "nueva"
    mark = stores.registry.events_of(result.observacion_id)[-1]
    assert mark.tipo == "plausibilidad_baja"
    motivos = mark.detalle["motivos"]
    assert [(m["motivo"], m["lado"], m["variacion_pct"]) for m in motivos] == [
        ("movimiento", "compra", "3.33"),
        ("movimiento", "venta", "3.52"),
    ]
    assert {m["referencia_observacion_id"] for m in motivos} == {first.observacion_id}
    alert = only(result.alertas)
    assert (alert.tipo, alert.fecha_serie) == ("plausibilidad_baja", "2026-06-10")
    assert stores.alerts.list() == [alert]


def test_real_move_of_2026_06_10_is_not_marked_with_a_4_percent_threshold(
    capture: Capture,
    stores: Stores,
    sunat: dict[date, SunatDay],
    make_settings: Callable[..., Settings],
) -> None:
    days = [sunat[date(2026, 6, 9)], sunat[date(2026, 6, 10)]]

    _, result = capture_real_days(capture, days, make_settings(FXEV_PLAUSIBILITY_PCT="4"))

    assert (result.outcome, result.alertas) == ("nueva", ())
    assert [e.tipo for e in stores.registry.events_of(result.observacion_id)] == ["capturada"]
    assert stores.alerts.list(open_only=False) == []


def test_tomorrows_date_in_lima_is_stored_and_marked(
    capture: Capture, stores: Stores, sunat: dict[date, SunatDay]
) -> None:
    tomorrow = sunat[TODAY + timedelta(days=1)]  # the real 2026-09-21 values

    result = capture(body=txt_line(tomorrow))

    assert result.outcome == "nueva"
    observation = stores.registry.observation(result.observacion_id)
    assert observation is not None and observation.fecha_serie == "2026-09-21"
    mark = stores.registry.events_of(observation.id)[-1]
    assert mark.tipo == "plausibilidad_baja"
    assert mark.detalle["motivos"] == [{"motivo": "fecha_futura", "hoy_lima": "2026-09-20"}]
    alert = only(result.alertas)
    assert (alert.tipo, alert.fecha_serie) == ("plausibilidad_baja", "2026-09-21")


# -- revision clock ------------------------------------------------------------------------


def test_ts_commit_never_goes_backwards(capture: Capture, stores: Stores) -> None:
    capture(body=TODAY_LINE)
    second = capture(body=TODAY_LINE, now=NOW - timedelta(hours=1))

    first_rev, second_rev = stores.registry.revision(1), stores.registry.revision(2)
    assert first_rev is not None and second_rev is not None
    assert second.revision == 2
    assert first_rev.ts_commit == STAMP
    assert second_rev.ts_commit == first_rev.ts_commit


# -- the operator's command line -------------------------------------------------------------


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, home: Path, source: Any) -> Any:
    """Environment of ``fxev`` for ``home``, with only the variables a test sets."""
    for name in [n for n in os.environ if n.startswith("FXEV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FXEV_HOME", str(home))
    monkeypatch.setenv("FXEV_TAXAUTH_URL", TAXAUTH_URL)
    monkeypatch.setenv("FXEV_NOW", NOW.isoformat())
    return source


def serve(source: Any, body: bytes, status: int = 200) -> None:
    source.reset()
    source.add("GET", TAXAUTH_URL, body=body, status=status, content_type="text/plain")


def last_json_line(text: str) -> dict[str, Any]:
    lines = text.splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def test_cli_capture_prints_one_json_line_and_records_it(
    cli_env: Any, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    serve(cli_env, TODAY_LINE.encode())

    code = main(["capture"])

    out = last_json_line(capsys.readouterr().out)
    assert code == 0
    assert set(out) == {
        "revision",
        "outcome",
        "observacion_id",
        "observaciones",
        "alerta",
        "alertas",
    }
    assert (out["revision"], out["outcome"], out["alerta"], out["alertas"]) == (
        1,
        "nueva",
        None,
        [],
    )
    assert out["observaciones"] == [
        {
            "fecha_serie": "2026-09-20",
            "serie": "publicado",
            "outcome": "nueva",
            "observacion_id": out["observacion_id"],
        }
    ]
    stores = Stores.open(home)
    try:
        observation = stores.registry.observation(out["observacion_id"])
        assert observation is not None
        assert (observation.compra, observation.venta, observation.capturado_en) == (
            "3.354",
            "3.362",
            STAMP,
        )
    finally:
        stores.close()


def test_cli_capture_of_a_failure_exits_zero_and_prints_the_alert(
    cli_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    serve(cli_env, b"down", status=503)

    code = main(["capture"])

    out = last_json_line(capsys.readouterr().out)
    assert (code, out["revision"], out["outcome"], out["observacion_id"]) == (0, 1, "fallo", None)
    assert out["alerta"]["tipo"] == "fuente_no_disponible"
    assert out["alertas"] == [out["alerta"]]


def test_cli_alerts_list_prints_items(cli_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    serve(cli_env, b"down", status=503)
    main(["capture"])
    alert = last_json_line(capsys.readouterr().out)["alerta"]

    code = main(["alerts", "list"])

    assert code == 0
    assert last_json_line(capsys.readouterr().out) == {"items": [alert]}


def test_cli_ack_of_unknown_alert_fails_with_one_stderr_line_and_changes_nothing(
    cli_env: Any, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    serve(cli_env, b"down", status=503)
    main(["capture"])
    alert = last_json_line(capsys.readouterr().out)["alerta"]

    code = main(["alerts", "ack", "00000000-0000-4000-8000-000000000000", "--actor", "x"])

    captured = capsys.readouterr()
    assert code != 0
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    main(["alerts", "list"])
    assert last_json_line(capsys.readouterr().out) == {"items": [alert]}


def test_cli_capture_url_option_fetches_and_names_that_url(
    cli_env: Any, capsys: pytest.CaptureFixture[str], home: Path
) -> None:
    other = "https://mirror.test/tipoCambio.txt"
    cli_env.reset()
    cli_env.add("GET", other, body=TODAY_LINE.encode(), content_type="text/plain")

    code = main(["capture", "--url", other])

    out = last_json_line(capsys.readouterr().out)
    assert (code, out["outcome"]) == (0, "nueva")
    stores = Stores.open(home)
    try:
        observation = stores.registry.observation(out["observacion_id"])
        assert observation is not None
        assert observation.identidad_consulta == f"GET {other}"
    finally:
        stores.close()
