"""A cache fill refused by a gateway that is up: the answer changed since the request's auth step
(docs/operating/edge.md#failures). DECISIONS 12: "Killing one of two gateways under load costs at
most the requests in flight"; 14: "The ledger never claims an answer that did not leave".

Two gateways over one copy of the demo that disagree, on purpose, about one thing: only the first
allows the origin below (FXEV_CORS_ORIGINS), so the auth step and the fill of a request from that
origin expect different CORS headers. The edge asks the lanes in the other order than the
gateways (`--lane` reversed), so each request's auth step goes to one gateway and its fill to the
other, once the lane remembers the answer (a lane answers only what its worker's Sanic answered
before; it leaves the rest to the full step, on the fill's gateway): every cache fill of a
request from that origin is then refused, as it is for a moment after a publish when the two
serve two revisions, or when the step's gateway dies. Real nginx and real gateways on
127.0.0.1, stopped by PID.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from builder.fleet.processes import free_ports
from tests.contract.conftest import Gateway, copy_demo, ledger_entries
from tests.contract.test_api import assert_api_error
from tests.edge.conftest import demo_home, edge_config_text  # noqa: F401
from tests.support.edge import Edge, start_edge
from tokens.store import TokenStore

ORIGIN = "https://a.example"
WARMING = 8  # direct requests to each gateway at once, each on a new connection
ATTEMPTS = 5
SEPTEMBER = "/v1/rates?currency=USD&series=publicado&from=2026-09-01&to=2026-09-{day:02d}"


@dataclasses.dataclass
class Crossed:
    env: dict[str, str]
    gateways: list[Gateway]
    edge: Edge
    days: Iterator[int]  # a new as-of URL for each request that must miss the cache

    def token(self) -> str:
        with TokenStore.open(Path(self.env["FXEV_HOME"])) as store:
            return store.issue("crossed", None, datetime.now(UTC)).token_text

    def miss(self) -> str:
        """An as-of URL no request asked before: its answer must be filled."""
        return SEPTEMBER.format(day=next(self.days)) + "&as_of_revision=5"

    def warm(self, path: str) -> None:
        """The workers of both gateways answer ``path`` directly, so that their lanes remember
        the answer: many requests at once, each on a new connection, so that both workers of
        a gateway take some (one worker idle takes every connection asked one at a time)."""
        token = self.token()
        with concurrent.futures.ThreadPoolExecutor(WARMING) as pool:
            for gateway in self.gateways:
                asked = [
                    pool.submit(self.get, path, token, via=gateway.base_url)
                    for _ in range(WARMING * 2)
                ]
                assert {future.result().status_code for future in asked} == {200}

    def refused(self, path: str, token: str) -> requests.Response:
        """``path`` from the origin until a fill is refused: a lane whose worker did not
        remember the answer leaves the step to the fill's gateway, which then agrees."""
        for _ in range(ATTEMPTS):
            self.warm(path)
            resp = self.get(path, token, Origin=ORIGIN)
            assert resp.status_code in (200, 503), resp.text
            if resp.status_code == 503:
                return resp
        raise AssertionError(f"no fill of {path} was refused in {ATTEMPTS} attempts")

    def get(
        self, path: str, token: str, method: str = "GET", via: str = "", **headers: str
    ) -> requests.Response:
        sent = {"Authorization": f"Bearer {token}", "Accept-Encoding": "identity", **headers}
        url = via + path if via else self.edge.url(path)
        return requests.request(method, url, headers=sent, timeout=20)


@pytest.fixture(scope="module")
def crossed(
    tmp_path_factory: pytest.TempPathFactory,
    demo_home: Path,  # noqa: F811
) -> Iterator[Crossed]:
    base = tmp_path_factory.mktemp("crossed")
    env, _ = copy_demo(demo_home, base)
    ports = free_ports(5)
    lanes = [f"127.0.0.1:{port}" for port in ports[2:4]]
    origins = [{"FXEV_CORS_ORIGINS": ORIGIN}, {}]
    gateways = [
        Gateway(
            env=env | {"FXEV_EDGE_LANE": lane} | allowed,
            token="",
            log_path=base / f"gateway-{name}.log",
        )
        for name, lane, allowed in zip("ab", lanes, origins, strict=True)
    ]
    edge = None
    try:
        for gateway, port in zip(gateways, ports, strict=False):
            gateway.start(port)
        upstreams = [gateway.base_url.removeprefix("http://") for gateway in gateways]
        text = edge_config_text(
            env, f"127.0.0.1:{ports[4]}", upstreams, base / "edge-cache", lanes[::-1]
        )
        edge = start_edge(text, base / "nginx", f"http://127.0.0.1:{ports[4]}", "/v1/health/live")
        yield Crossed(env, gateways, edge, iter(range(29, 0, -1)))
    finally:
        if edge is not None:
            edge.stop()
        for gateway in gateways:
            gateway.stop()


def test_a_refused_fill_is_what_the_ledger_shows_for_its_request(crossed: Crossed) -> None:
    """The client gets the gateway's retryable 503 under the auth step's request id, and
    `fxev requests show` shows that 503 and its body's hash, not the 200 the auth step recorded
    (before, the ledger held only the 200, which never left)."""
    token = crossed.token()
    path = crossed.miss()
    for _ in range(2):  # not cached: refused again
        resp = crossed.refused(path, token)
        request_id = resp.headers["X-Request-Id"]
        body = assert_api_error(resp, 503, "INTERNAL")
        assert body["retryable"] is True and body["request_id"] == request_id
        assert resp.headers["X-Cache"] == "MISS"
        [entry] = ledger_entries(crossed.env, request_id)
        assert (entry["status"], entry["method"]) == (503, "GET"), entry
        assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()
        assert entry["supersedes"] is True
        assert entry["request_id"] == body["request_id"], entry  # the 503's, not the route's
    # Without the origin the two agree: filled, then served from the cache.
    path = crossed.miss()
    answers = [crossed.get(path, token) for _ in range(2)]
    assert [(a.status_code, a.headers["X-Cache"]) for a in answers] == [(200, "MISS"), (200, "HIT")]
    for answer in answers:
        [entry] = ledger_entries(crossed.env, answer.headers["X-Request-Id"])
        assert entry["sha256"] == hashlib.sha256(answer.content).hexdigest()


def test_refused_fills_beside_a_killed_gateway_leave_the_other_serving(crossed: Crossed) -> None:
    """A refused fill is a gateway's answer, not its failure: counted as one (the fill was
    retried on 503, and every gateway is `max_fails=1`), the refusing gateway was left out for
    5 s, and with the other one killed the edge had no gateway and answered its own 503 to
    every client for those 5 s."""
    tokens = [crossed.token() for _ in range(8)]
    path = crossed.miss()
    for token in tokens:  # each on a new connection, so both nginx workers see some
        crossed.refused(path, token)
    crossed.gateways[1].kill()
    statuses = [crossed.get(crossed.miss(), token).status_code for token in tokens]
    assert statuses == [200] * len(tokens), statuses
