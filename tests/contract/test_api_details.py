"""SPEC.md endpoints and DECISIONS sections 4, 5, 8 and 9 in detail, from the outside.

Real gateway processes (2 workers) on 127.0.0.1 over real HTTP, over private copies of the demo
(published revision 6); tokens issued with the real CLI; ledger entries read with the real
``fxev requests show``. Each test quotes the rule it holds the gateway to. Only cases the rest of
the contract suite leaves unchecked are here.

Gateways of this module (each started once, stopped by its PID):

- ``gw``: the demo, default settings of the contract suite (limits raised);
- ``minute_gw``: 2 requests a minute per token (day limit out of reach);
- ``day_gw``: 2 requests a day per token (minute limit out of reach).
"""

from __future__ import annotations

import hashlib
import http.client
import math
import re
import socket
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest
import requests

from tests.contract.conftest import Gateway, _running, copy_demo, fxev, issue_token, ledger_entries
from tests.support.clock import clear_of_lima_midnight

PUBLISHED = 6
RATES = "/v1/rates?currency=USD&series=publicado"
SEPT = RATES + "&from=2026-09-15&to=2026-09-30"
AS_OF = SEPT + "&as_of_revision=3"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
TWO_YEARS = RATES + "&from=2021-01-01&to=2022-12-31"  # two pages
FIVE_YEARS = RATES + "&from=2021-09-21&to=2026-09-21"
UNKNOWN_UUID = "00000000-0000-4000-8000-000000000000"
IMMUTABLE = "private, max-age=31536000, immutable"
LIMA = ZoneInfo("America/Lima")
DECIMAL_3 = re.compile(r"[0-9]+\.[0-9]{3}")
UTC_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


# -- the gateways --------------------------------------------------------------------------------


def _gateway(
    tmp_path_factory: pytest.TempPathFactory, demo_home: Path, name: str, **settings: str
) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp(name)
    env, token = copy_demo(demo_home, base, **settings)
    yield from _running(base, env, token)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    yield from _gateway(tmp_path_factory, demo_home, "details")


@pytest.fixture(scope="module")
def minute_gw(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    yield from _gateway(
        tmp_path_factory,
        demo_home,
        "details-minute",
        FXEV_RATE_LIMIT_PER_MIN="2",
        FXEV_RATE_LIMIT_PER_DAY="100000",
    )


@pytest.fixture(scope="module")
def day_gw(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    yield from _gateway(
        tmp_path_factory,
        demo_home,
        "details-day",
        FXEV_RATE_LIMIT_PER_MIN="100000",
        FXEV_RATE_LIMIT_PER_DAY="2",
    )


# -- helpers -------------------------------------------------------------------------------------


def assert_error(resp: requests.Response, status: int, code: str, retryable: bool = False) -> None:
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"code", "message", "request_id", "retryable"}, body
    assert (body["code"], body["retryable"]) == (code, retryable), body
    assert body["request_id"] == resp.headers["X-Request-Id"]
    assert resp.headers["Cache-Control"] == "no-store"


def head(gateway: Gateway, path: str, **headers: str) -> requests.Response:
    sent = {"Authorization": f"Bearer {gateway.token}", **headers}
    return requests.head(gateway.url(path), headers=sent, timeout=10)


def raw(
    gateway: Gateway,
    path: str,
    headers: list[tuple[str, str]] = (),  # type: ignore[assignment]
    method: str = "GET",
    token: str | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """A request sent exactly as given: the method's case, the target's percent-escapes, and
    header lines as listed (a name may repeat). (status, headers, body)."""
    host, port = gateway.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.putheader("Authorization", f"Bearer {token or gateway.token}")
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def observation_ids(gateway: Gateway) -> list[str]:
    """Every observation of the demo's 2026-09-21 supersession chain."""
    latest = gateway.get(LATEST).json()["observacion_id"]
    detail = gateway.get(f"/v1/observations/{latest}").json()
    return [o["id"] for o in detail["cadena"]["ancestros"]] + [latest]


def evidence_path(gateway: Gateway) -> str:
    latest = gateway.get(LATEST).json()["observacion_id"]
    detail = gateway.get(f"/v1/observations/{latest}").json()
    return f"/v1/evidence/{detail['observacion']['evidencia_id']}"


# -- DECISIONS 9: unknown paths, a trailing slash too, whatever the method ----------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/coverage/"),
        ("DELETE", "/v1/rates/latest/"),
        ("PUT", "/v1/health/live/"),
        ("POST", "/v1/coverage//"),
        ("PATCH", f"/v1/observations/{UNKNOWN_UUID}/"),
    ],
)
def test_a_trailing_slash_path_is_404_whatever_the_method(
    gw: Gateway, method: str, path: str
) -> None:
    """DECISIONS 9: "Unknown path (a trailing slash too): 404 `NOT_FOUND`." and "Order of checks:
    route -> authentication ...". GET on these paths is 404; another method must not turn the
    same unknown path into a 405 whose ``Allow: GET, HEAD`` promises a GET that is a 404."""
    assert_error(gw.get(path), 404, "NOT_FOUND")
    assert_error(gw.request(method, path), 404, "NOT_FOUND")
    no_token = requests.request(method, gw.url(path), timeout=10)
    assert_error(no_token, 404, "NOT_FOUND")


@pytest.mark.parametrize("method", ["TRACE", "FOO", "get", "PROPFIND"])
def test_any_other_method_is_405_with_allow(gw: Gateway, method: str) -> None:
    """DECISIONS 9: "Methods other than GET and HEAD ... 405 with `Allow: GET, HEAD`, code
    `METHOD_NOT_ALLOWED`, `retryable: false`" (methods are case-sensitive, RFC 9110 9.1: ``get``
    is not GET)."""
    status, headers, body = raw(gw, "/v1/coverage", method=method)
    assert status == 405, (status, body[:200])
    assert headers["Allow"] == "GET, HEAD"
    parsed = orjson.loads(body)
    assert (parsed["code"], parsed["retryable"]) == ("METHOD_NOT_ALLOWED", False)


def _exchange(gateway: Gateway, data: bytes) -> bytes:
    """``data`` sent on a fresh connection that the request closes; everything read back."""
    port = int(gateway.base_url.rsplit(":", 1)[1])
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize("method", ["head", "Head"])
def test_a_405_to_a_method_that_is_not_head_sends_the_body_it_announces(
    gw: Gateway, method: str
) -> None:
    """DECISIONS 9: methods other than GET and HEAD get the 405 error body; "Every response
    with a body carries `Repr-Digest` ... of the identity-coded body: the same hash the ledger
    records"; DECISIONS 5: the ledger holds "the SHA-256 of the body bytes actually sent (empty
    for HEAD and 304)". Method names are case-sensitive (RFC 9110 9.1): ``head`` is not HEAD, so
    its 405 carries its body, and the Content-Length it announces is the bytes that follow."""
    request = (
        f"{method} /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {gw.token}\r\nConnection: close\r\n\r\n"
    ).encode()
    head_part, _, body = _exchange(gw, request).partition(b"\r\n\r\n")
    lines = head_part.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 405"), lines[0]
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    assert headers["allow"] == "GET, HEAD"
    assert int(headers["content-length"]) == len(body), (headers["content-length"], body)
    [entry] = ledger_entries(gw.env, headers["x-request-id"])
    assert (entry["bytes"], entry["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())


# -- SPEC /v1/revisions: `at` is an ISO-8601 date-time with a time zone offset -------------------


@pytest.mark.parametrize(
    "at",
    [
        "2026-09-21T21:30:00%2B01:60",  # would be 19:30Z: before the first revision
        "2026-09-21T20:00:00-00:60",  # would be 21:00Z: the published revision
        "2026-09-21T20:00:00%2B05:99",
    ],
)
def test_revisions_at_with_offset_minutes_beyond_59_is_invalid_params(gw: Gateway, at: str) -> None:
    """SPEC errors: `INVALID_PARAMS` 400 for a "Missing or malformed parameter"; SPEC
    /v1/revisions: `at` is an "ISO-8601 date-time with time zone offset"; DECISIONS 9: "`Z` or
    `+HH:MM`/`-HH:MM` required". An offset's minutes run 00-59: ``+01:60`` is no offset."""
    assert_error(gw.get("/v1/revisions?at=" + at), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    "at",
    [
        "2026-09-21T20:00:00%2B0000",  # basic-format offset
        "2026-09-21T20:00:00",  # no offset
        "2026-09-21T20:00:00.Z",
        "2026-09-21T20:00:00,5Z",
        "2026-09-21T24:00:00Z",
        "2026-02-30T20:00:00Z",
        "2026-09-21T20:00:00%2B24:00",
    ],
)
def test_revisions_at_of_another_form_is_invalid_params(gw: Gateway, at: str) -> None:
    """DECISIONS 9: "`/v1/revisions?at=`: `Z` or `+HH:MM`/`-HH:MM` required"; anything else
    malformed is 400 `INVALID_PARAMS` (SPEC errors)."""
    assert_error(gw.get("/v1/revisions?at=" + at), 400, "INVALID_PARAMS")


# -- DECISIONS 5: 304 on If-None-Match, lists and W/ forms ---------------------------------------


def test_if_none_match_sent_as_two_header_lines_is_one_list(gw: Gateway) -> None:
    """DECISIONS 5: as-of responses: "`If-None-Match` answers 304". If-None-Match is a list
    (RFC 9110 13.1.2, ``#entity-tag``); a list may be sent over several field lines, which mean
    the same as one line joining them with commas (RFC 9110 5.3)."""
    etag = gw.get(AS_OF).headers["ETag"]
    one_line, _, _ = raw(gw, AS_OF, [("If-None-Match", f'"other", {etag}')])
    assert one_line == 304
    two_lines, _, body = raw(gw, AS_OF, [("If-None-Match", '"other"'), ("If-None-Match", etag)])
    assert (two_lines, body) == (304, b"")


def test_if_none_match_forms_that_do_and_do_not_match(gw: Gateway) -> None:
    """DECISIONS 5: "`ETag: "<sha256 hex of the body>"` ... `If-None-Match` answers 304";
    DECISIONS 9: "`ETag` quoted". Weak comparison (RFC 9110 13.1.2): ``W/`` matches, lists
    match on any member, spaces and tabs around members are ignored; an unquoted hash, another
    case of the hex digits or a prefix of the tag is another entity tag: 200 with the body. As
    nginx reads the header (docs/decisions.md#as-of), ``*`` matches only as the whole value, and
    other white space (a vertical tab) is part of the member: 200."""
    full = gw.get(AS_OF)
    etag = full.headers["ETag"]
    bare = etag.strip('"')
    for value in (f"W/{etag}", f'"a" ,\t{etag}', f'"a",W/{etag},"b"', "*"):
        resp = gw.get(AS_OF, headers={"If-None-Match": value})
        assert resp.status_code == 304, value
        assert resp.content == b""
    others = (bare, f'"{bare.upper()}"', f'"{bare[:-1]}"', f'W/"{bare}x"', '""')
    unlike_nginx = ('"a", *', f"*, {etag}x", "*\t", etag + "\x0b", f'"a",{etag}\x0b')
    for value in (*others, *unlike_nginx):
        resp = gw.get(AS_OF, headers={"If-None-Match": value})
        assert resp.status_code == 200, value
        assert resp.content == full.content
    not_modified = head(gw, AS_OF, **{"If-None-Match": etag})
    assert (not_modified.status_code, not_modified.content) == (304, b"")
    assert not_modified.headers["ETag"] == etag


def test_304_of_evidence_and_as_of_keeps_the_caching_headers(gw: Gateway) -> None:
    """DECISIONS 5: as-of and evidence: ETag, "`Cache-Control: private, max-age=31536000,
    immutable`", "`CDN-Cache-Control: max-age=31536000`" and "`If-None-Match` answers 304"; a
    304 repeats the validators and caching headers of the 200 (RFC 9110 15.4.5), with a fresh
    `X-Request-Id` and no body."""
    for path in (AS_OF, evidence_path(gw)):
        full = gw.get(path)
        again = gw.get(path, headers={"If-None-Match": full.headers["ETag"]})
        assert again.status_code == 304
        for name in ("ETag", "Cache-Control", "CDN-Cache-Control"):
            assert again.headers[name] == full.headers[name], name
        assert again.headers["X-Request-Id"] != full.headers["X-Request-Id"]
        assert uuid.UUID(again.headers["X-Request-Id"]).version == 4


# -- HEAD: the GET's headers without a body ------------------------------------------------------


HEAD_PATHS = [
    "/v1/coverage",
    LATEST,
    SEPT,
    AS_OF,
    "/v1/alerts",
    "/v1/revisions?at=2026-09-21T20:00:00Z",
    "/v1/coverage?x=1",  # 400
    RATES + "&from=2010-01-01&to=2010-01-31",  # 404 NO_OBSERVATIONS
    "/v1/rates/latest?currency=EUR&series=publicado",  # 404 UNSUPPORTED_CURRENCY
    f"/v1/observations/{UNKNOWN_UUID}",  # 404 NOT_FOUND
    "/v1/nothing",  # 404 unknown path
    "/v1/observations/not-a-uuid",  # 422
]


@pytest.mark.parametrize("path", [*HEAD_PATHS, "evidence"])
def test_head_has_the_gets_status_and_headers_without_a_body(gw: Gateway, path: str) -> None:
    """SPEC endpoints: all use GET (HEAD is GET without a body, RFC 9110 9.3.2: "the server
    SHOULD send the same header fields ... as if the request method had been GET");
    DECISIONS 9: "Every response with a body carries `Repr-Digest`", so HEAD has none."""
    if path == "evidence":
        path = evidence_path(gw)
    got, headed = gw.get(path), head(gw, path)
    assert headed.status_code == got.status_code
    assert headed.content == b""
    skip = {"date", "x-request-id", "repr-digest", "connection", "keep-alive"}
    assert {n.lower() for n in headed.headers} - skip == {n.lower() for n in got.headers} - skip
    for name in headed.headers:
        if name.lower() not in skip:
            assert headed.headers[name] == got.headers[name], name
    assert int(headed.headers["Content-Length"]) == len(got.content)
    assert "Repr-Digest" not in headed.headers
    assert headed.headers["X-Request-Id"] != got.headers["X-Request-Id"]


# -- DECISIONS 9: rate limits and Retry-After arithmetic -----------------------------------------


def test_retry_after_counts_from_the_oldest_request_in_the_minute(minute_gw: Gateway) -> None:
    """DECISIONS 9: "at most N in (t-60 s, t] ... `Retry-After` = seconds until a request would
    pass, rounded up, at least 1". With N = 2, first request at t1, second at t1 + 3 s: the next
    passes when the first leaves the window, 60 s after t1, not 60 s after the second."""
    _, token = issue_token(minute_gw.env, "minute-arith")
    a1 = time.time()
    assert minute_gw.get("/v1/coverage", token=token).status_code == 200
    b1 = time.time()
    time.sleep(3)
    assert minute_gw.get("/v1/coverage", token=token).status_code == 200
    a3 = time.time()
    refused = minute_gw.get("/v1/coverage", token=token)
    b3 = time.time()
    assert_error(refused, 429, "RATE_LIMITED", retryable=True)
    retry_after = int(refused.headers["Retry-After"])
    low, high = math.ceil(a1 + 60 - b3), math.ceil(b1 + 60 - a3)
    assert low <= retry_after <= high, (retry_after, low, high)
    assert retry_after <= 58


def test_retry_after_of_the_day_limit_runs_to_midnight_in_lima(day_gw: Gateway) -> None:
    """DECISIONS 9: "M per calendar day in Lima, per token ... `Retry-After` = seconds until a
    request would pass, rounded up"; DECISIONS 2: "The rate limiter ... always use[s] the real
    clock, never `FXEV_NOW`" (set on this gateway to 2026-09-21)."""
    _, token = issue_token(day_gw.env, "day-arith")
    clear_of_lima_midnight(60)  # the three requests in one day in Lima
    assert [day_gw.get("/v1/coverage", token=token).status_code for _ in range(2)] == [200, 200]
    a3 = time.time()
    refused = day_gw.get("/v1/coverage", token=token)
    b3 = time.time()
    assert_error(refused, 429, "RATE_LIMITED", retryable=True)
    day = datetime.fromtimestamp(a3, LIMA).date()
    midnight = datetime.combine(day + timedelta(days=1), datetime.min.time(), LIMA).timestamp()
    retry_after = int(refused.headers["Retry-After"])
    assert math.ceil(midnight - b3) <= retry_after <= math.ceil(midnight - a3) + 1
    # Refusals do not count: another token of the same installation is untouched.
    _, other = issue_token(day_gw.env, "day-other")
    assert day_gw.get("/v1/coverage", token=other).status_code == 200


def test_a_429_is_ledgered_with_the_hash_of_its_bytes(minute_gw: Gateway) -> None:
    """DECISIONS 5: "for every response to a request with a valid token (errors, 304 and 429
    included) the gateway records ... the SHA-256 of the body bytes actually sent ... status";
    DECISIONS 9: "`Repr-Digest` ... the same hash the ledger records"."""
    token_id, token = issue_token(minute_gw.env, "ledger-429")
    for _ in range(2):
        assert minute_gw.get("/v1/coverage", token=token).status_code == 200
    refused = minute_gw.get("/v1/coverage?x=1", token=token)
    assert_error(refused, 429, "RATE_LIMITED", retryable=True)
    [entry] = ledger_entries(minute_gw.env, refused.headers["X-Request-Id"])
    assert entry["status"] == 429
    assert entry["sha256"] == hashlib.sha256(refused.content).hexdigest()
    assert entry["request_id"] == refused.json()["request_id"]
    assert (entry["token_id"], entry["token_name"]) == (token_id, "ledger-429")
    assert entry["etag"] is None
    assert entry["query"] == "x=1"


# -- SPEC authentication -------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_name_is_case_insensitive(gw: Gateway, scheme: str) -> None:
    """SPEC authentication 1: "Scheme: HTTP bearer"; an authentication scheme name is
    case-insensitive (RFC 9110 11.1, RFC 6750 2.1)."""
    resp = requests.get(
        gw.url("/v1/coverage"), headers={"Authorization": f"{scheme} {gw.token}"}, timeout=10
    )
    assert resp.status_code == 200, resp.text


def test_a_token_expiring_today_in_lima_is_valid(gw: Gateway) -> None:
    """SPEC authentication 3: an expired token answers 401; DECISIONS 11: "Token expiry
    `--expires D` is valid through the end of D in Lima" (real clock)."""
    clear_of_lima_midnight(30)  # issued and used on the same day in Lima
    today = datetime.now(LIMA).date()
    lines = fxev(gw.env, "token", "issue", "expires-today", "--expires", today.isoformat())
    assert gw.get("/v1/coverage", token=lines[-1]).status_code == 200


@pytest.mark.parametrize(
    "value",
    ["Bearer {t} extra", "Bearer {t}x", "Token {t}", "{t}"],
)
def test_a_malformed_authorization_is_401(gw: Gateway, value: str) -> None:
    """SPEC authentication 3: "A missing, invalid, revoked or expired token answers 401
    `UNAUTHORIZED`, not retryable"; a refusal is never recorded against the token."""
    resp = requests.get(
        gw.url("/v1/coverage"), headers={"Authorization": value.format(t=gw.token)}, timeout=10
    )
    assert_error(resp, 401, "UNAUTHORIZED")
    assert ledger_entries(gw.env, resp.headers["X-Request-Id"]) == []


@pytest.mark.parametrize("second", ["the same", "a bogus", "no"])
def test_authorization_on_two_lines_is_one_invalid_credential(gw: Gateway, second: str) -> None:
    """SPEC authentication 3 ("invalid ... token answers 401"); docs/decisions.md#http-basics:
    `Authorization` is no list (RFC 9110 5.3), so two lines, even of one valid token, are an
    invalid credential: 401 `invalid_token`, nothing recorded, whichever line holds the token."""
    other = {"the same": gw.token, "a bogus": "fxev_0_bogus", "no": ""}[second]
    for lines in ([("Authorization", f"Bearer {other}")], [("Authorization", "Bearer")]):
        status, headers, body = raw(gw, "/v1/coverage", lines)
        assert status == 401, (second, lines, body[:200])
        assert orjson.loads(body)["code"] == "UNAUTHORIZED"
        assert headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert ledger_entries(gw.env, headers["X-Request-Id"]) == []
    assert gw.get("/v1/coverage").status_code == 200  # the token itself is still good


# -- /v1/rates parameters: range, percent-encoding, page tokens ---------------------------------


@pytest.mark.parametrize(
    ("dates", "status"),
    [
        ("from=2023-02-28&to=2028-02-28", 200),
        ("from=2023-02-28&to=2028-02-29", 400),  # 2028 is a leap year: still one day too many
        ("from=2021-03-01&to=2026-03-01", 200),
        ("from=2021-03-01&to=2026-03-02", 400),
        ("from=2026-09-21&to=2026-09-21", 200),
    ],
)
def test_five_years_is_the_same_month_and_day(gw: Gateway, dates: str, status: int) -> None:
    """DECISIONS 9: "`to` may be at most the same month and day five years after `from` ...
    inclusive"."""
    resp = gw.get(f"{RATES}&{dates}")
    if status == 400:
        assert_error(resp, 400, "INVALID_PARAMS")
    else:
        assert resp.status_code == 200, resp.text


def test_percent_encoded_parameter_names_are_the_same_request(gw: Gateway) -> None:
    """DECISIONS 5: the canonical request has "percent-encoding normalised": a name spelled
    with percent-escapes is the same parameter, the same as-of bytes and ETag."""
    plain = gw.get(AS_OF)
    # Sent byte for byte (``requests`` would decode the escapes of unreserved characters).
    for target in (
        "/v1/rates?cur%72ency=USD&%73eries=publicado&%66rom=2026-09-15&t%6F=2026-09-30"
        "&as%5Fof%5Frevision=3",
        "/v1/rates?currency=%55%53%44&series=publicad%6f&from=2026%2d09%2d15&to=2026-09-30"
        "&as_of_revision=%33",
    ):
        status, headers, body = raw(gw, target)
        assert status == 200, body[:300]
        assert body == plain.content
        assert headers["ETag"] == plain.headers["ETag"]


def _tampered(token: str) -> list[str]:
    revision, offset, mac = token.split(".")
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    return [
        "",
        " " + token,
        token + "=",
        f"{revision}.{int(offset) + 1}.{mac}",
        f"{revision}.0.{mac}",
        f"{int(revision) - 1}.{offset}.{mac}",
        f"{revision}.{offset}.{flipped}",
        f"0{revision}.{offset}.{mac}",
        token.replace(".", "~"),
    ]


def test_a_corrupt_page_token_is_invalid_params(gw: Gateway) -> None:
    """SPEC /v1/rates: "A corrupt token, or one from another query, answers `INVALID_PARAMS`";
    DECISIONS 5: the token "is a MAC of (revision, canonical query, offset)"."""
    token = gw.get(TWO_YEARS).json()["next_page_token"]
    assert gw.get(TWO_YEARS, params={"page_token": token}).status_code == 200
    for bad in _tampered(token):
        assert_error(gw.get(TWO_YEARS, params={"page_token": bad}), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    "other",
    [
        RATES + "&from=2021-01-02&to=2022-12-31",
        RATES.replace("USD", "EUR") + "&from=2021-01-01&to=2022-12-31",
        RATES.replace("publicado", "cierre") + "&from=2021-01-01&to=2022-12-31",
        RATES.replace("publicado", "nope") + "&from=2021-01-01&to=2022-12-31",
    ],
)
def test_a_page_token_of_another_query_is_invalid_params_before_currency_or_series(
    gw: Gateway, other: str
) -> None:
    """SPEC /v1/rates: a page token "from another query answers `INVALID_PARAMS`"; DECISIONS 9:
    parameters (400) are checked before currency and series (404)."""
    token = gw.get(TWO_YEARS).json()["next_page_token"]
    assert_error(gw.get(other, params={"page_token": token}), 400, "INVALID_PARAMS")


def test_a_page_token_carries_the_defaults_explicitly(gw: Gateway) -> None:
    """DECISIONS 9: "`page_token` fixes revision, canonical query and offset"; DECISIONS 5: the
    canonical query has "defaults made explicit": ``include_annotations`` omitted and ``false``
    are one query, and parameter order is no part of it."""
    token = gw.get(TWO_YEARS).json()["next_page_token"]
    explicit = gw.get(TWO_YEARS + "&include_annotations=false", params={"page_token": token})
    shuffled = gw.get(
        "/v1/rates?to=2022-12-31&from=2021-01-01&series=publicado&currency=USD",
        params={"page_token": token},
    )
    plain = gw.get(TWO_YEARS, params={"page_token": token})
    for resp in (explicit, shuffled, plain):
        assert resp.status_code == 200, resp.text
    assert explicit.json()["items"] == plain.json()["items"] == shuffled.json()["items"]


def test_a_page_token_as_of_an_earlier_revision_answers_that_revision_on_every_page(
    gw: Gateway,
) -> None:
    """SPEC /v1/rates: "The token fixes the revision of the first page"; the envelope's
    `dataset_revision` "equals the anchored revision"; `total` is "at the queried revision"."""
    first = gw.get(TWO_YEARS + "&as_of_revision=1").json()
    assert first["dataset_revision"] == 1
    page = gw.get(TWO_YEARS + "&as_of_revision=1", params={"page_token": first["next_page_token"]})
    assert page.status_code == 200
    body = page.json()
    assert body["dataset_revision"] == 1
    assert body["total"] == first["total"]
    assert len(first["items"]) + len(body["items"]) == first["total"]
    assert body["next_page_token"] is None
    assert page.headers["Cache-Control"] == IMMUTABLE


# -- rate items over a whole five-year walk ------------------------------------------------------


def _walk(gateway: Gateway, query: str) -> tuple[list[dict[str, Any]], int]:
    first = gateway.get(query).json()
    items, token = list(first["items"]), first["next_page_token"]
    while token:
        page = gateway.get(query, params={"page_token": token}).json()
        assert page["total"] == first["total"]
        items += page["items"]
        token = page["next_page_token"]
    return items, first["total"]


def test_every_item_of_five_years_keeps_the_rate_item_rules(gw: Gateway) -> None:
    """SPEC rate item: `compra`/`venta` "exactly 3 decimals"; `superseded` "Always `false` in a
    served item"; `fuente` one of `taxauth_txt`, `centralbank`, `importado`; `observacion_id` a
    UUID; `capturado_en` a UTC timestamp; `cotejos` entries with `contraparte`, `resultado`
    (`ok` or `discrepante`), `regla`, `revision`; `tiene_discrepancia_abierta` "`true` when a
    `discrepante` cross-check exists that is later than the last `ok` against the same
    counterpart"; /v1/rates: "ascending chronological order", at most 366 a page; DECISIONS 6:
    `marcas` are distinct."""
    items, total = _walk(gw, FIVE_YEARS)
    assert len(items) == total
    fechas = [item["fecha_serie"] for item in items]
    assert fechas == sorted(set(fechas))
    assert fechas[0] >= "2021-09-21" and fechas[-1] <= "2026-09-21"
    for item in items:
        assert DECIMAL_3.fullmatch(item["compra"]) and DECIMAL_3.fullmatch(item["venta"]), item
        assert item["superseded"] is False
        assert item["fuente"] in {"taxauth_txt", "centralbank", "importado"}
        assert str(uuid.UUID(item["observacion_id"])) == item["observacion_id"]
        assert UTC_TS.fullmatch(item["capturado_en"]), item["capturado_en"]
        assert len(item["marcas"]) == len(set(item["marcas"])) >= 1
        assert item["superseded_por"] is None or uuid.UUID(item["superseded_por"])
        last: dict[tuple[str, str], tuple[int, str]] = {}
        for cotejo in item["cotejos"]:
            assert {"contraparte", "resultado", "regla", "revision"} <= set(cotejo)
            assert cotejo["resultado"] in {"ok", "discrepante"}
            key = (cotejo["contraparte"], cotejo.get("contraparte_fecha", ""))
            if key not in last or cotejo["revision"] >= last[key][0]:
                last[key] = (cotejo["revision"], cotejo["resultado"])
        open_ = any(result == "discrepante" for _, result in last.values())
        assert item["tiene_discrepancia_abierta"] is open_, item


def test_latest_is_the_last_item_of_the_series(gw: Gateway) -> None:
    """SPEC /v1/rates/latest: "a rate item (all fields above) with the additional `frescura`
    object and the envelope ... The item is the most recent valid observation of the series"."""
    latest = gw.get(LATEST).json()
    items, _ = _walk(gw, RATES + "&from=2026-01-01&to=2026-12-31")
    newest = items[-1]
    assert {k: latest[k] for k in newest} == newest


# -- evidence and events -------------------------------------------------------------------------


def test_every_evidence_of_the_chain_matches_its_observation_and_capture_event(gw: Gateway) -> None:
    """SPEC evidence: `X-Sha256` "SHA-256 of the returned bytes", `ETag` "The same hash",
    `X-Capturado-En` "Capture instant", `X-Identidad-Consulta` "What was queried"; SPEC events 6:
    "For `capturada`, `detalle` holds the canonical buy and sell values (`compra`, `venta`) and
    the `sha256` of the captured bytes"."""
    for obs_id in observation_ids(gw):
        detail = gw.get(f"/v1/observations/{obs_id}").json()
        record = detail["observacion"]
        resp = gw.get(f"/v1/evidence/{record['evidencia_id']}")
        assert resp.status_code == 200
        digest = hashlib.sha256(resp.content).hexdigest()
        assert resp.headers["X-Sha256"] == digest
        assert resp.headers["ETag"] == f'"{digest}"'
        assert resp.headers["X-Capturado-En"] == record["capturado_en"]
        assert resp.headers["X-Identidad-Consulta"] == record["identidad_consulta"]
        for event in detail["eventos"]:
            if event["tipo"] != "capturada":
                continue
            assert event["evidencia_id"] == record["evidencia_id"]
            assert event["detalle"]["sha256"] == digest
            assert (event["detalle"]["compra"], event["detalle"]["venta"]) == (
                record["compra"],
                record["venta"],
            )


def test_an_unknown_evidence_or_observation_is_not_found_and_not_cached(gw: Gateway) -> None:
    """SPEC: "An unknown id answers `NOT_FOUND`"; DECISIONS 5: "Every other response: fresh
    UUID4 `request_id`, `Cache-Control: no-store`, no ETag", If-None-Match: * changes nothing."""
    for path in (f"/v1/evidence/{UNKNOWN_UUID}", f"/v1/observations/{UNKNOWN_UUID.upper()}"):
        resp = gw.get(path, headers={"If-None-Match": "*"})
        assert_error(resp, 404, "NOT_FOUND")
        assert "ETag" not in resp.headers


# -- the ledger ----------------------------------------------------------------------------------


def test_the_ledger_keeps_the_query_as_sent_and_the_bytes_of_a_422(gw: Gateway) -> None:
    """DECISIONS 5: the ledger records "the body's `request_id`, the SHA-256 of the body bytes
    actually sent ..., method, path and query, status"; a 422 body has no `request_id`."""
    token_id, token = issue_token(gw.env, "ledger-details")
    sent = "currency=%55SD&series=%70ublicado"
    status, headers, body = raw(gw, "/v1/rates/latest?" + sent, token=token)
    assert status == 200
    [entry] = ledger_entries(gw.env, headers["X-Request-Id"])
    assert (entry["path"], entry["query"]) == ("/v1/rates/latest", sent)
    assert entry["request_id"] == orjson.loads(body)["request_id"] == headers["X-Request-Id"]
    assert entry["sha256"] == hashlib.sha256(body).hexdigest()
    assert entry["bytes"] == len(body)
    invalid = gw.get("/v1/evidence/nope", token=token)
    assert invalid.status_code == 422
    [entry] = ledger_entries(gw.env, invalid.headers["X-Request-Id"])
    assert entry["request_id"] is None
    assert entry["status"] == 422
    assert entry["sha256"] == hashlib.sha256(invalid.content).hexdigest()
    assert (entry["token_id"], entry["token_name"]) == (token_id, "ledger-details")


def test_x_request_ids_are_unique_and_the_ledger_finds_each_once(gw: Gateway) -> None:
    """DECISIONS 5: "Every response carries `X-Request-Id`, a fresh UUID4 per HTTP request";
    `fxev requests show ID`: "ledger entries whose `X-Request-Id` or body `request_id` is ID"."""
    paths = ["/v1/coverage", "/v1/nothing", "/v1/coverage?x=1", AS_OF, LATEST]
    answers = [gw.get(path, headers={"Connection": "close"}) for path in paths for _ in range(3)]
    ids = [a.headers["X-Request-Id"] for a in answers]
    assert len(set(ids)) == len(ids)
    for answer in answers[::4]:
        [entry] = ledger_entries(gw.env, answer.headers["X-Request-Id"])
        assert entry["status"] == answer.status_code
        assert entry["sha256"] == hashlib.sha256(answer.content).hexdigest()
