"""The topology: the operator's host, Redis, the store, the gateway hosts and the fronts in front
of them, started in order and stopped in reverse (:class:`Topology`, made by :func:`plan`)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from builder.fleet.processes import (
    BUCKET,
    CREDENTIALS,
    HOST,
    PYTHON,
    ROOT,
    WEED_PORT_FLAGS,
    Service,
    StartFailed,
    edge_service,
    free_ports,
    http_ok,
    last_line,
    redis_service,
    reserve_ports,
    store_service,
)

TOKEN_ID_FILE = "fleet_token_id"
OPERATOR_ENV = "operator.env"
LATEST = "/v1/rates/latest?currency=USD&series=publicado"


@dataclasses.dataclass
class GatewayHost:
    """One gateway "host": its own home and mirrored site, ``fxev mirror --follow`` beside
    ``fxev serve``."""

    name: str
    env: dict[str, str]
    serve: Service
    mirror: Service
    lane: str  # ``HOST:PORT`` of its workers' auth lane for the edge (FXEV_EDGE_LANE)

    @property
    def url(self) -> str:
        assert self.serve.url is not None
        return self.serve.url

    @property
    def upstream(self) -> str:
        """``HOST:PORT``, as an edge names its upstreams."""
        return self.url.removeprefix("http://")


@dataclasses.dataclass
class Topology:
    """The processes of one fleet on one machine, and how to reach them.

    ``fronts`` are processes in front of the gateways (the edge): :meth:`add_front` before
    :meth:`start`, or after it to start one at once. ``entry_points`` lists the fronts' URLs,
    then the gateways'."""

    root: Path
    env: dict[str, str]  # the fleet's settings, every host's
    operator_env: dict[str, str]
    redis: Service
    store: Service
    gateways: list[GatewayHost]
    fronts: list[Service] = dataclasses.field(default_factory=list)
    token: str = ""
    started: list[Service] = dataclasses.field(default_factory=list)

    @property
    def entry_points(self) -> list[str]:
        return [front.url for front in self.fronts if front.url] + [g.url for g in self.gateways]

    @property
    def upstreams(self) -> list[str]:
        return [gateway.upstream for gateway in self.gateways]

    @property
    def lanes(self) -> list[str]:
        return [gateway.lane for gateway in self.gateways]

    def add_front(self, service: Service) -> None:
        self.fronts.append(service)
        if self.started:
            self._start(service)

    def fxev(self, env: Mapping[str, str], *args: str, check: bool = True) -> Ran:
        """``fxev ARGS`` as a new process in ``env``."""
        done = subprocess.run(
            [PYTHON, "-m", "builder", *args], env=dict(env), cwd=ROOT, capture_output=True,
            text=True, timeout=300, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            said = last_line(done.stderr)
            raise StartFailed(f"fxev {' '.join(args)}: exit {done.returncode}: {said}")
        return Ran(done.returncode, done.stdout, done.stderr)

    def start(self) -> None:
        """Start everything, in order; on a failure, stop what started, then raise."""
        try:
            self._start(self.redis)
            self._start(self.store)
            self.prepare_operator()
            for gateway in self.gateways:
                self.fxev(gateway.env, "mirror")
                self._start(gateway.mirror)
                self._start(gateway.serve)
            for front in self.fronts:
                self._start(front)
        except BaseException:
            self.stop()
            raise

    def prepare_operator(self) -> None:
        """Seed (idempotent), build, publish the alert state and the tree, rotate the token."""
        env = self.operator_env
        seeded = subprocess.run(
            [PYTHON, "-m", "demo"], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        if seeded.returncode != 0:
            raise StartFailed(f"seeding the operator's home failed: {last_line(seeded.stderr)}")
        self.fxev(env, "alerts", "list")  # publishes the alert state to Redis
        self.fxev(env, "publish")
        self.token = self.rotate_token()

    def rotate_token(self) -> str:
        """Revoke the previous run's token (if any) and issue a new one, in Redis."""
        id_file = Path(self.operator_env["FXEV_HOME"]) / TOKEN_ID_FILE
        if id_file.exists():
            self.fxev(
                self.operator_env, "token", "revoke", id_file.read_text().strip(), check=False
            )
        lines = self.fxev(self.operator_env, "token", "issue", "fleet-demo").out.splitlines()
        id_file.write_text(orjson.loads(lines[-2])["id"])
        return lines[-1]

    def _start(self, service: Service) -> None:
        if service not in self.started:  # first: a stop while it gets ready stops it too
            self.started.append(service)
        service.start()

    def stop(self) -> None:
        """Stop every process started, last started first, by its PID."""
        for service in reversed(self.started):
            service.stop()
        self.started.clear()

    def exited(self) -> list[Service]:
        """Started processes that are no longer running (and were not stopped by us)."""
        return [s for s in self.started if s.process is not None and not s.running]

    def curl_lines(self) -> list[str]:
        auth = f"-H 'Authorization: Bearer {self.token}'"
        return [f"curl {auth} '{url}{LATEST}'" for url in self.entry_points]

    def write_operator_env(self) -> Path:
        """``<root>/operator.env``: the settings of the operator's host (its home and site,
        Redis, the store and its credentials), one ``NAME='value'`` a line, for a shell to
        source before the operator's ``fxev`` commands (docs/operating/fleet.md#make-fleet).
        Private (0600): it names the store's credentials."""
        names = ("FXEV_HOME", "FXEV_SITE", *self.env)
        lines = [f"{name}={shlex.quote(self.operator_env[name])}" for name in names]
        path = self.root / OPERATOR_ENV
        path.touch(mode=0o600)
        path.chmod(0o600)  # a file an earlier run left keeps its mode otherwise
        path.write_text("".join(f"export {line}\n" for line in lines))
        return path


@dataclasses.dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def last(self) -> dict[str, Any]:
        """The JSON object of the last line of stdout."""
        return orjson.loads(self.out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def plan(
    root: Path,
    *,
    gateway_ports: Sequence[int] = (0, 0),
    workers: int = 2,
    settings: Mapping[str, str] | None = None,
    edge_port: int | None = None,
) -> Topology:
    """The topology under ``root``: one gateway host per port (0: a free one), the fleet's
    ``settings`` (``FXEV_*``) on every host, and with ``edge_port`` (0: a free one) the edge in
    front of the gateways. Nothing starts until :meth:`Topology.start`."""
    root = root.resolve()
    reserve_ports([port for port in (*gateway_ports, edge_port or 0) if port])
    redis_port, *weed_ports = free_ports(1 + len(WEED_PORT_FLAGS))
    store = store_service(root, dict(zip(WEED_PORT_FLAGS, weed_ports, strict=True)))
    assert store.url is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith(("FXEV_", "AWS_"))}
    fleet = {
        "FXEV_REDIS_URL": f"redis://{HOST}:{redis_port}/0",
        "FXEV_STORE_URL": f"s3://{BUCKET}/tree",
        "FXEV_S3_ENDPOINT": store.url,
        "FXEV_MIRROR_INTERVAL_S": "2",
        **CREDENTIALS,
        **(settings or {}),
    }
    env = base | fleet | {"PYTHONPATH": str(ROOT)}
    operator = env | _home_env(root / "operator")
    ports = [port or free_ports(1)[0] for port in gateway_ports]
    gateways = [_gateway_host(root, chr(ord("a") + n), port, env, workers) for n, port in
                enumerate(ports)]  # fmt: skip
    topology = Topology(root, fleet, operator, redis_service(root, redis_port), store, gateways)
    if edge_port is not None:
        port = edge_port or free_ports(1)[0]
        topology.add_front(edge_service(root, port, topology.upstreams, operator, topology.lanes))
    return topology


def _home_env(folder: Path) -> dict[str, str]:
    return {"FXEV_HOME": str(folder / "home"), "FXEV_SITE": str(folder / "site")}


def _gateway_host(
    root: Path, name: str, port: int, env: Mapping[str, str], workers: int
) -> GatewayHost:
    folder = root / f"gateway-{name}"
    host_env = dict(env) | _home_env(folder)
    url = f"http://{HOST}:{port}"
    lane = f"{HOST}:{free_ports(1)[0]}"
    serve_argv = [PYTHON, "-m", "gateway", "serve", "--host", HOST, "--port", str(port),
                  "--workers", str(workers)]  # fmt: skip

    def ready(service: Service) -> bool:
        # Every worker up (Sanic's manager ignores a SIGTERM before all said so), then live.
        workers_up = service.new_log().count("Worker ready") >= workers
        return workers_up and http_ok(url + "/v1/health/live")

    serve_env = host_env | {"FXEV_EDGE_LANE": lane}
    serve = Service(f"gateway-{name}", serve_argv, serve_env, folder / "serve.log", ready, url)
    mirror_argv = [PYTHON, "-m", "builder", "mirror", "--follow"]
    mirror = Service(f"mirror-{name}", mirror_argv, host_env, folder / "mirror.log")
    return GatewayHost(name, host_env, serve, mirror, lane)
