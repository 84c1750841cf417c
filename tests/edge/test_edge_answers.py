"""The shipped edge's answers beside the gateway's (docs/decisions.md section 12, with the parts of
sections 5 and 9 it refers to): real nginx running what ``fxev edge config`` prints, in front of
two real gateways (two workers each) over a private copy of the demo, on 127.0.0.1, with and
without the gateways' auth lanes. Every request is sent to the edge and, the same, straight to a
gateway, and the two answers are compared: status, body (but a fresh ``request_id``), the API's
headers, the ledger entry. Each test names the rule it checks.

What tests/edge/test_edge.py, tests/edge/test_edge_rules.py and the contract tests already check
is not repeated; what docs/operating/edge.md#limits lists is not reported.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
import requests

from demo import local_source
from gateway.http.head import BODY_MAX, HEAD_MAX
from gateway.http.sending import TOO_LARGE
from gateway.ledger.reading import ledger_folder, read_entries, shown
from tests.contract.conftest import copy_demo, fxev, ledger_entries
from tests.edge.conftest import Raw, Running, edge_in_front, exchange
from tests.edge.test_edge_rules import AS_OF, IDENTITY, LATEST, SEPTEMBER
from tests.edge.test_edge_rules import NOT_API as EDGE_RULES_NOT_API
from tests.support.edge import start_edge
from tests.support.rawhttp import padded
from tokens.store import TokenStore, parse_token_id

ORIGIN = "https://a.example"
# The connection's and the edge's own headers, as test_edge_rules.py lists them, but for Vary:
# these tests compare it (section 12 lets the edge add Accept-Encoding only when it compresses).
NOT_API = EDGE_RULES_NOT_API - {"vary"}


# -- the topology ------------------------------------------------------------------------------


@dataclasses.dataclass
class Front:
    env: dict[str, str]
    running: Running
    base: Path

    @property
    def home(self) -> Path:
        return Path(self.env["FXEV_HOME"])

    @property
    def edge_url(self) -> str:
        return self.running.edge.base_url

    @property
    def gateway_url(self) -> str:
        return self.running.gateways[0].base_url

    def token(self, name: str = "client", expires: date | None = None) -> str:
        unique = f"{name}-{uuid.uuid4().hex[:8]}"
        issued_at = datetime(2019, 12, 31, tzinfo=UTC) if expires else datetime.now(UTC)
        with TokenStore.open(self.home) as store:
            return store.issue(unique, expires, issued_at).token_text

    def recorded(self) -> dict[str, list[dict[str, object]]]:
        """Every entry `fxev requests show` would show, by X-Request-Id (read in bulk: one
        `fxev requests show` per request would take minutes)."""
        out: dict[str, list[dict[str, object]]] = {}
        for entry in shown(read_entries(ledger_folder(self.home))):
            out.setdefault(str(entry.get("x_request_id")), []).append(entry)
        return out

    def revoke(self, token: str) -> None:
        with TokenStore.open(self.home) as store:
            store.revoke(parse_token_id(token) or "", datetime.now(UTC))

    def ask(
        self,
        base: str,
        path: str,
        token: str | None = None,
        method: str = "GET",
        **headers: str,
    ) -> Answer:
        sent = dict(headers)
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        resp = requests.request(method, base + path, headers=sent, timeout=20, stream=True)
        wire = resp.raw.read(decode_content=False)
        multi: dict[str, list[str]] = {}
        for name, value in resp.raw.headers.items():
            multi.setdefault(name.lower(), []).append(value)
        return Answer(resp.status_code, multi, wire, method)

    def edge(self, path: str, token: str | None = None, method: str = "GET", **h: str) -> Answer:
        return self.ask(self.edge_url, path, token, method, **h)

    def direct(self, path: str, token: str | None = None, method: str = "GET", **h: str) -> Answer:
        return self.ask(self.gateway_url, path, token, method, **h)


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, list[str]]  # lower-case names, every field line
    wire: bytes  # the body as sent (maybe gzip)
    method: str

    def one(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return None if not values else ", ".join(values)

    @property
    def body(self) -> bytes:
        """The identity body."""
        if self.one("content-encoding") == "gzip":
            return gzip.decompress(self.wire)
        return self.wire

    def json(self) -> dict[str, object]:
        return orjson.loads(self.body)

    def api_headers(self) -> dict[str, list[str]]:
        """The API's headers; of a compressed answer, what compression adds or changes (its
        coding, length, digest, ETag and ``Vary: Accept-Encoding``, compared separately) left
        out. An identity answer keeps them all: section 12 allows those changes only when the
        edge compresses."""
        out = {name: values for name, values in self.headers.items() if name not in NOT_API}
        if self.one("content-encoding") == "gzip":
            for name in ("content-encoding", "content-length", "repr-digest", "etag"):
                out.pop(name, None)
            varies = [v for v in out.pop("vary", []) if v.lower() != "accept-encoding"]
            if varies:
                out["vary"] = varies
        return out


@pytest.fixture(scope="module", params=["lanes", "sanic"])
def front(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    demo_home: Path,
) -> Iterator[Front]:
    """Two gateways (two workers each) over one private copy of the demo with one CORS origin,
    the edge in front, with and without auth lanes; stopped by PID."""
    base = tmp_path_factory.mktemp("edge-answers")
    env, _ = copy_demo(
        demo_home,
        base,
        FXEV_RATE_LIMIT_PER_MIN="60",
        FXEV_RATE_LIMIT_PER_DAY="5000",
        FXEV_CORS_ORIGINS=ORIGIN,
    )
    with edge_in_front(env, base, request.param == "lanes") as running:
        yield Front(env, running, base)


# -- helpers -----------------------------------------------------------------------------------


def digest_of(body: bytes) -> str:
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"


def assert_same_answer(edge: Answer, direct: Answer, label: str = "") -> None:
    """Section 12: the edge's answer is the gateway's: status, identity body (but the fresh
    request id), API headers; a Repr-Digest only with an identity body, and then of its bytes;
    a fresh X-Request-Id that a JSON error body names."""
    assert edge.status == direct.status, (label, edge.status, edge.wire[:200], direct.wire[:200])
    mine, theirs = edge.body, direct.body
    is_json = (direct.one("content-type") or "").startswith("application/json")
    if is_json and mine and edge.method != "HEAD":
        a, b = orjson.loads(mine), orjson.loads(theirs)
        if isinstance(a, dict) and edge.status >= 400 and "request_id" in a:
            assert a.pop("request_id") == edge.one("x-request-id"), label
            b.pop("request_id")
        assert a == b, (label, mine[:300], theirs[:300])
    else:
        assert mine == theirs, (label, mine[:200], theirs[:200])
    ours, gateways = edge.api_headers(), direct.api_headers()
    if edge.one("content-encoding") == "gzip":  # compared below: coding, length, digest, ETag
        for name in ("content-length", "repr-digest", "etag"):
            gateways.pop(name, None)
    if is_json and edge.status >= 400:  # each digest describes its own body (fresh request ids)
        for which, body in ((ours, mine), (gateways, theirs)):
            if "repr-digest" in which:
                ok = which["repr-digest"] == [digest_of(body)]
                which["repr-digest"] = ["of its body" if ok else "BAD"]
    assert ours == gateways, (label, edge.status, ours, gateways)
    if edge.one("content-encoding") == "gzip":
        assert edge.one("repr-digest") is None, label
    elif edge.wire and edge.method != "HEAD":
        assert edge.one("repr-digest") == digest_of(edge.wire), label
    rid = edge.one("x-request-id")
    assert rid is not None and str(uuid.UUID(rid)) == rid, (label, rid)


def told_to_retry_in(answer: Answer, seconds: int) -> Answer:
    """The 429 `answer` as it reads when sent `seconds` before the window frees a request: the
    two answers compared are a moment apart, so a second boundary may fall between them."""
    was = answer.one("retry-after") or ""
    body = answer.wire.replace(b"retry in %s s" % was.encode(), b"retry in %d s" % seconds)
    headers = {**answer.headers, "retry-after": [str(seconds)]}
    length = int(answer.one("content-length") or 0) + len(str(seconds)) - len(was)
    headers["content-length"] = [str(length)]  # a HEAD's too: the length its GET would send
    if answer.wire:
        headers["repr-digest"] = [digest_of(body)]
    return dataclasses.replace(answer, headers=headers, wire=body)


def request_bytes(target: bytes, *lines: bytes) -> bytes:
    head = [b"GET " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    return b"\r\n".join([*head, b"Accept-Encoding: identity", *lines, b"", b""])


def evidence_of(front: Front, token: str) -> str:
    latest = front.direct(LATEST, token).json()
    detail = front.direct(f"/v1/observations/{latest['observacion_id']}", token).json()
    return f"/v1/evidence/{detail['observacion']['evidencia_id']}"


def log_tile(front: Front) -> str:
    size = int(front.direct("/v1/log/checkpoint").body.decode().splitlines()[1])
    return f"/v1/log/tile/0/000.p/{size}" if size < 256 else "/v1/log/tile/0/000"


# -- errors of every kind, and their ledger entries ----------------------------------------------


ERRORS = [
    ("GET", AS_OF, "none"),  # 401, missing token
    ("HEAD", AS_OF, "none"),
    ("GET", AS_OF, "bogus"),  # 401 invalid_token
    ("GET", AS_OF, "expired"),
    ("GET", SEPTEMBER + "&as_of_revision=abc", "valid"),  # 400
    ("HEAD", SEPTEMBER + "&as_of_revision=999", "valid"),
    ("GET", AS_OF + "&x=1", "valid"),  # 400, unknown parameter
    ("GET", AS_OF.replace("USD", "EUR"), "valid"),  # 404 UNSUPPORTED_CURRENCY
    ("GET", AS_OF.replace("publicado", "nada"), "valid"),  # 404 UNSUPPORTED_SERIES
    ("GET", AS_OF.replace("2026-09", "2019-09"), "valid"),  # 404 NO_OBSERVATIONS
    ("GET", "/v1/evidence/not-a-uuid", "valid"),  # 422
    ("HEAD", "/v1/evidence/not-a-uuid", "valid"),
    ("GET", "/v1/evidence/00000000-0000-4000-8000-000000000000", "valid"),  # 404 NOT_FOUND
    ("GET", "/v1/evidence/", "valid"),  # 404, an empty segment
    ("GET", "/v1/rates/", "valid"),  # 404, trailing slash
    ("GET", "/v1/log", "valid"),  # 404, the log's folder without its slash (nginx: a 301)
    ("HEAD", "/v1/log?a=b", "none"),
    ("POST", "/v1/log", "valid"),
    ("POST", AS_OF, "valid"),  # 405
    ("DELETE", "/v1/evidence/00000000-0000-4000-8000-000000000000", "valid"),
    ("OPTIONS", AS_OF, "valid"),  # 405 (no Access-Control-Request-Method: not a preflight)
]


@pytest.mark.parametrize("accept", ["identity", "gzip"])
@pytest.mark.parametrize("with_origin", [False, True], ids=["no-origin", "origin"])
def test_errors_of_every_kind_through_the_edge_are_the_gateways_with_their_ledger_entry(
    front: Front, accept: str, with_origin: bool
) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers), except
    that the edge adds `X-Cache` and, when the client accepts gzip, compresses" and "Every
    answer has a fresh `X-Request-Id` ... and the ledger holds its entry". Section 5: "for every
    response to a request with a valid token (errors, 304 and 429 included) the gateway records
    ...". Section 9 (CORS): "a request whose `Origin` is listed ... gets
    `Access-Control-Allow-Origin`". 400, 401 (missing, bogus, expired), 404 (each code), 405 and
    422, GET and HEAD, on cached and passed routes, with and without a listed Origin, compared
    with the same request sent straight to a gateway, and their ledger entries too."""
    valid = front.token("errors")
    tokens = {
        "none": None,
        "bogus": "fxev_bogus",
        "expired": front.token("expired", expires=date(2020, 1, 1)),
        "valid": valid,
    }
    sent = {"Accept-Encoding": accept, **({"Origin": ORIGIN} if with_origin else {})}
    pairs = []
    for method, path, which in ERRORS:
        label = f"{method} {path} ({which})"
        edge = front.edge(path, tokens[which], method, **sent)
        direct = front.direct(path, tokens[which], method, **sent)
        assert edge.status >= 400, label
        assert_same_answer(edge, direct, label)
        assert edge.one("x-cache") == "PASS", label
        pairs.append((label, method, which, edge, direct))
    ledger = front.recorded()
    for label, method, which, edge, direct in pairs:
        entries = ledger.get(edge.one("x-request-id") or "", [])
        theirs = ledger.get(direct.one("x-request-id") or "", [])
        if which != "valid":
            assert entries == theirs == [], label
            continue
        assert len(entries) == len(theirs) == 1, (label, entries, theirs)
        [mine], [other] = entries, theirs
        sent_body = b"" if method == "HEAD" else edge.body
        assert mine["sha256"] == hashlib.sha256(sent_body).hexdigest(), label
        if method != "HEAD" and mine["request_id"] is not None:
            assert mine["request_id"] == edge.json().get("request_id"), label
        keys = ("status", "method", "path", "query", "bytes", "etag", "token_name")
        assert {k: mine[k] for k in keys} == {k: other[k] for k in keys}, label
    # One of them through `fxev requests show` itself.
    last = pairs[-1][3]
    [entry] = ledger_entries(front.env, last.one("x-request-id") or "")
    assert entry["status"] == last.status


def test_a_429_through_the_edge_is_the_gateways_on_cached_and_passed_routes(front: Front) -> None:
    """Section 12: "over the limit gets 429"; section 9: "`Retry-After` = seconds until a
    request would pass, rounded up, at least 1"; SPEC: "The client honours the `Retry-After`
    header". Once the token is over its minute's limit, a GET and a HEAD of an as-of page, of
    evidence and of a passed route, through the edge, are the gateway's 429 (body, headers,
    Retry-After within a second or two of the direct one's, CORS for the listed origin),
    recorded in the ledger."""
    token = front.token("limit")
    evidence = evidence_of(front, token)  # 3 counted
    for n in range(58):  # 60 counted in this minute
        assert front.direct(AS_OF if n % 2 else evidence, token).status == 200
    for method, path in [("GET", AS_OF), ("HEAD", AS_OF), ("GET", evidence), ("GET", LATEST)]:
        edge = front.edge(path, token, method, Origin=ORIGIN, **IDENTITY)
        direct = front.direct(path, token, method, Origin=ORIGIN, **IDENTITY)
        assert edge.status == direct.status == 429, (path, edge.status)
        retry = (int(edge.one("retry-after") or 0), int(direct.one("retry-after") or 0))
        assert 1 <= retry[0] <= 60 and abs(retry[0] - retry[1]) <= 2, retry
        assert_same_answer(edge, told_to_retry_in(direct, retry[0]), f"{method} {path}")
        [entry] = ledger_entries(front.env, edge.one("x-request-id") or "")
        assert (entry["status"], entry["method"]) == (429, method)


# -- conditional requests and HEAD ---------------------------------------------------------------


def test_conditional_requests_through_the_edge_are_the_gateways_on_every_route(
    front: Front,
) -> None:
    """Section 5: "`If-None-Match` answers 304" (as-of, evidence); "Every other response: ...
    `Cache-Control: no-store`, no ETag". Section 12: "Every answer equals the gateway's". The
    same If-None-Match values (exact, weak, `*`, a list, a list with spaces, a non-matching
    one, a lower-case `w/`) on a cached as-of page, evidence, a passed route and a public one,
    GET and HEAD, get the gateway's status and headers through the edge."""
    evidence = evidence_of(front, front.token("inm"))
    for path in (AS_OF, evidence, LATEST, "/v1/health/live"):
        token = front.token("inm")  # 31 requests a path: under the minute's 60
        etag = front.direct(path, token, "HEAD").one("etag") or '"none"'
        for _ in range(2):
            front.edge(path, token, **IDENTITY)  # in the cache, where it is cached
        values = [
            etag,
            "W/" + etag,
            "*",
            f'"a", {etag}',
            f'"a" ,  W/{etag} , "b"',
            '"nothing"',
            "w/" + etag,
        ]
        for value in values:
            for method in ("GET", "HEAD"):
                label = f"{method} {path} If-None-Match: {value}"
                edge = front.edge(path, token, method, **{"If-None-Match": value}, **IDENTITY)
                direct = front.direct(path, token, method, **{"If-None-Match": value}, **IDENTITY)
                if path == LATEST:  # a fresh body each time: its status and headers only
                    assert edge.status == direct.status == 200, label
                    continue
                assert_same_answer(edge, direct, label)


def test_a_304_of_the_public_log_from_the_edge_has_the_gateways_headers(front: Front) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers), except
    that the edge adds `X-Cache` and ... compresses". Section 9: "Every response with a body
    carries `Repr-Digest`" (a 304 has none, and the gateway sends none). A log tile revalidated
    with its ETag (exact, weak or `*`) through the edge, once the edge holds it, is the
    gateway's 304: the same headers, no `Repr-Digest` of a body that is not sent. nginx
    decides these itself, from its cache: forms it reads otherwise than a gateway did (`*` in a
    list, white space other than spaces and tabs) get the gateway's 200 too."""
    tile = log_tile(front)
    etag = front.direct(tile).one("etag")
    assert etag is not None
    for _ in range(2):
        assert front.edge(tile, **IDENTITY).status == 200
    for value in (etag, "W/" + etag, "*"):
        edge = front.edge(tile, **{"If-None-Match": value}, **IDENTITY)
        direct = front.direct(tile, **{"If-None-Match": value}, **IDENTITY)
        assert direct.status == 304 and direct.one("repr-digest") is None
        assert edge.status == 304, (value, edge.status)
        assert edge.api_headers() == direct.api_headers(), (value, edge.one("x-cache"))
    for value in ('"x", *', f"*, {etag}x", "*\t", etag + "\x0b", f'"x",{etag}\x0b'):
        edge = front.edge(tile, **{"If-None-Match": value}, **IDENTITY)
        direct = front.direct(tile, **{"If-None-Match": value}, **IDENTITY)
        assert edge.status == direct.status == 200, (value, edge.status, direct.status)
        assert edge.one("x-cache") == "HIT", value


def test_a_304_to_a_client_accepting_gzip_carries_the_validator_of_its_compressed_200(
    front: Front,
) -> None:
    """RFC 9110 15.4.5: a 304 "MUST generate any of the following header fields that would have
    been sent in a 200 (OK) response to the same request: ... ETag, and Vary"; section 12: to a
    client accepting gzip the edge's 200 has "`Vary: Accept-Encoding`, the ETag made weak". A
    gzip client revalidating what it holds: an as-of page (the gateway's 304, through the auth
    step) and a log rows list (a 304 nginx makes from its cache), with the weak or strong tag:
    the 304 has the 200's ETag and Vary; to an identity client, the gateway's own."""
    token = front.token("gzip-304")
    for path, who in ((AS_OF, token), ("/v1/log/rows/1", None)):
        front.edge(path, who, **IDENTITY)  # in the cache
        full = front.edge(path, who, **{"Accept-Encoding": "gzip"})
        assert full.status == 200 and full.one("content-encoding") == "gzip", path
        weak = full.one("etag") or ""
        assert weak.startswith('W/"'), path
        for value in (weak, weak.removeprefix("W/")):
            sent = {"If-None-Match": value, "Accept-Encoding": "gzip"}
            edge = front.edge(path, who, **sent)
            assert (edge.status, edge.wire) == (304, b""), (path, value)
            assert edge.one("etag") == weak, (path, value)
            assert edge.one("vary") == full.one("vary"), (path, value)
            assert edge.one("cache-control") == full.one("cache-control"), (path, value)
            sent["Accept-Encoding"] = "identity"
            assert_same_answer(front.edge(path, who, **sent), front.direct(path, who, **sent))


def test_preconditions_beside_if_none_match_through_the_edge_are_the_gateways(
    front: Front,
) -> None:
    """Section 12: "Every answer equals the gateway's (status, ...)". RFC 9110 13.1.3: "A
    recipient MUST ignore If-Modified-Since if the request contains an If-None-Match header
    field". A log tile and an as-of page the edge holds, asked with their ETag and an
    If-Modified-Since (past or future), or If-Match; the checkpoint and the log key, which carry
    no ETag, with `If-None-Match: *`: the gateway's status and body."""
    token = front.token("preconditions")
    tile = log_tile(front)
    for path, who in ((tile, None), (AS_OF, token)):
        for _ in range(2):
            front.edge(path, who, **IDENTITY)  # in the cache
        etag = front.direct(path, who, **IDENTITY).one("etag") or ""
        for extra in (
            {"If-Modified-Since": "Thu, 01 Jan 2026 00:00:00 GMT"},
            {"If-Modified-Since": "Fri, 01 Jan 2099 00:00:00 GMT"},
            {"If-Match": '"other"'},
        ):
            sent = {"If-None-Match": etag, **extra, **IDENTITY}
            label = f"{path} {extra}"
            assert_same_answer(
                front.edge(path, who, **sent), front.direct(path, who, **sent), label
            )
    for path in ("/v1/log/checkpoint", "/v1/log/key"):
        for method in ("GET", "HEAD"):
            sent = {"If-None-Match": "*", **IDENTITY}
            edge = front.edge(path, None, method, **sent)
            direct = front.direct(path, None, method, **sent)
            assert (edge.status, edge.wire) == (direct.status, direct.wire), (method, path)
            assert edge.one("x-cache") == "PASS", (method, path)


@pytest.mark.parametrize("field", [b"If-Match:", b"If-Unmodified-Since: ", b"If-Modified-Since:"])
def test_a_precondition_sent_empty_is_passed_as_the_others_are(front: Front, field: bytes) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers)";
    section 14: "The ledger never claims an answer that did not leave". A precondition header
    with an empty value is none to nginx's variables, so the edge served the request from its
    cache, and nginx's cache evaluated it: its own 412 page (HTML, with the JSON body's
    Repr-Digest) for an empty If-Match or If-Unmodified-Since, while the ledger held the 200
    the gateway gave. Found by an attack on the edge. Now passed, as a non-empty one is."""
    token = front.token("empty-precondition")
    auth = b"Authorization: Bearer " + token.encode()
    for path, lines in (
        (AS_OF, [auth]),
        (evidence_of(front, token), [auth]),
        (log_tile(front), []),
    ):
        for _ in range(2):
            front.edge(path, token if lines else None, **IDENTITY)  # in the cache
        data = request_bytes(path.encode(), *lines, field)
        edge, direct = exchange(front.edge_url, data), exchange(front.gateway_url, data)
        label = f"{path} {field!r}"
        assert (edge.status, edge.body) == (direct.status, direct.body), label
        assert edge.headers.get("repr-digest") == direct.headers.get("repr-digest"), label
        if lines:
            [entry] = front.recorded()[edge.headers["x-request-id"]]
            assert (entry["status"], entry["sha256"]) == (
                200,
                hashlib.sha256(edge.body).hexdigest(),
            ), label


# -- gzip ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept",
    ["gzip", "GZIP", "gzip;q=0", "gzip; q=0.5", "identity", "*", "deflate, gzip", "br", ""],
)
def test_small_bodies_are_compressed_or_sent_with_their_digest_never_a_mix(
    front: Front, accept: str
) -> None:
    """Section 12: when the client accepts gzip, the edge "compresses (`Content-Encoding: gzip`,
    `Vary: Accept-Encoding`, the ETag made weak, no `Repr-Digest` describing the identity
    body)"; otherwise the answer equals the gateway's. Section 9: "a client checks its receipt
    by hashing the decompressed body". Small bodies (the 18-byte live probe, a 404, a 401, an
    as-of page and its hit) with each Accept-Encoding spelling: either compressed, with no
    Repr-Digest and a weak ETag, decompressing to the gateway's bytes, or identical to the
    gateway's answer, Repr-Digest included."""
    token = front.token("gzip")
    for path, who in [
        ("/v1/health/live", None),
        (AS_OF.replace("USD", "EUR"), token),
        (AS_OF, None),
        (AS_OF, token),
        (AS_OF, token),
    ]:
        sent = {"Accept-Encoding": accept}
        edge = front.edge(path, who, **sent)
        direct = front.direct(path, who, **sent)
        label = f"{path} {accept!r}"
        assert direct.one("content-encoding") is None
        if edge.one("content-encoding") == "gzip":
            assert "gzip" in accept.lower() and not accept.replace(" ", "").endswith("q=0"), label
            assert edge.one("repr-digest") is None, label
            if direct.one("etag"):
                assert edge.one("etag") == "W/" + (direct.one("etag") or ""), label
            assert "accept-encoding" in (edge.one("vary") or "").lower(), label
        else:
            assert "accept-encoding" not in (edge.one("vary") or "").lower(), label
        assert_same_answer(edge, direct, label)


def test_a_head_from_a_client_accepting_gzip_has_the_headers_of_its_get(front: Front) -> None:
    """RFC 9110 9.3.2: "The server SHOULD send the same header fields in response to a HEAD
    request as it would have sent if the request method had been GET"; section 12: a compressed
    answer says `Vary: Accept-Encoding` and has the weak ETag. nginx compresses a HEAD's headers
    as its GET's: a HEAD from a gzip client (an as-of page, `latest`, the OpenAPI document, a log
    rows list, a 404) has the GET's coding, ETag and Vary, and no body."""
    token = front.token("head-gzip")
    gzip_client = {"Accept-Encoding": "gzip"}
    for path, who in (
        (AS_OF, token),
        (LATEST, token),
        ("/v1/openapi.json", None),
        ("/v1/log/rows/1", None),
        ("/v1/nowhere", token),
    ):
        get = front.edge(path, who, **gzip_client)
        head = front.edge(path, who, "HEAD", **gzip_client)
        assert (head.status, head.wire) == (get.status, b""), path
        for name in ("content-encoding", "etag", "vary"):
            assert head.one(name) == get.one(name), (path, name)


EVIDENCE_TYPES = [
    "text/html; foo=bar",
    "text/html ; charset=utf-8",
    "application/json; v=1",
    # Found by an attack on the edge: nginx reads the type up to the first ";" that spaces and
    # "charset=" follow, whatever comes after, and skips no tab.
    "text/html;charset=utf-8; foo=bar",
    "application/json; charset=utf-8;",
    "text/html;\tcharset=utf-8",
]


@pytest.mark.parametrize("content_type", EVIDENCE_TYPES)
def test_evidence_sent_uncompressed_keeps_its_repr_digest_whatever_its_content_type(
    front: Front, content_type: str
) -> None:
    """Section 9: "Every response with a body carries `Repr-Digest` ... of the identity-coded
    body: the same hash the ledger records, so a consumer can match its receipt. ... An edge that
    compresses must not forward a `Repr-Digest` that describes other bytes than it sends";
    section 12: every answer equals the gateway's but for compression. Section 11: a source's
    answer is kept "exactly as received", its Content-Type included. Evidence whose source sent
    a media type with a parameter (any parameter, or a space before `;`), which nginx's gzip
    does not compress, is sent by the edge as the gateway sends it: identity body, with its
    Repr-Digest."""
    token = front.token("types")
    latest = front.direct(LATEST, token).json()
    year, month, day = str(latest["fecha_serie"]).split("-")
    value = f"{day}/{month}/{year}"
    line = f"{value}|{latest['compra']}|{latest['venta']}|\r\n".encode()
    with local_source() as (local, answer):
        answer[0] = (200, line, content_type)
        captured = orjson.loads(
            fxev(front.env, "capture", "--url", local + "/a/txt/tipoCambio.txt")[-1]
        )
    assert captured["outcome"] == "identica", captured
    fxev(front.env, "build")
    detail = front.direct(f"/v1/observations/{captured['observacion_id']}", token).json()
    newest = max(detail["eventos"], key=lambda e: e["revision"])
    path = f"/v1/evidence/{newest['evidencia_id']}"
    direct = front.direct(path, token, **{"Accept-Encoding": "gzip"})
    assert direct.status == 200 and direct.one("content-type") == content_type
    assert direct.one("repr-digest") == digest_of(direct.wire)
    for _ in range(2):  # a miss, then a hit
        edge = front.edge(path, token, **{"Accept-Encoding": "gzip"})
        assert edge.status == 200
        if edge.one("content-encoding") == "gzip":
            assert edge.one("repr-digest") is None
            assert gzip.decompress(edge.wire) == direct.wire
            assert "Accept-Encoding" in (edge.one("vary") or "")
            assert edge.one("etag") == "W/" + (direct.one("etag") or "")
        else:
            assert edge.wire == direct.wire
            assert edge.one("repr-digest") == direct.one("repr-digest"), (
                f"{content_type!r}: identity body of {len(edge.wire)} bytes sent without the "
                f"gateway's Repr-Digest {direct.one('repr-digest')} ({edge.one('x-cache')})"
            )
            assert (edge.one("vary"), edge.one("etag")) == (direct.one("vary"), direct.one("etag"))
        # Its 304 stands for that 200 (RFC 9110 15.4.5): the same validator, the same Vary.
        sent = {"Accept-Encoding": "gzip", "If-None-Match": edge.one("etag") or ""}
        revalidated = front.edge(path, token, **sent)
        assert revalidated.status == 304, content_type
        assert revalidated.one("etag") == edge.one("etag"), content_type
        assert revalidated.one("vary") == edge.one("vary"), content_type


def test_an_empty_evidence_is_sent_as_the_gateway_sends_it_to_a_client_accepting_gzip(
    front: Front,
) -> None:
    """Section 12: every answer equals the gateway's but for compression, and "`Vary:
    Accept-Encoding`" goes with a compressed answer only. A source that answered 200 with an
    empty `text/html` body (a `cambio_formato`, its zero-byte evidence kept with its type): nginx
    does not compress an empty body, so the edge sends the gateway's answer, without `Vary:
    Accept-Encoding`, its ETag strong, on a miss and on a hit."""
    token = front.token("empty")
    with local_source() as (local, answer):
        answer[0] = (200, b"", "text/html")
        captured = orjson.loads(
            fxev(front.env, "capture", "--url", local + "/a/txt/tipoCambio.txt")[-1]
        )
    assert captured["outcome"] == "fallo", captured
    fxev(front.env, "build")
    path = f"/v1/evidence/{captured['alerta']['detalle']['evidencia_id']}"
    gzip_client = {"Accept-Encoding": "gzip"}
    direct = front.direct(path, token, **gzip_client)
    assert (direct.status, direct.wire) == (200, b"")
    assert (direct.one("content-type") or "").startswith("text/html")
    for _ in range(2):  # a miss, then a hit
        edge = front.edge(path, token, **gzip_client)
        assert edge.one("content-encoding") is None
        assert "accept-encoding" not in (edge.one("vary") or "").lower(), edge.one("x-cache")
        assert_same_answer(edge, direct, edge.one("x-cache") or "")


# -- what nginx answers itself -------------------------------------------------------------------


def assert_edges_own_refusal(
    front: Front, answer: Raw, status: int, code: str, message: str | None = None
) -> None:
    """nginx's own refusal in the API's shape, as a gateway's refusal route wrote it: the error
    body (with ``message``, if given) with a fresh UUID4 request id in the body and in
    `X-Request-Id`, `no-store`, the body's `Repr-Digest` (section 9); no token was read, so no
    ledger entry."""
    assert (answer.status, answer.headers.get("content-type")) == (status, "application/json"), (
        answer.status, answer.body[:200])  # fmt: skip
    body = answer.json()
    assert set(body) == {"code", "message", "request_id", "retryable"}, body
    assert (body["code"], body["retryable"]) == (code, False), body
    assert message is None or body["message"] == message, body
    request_id = answer.headers["x-request-id"]
    assert body["request_id"] == request_id and uuid.UUID(request_id).version == 4
    assert answer.headers["cache-control"] == "no-store" and "date" in answer.headers
    assert answer.headers["repr-digest"] == digest_of(answer.body)
    assert request_id not in front.recorded()


@pytest.mark.parametrize(
    "case",
    ["if-none-match-on-two-lines", "authorization-twice", "evidence-%zz", "observations-%G0",
     "evidence-lone-%"],
)  # fmt: skip
def test_what_nginx_refuses_itself_is_the_apis_400_and_the_documented_limit(
    front: Front, case: str
) -> None:
    """docs/operating/edge.md#limits: a header nginx takes once sent twice, and a malformed
    percent-escape in the path, are refused by nginx itself, where the gateway alone answers
    them (the 401 of a repeated `Authorization`, the `If-None-Match` lines joined; the 422 of a
    path id that is not a UUID). Section 12, "every answer has a fresh `X-Request-Id`": the
    edge's refusal is the API's 400 body with a fresh request id, not nginx's HTML page."""
    token = front.token("refused")
    auth = b"Authorization: Bearer " + token.encode()
    target, lines = AS_OF.encode(), [auth]
    if case == "if-none-match-on-two-lines":
        etag = front.direct(AS_OF, token, "HEAD").one("etag") or ""
        lines += [b'If-None-Match: "other"', b"If-None-Match: " + etag.encode()]
    elif case == "authorization-twice":
        lines.append(auth)
    else:
        target = {"evidence-%zz": b"/v1/evidence/%zz", "observations-%G0": b"/v1/observations/%G0",
                  "evidence-lone-%": b"/v1/evidence/%"}[case]  # fmt: skip
    data = request_bytes(target, *lines)
    direct = exchange(front.gateway_url, data)
    assert direct.status == {"if-none-match-on-two-lines": 304, "authorization-twice": 401}.get(
        case, 422
    ), (direct.status, direct.body[:200])
    assert "x-request-id" in direct.headers
    assert_edges_own_refusal(front, exchange(front.edge_url, data), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    ("request_line", "status", "code"),
    [
        (b"TRACE /v1/coverage HTTP/1.1", 405, "METHOD_NOT_ALLOWED"),
        (b"get /v1/coverage HTTP/1.1", 400, "INVALID_PARAMS"),
        (b"GET /v1/cover\x00age HTTP/1.1", 400, "INVALID_PARAMS"),
        (b"GET /../v1/coverage HTTP/1.1", 400, "INVALID_PARAMS"),
        (b"GET /v1/coverage HTTP/2.0", 400, "INVALID_PARAMS"),  # nginx's 505
        (b"GET /v1/coverage HTTP/1.1\r\nTransfer-Encoding: gzip", 400, "INVALID_PARAMS"),  # 501
    ],
    ids=[
        "TRACE",
        "a method in lower case",
        "a NUL in the path",
        "above the root",
        "another HTTP version",
        "an unknown transfer coding",
    ],
)
def test_nginxs_refusals_of_a_request_line_are_the_apis_answers(
    front: Front, request_line: bytes, status: int, code: str
) -> None:
    """What nginx refuses in the request line gets the status a gateway gives such a request
    (405 with `Allow: GET, HEAD` for a method, 400 for the rest) in the API's body."""
    data = request_line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    answer = exchange(front.edge_url, data)
    assert_edges_own_refusal(front, answer, status, code)
    if status == 405:
        assert answer.headers["allow"] == "GET, HEAD"


def test_a_head_just_within_a_gateways_limit_is_answered_through_the_edge(front: Front) -> None:
    """Section 12, every answer equals the gateway's; section 9, bad requests are never 500. A
    head one byte within a gateway's 8 KB is answered by a gateway alone; through the edge it
    made an auth step (or a passed request) over that limit, and the edge answered its own
    retryable 503. Now the same 200, on a cached route (a miss, then a hit) and a passed one."""
    auth = b"Authorization: Bearer " + front.token("long-head").encode()
    for target in (AS_OF.encode(), LATEST.encode()):
        data = padded(request_bytes(target, auth), HEAD_MAX - 1)
        direct = exchange(front.gateway_url, data)
        assert direct.status == 200, direct.body[:200]
        for _ in range(2):
            answer = exchange(front.edge_url, data)
            assert answer.status == 200, (target, answer.status, answer.body[:200])
            assert answer.body == direct.body or target == LATEST.encode()
            [entry] = front.recorded()[answer.headers["x-request-id"]]
            assert entry["sha256"] == hashlib.sha256(answer.body).hexdigest()


def test_a_422_quoting_a_segment_near_8_kb_is_replayed_whole_through_the_edge(
    front: Front,
) -> None:
    """Section 9's 422 quotes the path segment; a refused auth step carries the whole answer,
    packed, in one header of the edge's replay request, which went over a gateway's 8 KB for a
    segment of a few KB, and the edge answered a retryable 503. A gateway reads an edge's
    longer heads (up to 32 KB): the same 422 as from a gateway alone."""
    auth = b"Authorization: Bearer " + front.token("long-segment").encode()
    data = request_bytes(b"/v1/evidence/" + b"a" * 7900, auth)
    direct, answer = exchange(front.gateway_url, data), exchange(front.edge_url, data)
    assert direct.status == answer.status == 422, (answer.status, answer.body[:200])
    assert answer.body == direct.body
    [entry] = front.recorded()[answer.headers["x-request-id"]]
    assert entry["status"] == 422


def test_a_body_of_1_mb_is_read_through_the_edge_as_by_a_gateway(front: Front) -> None:
    """The edge takes a body as long as a gateway does (1 MB, client_max_body_size): a request
    with one is passed, and answered as a gateway alone answers it."""
    auth = b"Authorization: Bearer " + front.token("mb-body").encode()
    for target in (AS_OF.encode(), LATEST.encode()):
        data = request_bytes(target, auth, b"Content-Length: %d" % BODY_MAX) + b"b" * BODY_MAX
        direct, answer = exchange(front.gateway_url, data), exchange(front.edge_url, data)
        assert direct.status == answer.status == 200, (target, answer.body[:200])
        assert answer.headers["x-cache"] == "PASS"


@pytest.mark.parametrize(
    "case",
    [
        "a head at the limit, cached route",
        "a head at the limit, passed route",
        "a request line over nginx's buffers",
        "a header line over nginx's buffers",
        "a body over 1 MB, cached route",
        "a chunked body over 1 MB, passed route",
    ],
)
def test_a_request_over_a_gateways_size_limits_gets_its_answer_through_the_edge(
    front: Front, case: str
) -> None:
    """docs/decisions.md#bad-requests: a request over a gateway's size limits (a head of 8 KB,
    a body over 1 MB) is 400 `INVALID_PARAMS` with the message that names them. Through the
    edge it got nginx's HTML 413 page (a body), the edge's retryable 503 (a head at the limit,
    whose auth step went over it) or the "malformed" message (a line over nginx's buffers).
    Now the gateway's answer, asked of its refusal route: counted and recorded nowhere, since
    no token was read (a gateway alone records its own refusal of a head that presented a valid
    token)."""
    auth = b"Authorization: Bearer " + front.token("too-large").encode()
    as_of, latest = AS_OF.encode(), LATEST.encode()
    if case.startswith("a head at the limit"):
        data = padded(request_bytes(as_of if "cached" in case else latest, auth), HEAD_MAX)
    elif case == "a request line over nginx's buffers":
        data = request_bytes(b"/v1/coverage?x=" + b"x" * 70_000, auth)
    elif case == "a header line over nginx's buffers":
        data = request_bytes(latest, auth, b"X-Pad: " + b"p" * 9000)
    elif case == "a body over 1 MB, cached route":
        size = BODY_MAX + 1
        data = request_bytes(as_of, auth, b"Content-Length: %d" % size) + b"b" * size
    else:
        body = b"%x\r\n" % (BODY_MAX + 1) + b"b" * (BODY_MAX + 1) + b"\r\n0\r\n\r\n"
        data = request_bytes(latest, auth, b"Transfer-Encoding: chunked") + body
    direct = exchange(front.gateway_url, data)
    assert (direct.status, direct.json()["message"]) == (400, TOO_LARGE), direct.body[:200]
    answer = exchange(front.edge_url, data)
    assert_edges_own_refusal(front, answer, 400, "INVALID_PARAMS", TOO_LARGE)


@pytest.mark.parametrize("target", [AS_OF, "/v1/coverage"], ids=["cached", "passed"])
def test_an_absolute_target_with_a_fragment_is_refused_through_the_edge_too(
    front: Front, target: str
) -> None:
    """RFC 9112 3.2: a fragment is no part of a request target. A gateway alone refuses an
    absolute target with one (docs/decisions.md#bad-requests); nginx passed it on without the
    fragment, and the edge answered it, counted and recorded. The edge refuses it now, with
    the API's 400. An origin-form target with a fragment is answered by both."""
    auth = b"Authorization: Bearer " + front.token("fragment").encode()
    data = request_bytes(b"http://127.0.0.1" + target.encode() + b"#f", auth)
    direct = exchange(front.gateway_url, data)
    assert (direct.status, direct.json()["code"]) == (400, "INVALID_PARAMS"), direct.body[:200]
    assert_edges_own_refusal(front, exchange(front.edge_url, data), 400, "INVALID_PARAMS")
    origin = request_bytes(target.encode() + b"#f", auth)
    direct, answer = exchange(front.gateway_url, origin), exchange(front.edge_url, origin)
    assert direct.status == answer.status == 200, answer.body[:200]


@pytest.mark.parametrize(
    "head",
    [
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\x00b",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\rb",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note : a",
        b"GET /v1/coverage HTTP/1.1",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1/v1",
        b"GET /v1/coverage HTTP/1.0\r\nTransfer-Encoding: chunked",
    ],
    ids=["a NUL", "a bare CR", "a space before the colon", "no Host", "a bad Host", "chunked 1.0"],
)
def test_a_head_nginx_refuses_is_refused_by_a_gateway_alone_too(front: Front, head: bytes) -> None:
    """RFC 9112 has a server refuse these heads, and nginx does; a gateway alone answered them
    (docs/operating/edge.md#limits). Now both refuse: the edge with its own 400 in the API's
    body, which reads no token, so no ledger holds it; the gateway before any route, recorded
    since the head presented a valid token (DECISIONS 5: every response to a request with a
    valid token)."""
    auth = b"\r\nAuthorization: Bearer " + front.token("heads").encode()
    data = head + auth + b"\r\nConnection: close\r\n\r\n"
    direct = exchange(front.gateway_url, data)
    assert (direct.status, direct.json()["code"]) == (400, "INVALID_PARAMS"), direct.body[:200]
    assert direct.headers["x-request-id"] in front.recorded()
    assert_edges_own_refusal(front, exchange(front.edge_url, data), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    ("target", "plain"),
    [(b"http://127.0.0.1", b"/"), (b"http://127.0.0.1?x=1", b"/?x=1")],
    ids=["no path", "a query"],
)
def test_the_absolute_form_with_no_path_is_the_roots_answer_directly_and_through_the_edge(
    front: Front, target: bytes, plain: bytes
) -> None:
    """Section 9, bad requests are never 500: a gateway alone answered `GET http://host` with a
    500 (its request had no path). RFC 9112 3.2.2 reads the empty path as `/`, as nginx does:
    the answer of `GET /`, directly and through the edge."""
    auth = b"Authorization: Bearer " + front.token("absolute").encode()
    for url in (front.gateway_url, front.edge_url):
        answer = exchange(url, request_bytes(target, auth))
        root = exchange(url, request_bytes(plain, auth))
        assert answer.status == root.status != 500, (url, answer.status, answer.body[:200])
        assert answer.headers.get("content-type") == root.headers.get("content-type")


@pytest.mark.parametrize("route", ["as-of", "latest"])
def test_the_absolute_form_through_the_edge_is_its_origin_form(front: Front, route: str) -> None:
    """RFC 9112 3.2.2: a server must accept the absolute form. Through the edge it is the origin
    form's answer (the same body but for `latest`'s request id, checked and recorded with the
    same path and query), cached route or passed one, as from a gateway alone."""
    token = front.token(f"absolute-{route}")
    target = AS_OF if route == "as-of" else LATEST
    auth = b"Authorization: Bearer " + token.encode()
    for url in (front.edge_url, front.gateway_url):
        plain = exchange(url, request_bytes(target.encode(), auth))
        absolute = exchange(url, request_bytes(b"http://127.0.0.1" + target.encode(), auth))
        assert absolute.status == plain.status == 200
        assert {**absolute.json(), "request_id": ""} == {**plain.json(), "request_id": ""}
        recorded = front.recorded()
        [entry] = recorded[absolute.headers["x-request-id"]]
        [plain_entry] = recorded[plain.headers["x-request-id"]]
        assert (entry["path"], entry["query"]) == (plain_entry["path"], plain_entry["query"])
        assert entry["sha256"] == hashlib.sha256(absolute.body).hexdigest()


@pytest.mark.parametrize(
    ("host", "valid"),
    [
        (b"a_b.example.", True),
        (b"A.B:8080", True),
        (b"[::1]", True),
        (b"[v1.fe]:8000", True),
        (b"a:", True),
        (b"a%20b", True),
        (b"a,b", True),
        (b"a{b", False),
        (b"a\\b", False),
        (b'a"b', False),
        (b"a@b", False),
        (b"a:b", False),
        (b"a:80:80", False),
        (b"a..b", False),
        (b":80", False),
        (b".", False),
        (b".:80", False),
        (b"", False),
    ],
)
def test_a_host_is_valid_or_refused_alike_through_the_edge_and_by_a_gateway(
    front: Front, host: bytes, valid: bool
) -> None:
    """RFC 9112 3.2: a server refuses a Host that is no `host[:port]` (400). nginx reads Hosts
    otherwise (it takes a brace or an "@", refuses an empty label), and its auth step then got
    the gateway's refusal of the head: a retryable 503 on a cached route, or with lanes (which
    read no Host) the cached 200. The edge now refuses what a gateway refuses, with the API's
    400, on cached and passed routes alike."""
    auth = b"Authorization: Bearer " + front.token("hosts").encode()
    for target in (AS_OF.encode(), LATEST.encode()):
        data = b"GET " + target + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + auth
        data += b"\r\nConnection: close\r\n\r\n"
        direct, answer = exchange(front.gateway_url, data), exchange(front.edge_url, data)
        if valid:
            assert direct.status == answer.status == 200, (target, answer.body[:200])
            continue
        assert (direct.status, direct.json()["code"]) == (400, "INVALID_PARAMS"), target
        assert_edges_own_refusal(front, answer, 400, "INVALID_PARAMS")


@pytest.mark.parametrize("value", [b"a\x01b", b"a\x1bb", b"a\x7fb", b"caf\xe9"])
def test_odd_bytes_in_a_header_value_are_kept_alike_through_the_edge_and_by_a_gateway(
    front: Front, value: bytes
) -> None:
    """RFC 9110 5.5: a control byte other than NUL, CR and LF in a field value is invalid, but a
    recipient may keep it; nginx keeps it and passes it on. A gateway refusing it made the edge's
    auth step fail: a retryable 503 on a cached route, where the passed route got the gateway's
    400. Both keep it now: the same 200, directly and through the edge."""
    auth = b"Authorization: Bearer " + front.token("odd-bytes").encode()
    for target in (AS_OF.encode(), LATEST.encode()):
        data = request_bytes(target, b"X-Note: " + value, auth)
        direct, answer = exchange(front.gateway_url, data), exchange(front.edge_url, data)
        assert direct.status == answer.status == 200, (target, answer.body[:200])


def test_trace_with_a_host_only_the_edge_refuses_is_the_apis_405(front: Front) -> None:
    """nginx answers TRACE 405 before anything else; its redirect to the API's 405 runs the
    server-level Host check again, which must not turn it into nginx's own HTML 400."""
    data = b"TRACE /v1/coverage HTTP/1.1\r\nHost: a{b\r\nConnection: close\r\n\r\n"
    answer = exchange(front.edge_url, data)
    assert_edges_own_refusal(front, answer, 405, "METHOD_NOT_ALLOWED")
    assert answer.headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    "framing",
    [b"Content-Length:\x0b5", b"Transfer-Encoding:\x0cchunked", b"Content-Length: \xef\xbc\x95"],
    ids=["a VT before a length", "a FF before a coding", "a wide 5"],
)
def test_framing_nginx_refuses_a_gateway_alone_refuses_too(front: Front, framing: bytes) -> None:
    """Framing read two ways is how requests are smuggled: Sanic stripped a VT or FF before a
    value and Python's int() read a full-width digit, where nginx refuses. Both refuse now."""
    auth = b"Authorization: Bearer " + front.token("framing").encode()
    data = request_bytes(LATEST.encode(), auth, framing) + b"5\r\nhello\r\n0\r\n\r\n"
    direct = exchange(front.gateway_url, data)
    assert (direct.status, direct.json()["code"]) == (400, "INVALID_PARAMS"), direct.body[:200]
    assert_edges_own_refusal(front, exchange(front.edge_url, data), 400, "INVALID_PARAMS")


@pytest.mark.parametrize("route", ["as-of", "latest", "coverage", "log tile"])
def test_an_http_1_0_request_without_host_is_answered_through_the_edge(
    front: Front, route: str
) -> None:
    """RFC 9112 3.2: an HTTP/1.0 request may come without Host; the gateway alone answers it.
    nginx speaks HTTP/1.1 to the gateways, where a request without Host is refused, so the edge
    gives them the address the client reached it at: the same answer through the edge."""
    token = front.token(f"http10-{route}")
    target = {"as-of": AS_OF, "latest": LATEST, "coverage": "/v1/coverage"}.get(route)
    target = target or log_tile(front)
    data = f"GET {target} HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    direct = exchange(front.gateway_url, data)
    for _ in range(2):  # a miss, then a hit where the route is cached
        answer = exchange(front.edge_url, data)
        assert answer.status == direct.status == 200, answer.body[:200]
        assert answer.headers["content-type"] == direct.headers["content-type"]


@pytest.mark.parametrize("body", [b"zz\r\nhello\r\n0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n"])
def test_a_request_with_a_body_on_a_cached_route_is_passed_and_never_claimed_unread(
    front: Front, body: bytes
) -> None:
    """Section 14: "The ledger never claims an answer that did not leave"; section 12: every
    answer equals the gateway's and has its ledger entry. A GET of a cached as-of page with a
    chunked body: the auth step would count and record a 200 before nginx reads the body, so the
    request is passed to a gateway instead. A body nginx cannot read gets the API's 400 (its own
    refusal, recorded nowhere); a well-formed one the gateway's answer, recorded as sent."""
    token = front.token("body")
    data = (
        request_bytes(
            AS_OF.encode(),
            b"Authorization: Bearer " + token.encode(),
            b"Transfer-Encoding: chunked",
        )
        + body
    )
    answer = exchange(front.edge_url, data)
    if body.startswith(b"zz"):
        assert_edges_own_refusal(front, answer, 400, "INVALID_PARAMS")
        return
    assert answer.headers["x-cache"] == "PASS", answer.status
    [entry] = front.recorded()[answer.headers["x-request-id"]]
    assert entry["status"] == answer.status
    sent = hashlib.sha256(answer.body if answer.status != 304 else b"").hexdigest()
    assert entry["sha256"] == sent


@pytest.mark.parametrize("body", [b"zz\r\nhello\r\n0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n"])
def test_a_request_with_a_body_to_the_log_is_passed_uncached(front: Front, body: bytes) -> None:
    """The log's location passes a request with a body, as the cached routes do: a body nginx
    cannot read gets the API's 400 (not nginx's HTML page: section 12, every answer has a fresh
    `X-Request-Id`), a readable one the gateway's own answer, neither from nor into the cache."""
    data = request_bytes(log_tile(front).encode(), b"Transfer-Encoding: chunked") + body
    answer = exchange(front.edge_url, data)
    if body.startswith(b"zz"):
        assert_edges_own_refusal(front, answer, 400, "INVALID_PARAMS")
        return
    assert (answer.status, answer.headers["x-cache"]) == (200, "PASS")
    assert answer.body == front.direct(log_tile(front)).body


def test_the_edges_internal_locations_answer_as_unknown_paths_do(front: Front) -> None:
    """Section 9: "Unknown path ...: 404 `NOT_FOUND`" (the API's body); section 12: "Every
    answer equals the gateway's" and "Every answer has a fresh `X-Request-Id` ... and the
    ledger holds its entry". The names of the edge's internal locations (`/_fxev_auth`, and
    `/_fxev_lane` with lanes) are unknown paths to a gateway; asked through the edge with a
    valid token they must get that 404 (JSON, request id, ledger entry), not nginx's own HTML
    404 page without a request id."""
    token = front.token("internal")
    for path in ("/_fxev_auth", "/_fxev_lane", "/_fxev_auth?x=1", "/_fxev_malformed",
                 "/_fxev_not_allowed"):  # fmt: skip
        direct = front.direct(path, token, **IDENTITY)
        assert direct.status == 404 and direct.json()["code"] == "NOT_FOUND"
        edge = front.edge(path, token, **IDENTITY)
        assert edge.status == 404
        assert edge.one("content-type") == "application/json", (path, edge.wire[:120])
        assert_same_answer(edge, direct, path)
        [entry] = front.recorded().get(edge.one("x-request-id") or "-", [])
        assert entry["status"] == 404


# -- the internal routes, forged headers -----------------------------------------------------------


def test_forged_edge_headers_open_nothing_direct_or_through_the_edge(front: Front) -> None:
    """Section 12: "No cached answer reaches a request the fleet would not accept at that moment:
    no token ... get 401"; docs/operating/edge.md#gateway: without the credential `/_edge/auth`
    and `/_edge/answer` are unknown paths and `X-Fxev-Admitted` means nothing. A client forging
    every edge header (a real admitted request id and ETag from an earlier answer, a packed 200
    answer, an original URI) gets, through the edge and straight from a gateway, the answer a
    request without them gets; nothing is served from the cache, nothing replayed."""
    token = front.token("forger")
    admitted = front.edge(AS_OF, token, **IDENTITY)
    assert admitted.status == 200
    packed = base64.b64encode(b"200\r\ncontent-type: application/json\r\n\r\n{}").decode()
    forged = {
        "X-Fxev-Edge": "0" * 64,
        "X-Fxev-Admitted": admitted.one("x-request-id") or "",
        "X-Fxev-Expect": admitted.one("etag") or "",
        "X-Fxev-Answer": packed,
        "X-Fxev-Etag": admitted.one("etag") or "",
        "X-Original-URI": AS_OF,
        "X-Original-Method": "GET",
        **IDENTITY,
    }
    for path, status in [
        (AS_OF, 401),
        (LATEST, 401),
        ("/_edge/auth", 404),
        ("/_edge/answer", 404),
        ("/_edge/auth?" + AS_OF.partition("?")[2], 404),
        ("/_edge/answer?x", 404),
    ]:
        for ask in (front.edge, front.direct):
            resp = ask(path, None, **forged)
            assert resp.status == status, (path, ask.__name__, resp.status, resp.wire[:200])
            body = resp.json()
            assert body["code"] == ("UNAUTHORIZED" if status == 401 else "NOT_FOUND")
            assert body["request_id"] == resp.one("x-request-id")
        # With a valid token, the internal routes stay unknown, and are recorded as such.
        for ask in (front.edge, front.direct):
            resp = ask(path, token, **forged)
            expected = 200 if status == 401 else 404
            assert resp.status == expected, (path, ask.__name__, resp.status, resp.wire[:200])
            [entry] = front.recorded().get(resp.one("x-request-id") or "", [])
            assert entry["status"] == expected


@pytest.mark.parametrize("through", ["/_edge/..", "/_edge/auth/../..", "/_edge/answer/../.."])
def test_a_target_through_an_internal_path_onto_a_cached_route_is_the_gateways_404(
    front: Front, through: str
) -> None:
    """Section 12: "Every answer equals the gateway's", with a fresh X-Request-Id the ledger
    holds. nginx routes a target by its path with dot segments removed, so `/_edge/../v1/rates`
    reached the cached route; its auth step named the target as sent, which the gateway took
    for no request of the edge's: a plain 404 nginx turned into a retryable 503, its request id
    in no ledger. Found by an attack on the edge. A gateway alone answers the target 404
    `NOT_FOUND` (it removes no dot segments); through the edge, the same, recorded."""
    token = front.token("dots")
    auth = b"Authorization: Bearer " + token.encode()
    for route in (AS_OF, evidence_of(front, token)):
        data = request_bytes((through + route).encode(), auth)
        edge, direct = exchange(front.edge_url, data), exchange(front.gateway_url, data)
        label = through + route
        assert (edge.status, direct.status) == (404, 404), (label, edge.body[:200])
        assert edge.json()["code"] == direct.json()["code"] == "NOT_FOUND", label
        [entry] = front.recorded()[edge.headers["x-request-id"]]
        assert entry["status"] == 404 and entry["path"] == through + route.partition("?")[0]


# -- public routes -------------------------------------------------------------------------------


def test_public_routes_through_the_edge_are_the_gateways_and_in_no_ledger(front: Front) -> None:
    """Section 9: "`/v1/openapi.json` is public (**override**, like `/v1/health/live`)";
    section 13: the log is "served publicly (no token, like `/v1/health/live`)"; section 12:
    "Every answer equals the gateway's". GET and HEAD of the live probe, the OpenAPI document,
    the log's key, checkpoint, a tile and a missing tile, with no token, a bogus one or a valid
    one, with and without the listed Origin, get the gateway's answer through the edge, and the
    same ledger entries as directly (none for the live probe and the log)."""
    token = front.token("public")
    tile = log_tile(front)
    missing = tile.rpartition("/")[0] + "/999" if ".p/" in tile else tile + ".p/999"
    paths = ["/v1/health/live", "/v1/openapi.json", "/v1/log/checkpoint", tile, missing]
    paths += ["/v1/health/live?x=1"]
    ids: list[tuple[str, str | None, str | None]] = []
    for path in paths:
        for who in (None, "fxev_bogus", token):
            for method in ("GET", "HEAD"):
                for origin in ({}, {"Origin": ORIGIN}):
                    label = f"{method} {path} {who and who[:10]} {origin}"
                    edge = front.edge(path, who, method, **origin, **IDENTITY)
                    direct = front.direct(path, who, method, **origin, **IDENTITY)
                    assert_same_answer(edge, direct, label)
                    ids.append((label, edge.one("x-request-id"), direct.one("x-request-id")))
    ledger = front.recorded()
    for label, mine, theirs in ids:
        # As directly: the log and the live probe read no token, so are in no ledger (the
        # OpenAPI document is recorded for a valid token, by the gateway as directly).
        count = len(ledger.get(theirs or "", []))
        assert len(ledger.get(mine or "", [])) == count, label
        if "openapi" not in label:
            assert count == 0, label


# -- a token revoked, the edge restarted ---------------------------------------------------------


def test_after_an_edge_restart_hits_are_recorded_and_refused_tokens_still_refused(
    front: Front,
) -> None:
    """Section 12: "Every answer has a fresh `X-Request-Id`, cache hits included, and the ledger
    holds its entry, with the SHA-256 of the representation"; "No cached answer reaches a
    request the fleet would not accept at that moment: ... just-revoked token get 401". The
    edge's cache survives a restart (docs/operating/edge.md#cache): after it, a hit (GET with
    and without gzip, HEAD) has its own X-Request-Id, which `fxev requests show` finds with
    the identity body's hash, and a token revoked while the edge was down, on a URL it holds,
    gets the gateway's 401."""
    token, doomed = front.token("restart"), front.token("doomed")
    evidence = evidence_of(front, token)
    for path in (AS_OF, evidence):
        for who in (token, doomed, token):
            assert front.edge(path, who, **IDENTITY).status == 200
    edge = front.running.edge
    config = (edge.prefix / "nginx.conf").read_text().removeprefix("user root;\n")
    edge.stop()
    front.revoke(doomed)
    front.running.edge = start_edge(config, edge.prefix, edge.base_url, "/v1/health/live")
    for path in (AS_OF, evidence):
        direct = front.direct(path, token, **IDENTITY)
        seen = set()
        for method, accept in [("GET", "identity"), ("GET", "gzip"), ("HEAD", "identity")]:
            resp = front.edge(path, token, method, **{"Accept-Encoding": accept})
            assert resp.status == 200 and resp.one("x-cache") == "HIT", (path, method, accept)
            rid = resp.one("x-request-id") or ""
            assert rid not in seen
            seen.add(rid)
            [entry] = ledger_entries(front.env, rid)
            sent = b"" if method == "HEAD" else resp.body
            assert sent in (b"", direct.wire)
            assert (entry["status"], entry["method"]) == (200, method)
            assert entry["sha256"] == hashlib.sha256(sent).hexdigest()
        refused = front.edge(path, doomed, **IDENTITY)
        theirs = front.direct(path, doomed, **IDENTITY)
        assert refused.status == 401
        assert_same_answer(refused, theirs, f"revoked {path}")
        assert refused.one("www-authenticate") == 'Bearer error="invalid_token"'


# -- FXEV_CORS_ORIGINS changed under a warm cache (last: it restarts the gateways) ---------------


def test_a_changed_cors_setting_never_answers_from_an_entry_filled_under_the_old_one(
    front: Front,
) -> None:
    """Section 12: "Every answer equals the gateway's (status, body bytes, API headers)". The
    cache was keyed on the URI, the ETag and the origin, not on the CORS headers the gateway
    gave it: after FXEV_CORS_ORIGINS changed and the gateways restarted, a hit still sent
    `Access-Control-Allow-Origin` for an origin no longer listed (and, the other way, lacked
    it). The key now holds which CORS headers the gateway gives the origin (`X-Fxev-Cors`).
    Also an `Origin` with a space after it, which nginx trims, is read as the gateway reads it.
    The public log has no auth step to tell the edge: a browser's request for a tile (with
    `Origin`) is passed to a gateway, never answered from the cache; a tile kept for requests
    without one carries the `Vary: Origin` of the setting it was filled under, for at most
    the minute the edge keeps it; with no gateway up, the edge serves it as it was, and
    answers a log path it does not hold with its 503 (section 12: a fresh `X-Request-Id`)."""
    token = front.token("cors-change")
    evidence = evidence_of(front, token)
    tile = log_tile(front)
    gateways = front.running.gateways
    listed_env = dict(gateways[0].env)

    def restart(env: dict[str, str]) -> None:
        for gateway in gateways:
            port = int(gateway.base_url.rpartition(":")[2])
            gateway.stop()
            gateway.env = {**env, **{k: v for k, v in gateway.env.items() if k == "FXEV_EDGE_LANE"}}
            gateway.start(port)

    def compare(label: str) -> None:
        token = front.token("cors-change")  # 36 requests a phase: under the minute's 60
        for path in (AS_OF, evidence):
            for origin in ({"Origin": ORIGIN}, {"Origin": ORIGIN + " "}, {}):
                for _ in range(3):  # a miss or a hit, then hits, on every worker's lane
                    edge = front.edge(path, token, **origin, **IDENTITY)
                    direct = front.direct(path, token, **origin, **IDENTITY)
                    assert_same_answer(edge, direct, f"{label} {path} {origin}")
        for origin in ({"Origin": ORIGIN}, {"Origin": ORIGIN + " "}):
            for _ in range(2):
                edge = front.edge(tile, None, **origin, **IDENTITY)
                assert edge.one("x-cache") == "BYPASS", (label, origin)
                assert_same_answer(edge, front.direct(tile, None, **origin, **IDENTITY), label)
            etag = edge.one("etag") or ""
            for value in (etag, "W/" + etag, "*", '"other"'):
                sent = {**origin, "If-None-Match": value, **IDENTITY}
                edge = front.edge(tile, None, **sent)
                assert_same_answer(edge, front.direct(tile, None, **sent), f"{label} {value}")

    kept = front.edge(tile, None, **IDENTITY)  # kept under the listed setting: Vary: Origin
    kept_at = time.monotonic()
    assert kept.one("vary") == "Origin"
    compare("listed")
    try:
        restart({k: v for k, v in listed_env.items() if k != "FXEV_CORS_ORIGINS"})
        compare("unset")
        direct = front.direct(tile, None, **IDENTITY)
        assert direct.one("vary") is None
        while (edge := front.edge(tile, None, **IDENTITY)).one("x-cache") == "HIT":
            assert edge.one("vary") == "Origin"
            assert time.monotonic() - kept_at < 70, "the edge kept a log tile over a minute"
            time.sleep(2)
        assert edge.one("x-cache") == "EXPIRED"
        assert_same_answer(edge, direct, "a tile fetched again after its minute")
        for gateway in gateways:  # none answers: the kept tile as it was, else the edge's 503
            gateway.stop()
        kept = front.edge(tile, None, **IDENTITY)
        assert (kept.status, kept.body) == (200, direct.body), kept.one("x-cache")
        unknown = front.edge("/v1/log/tile/0/x999/999", None, **IDENTITY)
        assert unknown.status == 503, unknown.body[:200]
        error = orjson.loads(unknown.body)
        assert (error["code"], error["retryable"]) == ("INTERNAL", True)
        assert error["request_id"] == unknown.one("x-request-id")
        restart({**listed_env, "FXEV_CORS_ORIGINS": "https://other.example"})
        time.sleep(5.5)  # the edge leaves a gateway that failed out for 5 s (fail_timeout)
        compare("another")
    finally:
        restart(listed_env)
    compare("listed again")
