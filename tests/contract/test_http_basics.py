"""HTTP basics and CORS (docs/decisions.md#http-basics, docs/decisions.md#cors) on real gateways.

Every response carries ``Date``; a refused token gets ``Bearer error="invalid_token"``; every
response with a body carries ``Repr-Digest``, the SHA-256 the ledger records. With
``FXEV_CORS_ORIGINS`` a listed origin gets the CORS headers on every ``/v1`` route and its
preflights 204 (no token, no limit, no ledger); unset, nothing changes: OPTIONS is 405.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
import requests

from demo import local_source
from gateway.handlers.routes import ROUTES
from gateway.http.head import HEAD_MAX
from tests.contract.conftest import Gateway, _running, copy_demo, fxev, issue_token, ledger_entries
from tests.contract.test_api import assert_api_error
from tests.contract.test_bad_requests import exchange
from tests.support.rawhttp import padded
from tokens.store import TokenStore

RATES = "/v1/rates?currency=USD&series=publicado&from=2026-09-15&to=2026-09-30"
AS_OF = RATES + "&as_of_revision=3"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
UNKNOWN_UUID = "00000000-0000-4000-8000-000000000000"
HTML = {"Accept": "text/html"}
INVALID_TOKEN = 'Bearer error="invalid_token"'
ORIGIN = "https://app.example"
OTHER_ORIGIN = "https://other.example"
REFUSED_ORIGIN = "https://evil.example"
EXPOSED = (
    "X-Request-Id, ETag, Repr-Digest, Retry-After, X-Sha256, X-Capturado-En, X-Identidad-Consulta"
)
CORS_NAMES = ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary")
# Every /v1 route of the gateway's table, a path id filled in (an unknown one: a 404 after the
# token, which is an answer like any other here).
ROUTE_PATHS = [
    path.replace("<obs_id:str>", UNKNOWN_UUID).replace("<ev_id:str>", UNKNOWN_UUID)
    for path, _, _ in ROUTES
]


def repr_digest(body: bytes) -> str:
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def assert_dated(resp: requests.Response) -> None:
    sent = email.utils.parsedate_to_datetime(resp.headers["Date"])
    assert resp.headers["Date"].endswith(" GMT"), resp.headers["Date"]
    assert abs(sent.timestamp() - time.time()) < 5


def head(gateway: Gateway, path: str, token: str | None = "default") -> requests.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {gateway.token}"}
    return requests.head(gateway.url(path), headers=headers, timeout=10)


def revalidated(gateway: Gateway, path: str, first: requests.Response) -> requests.Response:
    return gateway.get(path, headers={"If-None-Match": first.headers["ETag"]})


def evidence_path(gateway: Gateway) -> str:
    detail = gateway.get(f"/v1/observations/{gateway.get(LATEST).json()['observacion_id']}")
    return f"/v1/evidence/{detail.json()['observacion']['evidencia_id']}"


# -- Date ----------------------------------------------------------------------------------------


def test_every_response_carries_a_date(gateway: Gateway) -> None:
    as_of = gateway.get(AS_OF)
    document = gateway.get("/v1/openapi.json", token=None)
    answers = [
        gateway.get(RATES),
        as_of,
        revalidated(gateway, AS_OF, as_of),  # 304
        document,
        gateway.get("/v1/health/live", token=None),
        head(gateway, "/v1/coverage"),
        gateway.get("/v1/coverage", token=None),  # 401
        gateway.get("/v1/coverage?x=1"),  # 400
        gateway.get("/v1/nothing-here"),  # 404
        gateway.get("/v1/observations/not-a-uuid"),  # 422
        gateway.request("POST", "/v1/coverage"),  # 405
        gateway.get("/"),  # an explorer page
        gateway.get("/signin", token=None),
        requests.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10),  # 303
    ]
    assert [a.status_code for a in answers] == [
        200, 200, 304, 200, 200, 200, 401, 400, 404, 422, 405, 200, 200, 303
    ]  # fmt: skip
    for answer in answers:
        assert_dated(answer)


# -- WWW-Authenticate ----------------------------------------------------------------------------


def expired_token(gateway: Gateway) -> str:
    """A token whose last day is long over (issued before it, as the CLI cannot)."""
    with TokenStore.open(gateway.home) as store:
        return store.issue(
            "expired", date(2020, 1, 1), datetime(2019, 12, 31, tzinfo=UTC)
        ).token_text


def test_a_token_presented_and_refused_is_invalid_token_a_missing_one_bare_bearer(
    gateway: Gateway,
) -> None:
    revoked_id, revoked = issue_token(gateway.env, "to-revoke")
    assert gateway.get("/v1/coverage", token=revoked).status_code == 200
    fxev(gateway.env, "token", "revoke", revoked_id)
    expired = expired_token(gateway)
    for token in ("fxev_0123456789abcdef_bogus", revoked, expired):
        for path in ("/v1/coverage", "/serie/publicado/2026"):  # the API and the explorer
            resp = gateway.get(path, token=token)
            assert_api_error(resp, 401, "UNAUTHORIZED")
            assert resp.headers["WWW-Authenticate"] == INVALID_TOKEN, (token, path)
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        resp = requests.get(gateway.url("/v1/coverage"), headers=headers, timeout=10)
        assert_api_error(resp, 401, "UNAUTHORIZED")
        assert resp.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(gateway: Gateway, scheme: str) -> None:
    """RFC 9110 11.1 (and RFC 6750): an authentication scheme is case-insensitive, so a client
    that writes ``bearer`` presents its token as one that writes ``Bearer`` does."""
    headers = {"Authorization": f"{scheme} {gateway.token}"}
    resp = requests.get(gateway.url("/v1/coverage"), headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    [entry] = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
    assert entry["status"] == 200


def test_a_refused_sign_in_is_invalid_token_an_empty_one_bare_bearer(gateway: Gateway) -> None:
    refused = requests.post(gateway.url("/signin"), data={"token": "fxev_nope"}, timeout=10)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == INVALID_TOKEN
    empty = requests.post(gateway.url("/signin"), data={"token": ""}, timeout=10)
    assert empty.status_code == 401
    assert empty.headers["WWW-Authenticate"] == "Bearer"


# -- Repr-Digest ---------------------------------------------------------------------------------


def test_every_body_carries_its_repr_digest_and_head_and_304_none(gateway: Gateway) -> None:
    as_of = gateway.get(AS_OF)
    with_bodies = [
        gateway.get(RATES),
        gateway.get(LATEST),
        as_of,
        gateway.get(evidence_path(gateway)),
        gateway.get("/v1/openapi.json", token=None),
        gateway.get("/v1/health/live", token=None),
        gateway.get("/v1/coverage", token=None),
        gateway.get("/v1/nothing-here"),
        gateway.get("/v1/observations/not-a-uuid"),
        gateway.request("POST", "/v1/coverage"),
        gateway.get("/"),
    ]
    for resp in with_bodies:
        assert resp.content, resp.url
        assert "Content-Encoding" not in resp.headers
        assert resp.headers["Repr-Digest"] == repr_digest(resp.content), resp.url
    without = [
        revalidated(gateway, AS_OF, as_of),
        head(gateway, "/v1/health/live", token=None),
        head(gateway, RATES),
        requests.get(gateway.url("/"), headers=HTML, allow_redirects=False, timeout=10),
    ]
    for resp in without:
        assert resp.content == b""
        assert "Repr-Digest" not in resp.headers, resp.url


def test_repr_digest_is_the_hash_the_ledger_records(gateway: Gateway) -> None:
    for path in (RATES, AS_OF, LATEST, evidence_path(gateway), "/v1/coverage?x=1"):
        resp = gateway.get(path)
        [entry] = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
        digest = resp.headers["Repr-Digest"].removeprefix("sha-256=:").removesuffix(":")
        assert base64.b64decode(digest).hex() == entry["sha256"], path


def test_an_empty_evidence_carries_the_digest_of_no_bytes(tmp_path: Path, demo_home: Path) -> None:
    """Section 9: "Every response with a body carries `Repr-Digest`", "the same hash the ledger
    records". A failed capture keeps the zero bytes it got as its evidence; its 200 had no
    `Repr-Digest` while its ledger entry held the SHA-256 of no bytes. (A redirect without a
    body still has none: test_every_body_carries_its_repr_digest_and_head_and_304_none.)"""
    env, token = copy_demo(demo_home, tmp_path)
    with local_source() as (local, answer):
        answer[0] = (200, b"", "text/html")
        captured = orjson.loads(fxev(env, "capture", "--url", local + "/a/txt/tipoCambio.txt")[-1])
    assert captured["outcome"] == "fallo", captured
    fxev(env, "build")
    evidence_id = captured["alerta"]["detalle"]["evidencia_id"]
    for gateway in _running(tmp_path, env, token):
        resp = gateway.get(f"/v1/evidence/{evidence_id}")
        assert (resp.status_code, resp.content) == (200, b"")
        assert resp.headers["Repr-Digest"] == repr_digest(b"")
        [entry] = ledger_entries(gateway.env, resp.headers["X-Request-Id"])
        assert entry["sha256"] == hashlib.sha256(b"").hexdigest()


# -- CORS ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[f"{ORIGIN},{OTHER_ORIGIN}", "*"], ids=["listed", "any"])
def cors_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, demo_home: Path
) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("cors")
    env, token = copy_demo(demo_home, base, FXEV_CORS_ORIGINS=request.param)
    yield from _running(base, env, token)


def any_origin(gateway: Gateway) -> bool:
    return gateway.env["FXEV_CORS_ORIGINS"] == "*"


def preflight(gateway: Gateway, path: str, origin: str, **headers: str) -> requests.Response:
    sent = {"Origin": origin, "Access-Control-Request-Method": "GET"} | headers
    return requests.options(gateway.url(path), headers=sent, timeout=10)


@pytest.mark.parametrize("path", ROUTE_PATHS)
def test_a_preflight_from_a_listed_origin_is_204_on_every_route(
    cors_gateway: Gateway, path: str
) -> None:
    resp = preflight(
        cors_gateway, path, ORIGIN, **{"Access-Control-Request-Headers": "authorization"}
    )
    assert resp.status_code == 204, resp.text
    assert resp.content == b""
    assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert resp.headers["Vary"] == "Origin"
    assert resp.headers["Access-Control-Allow-Methods"] == "GET, HEAD"
    assert resp.headers["Access-Control-Allow-Headers"] == "Authorization, If-None-Match"
    assert resp.headers["Access-Control-Max-Age"] == "600"
    assert_dated(resp)


@pytest.mark.parametrize("path", ROUTE_PATHS)
def test_a_listed_origin_reads_every_route_and_a_refused_one_gets_no_cors(
    cors_gateway: Gateway, path: str
) -> None:
    allowed = cors_gateway.get(path, headers={"Origin": OTHER_ORIGIN})
    assert allowed.headers["Access-Control-Allow-Origin"] == OTHER_ORIGIN
    assert allowed.headers["Access-Control-Expose-Headers"] == EXPOSED
    assert allowed.headers["Vary"] == "Origin"
    refused = cors_gateway.get(path, headers={"Origin": REFUSED_ORIGIN})
    if any_origin(cors_gateway):
        assert refused.headers["Access-Control-Allow-Origin"] == REFUSED_ORIGIN
    else:
        assert "Access-Control-Allow-Origin" not in refused.headers
        assert "Access-Control-Expose-Headers" not in refused.headers
        assert refused.headers["Vary"] == "Origin"
        options = preflight(cors_gateway, path, REFUSED_ORIGIN)
        assert_api_error(options, 405, "METHOD_NOT_ALLOWED")
        assert options.headers["Allow"] == "GET, HEAD"
        assert "Access-Control-Allow-Origin" not in options.headers
    without = cors_gateway.get(path)
    assert "Access-Control-Allow-Origin" not in without.headers
    assert allowed.status_code == refused.status_code == without.status_code


def test_errors_and_unknown_paths_carry_cors_for_a_listed_origin(cors_gateway: Gateway) -> None:
    for resp in (
        cors_gateway.get("/v1/coverage", token=None, headers={"Origin": ORIGIN}),
        cors_gateway.get("/v1/nothing-here", headers={"Origin": ORIGIN}),
        requests.post(cors_gateway.url("/v1/coverage"), headers={"Origin": ORIGIN}, timeout=10),
        requests.options(cors_gateway.url("/v1/coverage"), headers={"Origin": ORIGIN}, timeout=10),
    ):
        assert resp.status_code in (401, 404, 405), resp.text
        assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert resp.headers["Access-Control-Expose-Headers"] == EXPOSED


def from_origin(request_line: bytes, *fields: bytes) -> bytes:
    """A head of ``request_line`` from :data:`ORIGIN`, with ``fields`` after its ``Origin``."""
    lines = [request_line, b"Host: 127.0.0.1", b"Origin: " + ORIGIN.encode(), *fields]
    return b"\r\n".join([*lines, b"", b""])


FRAMING_REFUSALS = {
    "a head over 8 KB": padded(from_origin(b"GET /v1/coverage HTTP/1.1"), HEAD_MAX + 100),
    "a head RFC 9112 refuses": from_origin(b"GET /v1/coverage HTTP/1.1", b"X-Note : a"),
    "a target httptools refuses": from_origin(b"GET /v1/cov\x01erage HTTP/1.1"),
    "a NUL in the query": from_origin(b"GET /v1/coverage?x=\x00 HTTP/1.1"),
    "the asterisk form": from_origin(b"GET * HTTP/1.1"),
}


@pytest.mark.parametrize("case", list(FRAMING_REFUSALS))
def test_a_request_refused_before_any_route_carries_cors_for_a_listed_origin(
    cors_gateway: Gateway, case: str
) -> None:
    """docs/decisions.md#cors: a listed origin gets its CORS headers on every ``/v1`` answer,
    a 400 for a head the gateway cannot read as well, so its scripts can read why. The
    asterisk form names no ``/v1`` path: no CORS headers, as on the explorer."""
    answer = exchange(cors_gateway, FRAMING_REFUSALS[case])
    assert answer.status == 400, answer.body[:300]
    if case == "the asterisk form":
        assert "access-control-allow-origin" not in answer.headers
        return
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert answer.headers["access-control-expose-headers"] == EXPOSED
    assert answer.headers["vary"] == "Origin"


def test_the_explorer_gets_no_cors(cors_gateway: Gateway) -> None:
    resp = cors_gateway.get("/", headers={"Origin": ORIGIN})
    assert resp.status_code == 200
    assert not {name for name in CORS_NAMES if name in resp.headers}
    assert preflight(cors_gateway, "/signin", ORIGIN).status_code == 405


@pytest.mark.gateway_env(FXEV_CORS_ORIGINS=ORIGIN, FXEV_RATE_LIMIT_PER_MIN="1")
def test_a_preflight_needs_no_token_and_is_neither_limited_nor_recorded(
    private_gateway: Gateway,
) -> None:
    assert private_gateway.get("/v1/coverage").status_code == 200  # the minute's one request
    with_token = {"Authorization": f"Bearer {private_gateway.token}"}
    answers = [preflight(private_gateway, "/v1/coverage", ORIGIN, **with_token) for _ in range(3)]
    answers.append(preflight(private_gateway, "/v1/coverage", ORIGIN))
    for resp in answers:
        assert resp.status_code == 204
        assert ledger_entries(private_gateway.env, resp.headers["X-Request-Id"]) == []
    limited = private_gateway.get("/v1/coverage", headers={"Origin": ORIGIN})
    assert_api_error(limited, 429, "RATE_LIMITED")
    assert limited.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert "Retry-After" in limited.headers["Access-Control-Expose-Headers"]


@pytest.mark.parametrize("path", ROUTE_PATHS)
def test_without_cors_origins_there_are_no_cors_headers_and_options_is_405(
    gateway: Gateway, path: str
) -> None:
    resp = gateway.get(path, headers={"Origin": ORIGIN})
    assert not {name for name in CORS_NAMES if name in resp.headers}, path
    options = preflight(gateway, path, ORIGIN)
    assert_api_error(options, 405, "METHOD_NOT_ALLOWED")
    assert options.headers["Allow"] == "GET, HEAD"
    assert not {name for name in CORS_NAMES if name in options.headers}, path
