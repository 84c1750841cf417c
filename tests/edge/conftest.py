"""The shipped edge, as the tests run it: nginx with ``fxev edge config``'s text in front of two
real gateways over one private copy of the demo, started once per module and stopped by PID.

Limits are the defaults' order (60 a minute per token): each test issues tokens of its own
(:meth:`Topology.token`), so one test's count never reaches another's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import requests

from tests.contract.conftest import (
    Gateway,
    _free_port,
    copy_demo,
    demo_home,  # noqa: F401 (the session's built demo, shared with the contract tests)
    run_fxev,
)
from tests.support.edge import Edge, start_edge
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
    lanes = [f"127.0.0.1:{_free_port()}" for _ in "ab"] if request.param == "lanes" else []
    gateways = [
        Gateway(
            env={**env, **({"FXEV_EDGE_LANE": lanes[n]} if lanes else {})},
            token="",
            log_path=base / f"gateway-{name}.log",
        )
        for n, name in enumerate("ab")
    ]
    topology = None
    try:
        for gateway in gateways:
            gateway.start()
        port = _free_port()
        upstreams = [gateway.base_url.removeprefix("http://") for gateway in gateways]
        text = edge_config_text(env, f"127.0.0.1:{port}", upstreams, base / "edge-cache", lanes)
        edge = start_edge(text, base / "nginx", f"http://127.0.0.1:{port}", "/v1/health/live")
        topology = Topology(env, gateways, edge, lanes, base)
        yield topology
    finally:
        if topology is not None:
            topology.edge.stop()  # the one running now (a test may have restarted it)
        for gateway in gateways:
            gateway.stop()


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
