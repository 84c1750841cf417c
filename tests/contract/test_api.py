"""The HTTP contract (docs/api.md, docs/decisions.md) against a real gateway process."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.contract.conftest import TAMPERED_REVISION, Gateway, fxev, issue_token

ENVELOPE = {"dataset_revision", "request_id", "schema_version"}
ITEM_FIELDS = {
    "fecha_serie",
    "compra",
    "venta",
    "fuente",
    "cotejos",
    "tiene_discrepancia_abierta",
    "marcas",
    "observacion_id",
    "capturado_en",
    "superseded",
    "superseded_por",
}
OBSERVATION_FIELDS = {
    "id",
    "moneda",
    "serie",
    "fecha_serie",
    "compra",
    "venta",
    "compra_cruda",
    "venta_cruda",
    "fuente",
    "identidad_consulta",
    "fragmento",
    "version_parser",
    "capturado_en",
    "ejecucion_id",
    "evidencia_id",
    "revision_creada",
}
PUBLISHED = 6  # import, capture, identical, correction, failure, central bank capture
RATES = "/v1/rates?currency=USD&series=publicado"
SEPT = RATES + "&from=2026-09-15&to=2026-09-30"
UNKNOWN_UUID = "00000000-0000-4000-8000-000000000000"


def assert_api_error(resp: requests.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"code", "message", "request_id", "retryable"}
    assert body["code"] == code
    assert body["retryable"] is (code in ("INTERNAL", "RATE_LIMITED"))
    assert body["request_id"] == resp.headers["X-Request-Id"]
    assert resp.headers["Cache-Control"] == "no-store"
    return body


def assert_fresh_envelope(resp: requests.Response, revision: int = PUBLISHED) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["dataset_revision"] == revision
    assert body["schema_version"] == "1.0"
    assert body["request_id"] == resp.headers["X-Request-Id"]
    assert uuid.UUID(body["request_id"]).version == 4
    assert resp.headers["Cache-Control"] == "no-store"
    assert "ETag" not in resp.headers
    return body


def correction(gateway: Gateway) -> tuple[dict[str, Any], dict[str, Any]]:
    """(item of 2026-09-21 at revision 3, the current one): the demo's corrected value."""
    old = gateway.get(SEPT + "&as_of_revision=3").json()["items"][-1]
    new = gateway.get(SEPT).json()["items"][-1]
    return old, new


# -- errors, one row of the error table (docs/decisions.md#errors) at a time ------------------


@pytest.mark.parametrize(
    "query",
    [
        "/v1/rates?series=publicado&from=2026-09-01&to=2026-09-30",
        "/v1/rates?currency=&series=publicado&from=2026-09-01&to=2026-09-30",
        "/v1/rates?currency=USD&from=2026-09-01&to=2026-09-30",
        RATES + "&to=2026-09-30",
        RATES + "&from=2026-09-01",
        RATES + "&from=2026-9-01&to=2026-09-30",
        RATES + "&from=2026-02-30&to=2026-09-30",
        RATES + "&from=2026-09-30&to=2026-09-01",
        RATES + "&from=2021-09-21&to=2026-09-22",
        RATES + "&from=2024-02-29&to=2029-03-01",
        SEPT + "&include_annotations=True",
        SEPT + "&include_annotations=1",
        SEPT + "&as_of_revision=0",
        SEPT + "&as_of_revision=01",
        SEPT + "&as_of_revision=-1",
        SEPT + f"&as_of_revision={PUBLISHED + 1}",
        SEPT + "&as_of_revision=",
        SEPT + "&page_token=garbage",
        SEPT + "&currency=USD",
        SEPT + "&limit=10",
        "/v1/rates/latest?currency=USD",
        "/v1/rates/latest?currency=USD&series=publicado&from=2026-09-01",
        "/v1/alerts?open=yes",
        "/v1/revisions",
        "/v1/revisions?at=2026-09-21T20:00:00",
        "/v1/revisions?at=2026-09-21",
        "/v1/coverage?x=1",
        "/v1/annotations?from=2026-13-01",
    ],
)
def test_invalid_params_answer_400(gateway: Gateway, query: str) -> None:
    assert_api_error(gateway.get(query), 400, "INVALID_PARAMS")


def test_form_errors_are_checked_before_currency(gateway: Gateway) -> None:
    resp = gateway.get("/v1/rates?currency=EUR&series=publicado&from=bad&to=2026-09-30")
    assert_api_error(resp, 400, "INVALID_PARAMS")


def test_five_year_range_is_inclusive_and_29_february_maps_to_28(gateway: Gateway) -> None:
    assert gateway.get(RATES + "&from=2021-09-21&to=2026-09-21").status_code == 200
    assert gateway.get(RATES + "&from=2024-02-29&to=2029-02-28").status_code == 200


@pytest.mark.parametrize("currency", ["EUR", "usd", "XYZ"])
def test_any_currency_but_exactly_usd_is_unsupported(gateway: Gateway, currency: str) -> None:
    resp = gateway.get(
        f"/v1/rates?currency={currency}&series=publicado&from=2026-09-01&to=2026-09-30"
    )
    assert_api_error(resp, 404, "UNSUPPORTED_CURRENCY")
    resp = gateway.get(f"/v1/rates/latest?currency={currency}&series=publicado")
    assert_api_error(resp, 404, "UNSUPPORTED_CURRENCY")


def test_currency_is_checked_before_series(gateway: Gateway) -> None:
    resp = gateway.get("/v1/rates?currency=EUR&series=venta&from=2026-09-01&to=2026-09-30")
    assert_api_error(resp, 404, "UNSUPPORTED_CURRENCY")


@pytest.mark.parametrize("series", ["venta", "Publicado", "compra"])
def test_unknown_series_is_unsupported(gateway: Gateway, series: str) -> None:
    resp = gateway.get(f"/v1/rates?currency=USD&series={series}&from=2026-09-01&to=2026-09-30")
    assert_api_error(resp, 404, "UNSUPPORTED_SERIES")
    assert_api_error(gateway.get("/v1/annotations?series=" + series), 404, "UNSUPPORTED_SERIES")


@pytest.mark.parametrize(
    "query",
    [
        RATES + "&from=2010-01-01&to=2010-12-31",
        "/v1/rates?currency=USD&series=cierre&from=2026-09-01&to=2026-09-30",
        "/v1/rates/latest?currency=USD&series=cierre",
        "/v1/revisions?at=2020-01-01T00:00:00Z",
    ],
)
def test_valid_query_without_data_is_no_observations(gateway: Gateway, query: str) -> None:
    assert_api_error(gateway.get(query), 404, "NO_OBSERVATIONS")


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/observations/{UNKNOWN_UUID}",
        f"/v1/evidence/{UNKNOWN_UUID}",
        "/v1/nope",
        "/v2/rates",
        "/v1/rates/",
        "/v1/health/live/",
        "/v1/coverage/",
        "/v1/observations/",
    ],
)
def test_unknown_id_or_path_is_not_found(gateway: Gateway, path: str) -> None:
    assert_api_error(gateway.get(path), 404, "NOT_FOUND")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/v1/rates", "/v1/health/live", "/v1/observations/x"])
def test_methods_other_than_get_and_head_get_405_with_allow(
    gateway: Gateway, method: str, path: str
) -> None:
    resp = gateway.request(method, path)
    assert_api_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("route", "name", "value"),
    [
        ("observations", "obs_id", "not-a-uuid"),
        ("observations", "obs_id", "00000000000040008000000000000000"),
        ("evidence", "ev_id", "{00000000-0000-4000-8000-000000000000}"),
        ("evidence", "ev_id", "12345"),
    ],
)
def test_malformed_path_id_gets_422_validation_body(
    gateway: Gateway, route: str, name: str, value: str
) -> None:
    resp = gateway.get(f"/v1/{route}/{value}")
    assert resp.status_code == 422
    body = resp.json()
    assert set(body) == {"detail"}
    [detail] = body["detail"]
    assert detail["type"] == "uuid_parsing"
    assert detail["loc"] == ["path", name]
    assert detail["input"] == value
    assert isinstance(detail["msg"], str)


def test_malformed_path_id_without_token_is_401_first(gateway: Gateway) -> None:
    assert_api_error(gateway.get("/v1/observations/x", token=None), 401, "UNAUTHORIZED")


def test_unexpected_failure_is_internal_without_detail_and_logged(
    corrupt_gateway: Gateway, demo_home: object
) -> None:
    latest = corrupt_gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
    detail = corrupt_gateway.get(f"/v1/observations/{latest['observacion_id']}").json()
    resp = corrupt_gateway.get(f"/v1/evidence/{detail['observacion']['evidencia_id']}")
    body = assert_api_error(resp, 500, "INTERNAL")
    assert body["message"] == "Internal error."
    assert "TreeCorruptError" in corrupt_gateway.log()


def test_an_altered_revision_record_answers_internal_rather_than_its_data(
    tampered_record_gateway: Gateway,
) -> None:
    """Revision 2's record no longer matches the hash revision 3's record holds for it."""
    assert tampered_record_gateway.get(SEPT).status_code == 200  # does not need record 2
    resp = tampered_record_gateway.get(SEPT + f"&as_of_revision={TAMPERED_REVISION}")
    body = assert_api_error(resp, 500, "INTERNAL")
    assert body["message"] == "Internal error."
    assert "revision record 2 does not match" in tampered_record_gateway.log()
    assert tampered_record_gateway.get(SEPT + "&as_of_revision=3").status_code == 200


# -- before the first build
# (docs/decisions.md#revisions)--------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1/health/ready",
        "/v1/rates/latest?currency=USD&series=publicado",
        SEPT,
        "/v1/coverage",
        "/v1/alerts",
        f"/v1/observations/{UNKNOWN_UUID}",
    ],
)
def test_before_the_first_build_data_answers_503_retryable(
    unbuilt_gateway: Gateway, path: str
) -> None:
    """DECISIONS 4 ("503, code `INTERNAL`, `retryable: true`") and 9 ("An `INTERNAL` body
    carries no detail"): the body does not say why."""
    body = assert_api_error(unbuilt_gateway.get(path), 503, "INTERNAL")
    assert body["message"] == "Internal error."


def test_before_the_first_build_live_still_answers(unbuilt_gateway: Gateway) -> None:
    assert unbuilt_gateway.get("/v1/health/live", token=None).json() == {"status": "alive"}


# -- authentication ---------------------------------------------------------------------------


INVALID_TOKEN = 'Bearer error="invalid_token"'


@pytest.mark.parametrize(
    ("headers", "challenge"),
    [
        ({}, "Bearer"),
        ({"Authorization": "Bearer"}, "Bearer"),
        ({"Authorization": "Bearer fxev_0123456789abcdef_nope"}, INVALID_TOKEN),
        ({"Authorization": "Bearer not-even-shaped"}, INVALID_TOKEN),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "Bearer"),
    ],
)
@pytest.mark.parametrize("path", ["/v1/health/ready", "/v1/coverage", SEPT])
def test_missing_or_invalid_token_gets_401_with_www_authenticate(
    gateway: Gateway, headers: dict[str, str], challenge: str, path: str
) -> None:
    """docs/decisions.md#http-basics: a token presented and refused is ``invalid_token``."""
    resp = requests.get(gateway.url(path), headers=headers, timeout=10)
    assert_api_error(resp, 401, "UNAUTHORIZED")
    assert resp.headers["WWW-Authenticate"] == challenge


def test_auth_is_checked_before_parameters(gateway: Gateway) -> None:
    assert_api_error(gateway.get("/v1/rates?currency=EUR", token=None), 401, "UNAUTHORIZED")


def test_revoked_token_gets_401_on_next_request(gateway: Gateway) -> None:
    token_id, token = issue_token(gateway.env, "to-revoke")
    for _ in range(4):  # both workers have seen it
        assert gateway.get("/v1/coverage", token=token).status_code == 200
    fxev(gateway.env, "token", "revoke", token_id)
    for _ in range(4):
        resp = gateway.get("/v1/coverage", token=token)
        assert_api_error(resp, 401, "UNAUTHORIZED")
        assert resp.headers["WWW-Authenticate"] == INVALID_TOKEN
    assert gateway.get("/v1/coverage").status_code == 200


def test_live_needs_no_token(gateway: Gateway) -> None:
    resp = gateway.get("/v1/health/live", token=None)
    assert resp.status_code == 200
    assert resp.json() == {"status": "alive"}
    assert resp.headers["Cache-Control"] == "no-store"
    uuid.UUID(resp.headers["X-Request-Id"])


# -- happy paths and field sets ---------------------------------------------------------------


def test_ready_answers_ready_with_token(gateway: Gateway) -> None:
    resp = gateway.get("/v1/health/ready")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ready"}


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda pointer: pointer.write_bytes(pointer.read_bytes()[:40]), id="cut"),
        pytest.param(lambda pointer: pointer.write_bytes(b""), id="emptied"),
        pytest.param(lambda pointer: (pointer.unlink(), pointer.mkdir()), id="a-folder"),
    ],
)
def test_ready_is_503_while_the_published_pointer_cannot_be_read(
    private_gateway: Gateway, damage: Callable[[Path], object]
) -> None:
    """DECISIONS 9: the probe answers 503 INTERNAL, retryable, not 500, when the published tree
    does not answer; and 200 again once it does."""
    pointer = private_gateway.site / "PUBLISHED"
    kept = pointer.read_bytes()
    damage(pointer)
    resp = private_gateway.get("/v1/health/ready")
    assert_api_error(resp, 503, "INTERNAL")
    assert resp.json()["retryable"] is True
    if pointer.is_dir():
        pointer.rmdir()
    pointer.write_bytes(kept)
    assert private_gateway.get("/v1/health/ready").status_code == 200


def test_rates_lists_items_ascending_with_envelope(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get(SEPT))
    assert set(body) == {"items", "total", "next_page_token"} | ENVELOPE
    fechas = [item["fecha_serie"] for item in body["items"]]
    assert fechas == sorted(fechas)
    assert fechas[0] == "2026-09-15"
    assert fechas[-1] == "2026-09-21"
    assert body["total"] == len(body["items"])
    assert body["next_page_token"] is None
    for item in body["items"]:
        assert set(item) == ITEM_FIELDS
        assert item["superseded"] is False
        assert len(item["compra"].split(".")[1]) == 3
    assert body["items"][-1]["fuente"] == "taxauth_txt"


def test_rates_include_annotations_adds_the_list(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get(SEPT + "&include_annotations=true"))
    assert body["annotations"] == []
    assert "annotations" not in gateway.get(SEPT + "&include_annotations=false").json()


def test_rates_pages_walk_the_whole_range_at_one_revision(gateway: Gateway) -> None:
    query = RATES + "&from=2021-01-01&to=2023-12-31"
    first = assert_fresh_envelope(gateway.get(query))
    assert len(first["items"]) == 366
    seen = [item["fecha_serie"] for item in first["items"]]
    token = first["next_page_token"]
    while token is not None:
        page = assert_fresh_envelope(gateway.get(query, params={"page_token": token}))
        assert page["total"] == first["total"]
        assert 1 <= len(page["items"]) <= 366  # null on the last page: none announces nothing
        seen += [item["fecha_serie"] for item in page["items"]]
        token = page["next_page_token"]
    assert len(seen) == first["total"]
    assert seen == sorted(set(seen))


def test_page_token_of_another_query_is_invalid(gateway: Gateway) -> None:
    first = gateway.get(RATES + "&from=2021-01-01&to=2023-12-31").json()
    other = RATES + "&from=2021-01-01&to=2023-12-30"
    resp = gateway.get(other, params={"page_token": first["next_page_token"]})
    assert_api_error(resp, 400, "INVALID_PARAMS")
    resp = gateway.get(
        RATES + "&from=2021-01-01&to=2023-12-31&as_of_revision=4",
        params={"page_token": first["next_page_token"]},
    )
    assert_api_error(resp, 400, "INVALID_PARAMS")


def test_latest_is_the_newest_item_with_frescura(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get("/v1/rates/latest?currency=USD&series=publicado"))
    assert set(body) == ITEM_FIELDS | {"frescura"} | ENVELOPE
    assert body["fecha_serie"] == "2026-09-21"
    assert (body["compra"], body["venta"]) == ("3.356", "3.364")
    assert body["superseded_por"] is None
    assert body["frescura"] == {
        "estado": "al_dia",
        "n_dias_habiles": 0,
        "fecha_esperada": "2026-09-21",
        "hoy_lima": "2026-09-21",
        "zona": "America/Lima",
    }


def test_observation_detail_shows_the_chain(gateway: Gateway) -> None:
    old, new = correction(gateway)
    body = assert_fresh_envelope(gateway.get(f"/v1/observations/{old['observacion_id']}"))
    assert set(body) == {"observacion", "cadena", "eventos", "cotejos", "superseded"} | ENVELOPE
    assert set(body["observacion"]) == OBSERVATION_FIELDS
    assert body["superseded"] is True
    assert [o["id"] for o in body["cadena"]["sucesoras"]] == [new["observacion_id"]]
    assert [o["fuente"] for o in body["cadena"]["ancestros"]] == ["importado"]
    tipos = [event["tipo"] for event in body["eventos"]]
    assert tipos == ["capturada", "recaptura_identica", "supersedida"]
    assert set(body["eventos"][0]) == {
        "id",
        "tipo",
        "ts",
        "revision",
        "ejecucion_id",
        "evidencia_id",
        "detalle",
    }


def test_observation_id_is_case_insensitive(gateway: Gateway) -> None:
    _, new = correction(gateway)
    body = gateway.get(f"/v1/observations/{new['observacion_id'].upper()}").json()
    assert body["observacion"]["id"] == new["observacion_id"]
    assert body["superseded"] is False


def test_evidence_bytes_hash_to_x_sha256(gateway: Gateway) -> None:
    _, new = correction(gateway)
    record = gateway.get(f"/v1/observations/{new['observacion_id']}").json()["observacion"]
    resp = gateway.get(f"/v1/evidence/{record['evidencia_id']}")
    assert resp.status_code == 200
    digest = hashlib.sha256(resp.content).hexdigest()
    assert resp.headers["X-Sha256"] == digest
    assert resp.headers["ETag"] == f'"{digest}"'
    assert resp.content == b"21/09/2026|3.356|3.364|\r\n"
    assert resp.headers["Content-Type"] == "text/plain; charset=ISO-8859-1"
    assert resp.headers["X-Capturado-En"] == record["capturado_en"]
    assert resp.headers["X-Identidad-Consulta"] == record["identidad_consulta"]
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["Content-Security-Policy"] == "sandbox"
    assert resp.headers["Content-Disposition"] == "attachment"  # exactly (section 9)
    assert resp.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    again = gateway.get(
        f"/v1/evidence/{record['evidencia_id']}", headers={"If-None-Match": f'"{digest}"'}
    )
    assert again.status_code == 304
    assert again.content == b""


def test_head_answers_headers_without_body(gateway: Gateway) -> None:
    resp = gateway.request("HEAD", "/v1/coverage")
    assert resp.status_code == 200
    assert resp.content == b""
    uuid.UUID(resp.headers["X-Request-Id"])


def test_revisions_resolves_an_instant_and_reads_a_space_as_plus(gateway: Gateway) -> None:
    resp = requests.get(
        gateway.url("/v1/revisions?at=2026-09-21T20:00:00+00:00"),
        headers={"Authorization": f"Bearer {gateway.token}"},
        timeout=10,
    )
    body = assert_fresh_envelope(resp)
    assert set(body) == {"revision", "ts_commit"} | ENVELOPE
    assert body == body | {"revision": PUBLISHED, "ts_commit": "2026-09-21T20:00:00.000000Z"}
    encoded = gateway.get("/v1/revisions?at=2026-09-21T15:00:00.5-05:00").json()
    assert encoded["revision"] == PUBLISHED


@pytest.mark.parametrize(
    "at",
    [
        "0999-12-31T23:59:59Z",  # years before 1000 once compared as unpadded text
        "0001-01-01T00:00:01%2B01:01",  # before year 1 in UTC: once a 500
    ],
)
def test_revisions_before_year_1000_or_year_1_is_no_observations(gateway: Gateway, at: str) -> None:
    assert_api_error(gateway.get("/v1/revisions?at=" + at), 404, "NO_OBSERVATIONS")


def test_revisions_after_year_9999_in_utc_resolves_the_published_revision(
    gateway: Gateway,
) -> None:
    resp = gateway.get("/v1/revisions?at=9999-12-31T23:59:59-01:00")  # once a 500
    assert resp.status_code == 200, resp.text
    assert resp.json()["revision"] == PUBLISHED


def test_coverage_lists_the_served_series(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get("/v1/coverage"))
    assert set(body) == {"series"} | ENVELOPE
    [entry] = body["series"]
    assert set(entry) == {
        "moneda",
        "serie",
        "primera",
        "ultima",
        "total_fechas",
        "huecos",
        "criterio_huecos",
    }
    assert (entry["moneda"], entry["serie"], entry["ultima"]) == ("USD", "publicado", "2026-09-21")


def test_alerts_lists_open_by_default_and_all_on_request(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get("/v1/alerts"))
    assert set(body) == {"items", "total"} | ENVELOPE
    assert body["total"] == len(body["items"]) == 1
    alert = body["items"][0]
    assert {"id", "tipo", "estado", "contador", "ultima_vez"} <= set(alert)
    assert (alert["tipo"], alert["estado"]) == ("fuente_no_disponible", "abierta")
    assert gateway.get("/v1/alerts?open=false").json()["total"] >= 1


def test_annotations_empty_listing_is_200(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get("/v1/annotations?currency=USD&series=publicado"))
    assert (body["items"], body["total"]) == ([], 0)


def test_freshness_reports_each_series_and_open_alerts(gateway: Gateway) -> None:
    body = assert_fresh_envelope(gateway.get("/v1/health/freshness"))
    assert set(body) == {"series", "alertas_abiertas", "hoy_lima", "ntp"} | ENVELOPE
    assert body["series"] == [
        {
            "moneda": "USD",
            "serie": "publicado",
            "ultima_fecha_serie": "2026-09-21",
            "fecha_esperada": "2026-09-21",
            "edad_dias_habiles": 0,
        }
    ]
    assert body["alertas_abiertas"] == 1
    assert body["hoy_lima"] == "2026-09-21"
    assert body["ntp"] in {"sincronizado", "no_sincronizado", "no_verificado"}


# -- as-of responses
# (docs/decisions.md#as-of)---------------------------------------------------------


def test_as_of_response_is_deterministic_and_immutable(gateway: Gateway) -> None:
    query = SEPT + "&as_of_revision=3"
    first, second = gateway.get(query), gateway.get(query)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert first.headers["ETag"] == second.headers["ETag"]
    assert first.headers["ETag"] == '"' + hashlib.sha256(first.content).hexdigest() + '"'
    assert first.headers["Cache-Control"] == "private, max-age=31536000, immutable"
    assert first.headers["CDN-Cache-Control"] == "max-age=31536000"
    assert first.headers["Cache-Tag"] == "USD/publicado/2026"
    body = first.json()
    assert body["dataset_revision"] == 3
    assert uuid.UUID(body["request_id"]).version == 5
    assert body["request_id"] != first.headers["X-Request-Id"]
    assert first.headers["X-Request-Id"] != second.headers["X-Request-Id"]


def test_as_of_request_id_ignores_parameter_order_and_defaults(gateway: Gateway) -> None:
    plain = gateway.get(SEPT + "&as_of_revision=3")
    shuffled = gateway.get(
        "/v1/rates?to=2026-09-30&as_of_revision=3&include_annotations=false"
        "&from=2026-09-15&series=publicado&currency=%55SD"
    )
    assert shuffled.content == plain.content


def test_as_of_if_none_match_answers_304(gateway: Gateway) -> None:
    query = SEPT + "&as_of_revision=3"
    etag = gateway.get(query).headers["ETag"]
    resp = gateway.get(query, headers={"If-None-Match": etag})
    assert resp.status_code == 304
    assert resp.content == b""
    assert resp.headers["ETag"] == etag


def test_as_of_cache_tags_cover_every_year_of_the_range(gateway: Gateway) -> None:
    resp = gateway.get(RATES + "&from=2024-11-01&to=2026-01-31&as_of_revision=5")
    assert resp.headers["Cache-Tag"] == "USD/publicado/2024,USD/publicado/2025,USD/publicado/2026"


def test_as_of_pages_are_deterministic_too(gateway: Gateway) -> None:
    query = RATES + "&from=2021-01-01&to=2022-12-31&as_of_revision=2"
    token = gateway.get(query).json()["next_page_token"]
    assert token == gateway.get(query).json()["next_page_token"]
    one = gateway.get(query, params={"page_token": token})
    two = gateway.get(query, params={"page_token": token})
    assert one.content == two.content
    assert one.json()["dataset_revision"] == 2


def test_superseded_por_shows_todays_correction_at_an_earlier_revision(gateway: Gateway) -> None:
    old, new = correction(gateway)
    assert old["observacion_id"] != new["observacion_id"]
    assert old["superseded_por"] == new["observacion_id"]
    assert old["superseded"] is False
    assert (old["compra"], new["compra"]) == ("3.354", "3.356")
    assert new["superseded_por"] is None


def test_responses_without_as_of_are_no_store_with_fresh_ids(gateway: Gateway) -> None:
    one, two = gateway.get(SEPT), gateway.get(SEPT)
    assert one.json()["request_id"] != two.json()["request_id"]
    assert one.headers["Cache-Control"] == "no-store"
    assert "ETag" not in one.headers
