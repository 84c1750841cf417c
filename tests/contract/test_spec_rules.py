"""SPEC.md rules, endpoint by endpoint, that the other contract tests leave unchecked.

Each test names the SPEC (or DECISIONS) rule it holds the running gateway to.
"""

from __future__ import annotations

import orjson
import pytest

from tests.contract.conftest import Gateway, fxev

DAY = "/v1/rates?currency=USD&series=publicado&from=2026-09-21&to=2026-09-21"


def _day_at(gateway: Gateway, revision: int) -> dict:
    response = gateway.get(f"{DAY}&as_of_revision={revision}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["dataset_revision"] == revision
    (item,) = body["items"]
    return item


# -- /v1/revisions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "revision"),
    [
        ("2026-09-21T20:00:00.0000000Z", 6),  # .NET's round-trip ("o") format: 7 digits
        ("2026-09-21T20:00:00.000000001Z", 6),
        ("2026-09-21T15:00:00.1234567-05:00", 6),
    ],
)
def test_revisions_at_accepts_an_iso_8601_instant_with_any_number_of_fraction_digits(
    gateway: Gateway, at: str, revision: int
) -> None:
    """SPEC /v1/revisions: `at` is an ISO-8601 date-time with offset; ISO-8601 bounds no
    number of decimal fraction digits of the seconds."""
    response = gateway.get("/v1/revisions", params={"at": at})
    assert response.status_code == 200, response.text
    assert response.json()["revision"] == revision


@pytest.mark.parametrize(
    "at", ["2026-09-21T19:59:59.9999999Z", "2026-09-21T14:59:59.99999999-05:00"]
)
def test_revisions_at_just_before_the_first_commit_is_no_observations(
    gateway: Gateway, at: str
) -> None:
    """SPEC /v1/revisions: `at` earlier than the first revision answers 404 NO_OBSERVATIONS."""
    response = gateway.get("/v1/revisions", params={"at": at})
    assert response.status_code == 404, response.text
    assert response.json()["code"] == "NO_OBSERVATIONS"


def test_revisions_envelope_is_the_current_revision(gateway: Gateway) -> None:
    """SPEC /v1/revisions: the envelope's dataset_revision is the current revision, not the
    resolved one; ts_commit is a UTC timestamp."""
    body = gateway.get("/v1/revisions", params={"at": "2026-09-21T20:00:00Z"}).json()
    current = gateway.get("/v1/coverage").json()["dataset_revision"]
    assert body["dataset_revision"] == current
    assert body["ts_commit"].endswith("Z")


# -- /v1/rates as of a revision ----------------------------------------------------------------


def test_marcas_are_the_event_types_as_of_the_queried_revision(gateway: Gateway) -> None:
    """SPEC rate item `marcas`, DECISIONS 6: the distinct event types recorded on the observation
    as of the queried revision, in order of first occurrence."""
    assert _day_at(gateway, 1)["marcas"] == ["importada"]
    assert _day_at(gateway, 2)["marcas"] == ["capturada"]
    assert _day_at(gateway, 3)["marcas"] == ["capturada", "recaptura_identica"]
    assert _day_at(gateway, 4)["marcas"] == ["capturada", "correccion"]


def test_superseded_por_is_the_direct_successor_as_of_the_latest_revision(gateway: Gateway) -> None:
    """SPEC rate item: `superseded` is always false in a served item; `superseded_por` is the UUID
    of the observation that corrected this one as of the latest revision (DECISIONS 6: the direct
    successor), or null."""
    first, second, third = (_day_at(gateway, r) for r in (1, 2, 6))
    assert [i["superseded"] for i in (first, second, third)] == [False, False, False]
    assert first["fuente"] == "importado"
    assert first["superseded_por"] == second["observacion_id"]
    assert second["superseded_por"] == third["observacion_id"]
    assert third["superseded_por"] is None


def test_cotejos_of_an_item_are_those_of_the_queried_revision(gateway: Gateway) -> None:
    """SPEC rate item `cotejos`: entries with contraparte, resultado, regla, revision; an empty
    list until a counterpart exists (the closes arrive at revision 6)."""
    query = "/v1/rates?currency=USD&series=publicado&from=2026-09-02&to=2026-09-02"
    (before,) = gateway.get(f"{query}&as_of_revision=5").json()["items"]
    (after,) = gateway.get(f"{query}&as_of_revision=6").json()["items"]
    assert before["cotejos"] == []
    (cotejo,) = after["cotejos"]
    assert {"contraparte", "resultado", "regla", "revision"} <= cotejo.keys()
    assert cotejo["contraparte"] == "centralbank"
    assert cotejo["resultado"] in ("ok", "discrepante")
    assert isinstance(cotejo["regla"], str) and cotejo["regla"]
    assert cotejo["revision"] == 6
    assert after["tiene_discrepancia_abierta"] is (cotejo["resultado"] == "discrepante")


def test_total_counts_the_whole_range_at_the_queried_revision(gateway: Gateway) -> None:
    """SPEC /v1/rates `total`: total items of the range at the queried revision, not of the page."""
    query = "/v1/rates?currency=USD&series=publicado&from=2021-09-21&to=2026-09-21"
    first = gateway.get(query).json()
    assert len(first["items"]) == 366 and first["total"] > 366
    walked, token = len(first["items"]), first["next_page_token"]
    while token:
        page = gateway.get(f"{query}&page_token={token}").json()
        assert page["total"] == first["total"]
        walked, token = walked + len(page["items"]), page["next_page_token"]
    assert walked == first["total"]


@pytest.mark.parametrize(
    "query",
    [
        "currency=USD&series=publicado&from=2000-01-01&to=2000-01-02&as_of_revision=3",
        "currency=EUR&series=publicado&from=2026-09-01&to=2026-09-02&as_of_revision=6",
        "currency=USD&series=publicado&from=2026-09-01&to=2026-09-02&as_of_revision=99",
    ],
)
def test_an_error_to_an_as_of_request_is_not_an_as_of_response(
    gateway: Gateway, query: str
) -> None:
    """DECISIONS 5: an error is never an as-of response: no-store, no ETag, fresh request_id
    equal to X-Request-Id; SPEC error body: code, message, request_id, retryable."""
    response = gateway.get(f"/v1/rates?{query}")
    assert response.status_code in (400, 404)
    assert response.headers["Cache-Control"] == "no-store"
    assert "ETag" not in response.headers
    body = response.json()
    assert set(body) == {"code", "message", "request_id", "retryable"}
    assert body["request_id"] == response.headers["X-Request-Id"]
    assert body["retryable"] is False


# -- observations and cotejos ------------------------------------------------------------------


def test_a_close_carries_one_cotejo_per_publication_that_points_to_it(gateway: Gateway) -> None:
    """DECISIONS 11 (SPEC observation `cotejos`): a `cierre` observation carries one cotejo per
    `publicado` date checked against it; Friday's close backs Saturday, Sunday and Monday."""
    (friday,) = gateway.get(
        "/v1/rates?currency=USD&series=publicado&from=2026-09-05&to=2026-09-05"
    ).json()["items"][0]["cotejos"]
    close = gateway.get(f"/v1/observations/{friday['contraparte_observacion_id']}").json()
    assert close["observacion"]["serie"] == "cierre"
    assert close["observacion"]["fecha_serie"] == "2026-09-04"
    assert sorted(c["contraparte_fecha"] for c in close["cotejos"]) == [
        "2026-09-05",
        "2026-09-06",
        "2026-09-07",
    ]


def test_the_chain_of_the_first_observation_lists_every_successor_nearest_first(
    gateway: Gateway,
) -> None:
    """SPEC observation detail: a superseded observation stays queryable with its chain of
    successors (DECISIONS 6: `sucesoras` nearest first) and `superseded: true`."""
    first = gateway.get(f"/v1/observations/{_day_at(gateway, 1)['observacion_id']}").json()
    second = _day_at(gateway, 2)["observacion_id"]
    third = _day_at(gateway, 6)["observacion_id"]
    assert first["superseded"] is True
    assert first["cadena"]["ancestros"] == []
    assert [o["id"] for o in first["cadena"]["sucesoras"]] == [second, third]
    assert [e["tipo"] for e in first["eventos"]] == ["importada", "supersedida"]


# -- health ------------------------------------------------------------------------------------


def test_live_ignores_a_refused_token(gateway: Gateway) -> None:
    """SPEC authentication 2: /v1/health/live is public: a bogus token does not make it 401."""
    response = gateway.get("/v1/health/live", token="bogus")
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}


@pytest.mark.gateway_env(FXEV_NOW="2026-10-09T10:00:00-05:00")
def test_freshness_counts_business_days_minus_holidays(private_gateway: Gateway) -> None:
    """SPEC frescura/freshness (DECISIONS 8): business days of delay in (fecha_serie,
    fecha_esperada], Monday to Friday minus Peru's holidays (8 October is one)."""
    latest = private_gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
    assert latest["frescura"] == {
        "estado": "atrasada",
        "n_dias_habiles": 13,
        "fecha_esperada": "2026-10-09",
        "hoy_lima": "2026-10-09",
        "zona": "America/Lima",
    }
    (entry,) = private_gateway.get("/v1/health/freshness").json()["series"]
    assert entry["edad_dias_habiles"] == 13


@pytest.mark.gateway_env(FXEV_NOW="2026-09-22T03:00:00Z")
def test_hoy_lima_is_todays_date_in_lima_not_in_utc(private_gateway: Gateway) -> None:
    """SPEC frescura: `hoy_lima` is the reference date in America/Lima (03:00 UTC on the 22nd is
    still the 21st in Lima)."""
    latest = private_gateway.get("/v1/rates/latest?currency=USD&series=publicado").json()
    assert latest["frescura"]["hoy_lima"] == "2026-09-21"
    assert latest["frescura"]["estado"] == "al_dia"
    assert private_gateway.get("/v1/health/freshness").json()["hoy_lima"] == "2026-09-21"


# -- alerts and annotations (private copies: the CLI writes their stores) ----------------------


def test_open_alerts_are_abierta_or_reconocida_and_all_lists_resuelta(
    private_gateway: Gateway,
) -> None:
    """SPEC /v1/alerts: open=true (default) lists alerts `abierta` or `reconocida`; open=false
    lists all; `alertas_abiertas` counts the open ones (DECISIONS 7)."""
    env = private_gateway.env
    (alert,) = private_gateway.get("/v1/alerts").json()["items"]
    assert alert["estado"] == "abierta"
    fxev(env, "alerts", "ack", alert["id"], "--actor", "ana")
    (acked,) = private_gateway.get("/v1/alerts").json()["items"]
    assert acked["estado"] == "reconocida"
    assert private_gateway.get("/v1/health/freshness").json()["alertas_abiertas"] == 1
    fxev(env, "alerts", "resolve", alert["id"], "--actor", "ana")
    listing = private_gateway.get("/v1/alerts").json()
    assert (listing["items"], listing["total"]) == ([], 0)
    everything = private_gateway.get("/v1/alerts?open=false").json()
    # The demo's import resolved its three plausibilidad_baja alerts (demo).
    assert [a["estado"] for a in everything["items"]] == ["resuelta"] * 4
    assert alert["id"] in {a["id"] for a in everything["items"]}
    assert everything["total"] == 4
    assert private_gateway.get("/v1/health/freshness").json()["alertas_abiertas"] == 0


def test_annotation_filters_are_inclusive_and_a_seriesless_note_is_about_every_series(
    private_gateway: Gateway,
) -> None:
    """SPEC /v1/annotations: currency, series, from and to filter (both ends inclusive);
    DECISIONS 11: an annotation whose `serie` is null is about every series."""
    env = private_gateway.env
    note = ("--actor", "ana", "--justification", "revisado")
    fxev(env, "annotate", "--fecha", "2026-09-07", "--texto", "todas", *note)
    fxev(env, "annotate", "--fecha", "2026-09-08", "--texto", "c", "--serie", "cierre", *note)
    published = orjson.loads(fxev(env, "build")[-1])["published_revision"]

    def fechas(query: str) -> list[str]:
        body = private_gateway.get(f"/v1/annotations{query}").json()
        assert body["total"] == len(body["items"]) and body["dataset_revision"] == published
        return [a["fecha"] for a in body["items"]]

    assert fechas("") == ["2026-09-07", "2026-09-08"]
    assert fechas("?series=publicado") == ["2026-09-07"]
    assert fechas("?series=cierre") == ["2026-09-07", "2026-09-08"]
    assert fechas("?from=2026-09-08&to=2026-09-08") == ["2026-09-08"]
    assert fechas("?from=2026-09-07&to=2026-09-07&currency=USD") == ["2026-09-07"]
    rates = private_gateway.get(
        "/v1/rates?currency=USD&series=publicado&from=2026-09-07&to=2026-09-08"
        "&include_annotations=true"
    ).json()
    assert [a["fecha"] for a in rates["annotations"]] == ["2026-09-07"]
