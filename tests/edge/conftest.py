"""The shipped edge, as the tests run it: nginx with ``fxev edge config``'s text in front of two
real gateways over one private copy of the demo, started once per module and stopped by PID.

Limits are the defaults' order (60 a minute per token): each test issues tokens of its own
(:meth:`Topology.token`), so one test's count never reaches another's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import orjson
import pytest
import requests

from builder.fleet.processes import free_ports
from tests.contract.conftest import (
    Gateway,
    copy_demo,
    demo_home,  # noqa: F401 (the session's built demo, shared with the contract tests)
    run_fxev,
)
from tests.support.edge import Edge, start_edge
from tests.support.rawhttp import status_and_headers
from tokens.store import TokenStore

PER_MIN = 60


@dataclasses.dataclass
class Topology:
    env: dict[str, str]
    gateways: list[Gateway]
    edge: Edge
    lanes: list[str]  # the gateways' auth lanes the edge asks first (none: Sanic alone)
    base: Path  # the module's folder

    @property
    def home(self) -> Path:
        return Path(self.env["FXEV_HOME"])

    def token(self, name: str = "edge", expires: date | None = None) -> str:
        """A new token (one whose last day is long over with ``expires``)."""
        issued_at = datetime(2019, 12, 31, tzinfo=UTC) if expires else datetime.now(UTC)
        with TokenStore.open(self.home) as store:
            return store.issue(name, expires, issued_at).token_text

    def get(
        self,
        path: str,
        token: str | None = None,
        method: str = "GET",
        via: str | None = None,
        **headers: str,
    ) -> requests.Response:
        """``method path`` through the edge (or straight to the gateway at ``via``)."""
        sent = dict(headers)
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        base = via or self.edge.base_url
        return requests.request(method, base + path, headers=sent, timeout=15)


def edge_config_text(
    env: dict[str, str],
    listen: str,
    upstreams: list[str],
    cache: Path,
    lanes: list[str] | None = None,
) -> str:
    """What ``fxev edge config`` prints for these addresses."""
    args = ["edge", "config", "--listen", listen, "--cache-dir", str(cache)]
    for upstream in upstreams:
        args += ["--upstream", upstream]
    for lane in lanes or ():
        args += ["--lane", lane]
    done = run_fxev(env, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def on_the_wire(
    edge: Edge, path: str, token: str, accept: str = "gzip"
) -> tuple[requests.Response, bytes]:
    """``GET path`` through the edge with ``Accept-Encoding: accept``: the response, and its body
    as sent (not decompressed)."""
    resp = requests.get(
        edge.url(path),
        headers={"Authorization": f"Bearer {token}", "Accept-Encoding": accept},
        stream=True,
        timeout=20,
    )
    return resp, resp.raw.read(decode_content=False)


class Load:
    """Clients behind the edge, one thread and one token each, asking ``paths`` in turn; what
    is not a 200 is a failure. :meth:`wait_for` a share of the requests, act, :meth:`join`."""

    def __init__(self, edge: Edge, paths: list[str], tokens: list[str], per_thread: int) -> None:
        self.edge, self.paths, self.per_thread = edge, paths, per_thread
        self.failures: list[str] = []
        self.done = 0
        self.threads = [threading.Thread(target=self._client, args=(t,)) for t in tokens]
        for thread in self.threads:
            thread.start()

    def _client(self, token: str) -> None:
        session = requests.Session()
        for n in range(self.per_thread):
            try:
                resp = session.get(
                    self.edge.url(self.paths[n % len(self.paths)]),
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=20,
                )
                if resp.status_code != 200:
                    self.failures.append(f"{resp.status_code} {resp.text[:200]}")
            except requests.RequestException as error:
                self.failures.append(repr(error))
            self.done += 1
            time.sleep(0.005)

    def wait_for(self, share: float) -> None:
        while self.done < share * len(self.threads) * self.per_thread:
            time.sleep(0.01)

    def join(self) -> None:
        """Every request answered; at most one failure a client (its request in flight)."""
        for thread in self.threads:
            thread.join(timeout=120)
        assert self.done == len(self.threads) * self.per_thread
        assert len(self.failures) <= len(self.threads), self.failures


@dataclasses.dataclass
class Running:
    """Two started gateways and the edge in front of them (``edge`` may be replaced by a test
    that restarts it: the one running is stopped)."""

    gateways: list[Gateway]
    edge: Edge
    lanes: list[str]


@contextlib.contextmanager
def edge_in_front(env: dict[str, str], base: Path, with_lanes: bool) -> Iterator[Running]:
    """Two gateways (two workers each) of ``env``, each with an auth lane when ``with_lanes``,
    and the edge in front of them, with what ``fxev edge config`` prints; stopped by PID."""
    # Every port chosen at once: a gateway's port chosen apart could be the other's lane's.
    ports = free_ports(5)
    lanes = [f"127.0.0.1:{port}" for port in ports[2:4]] if with_lanes else []
    gateways = [
        Gateway(
            env={**env, **({"FXEV_EDGE_LANE": lanes[n]} if lanes else {})},
            token="",
            log_path=base / f"gateway-{name}.log",
        )
        for n, name in enumerate("ab")
    ]
    running = None
    try:
        for gateway, gateway_port in zip(gateways, ports, strict=False):
            gateway.start(gateway_port)
        port = ports[4]
        upstreams = [gateway.base_url.removeprefix("http://") for gateway in gateways]
        text = edge_config_text(env, f"127.0.0.1:{port}", upstreams, base / "edge-cache", lanes)
        edge = start_edge(text, base / "nginx", f"http://127.0.0.1:{port}", "/v1/health/live")
        running = Running(gateways, edge, lanes)
        yield running
    finally:
        if running is not None:
            running.edge.stop()
        for gateway in gateways:
            gateway.stop()


@pytest.fixture(scope="module", params=["lanes", "sanic"])
def topology(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    demo_home: Path,  # noqa: F811
) -> Iterator[Topology]:
    """The edge with each gateway's auth lane (the shipped default of ``make fleet``), and
    without (every auth step through Sanic): every test runs against both."""
    base = tmp_path_factory.mktemp("edge")
    env, _ = copy_demo(demo_home, base, FXEV_RATE_LIMIT_PER_MIN=str(PER_MIN))
    with edge_in_front(env, base, request.param == "lanes") as running:
        topology = Topology(env, running.gateways, running.edge, running.lanes, base)
        yield topology
        running.edge = topology.edge  # the one running now (a test may have restarted it)


@pytest.fixture(autouse=True)
def _print_logs_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    topology = (getattr(request.node, "funcargs", None) or {}).get("topology")
    if report is None or not report.failed or topology is None:
        return
    for gateway in topology.gateways:
        print(f"--- {gateway.log_path} ---\n{gateway.log()[-4000:]}")
    print(f"--- nginx error log ---\n{topology.edge.error_log()[-4000:]}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@dataclasses.dataclass
class Raw:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> dict[str, object]:
        return orjson.loads(self.body)


def exchange(base_url: str, data: bytes, timeout: float = 20) -> Raw:
    """``data`` sent as it is on a fresh connection; the one answer read back."""
    host, _, port = base_url.removeprefix("http://").rpartition(":")
    received = b""
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
            head, found, body = received.partition(b"\r\n\r\n")
            if found:
                lengths = [
                    line.split(b":", 1)[1]
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ]
                if lengths and len(body) >= int(lengths[0]):
                    break
    head, _, body = received.partition(b"\r\n\r\n")
    return Raw(*status_and_headers(head), body)
