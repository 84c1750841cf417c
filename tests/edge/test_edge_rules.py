"""docs/decisions.md section 12 (the edge) and section 14 (hardening rules), with the parts of
section 9 (HTTP basics, bad requests, rate limits, CORS) and section 5 (request ids, ledger) that
they refer to, seen from a client of the shipped edge: real nginx running what ``fxev edge
config`` prints, in front of two real gateways over a private copy of the demo, on 127.0.0.1.

Only what tests/edge/test_edge.py and the contract tests do not already check from outside is
checked here; each test names the rule it checks in its docstring. What the edge cannot do as the
gateway does (some of nginx's own refusals, 408) is listed in docs/operating/edge.md#limits.

The topology is started once per module for each of the edge's two shapes (with the gateways'
auth lanes, and without), with a day limit of 40 per token (so that limits are reachable with
few requests) and two CORS origins. Each test issues tokens of its own. The tests that publish a
correction and kill a worker come last, in that order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import requests

from demo import local_source
from gateway.http.sending import repr_digest
from gateway.ledger.reading import ledger_folder, read_entries, shown
from tests.builder.localserver import LocalServer
from tests.contract.conftest import (
    copy_demo,
    fxev,
    home_env,
    ledger_entries,
    run_fxev,
)
from tests.contract.test_api import assert_api_error
from tests.contract.test_ledger_kills import children
from tests.edge.conftest import Load, Raw, Topology, edge_in_front, exchange, on_the_wire
from tests.support.clock import clear_of_lima_midnight
from tokens.store import TokenStore, parse_token_id

PER_MIN = 60
PER_DAY = 40  # reached before the minute's limit: every token of this module has 40 requests
ORIGINS = ("https://a.example", "https://b.example")
SEPTEMBER = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-30"
AS_OF = SEPTEMBER + "&as_of_revision=5"
NO_OBSERVATIONS = "/v1/rates?currency=USD&series=publicado&from=2019-09-01&to=2019-09-30"
NO_OBSERVATIONS += "&as_of_revision=5"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
IDENTITY = {"Accept-Encoding": "identity"}
# Headers that are the connection's or the edge's own, not the API's (section 12 allows X-Cache;
# Date is every server's own; the request id is compared separately: it must be fresh).
NOT_API = {
    "x-request-id",
    "date",
    "x-cache",
    "server",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "vary",
}


# -- the topology ------------------------------------------------------------------------------


class Audit(Topology):
    """The module's topology, with tokens of unique names (so each test finds its own entries in
    the ledger) and requests straight to a gateway."""

    def named_token(self, name: str) -> tuple[str, str]:
        """(a unique token name, a new token of that name)."""
        unique = f"{name}-{uuid.uuid4().hex[:8]}"
        with TokenStore.open(self.home) as store:
            return unique, store.issue(unique, None, datetime.now(UTC)).token_text

    def revoke(self, token: str) -> None:
        with TokenStore.open(self.home) as store:
            store.revoke(parse_token_id(token) or "", datetime.now(UTC))

    def direct(
        self, path: str, token: str | None = None, method: str = "GET", **headers: str
    ) -> requests.Response:
        return self.get(path, token, method, via=self.gateways[0].base_url, **headers)

    def entries_of(self, token_name: str) -> list[dict[str, object]]:
        """Every ledger entry ``fxev requests show`` would show that names ``token_name``."""
        return [
            entry
            for entry in shown(read_entries(ledger_folder(self.home)))
            if entry.get("token_name") == token_name
        ]


@pytest.fixture(scope="module", params=["lanes", "sanic"])
def audit(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    demo_home: Path,
) -> Iterator[Audit]:
    """Two gateways (two workers each) over one private copy of the demo, and the edge in front
    of them, with and without the gateways' auth lanes; stopped by PID."""
    base = tmp_path_factory.mktemp("edge-rules")
    env, _ = copy_demo(
        demo_home,
        base,
        FXEV_RATE_LIMIT_PER_MIN=str(PER_MIN),
        FXEV_RATE_LIMIT_PER_DAY=str(PER_DAY),
        FXEV_CORS_ORIGINS=",".join(ORIGINS),
    )
    with edge_in_front(env, base, request.param == "lanes") as running:
        yield Audit(env, running.gateways, running.edge, running.lanes, base)


# -- raw HTTP ----------------------------------------------------------------------------------


def head_of(target: bytes, token: str | None, *extra: bytes, method: bytes = b"GET") -> bytes:
    lines = [method + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    if token is not None:
        lines.append(b"Authorization: Bearer " + token.encode())
    return b"\r\n".join([*lines, *extra, b"", b""])


def assert_the_gateways_answer(edge: Raw, direct: Raw) -> None:
    """The edge's answer is the gateway's: its status, the API's error body (same code), and a
    fresh X-Request-Id that the body names."""
    assert edge.status == direct.status, (edge.status, edge.body[:200], direct.body[:200])
    assert edge.headers.get("content-type", "").startswith("application/json"), edge.body[:200]
    mine, theirs = edge.json(), direct.json()
    assert (mine.get("code"), mine.get("retryable")) == (theirs["code"], theirs["retryable"])
    assert edge.headers.get("x-request-id") == mine["request_id"]
    assert edge.headers.get("repr-digest") == repr_digest(hashlib.sha256(edge.body).hexdigest())


# -- helpers -----------------------------------------------------------------------------------


def api_headers(resp: requests.Response) -> dict[str, str]:
    return {k.lower(): v for k, v in resp.headers.items() if k.lower() not in NOT_API}


def evidence_of(audit: Audit, token: str, observation_id: str) -> str:
    detail = audit.direct(f"/v1/observations/{observation_id}", token).json()
    return f"/v1/evidence/{detail['observacion']['evidencia_id']}"


def html_evidence(audit: Audit, token: str) -> str:
    """The demo's central-bank evidence (served as ``text/html`` by the source)."""
    for link in sorted((Path(audit.env["FXEV_SITE"]) / "evidence").glob("*.json")):
        path = "/v1/evidence/" + link.name.removesuffix(".json")
        resp = audit.direct(path, token, method="HEAD")
        if resp.headers.get("Content-Type", "").startswith("text/html"):
            return path
    raise AssertionError("the demo has no text/html evidence")


def received(resp: requests.Response) -> tuple[str, int, str, str]:
    """(X-Request-Id, status, method, SHA-256 of the identity body) of an answer."""
    return (
        resp.headers["X-Request-Id"],
        resp.status_code,
        resp.request.method or "",
        hashlib.sha256(resp.content).hexdigest(),  # requests decodes gzip: the identity body
    )


def recorded(entries: list[dict[str, object]]) -> list[tuple[object, object, object, object]]:
    return sorted((e["x_request_id"], e["status"], e["method"], e["sha256"]) for e in entries)


# -- limits ------------------------------------------------------------------------------------


def test_every_kind_of_request_through_the_edge_counts_once_toward_the_limit(audit: Audit) -> None:
    """Section 12: "over the limit gets 429; edge requests count toward the same limits".
    Section 9: "every authenticated request that passes the limiter counts (HEAD, 304, 4xx and
    `ready` included; `live` never) ... rejected requests do not count". Every kind of request
    the edge handles differently (cache hit, miss, HEAD from the cache, a 304 and a 400/404/422
    replayed, gzip, pass-through) counts exactly once, with direct requests, toward the day's
    limit (40 here); the 41st is the gateway's 429, recorded."""
    name, token = audit.named_token("count")
    clear_of_lima_midnight(60)  # the day's 41 requests in one day in Lima
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    etag = audit.direct(AS_OF, token).headers["ETag"]  # 3 counted so far
    kinds: list[tuple[str, str, dict[str, str]]] = [
        ("GET", AS_OF, IDENTITY),
        ("HEAD", AS_OF, {}),
        ("GET", AS_OF, {"If-None-Match": etag}),
        ("GET", AS_OF, {"Accept-Encoding": "gzip"}),
        ("GET", "MISS", {}),
        ("HEAD", "MISS", {}),
        ("GET", SEPTEMBER + "&as_of_revision=999", {}),
        ("GET", NO_OBSERVATIONS, {}),
        ("GET", evidence, {}),
        ("HEAD", evidence, {}),
        ("GET", evidence + "x", {}),
        ("GET", LATEST, {}),
        ("GET", "/v1/health/ready", {}),
    ]
    statuses, misses = [], 0
    for n in range(PER_DAY - 4):  # 3 counted above, 1 below
        method, path, headers = kinds[n % len(kinds)]
        if path == "MISS":  # a page nobody asked for yet: a miss filled from a gateway
            misses += 1
            path = SEPTEMBER.replace("-30", f"-{10 + misses:02d}") + "&as_of_revision=5"
        statuses.append(audit.get(path, token, method, **headers).status_code)
        if n % 9 == 0:  # never counted
            assert audit.get("/v1/health/live", token).status_code == 200
            assert audit.get(AS_OF, "fxev_bogus").status_code == 401
    assert 429 not in statuses, statuses
    assert audit.direct(LATEST, token).status_code == 200  # the 40th
    over = audit.get(AS_OF, token)
    direct = audit.direct(AS_OF, token)
    assert_api_error(over, 429, "RATE_LIMITED")
    assert_api_error(direct, 429, "RATE_LIMITED")
    assert abs(int(over.headers["Retry-After"]) - int(direct.headers["Retry-After"])) <= 2
    [entry] = ledger_entries(audit.env, over.headers["X-Request-Id"])
    assert entry["status"] == 429 and entry["token_name"] == name


def test_a_revoked_token_is_refused_at_once_however_warm_the_cache_and_lanes(audit: Audit) -> None:
    """Section 12: "No cached answer reaches a request the fleet would not accept at that
    moment: ... just-revoked token get 401". Section 3: "revocation takes effect on the very next
    request". The token is first served many times (hits on every worker's lane), then revoked:
    every next request, on every route the edge caches, is the gateway's 401."""
    _, token = audit.named_token("revoked")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    for _ in range(6):
        for path in (AS_OF, evidence):
            assert audit.get(path, token, **IDENTITY).status_code == 200
    audit.revoke(token)
    for _ in range(6):
        for path in (AS_OF, evidence):
            resp = audit.get(path, token, **IDENTITY)
            assert_api_error(resp, 401, "UNAUTHORIZED")
            assert resp.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'


# -- the ledger --------------------------------------------------------------------------------


def test_the_ledger_shows_exactly_the_answers_a_token_got_through_the_edge(audit: Audit) -> None:
    """Section 12: "Every answer has a fresh X-Request-Id, cache hits included, and the ledger
    holds its entry, with the SHA-256 of the representation". Section 14: "The ledger never
    claims an answer that did not leave". For a mix of ordinary requests through the edge, the
    token's ledger entries are exactly the answers the client received: one each (the auth step
    and the cache fill are one request), same X-Request-Id, status, method and identity hash."""
    name, token = audit.named_token("exact")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    etag = audit.direct(AS_OF, token).headers["ETag"]
    before = recorded(audit.entries_of(name))
    answers = [
        audit.get(AS_OF, token, **IDENTITY),
        audit.get(AS_OF, token, **IDENTITY),
        audit.get(AS_OF, token),  # gzip
        audit.get(AS_OF, token, "HEAD"),
        audit.get(AS_OF, token, **{"If-None-Match": "W/" + etag}),
        audit.get(SEPTEMBER.replace("-30", "-03") + "&as_of_revision=5", token),  # a miss
        audit.get(SEPTEMBER + "&as_of_revision=999", token),
        audit.get(NO_OBSERVATIONS, token),
        audit.get(evidence, token),
        audit.get(evidence, token, "HEAD"),
        audit.get(evidence + "x", token),
        audit.get("/v1/evidence/00000000-0000-4000-8000-000000000000", token),
        audit.get(LATEST, token),
        audit.get("/v1/nowhere", token),
        audit.get(AS_OF, token, "POST"),
        audit.get("/v1/health/ready", token),
    ]
    assert len({resp.headers["X-Request-Id"] for resp in answers}) == len(answers)
    after = [e for e in recorded(audit.entries_of(name)) if e not in before]
    assert after == sorted(received(resp) for resp in answers)


@pytest.mark.parametrize(
    "case",
    ["non-ascii-path", "non-ascii-query", "if-match", "if-unmodified-since"],
)
def test_the_ledger_never_claims_an_answer_the_edge_did_not_send(audit: Audit, case: str) -> None:
    """Section 14: "The ledger never claims an answer that did not leave ... `fxev requests
    show` shows the answer the client got". Section 12: "the ledger holds its entry, with the
    SHA-256 of the representation, before the body leaves". For a request with a valid token,
    the ledger shows exactly the answer the client got through the edge: its X-Request-Id, its
    status, the hash of its body; and no other answer (none for a target the gateway cannot
    parse, as for a direct one)."""
    name, token = audit.named_token("claims")
    if case.startswith("non-ascii"):
        target = (
            b"/v1/evidence/\xc3\xa9" if case == "non-ascii-path" else AS_OF.encode() + b"&x=\xff"
        )
        answer = exchange(audit.edge.base_url, head_of(target, token))
        got = [
            (
                answer.headers.get("x-request-id"),
                answer.status,
                hashlib.sha256(answer.body).hexdigest(),
            )
        ]
    else:
        header = {"if-match": "If-Match", "if-unmodified-since": "If-Unmodified-Since"}[case]
        value = '"0"' if case == "if-match" else "Thu, 01 Jan 1970 00:00:00 GMT"
        audit.get(AS_OF, audit.named_token("filler")[1])  # in the cache: served from it
        resp = audit.get(AS_OF, token, **{header: value, **IDENTITY})
        got = [
            (
                resp.headers.get("X-Request-Id"),
                resp.status_code,
                hashlib.sha256(resp.content).hexdigest(),
            )
        ]
    claimed = [(e["x_request_id"], e["status"], e["sha256"]) for e in audit.entries_of(name)]
    if case.startswith("non-ascii"):
        # Refused before any route, as directly: it reaches no token check, so the ledger holds
        # nothing for it (docs/decisions.md#bad-requests), and no other answer either.
        assert got[0][1] == 400
        assert claimed == [], {"ledger": claimed, "client got": got}
    else:
        assert claimed == got, {"ledger": claimed, "client got": got}


# -- answers the edge makes itself -------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [b"/v1/evidence/\xc3\xa9", AS_OF.encode() + b"&x=\xff"],
    ids=["utf8-in-evidence-path", "invalid-utf8-in-as-of-query"],
)
def test_raw_non_ascii_bytes_on_a_cached_route_get_the_gateways_400(
    audit: Audit, target: bytes
) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers)".
    Section 9: "a NUL or invalid UTF-8 in the path or query ... is 400 `INVALID_PARAMS` with the
    spec's body". A target with raw bytes over 0x7F on a route the edge caches (as-of
    /v1/rates, /v1/evidence/...) gets, through the edge, the gateway's own answer, not a
    retryable 503 that says no gateway answered."""
    _, token = audit.named_token("non-ascii")
    edge = exchange(audit.edge.base_url, head_of(target, token))
    direct = exchange(audit.gateways[0].base_url, head_of(target, token))
    assert direct.status == 400 and direct.json()["code"] == "INVALID_PARAMS"
    assert_the_gateways_answer(edge, direct)


@pytest.mark.parametrize(
    "header",
    [{"If-Match": '"0"'}, {"If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"}],
    ids=["if-match", "if-unmodified-since"],
)
def test_preconditions_the_gateway_ignores_do_not_turn_a_cached_answer_into_a_412(
    audit: Audit, header: dict[str, str]
) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers), except
    that the edge adds `X-Cache` and ... compresses". The gateway answers an as-of page or an
    evidence with a precondition it does not evaluate as it answers without it (200, the
    bytes); through the edge the same request must get the same 200 and bytes, not nginx's own
    412 page (while the ledger records the 200)."""
    _, token = audit.named_token("precondition")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    for path in (AS_OF, evidence):
        assert audit.get(path, token, **IDENTITY).status_code == 200  # in the cache
        direct = audit.direct(path, token, **header, **IDENTITY)
        edge = audit.get(path, token, **header, **IDENTITY)
        assert direct.status_code == 200
        assert (edge.status_code, edge.content) == (200, direct.content), edge.text[:200]


def test_request_ids_the_edge_makes_are_fresh_uuid4s(audit: Audit) -> None:
    """Section 12: "Every answer has a fresh `X-Request-Id`, cache hits included". Section 5:
    "Every response carries `X-Request-Id`, a fresh UUID4 per HTTP request". The ids nginx makes
    itself (here for hits on the public log's tiles) are UUIDs of version 4 (RFC 9562: version
    nibble 4, variant bits 10), like the gateway's, not 32 random hex digits laid out as one."""
    checkpoint = audit.get("/v1/log/checkpoint", **IDENTITY)
    size = int(checkpoint.text.splitlines()[1])
    tile = f"/v1/log/tile/0/000.p/{size}" if size < 256 else "/v1/log/tile/0/000"
    answers = [audit.get(tile, **IDENTITY) for _ in range(4)]
    assert [a.headers["X-Cache"] for a in answers[1:]] == ["HIT"] * 3
    for resp in [checkpoint, *answers]:
        value = resp.headers["X-Request-Id"]
        parsed = uuid.UUID(value)
        assert str(parsed) == value
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122), (
            value,
            resp.headers["X-Cache"],
        )


def test_the_public_log_is_in_no_ledger_direct_or_through_the_edge(audit: Audit) -> None:
    """docs/decisions.md#public-endpoints: the transparency log reads no token, like
    ``/v1/health/live``, so no answer of it is in the ledger, whether a gateway answers it (with
    a valid token or not) or the edge serves it from its cache: the two agree."""
    name, token = audit.named_token("log")
    direct = audit.direct("/v1/log/checkpoint", token)
    assert direct.status_code == 200
    size = int(direct.text.splitlines()[1])
    tile = f"/v1/log/tile/0/000.p/{size}" if size < 256 else "/v1/log/tile/0/000"
    answers = [direct, *(audit.get(tile, token, **IDENTITY) for _ in range(3))]
    assert answers[-1].headers["X-Cache"] == "HIT"
    assert audit.entries_of(name) == []
    for resp in answers:
        assert not ledger_entries(audit.env, resp.headers["X-Request-Id"])


# -- what the edge passes on -------------------------------------------------------------------


def test_every_api_header_of_the_gateway_reaches_the_client_miss_hit_head_and_304(
    audit: Audit,
) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers)".
    Sections 5 and 9: as-of answers carry `ETag`, `Cache-Control`, `CDN-Cache-Control`,
    `Cache-Tag`, `Repr-Digest`; evidence also `X-Sha256`, `X-Capturado-En`,
    `X-Identidad-Consulta`, `X-Content-Type-Options: nosniff`, `Content-Security-Policy:
    sandbox`, `Content-Disposition: attachment`. Every header of the gateway's answer (but the
    request id, `Date` and `Vary`, which the edge may extend) is the client's, on a miss, a hit,
    a HEAD from the cache and a 304; and the edge's `Vary` keeps the gateway's `Origin`."""
    _, token = audit.named_token("headers")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    fresh = SEPTEMBER.replace("-30", "-04") + "&as_of_revision=5"  # nobody asked for it yet
    for path in (fresh, evidence):
        for method in ("GET", "GET", "HEAD"):
            edge = audit.get(path, token, method, **IDENTITY)
            direct = audit.direct(path, token, method, **IDENTITY)
            assert edge.status_code == direct.status_code == 200
            assert edge.content == direct.content
            assert api_headers(edge) == api_headers(direct), (method, edge.headers["X-Cache"])
            assert "Origin" in edge.headers["Vary"]
        etag = direct.headers["ETag"]
        compressible = direct.headers["Content-Type"].startswith(("application/json", "text/html"))
        edge = audit.get(path, token, **{"If-None-Match": etag}, **IDENTITY)
        direct = audit.direct(path, token, **{"If-None-Match": etag}, **IDENTITY)
        assert edge.status_code == direct.status_code == 304
        assert api_headers(edge) == api_headers(direct)
        # To a client accepting gzip, the 304 stands for the compressed 200: its weak ETag
        # and its Vary (RFC 9110 15.4.5), the rest the gateway's.
        edge = audit.get(path, token, **{"If-None-Match": etag, "Accept-Encoding": "gzip"})
        assert edge.status_code == 304
        assert edge.headers["ETag"] == ("W/" + etag if compressible else etag), path
        assert ("Accept-Encoding" in edge.headers["Vary"]) == compressible, path
        assert {**api_headers(edge), "etag": etag} == api_headers(direct)


def test_a_compressed_html_evidence_keeps_its_hash_headers_and_drops_its_repr_digest(
    audit: Audit,
) -> None:
    """Section 9: "An edge that compresses must not forward a `Repr-Digest` that describes other
    bytes than it sends ...; it marks the ETag weak"; section 12: compression is the one change
    allowed. The central bank's evidence is `text/html`: compressed, it carries no
    `Repr-Digest`, a weak ETag, the same `X-Sha256`, and decompresses to the gateway's bytes,
    whose hash the ledger holds."""
    _, token = audit.named_token("html")
    path = html_evidence(audit, token)
    direct = audit.direct(path, token, **IDENTITY)
    for _ in range(2):  # a miss, then a hit
        resp, wire = on_the_wire(audit.edge, path, token)
        assert resp.status_code == 200 and resp.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(wire) == direct.content
        assert "Repr-Digest" not in resp.headers
        assert resp.headers["ETag"] == "W/" + direct.headers["ETag"]
        assert resp.headers["X-Sha256"] == direct.headers["X-Sha256"]
        [entry] = ledger_entries(audit.env, resp.headers["X-Request-Id"])
        assert entry["sha256"] == hashlib.sha256(direct.content).hexdigest()


def test_cors_through_the_edge_is_the_gateways_for_each_origin_hits_included(audit: Audit) -> None:
    """Section 9 (CORS): "a request whose `Origin` is listed ... gets `Access-Control-Allow-Origin`
    (the origin itself, plus `Vary: Origin`) and `Access-Control-Expose-Headers` ...; a preflight
    `OPTIONS` from such an origin is 204 ..., needs no token, is not rate-limited or ledgered".
    Section 12: every answer equals the gateway's. A cached answer filled for one origin is never
    served with another origin's CORS headers; an unlisted origin gets none; a preflight through
    the edge is the gateway's 204."""
    name, token = audit.named_token("cors")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    cors = ("access-control-allow-origin", "access-control-expose-headers")
    for path in (AS_OF, evidence):
        for origin in (*ORIGINS, "https://evil.example", None):
            sent = {"Origin": origin} if origin else {}
            for _ in range(2):  # a miss, then a hit, for this origin
                edge = audit.get(path, token, **sent, **IDENTITY)
                direct = audit.direct(path, token, **sent, **IDENTITY)
                assert edge.status_code == direct.status_code == 200
                assert {h: edge.headers.get(h) for h in cors} == {
                    h: direct.headers.get(h) for h in cors
                }, (origin, edge.headers["X-Cache"])
                assert edge.headers.get("Access-Control-Allow-Origin") == (
                    origin if origin in ORIGINS else None
                )
    entries = len(audit.entries_of(name))
    for path in (AS_OF, evidence):
        preflight = {"Origin": ORIGINS[1], "Access-Control-Request-Method": "GET"}
        edge = audit.get(path, None, "OPTIONS", **preflight)
        direct = audit.direct(path, None, "OPTIONS", **preflight)
        assert edge.status_code == direct.status_code == 204
        assert api_headers(edge) == api_headers(direct)
    assert len(audit.entries_of(name)) == entries


# -- status before size, for the central bank (section 14) --------------------------------------

BIG_HTML = b"<html><body>" + b"<p>Service Unavailable</p>" * 60_000 + b"</body></html>"


@pytest.mark.parametrize(
    ("status", "body", "headers"),
    [
        (503, BIG_HTML, {"Content-Type": "text/html"}),
        (500, b"x" * 3_000_000, {"Content-Type": "text/html"}),
        (502, b"<html>not gzip</html>", {"Content-Type": "text/html", "Content-Encoding": "gzip"}),
    ],
    ids=["503-html-over-cap", "500-3MB", "502-not-decompressible"],
)
def test_a_non_2xx_central_bank_answer_is_fuente_no_disponible_whatever_its_size_or_form(
    tmp_path: Path, status: int, body: bytes, headers: dict[str, str]
) -> None:
    """Section 14: "Status before size. A non-2xx answer is `fuente_no_disponible` whatever its
    body's size or form." The tax authority's case is tested (with a mocked source); this is
    the central bank's, through `fxev capture --source centralbank` against a real local
    server: a `fallo` with `fuente_no_disponible` naming the status, not `cambio_formato`."""
    env = home_env(tmp_path)
    with LocalServer(body=body, status=status, headers=headers, path="/api") as server:
        done = run_fxev(
            env, "capture", "--source", "centralbank", "--url", f"http://127.0.0.1:{server.port}"
        )
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout.splitlines()[-1])
    assert out["outcome"] == "fallo"
    assert [a["tipo"] for a in out["alertas"]] == ["fuente_no_disponible"]
    assert out["alertas"][0]["detalle"]["mensaje"].startswith(f"HTTP {status}")


# -- a correction (publishes revision 7 on this module's copy) ----------------------------------


@dataclasses.dataclass
class Corrected:
    token: str
    old_etag: str
    observation_id: str


@pytest.fixture(scope="module")
def corrected(audit: Audit) -> Corrected:
    """The as-of page served many times through the edge (every worker's lane has it), then a
    correction of 2026-09-21 captured (its source answering with `Content-Type: Text/HTML`, a
    spelling HTTP allows) and published."""
    _, token = audit.named_token("corrected")
    for _ in range(8):
        assert audit.get(AS_OF, token, **IDENTITY).status_code == 200
    old = audit.get(AS_OF, token, "HEAD", **IDENTITY).headers["ETag"]
    with local_source() as (local, answer):
        answer[0] = (200, b"21/09/2026|3.401|3.409|\r\n", "Text/HTML; charset=UTF-8")
        captured = orjson.loads(
            fxev(audit.env, "capture", "--url", local + "/a/txt/tipoCambio.txt")[-1]
        )
    assert captured["outcome"] == "correccion"
    fxev(audit.env, "build")
    return Corrected(token, old, captured["observacion_id"])


def test_a_correction_reaches_every_worker_on_the_very_next_request(
    audit: Audit, corrected: Corrected
) -> None:
    """Section 12: "A published correction is visible on the very next request through the edge:
    no stale as-of body and no purge step an operator could forget". Right after the build,
    every request (whichever worker or lane takes its auth step) gets the new bytes and ETag, a
    HEAD the new ETag, a revalidation with the old ETag a 200 with the new bytes (never a 304),
    and the ledger holds each answer's hash."""
    name, token = audit.named_token("after")
    answers = [audit.get(AS_OF, token, **IDENTITY) for _ in range(8)]
    head = audit.get(AS_OF, token, "HEAD", **IDENTITY)
    revalidated = audit.get(AS_OF, token, **{"If-None-Match": corrected.old_etag}, **IDENTITY)
    direct = audit.direct(AS_OF, token, **IDENTITY)
    assert direct.headers["ETag"] != corrected.old_etag
    for resp in [*answers, revalidated]:
        assert resp.status_code == 200 and resp.content == direct.content
        assert resp.headers["ETag"] == direct.headers["ETag"]
    assert head.headers["ETag"] == direct.headers["ETag"]
    sent = sorted(received(resp) for resp in [*answers, head, revalidated, direct])
    assert recorded(audit.entries_of(name)) == sent


def test_a_compressed_answer_never_carries_the_identity_repr_digest_whatever_the_type_spelling(
    audit: Audit, corrected: Corrected
) -> None:
    """Section 9 (HTTP basics): "An edge that compresses must not forward a `Repr-Digest` that
    describes other bytes than it sends (drop it, or compute it for the coded bytes)". Section
    12: compression comes with "no `Repr-Digest` describing the identity body". Media types are
    case-insensitive and nginx compresses `Text/HTML` as `text/html`; the evidence the source
    served with that spelling (kept as received, section 11) is compressed, so its answer must
    not carry the identity body's `Repr-Digest`."""
    _, token = audit.named_token("spelling")
    path = evidence_of(audit, token, corrected.observation_id)
    direct = audit.direct(path, token, **IDENTITY)
    assert direct.headers["Content-Type"].startswith("Text/HTML")
    for _ in range(2):
        resp, wire = on_the_wire(audit.edge, path, token)
        assert resp.status_code == 200
        if resp.headers.get("Content-Encoding") == "gzip":
            assert gzip.decompress(wire) == direct.content
            digest = resp.headers.get("Repr-Digest")
            assert digest in (None, repr_digest(hashlib.sha256(wire).hexdigest())), (
                f"gzip body of {len(wire)} bytes sent with the identity body's {digest}"
            )
        else:
            assert resp.headers["Repr-Digest"] == direct.headers["Repr-Digest"]


# -- a worker killed (section 14) ---------------------------------------------------------------


def lane_listeners(pid: int, port: int) -> bool:
    """Whether the process ``pid`` holds a socket listening on 127.0.0.1:``port``."""
    listening = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
            listening.add(fields[9])
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            match = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd))
            if match:
                held.add(match.group(1))
    return bool(listening & held)


def test_a_worker_killed_under_load_behind_the_edge_costs_only_its_requests_in_flight(
    audit: Audit,
) -> None:
    """Section 14: "A gateway worker that dies is replaced within 5 s." Section 12: "Killing one
    of two gateways under load costs at most the requests in flight (the edge retries GET)" —
    here one worker of one gateway: the edge's clients lose at most their requests in flight,
    the worker is replaced within 5 s, and (with lanes) the new worker listens on its lane."""
    gateway = audit.gateways[0]
    assert gateway.process is not None

    def workers() -> list[int]:
        return sorted(pid for pid in children(gateway.process.pid) if children(pid))

    before = workers()
    assert len(before) == 2
    _, token = audit.named_token("load")
    evidence = evidence_of(audit, token, audit.direct(LATEST, token).json()["observacion_id"])
    paths = [AS_OF, evidence, LATEST]
    # 4 clients of 30 requests each: under the day's limit of each one's own token.
    load = Load(audit.edge, paths, [audit.named_token("load")[1] for _ in range(4)], 30)
    load.wait_for(1 / 3)
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    # Replaced: two workers again, the victim not among them, the gateway itself still up.
    while len(now := workers()) != 2 or victim in now:
        assert gateway.process.poll() is None, "the gateway exited when a worker was killed"
        assert time.monotonic() - killed_at <= 5.0, now
        time.sleep(0.05)
    load.join()
    if audit.lanes:
        port = int(gateway.env["FXEV_EDGE_LANE"].rpartition(":")[2])
        deadline = time.monotonic() + 5
        (newcomer,) = set(workers()) - set(before)
        while not lane_listeners(newcomer, port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lane_listeners(newcomer, port)
