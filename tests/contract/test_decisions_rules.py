"""The gateway against the rules of docs/decisions.md on revisions and the published pointer,
caching, request ids, ETags, the ledger and its behaviour, through a real gateway process.

Only rules that the rest of the suite does not already pin are checked here.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.contract.conftest import Gateway, fxev, issue_token, ledger_entries
from tests.contract.test_api import PUBLISHED, RATES, SEPT, UNKNOWN_UUID, assert_api_error

NAMESPACE = uuid.UUID("6f1d3c2e-5b7a-4e0f-9a61-2f4c8d9e7b10")
NO_STORE = "no-store"
IMMUTABLE = "private, max-age=31536000, immutable"
CDN = "max-age=31536000"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
TWO_YEARS = RATES + "&from=2021-01-01&to=2022-12-31"  # two pages


def is_uuid4(text: str) -> bool:
    try:
        value = uuid.UUID(text)
    except ValueError:
        return False
    return value.version == 4 and str(value) == text


def new_connection(gateway: Gateway, path: str, **kwargs: Any) -> requests.Response:
    """A GET on a fresh connection, so that the kernel spreads requests over both workers."""
    headers = dict(kwargs.pop("headers", {}) or {})
    headers["Connection"] = "close"
    return gateway.get(path, headers=headers, **kwargs)


def ids(gateway: Gateway) -> tuple[str, str]:
    """(observacion_id, evidencia_id) of the newest publicado observation."""
    obs_id = gateway.get(LATEST).json()["observacion_id"]
    detail = gateway.get(f"/v1/observations/{obs_id}").json()
    return obs_id, detail["observacion"]["evidencia_id"]


def canonical(**given: str) -> str:
    """The canonical as-of /v1/rates request of section 5: sorted, defaults explicit."""
    explicit = {"include_annotations": "false"} | given
    return "/v1/rates?" + "&".join(f"{k}={explicit[k]}" for k in sorted(explicit))


def assert_no_store_fresh(resp: requests.Response) -> None:
    """Section 5, "Every other response": fresh UUID4, no-store, no ETag."""
    assert is_uuid4(resp.headers["X-Request-Id"]), resp.headers
    assert resp.headers["Cache-Control"] == NO_STORE, resp.headers
    assert "ETag" not in resp.headers
    assert "CDN-Cache-Control" not in resp.headers
    assert "Cache-Tag" not in resp.headers
    if resp.content and resp.headers.get("Content-Type") == "application/json":
        body = resp.json()
        if isinstance(body, dict) and "request_id" in body:
            assert body["request_id"] == resp.headers["X-Request-Id"]


# -- section 5: every response that is not as-of or evidence ----------------------------------


NO_STORE_PATHS = [
    "/v1/health/ready",
    "/v1/health/freshness",
    LATEST,
    SEPT,
    TWO_YEARS,
    "/v1/revisions?at=2026-09-21T20:00:00Z",
    "/v1/coverage",
    "/v1/alerts?open=false",
    "/v1/annotations",
    # errors, with and without as_of_revision (an error is never an as-of response)
    SEPT + "&as_of_revision=0",
    SEPT + f"&as_of_revision={PUBLISHED + 1}",
    RATES.replace("publicado", "cierre") + "&from=2026-09-01&to=2026-09-30&as_of_revision=3",
    RATES.replace("USD", "EUR") + "&from=2026-09-01&to=2026-09-30&as_of_revision=3",
    "/v1/nothing",
    "/v1/coverage/",
    "/v1/observations/not-a-uuid",
    f"/v1/observations/{UNKNOWN_UUID}",
    f"/v1/evidence/{UNKNOWN_UUID}",
]


@pytest.mark.parametrize("path", NO_STORE_PATHS)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_every_other_response_is_no_store_with_a_fresh_request_id(
    gateway: Gateway, path: str, method: str
) -> None:
    resp = gateway.request(method, path)
    assert resp.status_code != 500
    assert_no_store_fresh(resp)


def test_observation_detail_is_no_store(gateway: Gateway) -> None:
    obs_id, _ = ids(gateway)
    resp = gateway.get(f"/v1/observations/{obs_id}")
    assert resp.status_code == 200
    assert_no_store_fresh(resp)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer fxev_0123456789abcdef_nope"}],
)
def test_401_is_no_store_with_a_fresh_request_id(gateway: Gateway, headers: dict) -> None:
    resp = requests.get(gateway.url("/v1/coverage"), headers=headers, timeout=10)
    assert_api_error(resp, 401, "UNAUTHORIZED")
    assert_no_store_fresh(resp)


def test_405_is_no_store_with_a_fresh_request_id(gateway: Gateway) -> None:
    resp = gateway.request("DELETE", "/v1/coverage")
    assert_api_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert_no_store_fresh(resp)


def test_live_is_no_store_with_a_fresh_request_id(gateway: Gateway) -> None:
    resp = gateway.get("/v1/health/live", token=None)
    assert resp.status_code == 200
    assert_no_store_fresh(resp)


def test_openapi_document_is_no_store_without_etag(gateway: Gateway) -> None:
    """The document is neither an as-of answer nor evidence: like every other answer, a fresh
    request id, ``no-store``, no ETag, and never a 304."""
    resp = gateway.get("/v1/openapi.json", token=None)
    assert resp.status_code == 200
    assert_no_store_fresh(resp)
    again = gateway.get("/v1/openapi.json", token=None, headers={"If-None-Match": "*"})
    assert again.status_code == 200


@pytest.mark.parametrize("path", [SEPT, LATEST, "/v1/coverage"])
def test_if_none_match_never_304s_an_answer_without_etag(gateway: Gateway, path: str) -> None:
    for value in ("*", '"anything"'):
        resp = gateway.get(path, headers={"If-None-Match": value})
        assert resp.status_code == 200
        assert resp.content


def test_a_client_x_request_id_is_never_echoed(gateway: Gateway) -> None:
    sent = str(uuid.uuid4())
    for path in (SEPT, SEPT + "&as_of_revision=3", "/v1/nothing", "/v1/health/live"):
        resp = gateway.get(path, headers={"X-Request-Id": sent})
        assert resp.headers["X-Request-Id"] != sent
        assert is_uuid4(resp.headers["X-Request-Id"])
        assert sent not in resp.text


def test_json_answers_are_application_json(gateway: Gateway) -> None:
    for path in (SEPT, SEPT + "&as_of_revision=3", LATEST, "/v1/nothing", "/v1/coverage?x=1"):
        assert gateway.get(path).headers["Content-Type"] == "application/json"


# -- section 5: as-of answers -----------------------------------------------------------------


def test_as_of_request_id_is_uuid5_of_the_canonical_request(gateway: Gateway) -> None:
    cases = [
        (
            SEPT + "&as_of_revision=3",
            canonical(
                as_of_revision="3",
                currency="USD",
                series="publicado",
                **{"from": "2026-09-15", "to": "2026-09-30"},
            ),
        ),
        (
            SEPT + "&as_of_revision=5&include_annotations=true",
            canonical(
                as_of_revision="5",
                currency="USD",
                series="publicado",
                include_annotations="true",
                **{"from": "2026-09-15", "to": "2026-09-30"},
            ),
        ),
    ]
    for path, form in cases:
        body = gateway.get(path).json()
        assert body["request_id"] == str(uuid.uuid5(NAMESPACE, form)), form
    # With a page token, the token is one of the parameters.
    first = gateway.get(TWO_YEARS + "&as_of_revision=2").json()
    token = first["next_page_token"]
    second = gateway.get(TWO_YEARS + "&as_of_revision=2&page_token=" + token).json()
    form = canonical(
        as_of_revision="2",
        currency="USD",
        series="publicado",
        page_token=token,
        **{"from": "2021-01-01", "to": "2022-12-31"},
    )
    assert second["request_id"] == str(uuid.uuid5(NAMESPACE, form))


@pytest.mark.parametrize(
    "variant",
    [
        "/v1/rates?currency=U%53D&series=publicado&from=2026%2D09%2D15&to=2026-09-30&as_of_revision=3",
        "/v1/rates?currency=%55%53%44&series=%70ublicado&from=2026-09-15&to=2026%2d09%2d30&as_of_revision=%33",
        "/v1/rates?as_of_revision=3&to=2026-09-30&from=2026-09-15&series=publicado&currency=USD"
        "&include_annotations=false",
    ],
)
def test_as_of_bytes_ignore_order_defaults_and_percent_encoding(
    gateway: Gateway, variant: str
) -> None:
    plain = gateway.get(SEPT + "&as_of_revision=3")
    other = gateway.get(variant)
    assert other.status_code == 200
    assert other.content == plain.content
    assert other.headers["ETag"] == plain.headers["ETag"]


def test_as_of_is_the_same_bytes_on_every_worker_and_x_request_id_is_fresh(
    gateway: Gateway,
) -> None:
    query = SEPT + "&as_of_revision=4"
    answers = [new_connection(gateway, query) for _ in range(8)]
    assert len({a.content for a in answers}) == 1
    assert len({a.headers["ETag"] for a in answers}) == 1
    x_ids = [a.headers["X-Request-Id"] for a in answers]
    assert len(set(x_ids)) == len(x_ids)
    assert all(is_uuid4(x) for x in x_ids)
    body = answers[0].json()
    assert uuid.UUID(body["request_id"]).version == 5
    for a in answers:
        assert a.headers["Cache-Control"] == IMMUTABLE
        assert a.headers["CDN-Cache-Control"] == CDN
        assert a.headers["ETag"] == '"' + hashlib.sha256(a.content).hexdigest() + '"'


def test_as_of_304_and_head(gateway: Gateway) -> None:
    query = SEPT + "&as_of_revision=3"
    full = gateway.get(query)
    etag = full.headers["ETag"]
    for header in (etag, "W/" + etag, '"x", ' + etag, "*"):
        resp = gateway.get(query, headers={"If-None-Match": header})
        assert resp.status_code == 304, header
        assert resp.content == b""
        assert resp.headers["ETag"] == etag
        assert resp.headers["Cache-Control"] == IMMUTABLE
        assert resp.headers["CDN-Cache-Control"] == CDN
        assert is_uuid4(resp.headers["X-Request-Id"])
        assert "Repr-Digest" not in resp.headers
    stale = gateway.get(query, headers={"If-None-Match": '"' + "0" * 64 + '"'})
    assert stale.status_code == 200 and stale.content == full.content
    head = gateway.request("HEAD", query)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["ETag"] == etag
    assert head.headers["Cache-Control"] == IMMUTABLE
    assert head.headers["Cache-Tag"] == full.headers["Cache-Tag"]


def test_page_tokens_have_no_nonce(gateway: Gateway) -> None:
    """A MAC of (revision, canonical query, offset): the same at the published revision
    whether or not as_of_revision is given, and on every worker."""
    tokens = {new_connection(gateway, TWO_YEARS).json()["next_page_token"] for _ in range(4)}
    tokens |= {
        new_connection(gateway, TWO_YEARS + f"&as_of_revision={PUBLISHED}").json()[
            "next_page_token"
        ]
        for _ in range(4)
    }
    assert len(tokens) == 1
    assert None not in tokens


def test_page_token_fixes_its_revision_and_as_of_must_match(gateway: Gateway) -> None:
    token = gateway.get(TWO_YEARS + "&as_of_revision=2").json()["next_page_token"]
    assert gateway.get(TWO_YEARS + "&as_of_revision=2&page_token=" + token).status_code == 200
    assert_api_error(
        gateway.get(TWO_YEARS + "&as_of_revision=3&page_token=" + token), 400, "INVALID_PARAMS"
    )
    # Without as_of_revision: the page of the token's revision, but not an as-of answer.
    plain = gateway.get(TWO_YEARS + "&page_token=" + token)
    assert plain.status_code == 200
    assert plain.json()["dataset_revision"] == 2
    assert_no_store_fresh(plain)
    # Another query's token (here: the annotations flag differs).
    assert_api_error(
        gateway.get(TWO_YEARS + "&include_annotations=true&page_token=" + token),
        400,
        "INVALID_PARAMS",
    )


# -- section 5: evidence ----------------------------------------------------------------------


def test_evidence_caching_and_304(gateway: Gateway) -> None:
    _, ev_id = ids(gateway)
    path = f"/v1/evidence/{ev_id}"
    resp = gateway.get(path)
    assert resp.status_code == 200
    sha = resp.headers["X-Sha256"]
    assert sha == hashlib.sha256(resp.content).hexdigest()
    assert resp.headers["ETag"] == f'"{sha}"'
    assert resp.headers["Cache-Control"] == IMMUTABLE
    assert resp.headers["CDN-Cache-Control"] == CDN
    assert is_uuid4(resp.headers["X-Request-Id"])
    assert resp.headers["X-Capturado-En"].endswith("Z")
    assert resp.headers["Repr-Digest"] == (
        "sha-256=:" + base64.b64encode(bytes.fromhex(sha)).decode() + ":"
    )
    for header in (f'"{sha}"', f'W/"{sha}"'):
        again = gateway.get(
            path.upper().replace("/V1/EVIDENCE/", "/v1/evidence/"),
            headers={"If-None-Match": header},
        )
        assert again.status_code == 304 and again.content == b""
        assert again.headers["ETag"] == f'"{sha}"'
        assert again.headers["Cache-Control"] == IMMUTABLE
    head = gateway.request("HEAD", path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["ETag"] == f'"{sha}"'


# -- section 5: the ledger --------------------------------------------------------------------


def test_ledger_fields_for_as_of_304_head_and_evidence(gateway: Gateway) -> None:
    token_id, token = issue_token(gateway.env, "audit-ledger")
    query = SEPT + "&as_of_revision=4"

    def one(resp: requests.Response, method: str = "GET") -> dict[str, Any]:
        [entry] = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
        assert entry["x_request_id"] == resp.headers["X-Request-Id"]
        assert (entry["token_id"], entry["token_name"]) == (token_id, "audit-ledger")
        assert entry["method"] == method
        assert entry["status"] == resp.status_code
        assert entry["etag"] == resp.headers.get("ETag")
        assert entry["ts"].endswith("Z")
        return entry

    full = gateway.get(query, token=token)
    entry = one(full)
    assert entry["request_id"] == full.json()["request_id"]
    assert entry["sha256"] == hashlib.sha256(full.content).hexdigest()
    assert (entry["path"], entry["query"]) == ("/v1/rates", query.split("?", 1)[1])

    not_modified = gateway.get(query, token=token, headers={"If-None-Match": full.headers["ETag"]})
    assert not_modified.status_code == 304
    entry = one(not_modified)
    assert (entry["sha256"], entry["bytes"]) == (EMPTY_SHA256, 0)

    head = requests.head(
        gateway.url(query), headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    entry = one(head, "HEAD")
    assert (entry["sha256"], entry["bytes"]) == (EMPTY_SHA256, 0)
    assert entry["request_id"] == full.json()["request_id"]

    _, ev_id = ids(gateway)
    evidence = gateway.get(f"/v1/evidence/{ev_id}", token=token)
    ev_304 = gateway.get(
        f"/v1/evidence/{ev_id}", token=token, headers={"If-None-Match": evidence.headers["ETag"]}
    )
    assert ev_304.status_code == 304
    entry = one(ev_304)
    assert (entry["sha256"], entry["bytes"]) == (EMPTY_SHA256, 0)

    unauth = gateway.get(query, token=token + "x")
    assert unauth.status_code == 401
    assert ledger_entries(gateway.env, unauth.headers["X-Request-Id"]) == []


# -- section 4: before the first build --------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/evidence/{UNKNOWN_UUID}",
        "/v1/revisions?at=2026-09-21T20:00:00Z",
        "/v1/annotations",
        "/v1/health/freshness",
        SEPT + "&as_of_revision=1",
    ],
)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_before_the_first_build_every_data_endpoint_is_503(
    unbuilt_gateway: Gateway, path: str, method: str
) -> None:
    resp = unbuilt_gateway.request(method, path)
    assert resp.status_code == 503
    assert_no_store_fresh(resp)
    if method == "GET":
        assert_api_error(resp, 503, "INTERNAL")
    # A response to a valid token, an error included: in the ledger.
    [entry] = ledger_entries(unbuilt_gateway.env, resp.headers["X-Request-Id"])
    assert (entry["status"], entry["method"]) == (503, method)


# -- section 9: order of checks, parameters, paths --------------------------------------------


@pytest.mark.parametrize("path", ["/v1/nothing", "/v1/coverage/", "/v1/rates/latest/", "/v1"])
def test_route_is_checked_before_authentication(gateway: Gateway, path: str) -> None:
    assert_api_error(gateway.get(path, token=None), 404, "NOT_FOUND")


def test_method_is_refused_before_authentication(gateway: Gateway) -> None:
    resp = requests.post(gateway.url("/v1/coverage"), timeout=10)
    assert_api_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        (LATEST.replace("USD", "usd"), 404, "UNSUPPORTED_CURRENCY"),
        (LATEST.replace("publicado", "Publicado"), 404, "UNSUPPORTED_SERIES"),
        ("/v1/rates/latest?currency=XYZ&series=nope", 404, "UNSUPPORTED_CURRENCY"),
        ("/v1/rates/latest?currency=USD&series=", 400, "INVALID_PARAMS"),
        (RATES.replace("publicado", "") + "&from=2026-09-01&to=2026-09-30", 400, "INVALID_PARAMS"),
        ("/v1/rates/latest?currency=XYZ&series=publicado&x=1", 400, "INVALID_PARAMS"),
        ("/v1/annotations?currency=usd", 404, "UNSUPPORTED_CURRENCY"),
        ("/v1/annotations?series=nope", 404, "UNSUPPORTED_SERIES"),
        ("/v1/annotations?currency=", 400, "INVALID_PARAMS"),
        ("/v1/annotations?series=", 400, "INVALID_PARAMS"),
        ("/v1/annotations?currency=USD&currency=USD", 400, "INVALID_PARAMS"),
        ("/v1/alerts?open=true&open=true", 400, "INVALID_PARAMS"),
        ("/v1/alerts?open=TRUE", 400, "INVALID_PARAMS"),
        ("/v1/revisions?at=2026-09-21T20:00:00Z&at=2026-09-21T20:00:00Z", 400, "INVALID_PARAMS"),
        ("/v1/health/ready?x=1", 400, "INVALID_PARAMS"),
        ("/v1/health/freshness?x=1", 400, "INVALID_PARAMS"),
        (f"/v1/observations/{UNKNOWN_UUID}?x=1", 400, "INVALID_PARAMS"),
        (SEPT + "&as_of_revision=%2B3", 400, "INVALID_PARAMS"),
        (SEPT + "&as_of_revision=3.0", 400, "INVALID_PARAMS"),
        (SEPT + "&as_of_revision=" + "9" * 40, 400, "INVALID_PARAMS"),
        (SEPT + "&as_of_revision=%EF%BC%93", 400, "INVALID_PARAMS"),  # a full-width 3
    ],
)
def test_parameter_rules(gateway: Gateway, path: str, status: int, code: str) -> None:
    assert_api_error(gateway.get(path), status, code)


def test_live_refuses_unknown_parameters(gateway: Gateway) -> None:
    """An unknown query parameter is INVALID_PARAMS on every endpoint, live included."""
    assert_api_error(gateway.get("/v1/health/live?x=1", token=None), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    ("route", "name", "segment", "shown"),
    [
        ("observations", "obs_id", "abc%2Fdef", "abc/def"),
        ("evidence", "ev_id", "abc%2Fdef", "abc/def"),
        ("observations", "obs_id", "%20" + UNKNOWN_UUID, " " + UNKNOWN_UUID),
        ("evidence", "ev_id", UNKNOWN_UUID + "0", UNKNOWN_UUID + "0"),
        ("observations", "obs_id", UNKNOWN_UUID.replace("-", "_"), UNKNOWN_UUID.replace("-", "_")),
    ],
)
def test_any_single_segment_reaches_the_route_and_is_422(
    gateway: Gateway, route: str, name: str, segment: str, shown: str
) -> None:
    resp = gateway.get(f"/v1/{route}/{segment}")
    assert resp.status_code == 422, resp.text
    assert resp.json() == {
        "detail": [
            {
                "type": "uuid_parsing",
                "loc": ["path", name],
                "msg": resp.json()["detail"][0]["msg"],
                "input": shown,
            }
        ]
    }
    assert_no_store_fresh(resp)


@pytest.mark.parametrize("segment", ["%00", "%FF", "%C3%28", "abc%00def"])
@pytest.mark.parametrize("route", ["observations", "evidence"])
def test_a_percent_encoded_nul_or_invalid_utf8_in_a_path_id_is_invalid_params(
    gateway: Gateway, route: str, segment: str
) -> None:
    """A NUL or invalid UTF-8 in the path is 400 INVALID_PARAMS, as in the query: a path id
    that decodes to one is a bad request, not a 422 whose ``input`` the client never sent."""
    assert_api_error(gateway.get(f"/v1/{route}/{segment}"), 400, "INVALID_PARAMS")


# -- sections 4, 5 and 9 on a private copy: the pointer, as-of bytes across builds -------------


def entries_by_date(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["fecha_serie"]: item for item in body["items"]}


def test_published_pointer_as_of_bytes_and_corrections(
    private_gateway: Gateway, tmp_path: Path
) -> None:
    gw = private_gateway
    as_of = SEPT + "&as_of_revision=3"
    before = gw.get(as_of)
    assert before.status_code == 200
    old_item = entries_by_date(before.json())["2026-09-15"]
    assert old_item["superseded_por"] is None

    # A registry write that is not built: the API stays at the published revision.
    fxev(
        gw.env,
        "annotate",
        "--fecha",
        "2021-03-01",
        "--texto",
        "audit one",
        "--actor",
        "audit",
        "--justification",
        "audit",
    )
    assert gw.get(SEPT).json()["dataset_revision"] == PUBLISHED
    assert_api_error(gw.get(SEPT + f"&as_of_revision={PUBLISHED + 1}"), 400, "INVALID_PARAMS")
    resolved = gw.get("/v1/revisions?at=2100-01-01T00:00:00Z").json()
    assert resolved["revision"] == PUBLISHED
    assert resolved["dataset_revision"] == PUBLISHED
    token_at_published = gw.get(TWO_YEARS).json()["next_page_token"]

    fxev(
        gw.env,
        "annotate",
        "--fecha",
        "2022-06-01",
        "--texto",
        "audit two",
        "--actor",
        "audit",
        "--justification",
        "audit",
    )
    fxev(gw.env, "build")
    now = PUBLISHED + 2
    # Every worker sees the switch on its very next request.
    for _ in range(6):
        assert new_connection(gw, SEPT).json()["dataset_revision"] == now
    assert gw.get("/v1/revisions?at=2100-01-01T00:00:00Z").json()["revision"] == now

    # No superseded_por changed: the as-of answer keeps its bytes and ETag.
    after = [new_connection(gw, as_of) for _ in range(4)]
    for resp in after:
        assert resp.content == before.content
        assert resp.headers["ETag"] == before.headers["ETag"]
        assert gw.get(as_of, headers={"If-None-Match": before.headers["ETag"]}).status_code == 304

    # A page token minted before the switch still walks its own revision.
    page = gw.get(TWO_YEARS + "&page_token=" + token_at_published)
    assert page.status_code == 200
    assert page.json()["dataset_revision"] == PUBLISHED

    # Annotations appear on every page and cover the whole requested range.
    first = gw.get(TWO_YEARS + "&include_annotations=true").json()
    second = gw.get(
        TWO_YEARS + "&include_annotations=true&page_token=" + first["next_page_token"]
    ).json()
    assert first["next_page_token"] and second["next_page_token"] is None
    for body in (first, second):
        assert [a["texto"] for a in body["annotations"]] == ["audit one", "audit two"]

    # A correction: the as-of answers holding the corrected observation get new bytes and ETag,
    # and keep their request_id.
    csv = tmp_path / "correction.csv"
    csv.write_text("fecha_serie,compra,venta\n2026-09-15,3.399,3.409\n", encoding="utf-8")
    fxev(gw.env, "import", str(csv), "--actor", "audit", "--justification", "audit correction")
    fxev(gw.env, "build")
    corrected = [new_connection(gw, as_of) for _ in range(4)]
    new_item = entries_by_date(gw.get(SEPT).json())["2026-09-15"]
    for resp in corrected:
        assert resp.status_code == 200
        assert resp.content != before.content
        assert resp.json()["request_id"] == before.json()["request_id"]
        assert resp.headers["ETag"] == '"' + hashlib.sha256(resp.content).hexdigest() + '"'
        item = entries_by_date(resp.json())["2026-09-15"]
        assert item["observacion_id"] == old_item["observacion_id"]
        assert item["superseded_por"] == new_item["observacion_id"]
    stale = gw.get(as_of, headers={"If-None-Match": before.headers["ETag"]})
    assert stale.status_code == 200
    detail = gw.get(f"/v1/observations/{old_item['observacion_id']}")
    assert detail.json()["superseded"] is True
    assert_no_store_fresh(detail)


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="2", FXEV_RATE_LIMIT_PER_DAY="1000")
def test_rate_limit_comes_before_parameters_and_path_ids(private_gateway: Gateway) -> None:
    gw = private_gateway
    assert [gw.get("/v1/coverage").status_code for _ in range(2)] == [200, 200]
    for path in (
        "/v1/coverage?x=1",  # would be 400
        "/v1/rates/latest?currency=EUR&series=publicado",  # would be 404
        "/v1/observations/not-a-uuid",  # would be 422
        SEPT + "&as_of_revision=3",
        "/v1/health/ready",
    ):
        resp = gw.get(path)
        body = assert_api_error(resp, 429, "RATE_LIMITED")
        assert body["retryable"] is True
        assert int(resp.headers["Retry-After"]) >= 1
        assert_no_store_fresh(resp)
    # The route comes first: an unknown path is 404 even over the limit; live is never limited.
    assert_api_error(gw.get("/v1/nothing"), 404, "NOT_FOUND")
    assert gw.get("/v1/health/live").status_code == 200
