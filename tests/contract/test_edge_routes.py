"""The gateway's side of the edge (docs/operating/edge.md#gateway), asked directly as the edge
would: the auth step is the original request (same checks, count and ledger entry) in another
form, the replay sends an answer back as it was, a cache fill is neither counted nor recorded,
and none of them exists for a request without the edge's credential."""

from __future__ import annotations

import hashlib

import orjson
import pytest
import requests

from gateway.edge import steps
from gateway.http.sending import TOO_LARGE, repr_digest
from tests.contract.conftest import Gateway, ledger_entries
from tests.contract.test_api import assert_api_error

AS_OF = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-30&as_of_revision=4"


def credential(gateway: Gateway) -> str:
    return (gateway.home / steps.SECRET_FILE).read_text(encoding="ascii").strip()


def auth(
    gateway: Gateway, target: str, token: str | None = "default", **headers: str
) -> requests.Response:
    """The edge's auth step for ``GET target``."""
    sent = {"X-Fxev-Edge": credential(gateway), "X-Original-URI": target, **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {gateway.token if token == 'default' else token}"
    sent.setdefault("X-Original-Method", "GET")
    return requests.get(gateway.url(steps.AUTH_PATH), headers=sent, timeout=10)


def replayed(gateway: Gateway, answer: requests.Response) -> requests.Response:
    """What the edge's ``error_page 401`` fetches for a refused auth step."""
    headers = {"X-Fxev-Edge": credential(gateway), steps.ANSWER: answer.headers[steps.ANSWER]}
    return requests.get(gateway.url(steps.ANSWER_PATH), headers=headers, timeout=10)


def test_the_auth_step_of_an_immutable_answer_is_a_bodiless_200_recorded_as_the_answer(
    gateway: Gateway,
) -> None:
    direct = gateway.get(AS_OF)
    answer = auth(gateway, AS_OF)
    assert answer.status_code == 200 and answer.content == b""
    assert answer.headers[steps.ETAG] == direct.headers["ETag"]
    request_id = answer.headers["X-Request-Id"]
    assert request_id != direct.headers["X-Request-Id"]
    [entry] = ledger_entries(gateway.env, request_id)
    assert entry["status"] == 200 and entry["method"] == "GET"
    assert entry["path"] == "/v1/rates" and entry["query"] == AS_OF.partition("?")[2]
    assert entry["sha256"] == hashlib.sha256(direct.content).hexdigest()
    assert entry["bytes"] == len(direct.content)
    assert entry["etag"] == direct.headers["ETag"]


def test_any_other_answer_travels_whole_in_a_401_and_is_replayed_unchanged(
    gateway: Gateway,
) -> None:
    for token, target, status, code in (
        (None, AS_OF, 401, "UNAUTHORIZED"),
        ("fxev_bogus", AS_OF, 401, "UNAUTHORIZED"),
        ("default", AS_OF.replace("as_of_revision=4", "as_of_revision=999"), 400, None),
        ("default", "/v1/evidence/not-a-uuid", 422, None),
        ("default", "/v1/rates/latest?currency=USD&series=publicado", 200, None),
    ):
        answer = auth(gateway, target, token)
        assert answer.status_code == 401 and answer.content == b""
        assert "WWW-Authenticate" not in answer.headers
        again = replayed(gateway, answer)
        assert again.status_code == status
        direct = gateway.get(target, token=token)
        assert again.headers["Content-Type"] == direct.headers["Content-Type"]
        assert again.headers.get("WWW-Authenticate") == direct.headers.get("WWW-Authenticate")
        assert "Repr-Digest" in again.headers
        if code is not None:
            assert_api_error(again, status, code)
        assert again.headers["Repr-Digest"].startswith("sha-256=:")
        if token == "default":
            [entry] = ledger_entries(gateway.env, again.headers["X-Request-Id"])
            assert entry["sha256"] == hashlib.sha256(again.content).hexdigest()


def test_if_none_match_is_a_recorded_304_replayed_with_its_headers(gateway: Gateway) -> None:
    etag = gateway.get(AS_OF).headers["ETag"]
    answer = auth(gateway, AS_OF, **{"If-None-Match": f"W/{etag}"})
    again = replayed(gateway, answer)
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == etag
    [entry] = ledger_entries(gateway.env, again.headers["X-Request-Id"])
    assert entry["status"] == 304 and entry["sha256"] == hashlib.sha256(b"").hexdigest()


def test_a_head_is_authorised_as_a_head(gateway: Gateway) -> None:
    answer = auth(gateway, AS_OF, **{"X-Original-Method": "HEAD"})
    assert answer.status_code == 200
    [entry] = ledger_entries(gateway.env, answer.headers["X-Request-Id"])
    assert entry["method"] == "HEAD" and entry["bytes"] == 0


def test_a_cache_fill_is_sent_only_with_the_authorised_etag_and_not_recorded(
    gateway: Gateway,
) -> None:
    """The fill names the ETag and the CORS headers (X-Fxev-Cors: none configured here) the
    auth step gave: another ETag, or a gateway that would send other CORS headers (its
    FXEV_CORS_ORIGINS changed since), is a retryable 503, never an entry under the key."""
    answer = auth(gateway, AS_OF)
    request_id, etag = answer.headers["X-Request-Id"], answer.headers[steps.ETAG]
    assert answer.headers[steps.CORS] == "-"
    fill = {"X-Fxev-Edge": credential(gateway), "X-Fxev-Admitted": request_id}
    expect = {"X-Fxev-Expect": f"{etag} -"}
    body = requests.get(gateway.url(AS_OF), headers=fill | expect, timeout=10)
    assert body.status_code == 200 and body.headers["ETag"] == etag  # no token needed
    assert body.headers["X-Request-Id"] == request_id
    for other in ('"0" -', f"{etag} a", f"{etag} v", etag):
        stale = requests.get(
            gateway.url(AS_OF), headers=fill | {"X-Fxev-Expect": other}, timeout=10
        )
        assert stale.status_code == 503 and stale.json()["retryable"] is True, other
        digest = repr_digest(hashlib.sha256(stale.content).hexdigest())
        assert stale.headers["Repr-Digest"] == digest
    assert len(ledger_entries(gateway.env, request_id)) == 1  # the auth step's alone


def test_a_refused_fill_for_a_head_is_recorded_as_the_head_the_client_sent(
    gateway: Gateway,
) -> None:
    """nginx fills its cache with a GET for a client's HEAD (``X-Original-Method``). A fill
    refused there is the answer the client got: its 503 is recorded as that HEAD, with the hash
    of no bytes, superseding the 200 its auth step recorded (docs/operating/edge.md#limits)."""
    answer = auth(gateway, AS_OF, **{"X-Original-Method": "HEAD"})
    request_id = answer.headers["X-Request-Id"]
    [step] = ledger_entries(gateway.env, request_id)
    assert (step["status"], step["method"]) == (200, "HEAD")
    fill = {  # as nginx sends it: the client's token too
        "X-Fxev-Edge": credential(gateway),
        "X-Fxev-Admitted": request_id,
        "Authorization": f"Bearer {gateway.token}",
        "X-Original-Method": "HEAD",
        "X-Fxev-Expect": '"0" -',  # an ETag the answer no longer has
    }
    refused = requests.get(gateway.url(AS_OF), headers=fill, timeout=10)
    assert_api_error(refused, 503, "INTERNAL")
    [entry] = ledger_entries(gateway.env, request_id)
    assert (entry["status"], entry["method"], entry["supersedes"]) == (503, "HEAD", True)
    assert (entry["bytes"], entry["sha256"]) == (0, hashlib.sha256(b"").hexdigest())


@pytest.mark.parametrize(
    "original", ["/_edge/answer", "/_edge/auth", "/_edge/refusal/malformed", "/_edge/../v1/rates"]
)
def test_an_auth_step_for_an_internal_path_is_an_unknown_path_recorded(
    gateway: Gateway, original: str
) -> None:
    """The auth step of a target under /_edge/ (nginx routes `/_edge/../v1/rates` by its path
    without dot segments) is answered as that target asked directly: 404 `NOT_FOUND`, packed,
    and recorded. Nothing the edge alone may ask is done for it: a packed answer beside it is
    not replayed, no refusal is written."""
    packed = auth(gateway, AS_OF, token=None).headers[steps.ANSWER]
    step = auth(gateway, original, **{steps.ANSWER: packed})
    assert step.status_code == 401
    status, headers, body = steps.unpack(step.headers[steps.ANSWER])
    assert status == 404 and orjson.loads(body)["code"] == "NOT_FOUND"
    x_request_id = dict((k.lower(), v) for k, v in headers)["x-request-id"]
    [entry] = ledger_entries(gateway.env, x_request_id)
    assert (entry["status"], entry["path"]) == (404, original)


def test_without_the_credential_the_edge_routes_do_not_exist(gateway: Gateway) -> None:
    packed = auth(gateway, AS_OF, token=None).headers[steps.ANSWER]
    for headers in ({}, {"X-Fxev-Edge": "0" * 64}, {"X-Fxev-Edge": ""}):
        for path in (steps.AUTH_PATH, steps.ANSWER_PATH, "/_edge/refusal/malformed"):
            sent = headers | {"X-Original-URI": AS_OF, steps.ANSWER: packed}
            sent["Authorization"] = f"Bearer {gateway.token}"
            assert_api_error(
                requests.get(gateway.url(path), headers=sent, timeout=10), 404, "NOT_FOUND"
            )
        fill = headers | {"X-Fxev-Admitted": "x", "X-Fxev-Expect": '"0"'}
        assert_api_error(
            requests.get(gateway.url(AS_OF), headers=fill, timeout=10), 401, "UNAUTHORIZED"
        )


@pytest.mark.parametrize(
    ("name", "status", "code", "message"),
    [
        ("malformed", 400, "INVALID_PARAMS", "The request is malformed."),
        ("too_large", 400, "INVALID_PARAMS", TOO_LARGE),
        ("not_allowed", 405, "METHOD_NOT_ALLOWED", "Only GET and HEAD are allowed."),
    ],
)
def test_the_refusal_route_writes_the_gateways_refusal_for_the_edge(
    gateway: Gateway, name: str, status: int, code: str, message: str
) -> None:
    """What nginx refuses itself, the edge asks a gateway to answer (docs/operating/edge.md):
    the API's error body with a fresh request id and its Repr-Digest (section 9), the 405 with
    `Allow: GET, HEAD`; no token read, nothing counted or recorded, whatever the edge sends."""
    sent = {"X-Fxev-Edge": credential(gateway), "Authorization": f"Bearer {gateway.token}"}
    answer = requests.get(gateway.url(f"/_edge/refusal/{name}"), headers=sent, timeout=10)
    body = assert_api_error(answer, status, code)
    assert body["message"] == message
    assert answer.headers["Repr-Digest"] == repr_digest(hashlib.sha256(answer.content).hexdigest())
    assert answer.headers["Cache-Control"] == "no-store"
    if status == 405:
        assert answer.headers["Allow"] == "GET, HEAD"
    assert ledger_entries(gateway.env, answer.headers["X-Request-Id"]) == []
    for other in ("500", "400", "other"):
        unknown = requests.get(gateway.url(f"/_edge/refusal/{other}"), headers=sent, timeout=10)
        assert_api_error(unknown, 404, "NOT_FOUND")


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="3")
def test_the_auth_step_counts_like_a_direct_request(private_gateway: Gateway) -> None:
    assert private_gateway.get(AS_OF).status_code == 200
    assert auth(private_gateway, AS_OF).status_code == 200
    assert auth(private_gateway, "/v1/evidence/x").status_code == 401  # a 422, counted
    refused = replayed(private_gateway, auth(private_gateway, AS_OF))
    assert_api_error(refused, 429, "RATE_LIMITED")
    assert int(refused.headers["Retry-After"]) >= 1
    assert_api_error(private_gateway.get(AS_OF), 429, "RATE_LIMITED")
