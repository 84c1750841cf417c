"""The shipped edge (docs/operating/edge.md), seen from its clients: real nginx with the printed
configuration in front of two real gateways (docs/decisions.md#edge).

The tests run in this order on one topology; the last kills one of the gateways.
"""

from __future__ import annotations

import gzip
import hashlib
import time
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import requests

from demo import local_source
from gateway.http.sending import MALFORMED, NOT_ALLOWED, TOO_LARGE, repr_digest
from tests.contract.conftest import fxev, ledger_entries
from tests.contract.test_api import assert_api_error
from tests.edge.conftest import (
    PER_MIN,
    Load,
    Topology,
    edge_config_text,
    exchange,
    on_the_wire,
)
from tests.support.edge import start_edge
from tests.support.ports import free_port
from tokens.store import TokenStore, parse_token_id

SEPTEMBER = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-30"
AS_OF = SEPTEMBER + "&as_of_revision=5"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"
IDENTITY = {"Accept-Encoding": "identity"}


def evidence_path(topology: Topology, token: str) -> str:
    latest = topology.get(LATEST, token).json()
    detail = topology.get(f"/v1/observations/{latest['observacion_id']}", token).json()
    return f"/v1/evidence/{detail['observacion']['evidencia_id']}"


def raw(resp: requests.Response) -> bytes:
    """The body's bytes as they came over the wire (``stream=True`` not needed: re-encoded)."""
    return resp.content


def cached(topology: Topology, path: str) -> requests.Response:
    """``path`` in the edge's cache: asked until a HIT."""
    token = topology.token("filler")
    for _ in range(3):
        resp = topology.get(path, token, **IDENTITY)
        assert resp.status_code == 200, resp.text
        if resp.headers["X-Cache"] == "HIT":
            return resp
    raise AssertionError(f"{path} never came from the cache")


def assert_same_refusal(edge: requests.Response, direct: requests.Response) -> None:
    """The gateway's own answer: status, body but its request id, the API's headers."""
    assert edge.status_code == direct.status_code
    mine, theirs = edge.json(), direct.json()
    assert {**mine, "request_id": ""} == {**theirs, "request_id": ""}
    assert mine["request_id"] == edge.headers["X-Request-Id"]
    for name in ("WWW-Authenticate", "Retry-After", "Cache-Control", "Content-Type"):
        assert edge.headers.get(name) == direct.headers.get(name), name


def test_the_first_answer_fills_the_cache_and_the_next_is_a_hit(topology: Topology) -> None:
    token = topology.token()
    first = topology.get(AS_OF, token, **IDENTITY)
    second = topology.get(AS_OF, token, **IDENTITY)
    direct = topology.get(AS_OF, token, via=topology.gateways[0].base_url, **IDENTITY)
    assert (first.headers["X-Cache"], second.headers["X-Cache"]) == ("MISS", "HIT")
    for resp in (first, second):
        assert resp.status_code == 200 and resp.content == direct.content
        for name in ("ETag", "Cache-Control", "Cache-Tag", "Repr-Digest", "Content-Type"):
            assert resp.headers[name] == direct.headers[name], name
        assert "Date" in resp.headers
    latest = topology.get(LATEST, token)
    assert latest.status_code == 200 and latest.headers["X-Cache"] == "PASS"


def test_refused_tokens_get_401_on_a_cached_url(topology: Topology) -> None:
    for path in (AS_OF, evidence_path(topology, topology.token())):
        cached(topology, path)
        revoked = topology.token("revoked")
        assert topology.get(path, revoked).status_code == 200
        with TokenStore.open(topology.home) as store:
            store.revoke(parse_token_id(revoked) or "", datetime.now(UTC))
        expired = topology.token("expired", expires=date(2020, 1, 1))
        for token in (None, "fxev_bogus", expired, revoked):
            edge = topology.get(path, token)
            direct = topology.get(path, token, via=topology.gateways[1].base_url)
            assert_api_error(edge, 401, "UNAUTHORIZED")
            assert_same_refusal(edge, direct)
            assert edge.headers["X-Cache"] == "PASS"
        # The edge's own headers from a client change nothing.
        forged = {"X-Fxev-Edge": "0" * 64, "X-Fxev-Admitted": "x", "X-Original-URI": path}
        assert_api_error(topology.get(path, None, **forged), 401, "UNAUTHORIZED")


def test_a_valid_token_with_another_space_around_it_gets_401_on_a_warm_cached_url(
    topology: Topology,
) -> None:
    """DECISIONS 12: "No cached answer reaches a request the fleet would not accept". A valid
    token with a no-break space or a NEL around it (raw Latin-1 bytes, or UTF-8) is no token to a
    gateway (401); the auth lane, reading the header as Latin-1 and trimming every Unicode
    space, answered a cached 200 for it, counted and recorded."""
    token = topology.token()
    for path in (AS_OF, evidence_path(topology, token)):
        cached(topology, path)
        for _ in range(8):  # every worker's lane has sent it since the publish
            assert topology.get(path, token, **IDENTITY).status_code == 200
        for presented in (b"%s\xa0", b"\xa0%s", b"%s\x85", "%s\u00a0".encode()):
            header = {"Authorization": b"Bearer " + presented.replace(b"%s", token.encode())}
            edge = topology.get(path, None, **header)  # type: ignore[arg-type]
            direct = topology.get(path, None, via=topology.gateways[1].base_url, **header)  # type: ignore[arg-type]
            assert_api_error(edge, 401, "UNAUTHORIZED")
            assert_same_refusal(edge, direct)
            assert ledger_entries(topology.env, edge.headers["X-Request-Id"]) == []


def test_over_the_limit_gets_429_counted_with_direct_requests(topology: Topology) -> None:
    token = topology.token()
    cached(topology, AS_OF)
    half = PER_MIN // 2
    for n in range(PER_MIN):
        via = topology.gateways[n % 2].base_url if n < half else None
        assert topology.get(AS_OF, token, via=via).status_code == 200
    edge = topology.get(AS_OF, token)
    direct = topology.get(AS_OF, token, via=topology.gateways[0].base_url)
    assert_api_error(edge, 429, "RATE_LIMITED")
    assert_same_refusal(edge, direct)
    assert 1 <= int(edge.headers["Retry-After"]) <= 60
    [entry] = ledger_entries(topology.env, edge.headers["X-Request-Id"])
    assert entry["status"] == 429


def test_every_answer_has_a_fresh_request_id_in_the_ledger(topology: Topology) -> None:
    token = topology.token()
    evidence = evidence_path(topology, token)
    etag = cached(topology, AS_OF).headers["ETag"]
    answers = [
        topology.get(AS_OF, token, **IDENTITY),  # a hit
        topology.get(AS_OF, token),  # a hit, gzip
        topology.get(AS_OF, token, method="HEAD"),
        topology.get(AS_OF, token, **{"If-None-Match": etag}),
        topology.get(evidence, token),
        topology.get(evidence.replace("/evidence/", "/evidence/x"), token),  # 422
        topology.get(SEPTEMBER + "&as_of_revision=999", token),  # 400
        topology.get(LATEST, token),
        topology.get("/v1/nowhere", token),
    ]
    ids = [resp.headers["X-Request-Id"] for resp in answers]
    assert len(set(ids)) == len(ids)
    for resp in answers:
        [entry] = ledger_entries(topology.env, resp.headers["X-Request-Id"])
        assert entry["status"] == resp.status_code
        assert entry["method"] == resp.request.method
        assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()  # identity bytes


def test_gzip_decompresses_to_the_gateways_bytes_with_a_weak_etag(topology: Topology) -> None:
    token = topology.token()
    direct = topology.get(AS_OF, token, via=topology.gateways[0].base_url, **IDENTITY)
    for path in (AS_OF, LATEST, "/v1/nowhere"):
        for _ in range(2):  # a miss, then a hit (for the as-of page)
            sent, wire = on_the_wire(topology.edge, path, token)
            assert sent.headers["Content-Encoding"] == "gzip"
            assert "Accept-Encoding" in sent.headers["Vary"]
            assert "Repr-Digest" not in sent.headers
            body = gzip.decompress(wire)
            [entry] = ledger_entries(topology.env, sent.headers["X-Request-Id"])
            assert entry["sha256"] == hashlib.sha256(body).hexdigest()
            if path == AS_OF:
                assert body == direct.content
                assert sent.headers["ETag"] == "W/" + direct.headers["ETag"]
    plain = topology.get(AS_OF, token, **IDENTITY)
    assert "Content-Encoding" not in plain.headers
    assert plain.headers["ETag"] == direct.headers["ETag"]
    assert plain.headers["Repr-Digest"] == repr_digest(hashlib.sha256(plain.content).hexdigest())
    refused = topology.get(AS_OF, None, **{"Accept-Encoding": "gzip"})  # a 401: not compressed
    assert "Content-Encoding" not in refused.headers
    assert refused.headers["Repr-Digest"] == repr_digest(
        hashlib.sha256(refused.content).hexdigest()
    )


# Accept-Encoding values nginx reads as accepting gzip, and values it does not (another
# parameter, a fourth decimal, q=0, a token that is not "gzip", a later "gzip" after a refused one).
ACCEPTS = ["gzip", "GZIP;Q=0.5", "gzip ; q=0.001", "br, gzip;q=1.000", "x-gzip, gzip"]
REFUSES = ["gzip;level=1", "gzip;q=0.0001", "gzip;q=0", "x-gzip", "gzip;q=0, gzip", "gzipx"]


def test_the_repr_digest_goes_exactly_with_the_identity_body(topology: Topology) -> None:
    """An answer the edge compresses has no Repr-Digest; one it sends as the gateway made it
    keeps the gateway's, whatever Accept-Encoding said (docs/operating/edge.md#headers)."""
    token = topology.token("accepts")
    for accept in ACCEPTS + REFUSES:
        for path in (AS_OF, LATEST):
            resp, wire = on_the_wire(topology.edge, path, token, accept)
            assert resp.status_code == 200
            compressed = resp.headers.get("Content-Encoding") == "gzip"
            assert compressed == (accept in ACCEPTS), accept
            if compressed:
                assert "Repr-Digest" not in resp.headers, accept
            else:
                digest = repr_digest(hashlib.sha256(wire).hexdigest())
                assert resp.headers["Repr-Digest"] == digest, accept


def test_a_head_has_the_gateways_headers_even_from_the_cache(topology: Topology) -> None:
    token = topology.token("head")
    cached(topology, AS_OF)
    direct = topology.get(AS_OF, token, method="HEAD", via=topology.gateways[0].base_url)
    assert direct.status_code == 200 and "Repr-Digest" not in direct.headers
    for accept in ("identity", "gzip;level=1", "gzip"):
        resp = topology.get(AS_OF, token, method="HEAD", **{"Accept-Encoding": accept})
        assert resp.status_code == 200 and resp.headers["X-Cache"] == "HIT"
        assert "Repr-Digest" not in resp.headers, accept
        assert resp.headers["ETag"].removeprefix("W/") == direct.headers["ETag"]


def test_if_none_match_answers_304(topology: Topology) -> None:
    """A 304 carries the ETag (and Vary) of the 200 the same client gets (RFC 9110 15.4.5): the
    strong one for a client taking identity, the weak one of the compressed body for a client
    accepting gzip (section 12: "the ETag made weak")."""
    token = topology.token()
    etag = cached(topology, AS_OF).headers["ETag"]
    for accept, validator, vary in (
        ("identity", etag, None),
        ("gzip", "W/" + etag, "Accept-Encoding"),
    ):
        for tag in (etag, "W/" + etag):
            resp = topology.get(AS_OF, token, **{"If-None-Match": tag, "Accept-Encoding": accept})
            assert resp.status_code == 304 and resp.content == b""
            assert resp.headers["ETag"] == validator, accept
            assert resp.headers.get("Vary") == vary, accept
    assert topology.get(AS_OF, token, **{"If-None-Match": '"other"'}).status_code == 200


def test_the_internal_routes_are_unreachable_from_outside(topology: Topology) -> None:
    token = topology.token()
    for path in ("/_edge/auth", "/_edge/answer", "/_edge/auth?x=1"):
        headers = {"X-Original-URI": AS_OF, "X-Fxev-Edge": "0" * 64}
        assert_api_error(topology.get(path, token, **headers), 404, "NOT_FOUND")
        for gateway in topology.gateways:
            direct = topology.get(path, token, via=gateway.base_url, **headers)
            assert_api_error(direct, 404, "NOT_FOUND")
    assert topology.get("/_fxev_auth", token).status_code == 404  # nginx's internal location


def established_to(port: int) -> int:
    """How many TCP connections on this host are established to ``port`` (from
    ``/proc/net/tcp``)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].rpartition(":")[2], 16) == port:
            count += 1
    return count


def test_with_lanes_the_edge_asks_them_and_without_it_asks_sanic(topology: Topology) -> None:
    token = topology.token()
    answers = [topology.get(AS_OF, token, **IDENTITY) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * 6
    for answer in answers:
        [entry] = ledger_entries(topology.env, answer.headers["X-Request-Id"])
        assert entry["status"] == 200 and entry["path"] == "/v1/rates"
    ports = [int(lane.rpartition(":")[2]) for lane in topology.lanes]
    if topology.lanes:  # the edge keeps its connections to the lanes it asked
        assert sum(established_to(port) for port in ports) >= 1
    else:
        assert all("FXEV_EDGE_LANE" not in g.env for g in topology.gateways)
        assert "fxev_lanes" not in (topology.edge.prefix / "nginx.conf").read_text()


def test_a_lane_that_does_not_answer_leaves_every_step_to_the_full_one(
    topology: Topology,
) -> None:
    port = free_port()
    upstreams = [g.base_url.removeprefix("http://") for g in topology.gateways]
    dead = [f"127.0.0.1:{free_port()}"]  # nobody listens there
    text = edge_config_text(
        topology.env, f"127.0.0.1:{port}", upstreams, topology.base / "cache-dead", dead
    )
    front = start_edge(
        text, topology.base / "nginx-dead", f"http://127.0.0.1:{port}", "/v1/health/live"
    )
    try:
        token = topology.token()
        for _ in range(2):
            resp = requests.get(
                front.url(AS_OF), headers={"Authorization": f"Bearer {token}"}, timeout=15
            )
            assert resp.status_code == 200
            [entry] = ledger_entries(topology.env, resp.headers["X-Request-Id"])
            assert entry["status"] == 200
        refused = requests.get(front.url(AS_OF), timeout=15)
        assert_api_error(refused, 401, "UNAUTHORIZED")
    finally:
        front.stop()


def test_a_published_correction_is_served_on_the_very_next_request(topology: Topology) -> None:
    token = topology.token()
    before = cached(topology, AS_OF)
    with local_source() as (local, answer):
        answer[0] = (200, b"21/09/2026|3.401|3.409|\r\n", "text/plain")
        captured = orjson.loads(
            fxev(topology.env, "capture", "--url", local + "/a/txt/tipoCambio.txt")[-1]
        )
    assert captured["outcome"] == "correccion"
    fxev(topology.env, "build")
    after = topology.get(AS_OF, token, **IDENTITY)
    direct = topology.get(AS_OF, token, via=topology.gateways[1].base_url, **IDENTITY)
    assert after.status_code == 200 and after.content == direct.content != before.content
    assert after.headers["ETag"] == direct.headers["ETag"] != before.headers["ETag"]
    assert after.headers["X-Cache"] == "MISS"
    assert topology.get(AS_OF, token, **IDENTITY).headers["X-Cache"] == "HIT"


def test_the_log_paths_keep_the_gateways_request_id_when_it_answered(topology: Topology) -> None:
    resp = topology.get("/v1/log/nothing-here")
    assert_api_error(resp, 404, "NOT_FOUND")  # its body's request_id is the header's
    assert resp.headers["X-Cache"] == "MISS"


def test_log_tiles_go_to_anyone_and_are_cached_for_everyone(topology: Topology) -> None:
    """The one part of fxev a cache may give to anyone (docs/transparency.md): no token, the
    gateway's bytes, a hit the second time, with a request id of its own."""
    checkpoint = topology.get("/v1/log/checkpoint", **IDENTITY)
    assert checkpoint.status_code == 200, checkpoint.text
    direct = topology.get("/v1/log/checkpoint", via=topology.gateways[0].base_url)
    assert checkpoint.content == direct.content
    size = int(checkpoint.text.splitlines()[1])
    tile = f"/v1/log/tile/0/000.p/{size}" if size < 256 else "/v1/log/tile/0/000"
    answers = [topology.get(tile, **IDENTITY) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert [a.headers["X-Cache"] for a in answers] == ["MISS", "HIT"]
    assert answers[1].headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert answers[0].content == answers[1].content
    assert len(answers[1].content) == 32 * min(size, 256)
    ids = [a.headers["X-Request-Id"] for a in answers]
    assert len(set(ids)) == 2 and all(len(i) == 36 for i in ids)


def test_the_cache_survives_a_restart_of_the_edge(topology: Topology) -> None:
    token = topology.token()
    before = cached(topology, AS_OF)
    config = (topology.edge.prefix / "nginx.conf").read_text()
    prefix, base_url = topology.edge.prefix, topology.edge.base_url
    topology.edge.stop()
    text = config.removeprefix("user root;\n")
    topology.edge = start_edge(text, prefix, base_url, "/v1/health/live")
    again = topology.get(AS_OF, token, **IDENTITY)
    assert again.headers["X-Cache"] == "HIT" and again.content == before.content


def test_one_gateway_killed_under_load_costs_at_most_the_requests_in_flight(
    topology: Topology,
) -> None:
    paths = [AS_OF, LATEST, evidence_path(topology, topology.token())]
    # 4 clients of 40 requests each: under the per-minute limit of each one's own token.
    load = Load(topology.edge, paths, [topology.token() for _ in range(4)], 40)
    load.wait_for(1 / 3)
    topology.gateways[0].kill()
    load.join()


def test_with_every_gateway_down_the_edge_answers_its_own_retryable_503(
    topology: Topology,
) -> None:
    """DECISIONS 9: "An `INTERNAL` body carries no detail"; docs/operating/edge.md#limits: no
    gateway answering, the edge answers the API's 503 `INTERNAL` itself, retryable, with a fresh
    request id, on a cached route as on a passed one (then the gateways come back). Its own
    refusals, which a gateway writes while one answers, it then writes itself: the API's 400
    and 405, with the gateway's messages. DECISIONS 9: "Every response with a body carries
    `Repr-Digest`" of that body: these too (formerly none, said to be beyond nginx). A client
    accepting gzip gets the same: nginx compresses none of these."""
    token = topology.token()
    assert cached(topology, AS_OF).status_code == 200
    ports = [int(gateway.base_url.rsplit(":", 1)[1]) for gateway in topology.gateways]
    for gateway in topology.gateways:
        gateway.kill()
    try:
        for path, accept in ((AS_OF, IDENTITY), (LATEST, IDENTITY), (LATEST, {})):
            resp = topology.get(path, token, **accept)
            body = assert_api_error(resp, 503, "INTERNAL")
            assert body["message"] == "Internal error."
            assert resp.headers["X-Cache"] == "PASS" and "Content-Encoding" not in resp.headers
            assert resp.headers["Repr-Digest"] == repr_digest(
                hashlib.sha256(resp.content).hexdigest()
            ), path
        for line, status, code, message in (
            (b"GET /v1/evidence/%zz HTTP/1.1", 400, "INVALID_PARAMS", MALFORMED),
            (b"GET /v1/coverage?" + b"x" * 9000 + b" HTTP/1.1", 400, "INVALID_PARAMS", TOO_LARGE),
            (b"TRACE /v1/coverage HTTP/1.1", 405, "METHOD_NOT_ALLOWED", NOT_ALLOWED),
        ):
            raw = exchange(topology.edge.base_url, line + b"\r\nHost: 127.0.0.1\r\n\r\n")
            assert raw.status == status, (raw.status, raw.body[:200])
            refused = raw.json()
            assert (refused["code"], refused["request_id"]) == (code, raw.headers["x-request-id"])
            assert refused["message"] == message
            assert raw.headers["x-cache"] == "PASS"
            assert raw.headers["repr-digest"] == repr_digest(
                hashlib.sha256(raw.body).hexdigest()
            ), line
        # A HEAD has no body, and so no Repr-Digest (docs/decisions.md), as from a gateway.
        head = requests.head(
            topology.edge.base_url + LATEST,
            headers={"Authorization": f"Bearer {token}"},
            timeout=20,
        )
        assert (head.status_code, head.content) == (503, b"")
        assert "X-Request-Id" in head.headers and "Repr-Digest" not in head.headers
        line = b"HEAD /v1/evidence/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        raw = exchange(topology.edge.base_url, line)
        assert (raw.status, raw.body) == (400, b"") and "repr-digest" not in raw.headers
    finally:
        for gateway, port in zip(topology.gateways, ports, strict=True):
            gateway.start(port)  # where the edge's configuration names it
    deadline = time.monotonic() + 15  # nginx asks a failed upstream again after fail_timeout=5s
    while topology.get(LATEST, token).status_code != 200:
        assert time.monotonic() < deadline, "the edge did not come back with its gateways"
        time.sleep(0.5)
