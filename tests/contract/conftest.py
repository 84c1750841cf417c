"""A real gateway for contract tests: a seeded home, a token, ``python -m gateway serve``.

The gateway runs as a subprocess on 127.0.0.1 (free port, 2 workers); tests talk to it with
``requests``. Its log is printed when a test fails; it is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import requests

from builder.tree.reader import TreeReader
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
# Fixed "now" (a Monday in Lima): hoy_lima and the demo's capture instants are deterministic.
NOW = "2026-09-21T15:00:00-05:00"
START_TIMEOUT_S = 30.0
WORKERS = 2
SERVE = (sys.executable, "-m", "gateway", "serve")


def home_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env |= {
        "FXEV_HOME": str(home / "home"),
        "FXEV_SITE": str(home / "site"),
        "FXEV_NOW": NOW,
        "PYTHONPATH": str(ROOT),
        # Raised: the suite sends hundreds of requests a minute on one token. The limits
        # themselves are tested on gateways of their own (test_rate_limits.py).
        "FXEV_RATE_LIMIT_PER_MIN": "100000",
        "FXEV_RATE_LIMIT_PER_DAY": "1000000",
    }
    return env


def fxev(env: dict[str, str], *args: str) -> list[str]:
    """Run ``python -m builder ...``; its stdout lines."""
    done = subprocess.run(
        [sys.executable, "-m", "builder", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def issue_token(env: dict[str, str], name: str) -> tuple[str, str]:
    """(token id, token text) of a freshly issued token."""
    lines = fxev(env, "token", "issue", name)
    return orjson.loads(lines[-2])["id"], lines[-1]


def run_fxev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m builder ...`` whatever its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ledger_entries(env: dict[str, str], request_id: str) -> list[dict[str, object]]:
    """``fxev requests show ID``: its entries (empty when it exits 1, as when no answer has
    been recorded yet and the ledger's folder does not exist)."""
    done = run_fxev(env, "requests", "show", request_id)
    assert done.returncode in (0, 1), done.stderr
    if done.returncode == 1 and done.stderr.startswith("fxev: no request ledger at "):
        return []
    entries = orjson.loads(done.stdout.splitlines()[-1])["entries"]
    assert (done.returncode == 0) is bool(entries)
    return entries


def copy_demo(demo_home: Path, base: Path, **settings: str) -> tuple[dict[str, str], str]:
    """A private copy of the built demo (its own ledger and limits); (env, a new token)."""
    shutil.copytree(demo_home / "home", base / "home", ignore=shutil.ignore_patterns("ledger"))
    shutil.copytree(demo_home / "site", base / "site", symlinks=True)
    env = home_env(base) | settings
    return env, issue_token(env, "private")[1]


def seed_demo(base: Path) -> dict[str, str]:
    env = home_env(base)
    done = subprocess.run(
        [sys.executable, "-m", "demo"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return env


@dataclasses.dataclass
class Gateway:
    env: dict[str, str]
    token: str
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    base_url: str = ""

    @property
    def home(self) -> Path:
        return Path(self.env["FXEV_HOME"])

    @property
    def site(self) -> Path:
        return Path(self.env["FXEV_SITE"])

    def start(self, port: int | None = None) -> None:
        """Start on ``port`` (a free one if None) and wait until both workers answer."""
        port = port or free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*SERVE, "--port", str(port), "--workers", str(WORKERS)],
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gateway exited early:\n{self.log()}")
            # Both workers up: Sanic's manager ignores a SIGTERM that comes before every
            # worker has said it is ready, and a test may need both workers.
            ready = self.log_path.read_bytes()[log_start:].count(b"Worker ready")
            try:
                live = requests.get(self.url("/v1/health/live"), timeout=1).status_code == 200
            except requests.RequestException:
                live = False
            if live and ready >= WORKERS:
                time.sleep(0.3)  # the manager reads the workers' acks just after they log
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"gateway did not answer within {START_TIMEOUT_S}s:\n{self.log()}")

    def stop(self) -> None:
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def kill(self) -> None:
        """SIGKILL the gateway and all its workers (the session this fixture started)."""
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def url(self, path: str) -> str:
        return self.base_url + path

    def get(self, path: str, token: str | None = "default", **kwargs: object) -> requests.Response:
        headers = dict(kwargs.pop("headers", {}) or {})  # type: ignore[call-overload]
        if token is not None:
            headers["Authorization"] = f"Bearer {self.token if token == 'default' else token}"
        return requests.get(self.url(path), headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]

    def request(self, method: str, path: str, **kwargs: object) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return requests.request(method, self.url(path), headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]


def _running(
    base: Path, env: dict[str, str], token: str, kind: type[Gateway] = Gateway
) -> Iterator[Gateway]:
    gateway = kind(env=env, token=token, log_path=base / "gateway.log")
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


@contextlib.contextmanager
def running(
    base: Path, env: dict[str, str], token: str, kind: type[Gateway] = Gateway
) -> Iterator[Gateway]:
    """A gateway (``kind``) over ``env`` for a ``with`` block, its log in ``base``, stopped by
    its PID."""
    yield from _running(base, env, token, kind)


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("demo")
    seed_demo(base)
    return base


@pytest.fixture(scope="session")
def gateway(demo_home: Path) -> Iterator[Gateway]:
    """The gateway over the demo: real history, a correction, an open alert, closes; published 6."""
    env = home_env(demo_home)
    _, token = issue_token(env, "contract")
    yield from _running(demo_home, env, token)


@pytest.fixture(scope="session")
def unbuilt_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway over a home with a token and no published tree yet."""
    base = tmp_path_factory.mktemp("unbuilt")
    env = home_env(base)
    _, token = issue_token(env, "contract")
    yield from _running(base, env, token)


@pytest.fixture(scope="session")
def corrupt_gateway(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    """A copy of the demo whose evidence blobs were altered on disk after the build."""
    base = tmp_path_factory.mktemp("corrupt")
    shutil.copytree(demo_home / "home", base / "home")
    shutil.copytree(demo_home / "site", base / "site", symlinks=True)
    tree = TreeReader(base / "site")
    published = tree.published_revision()
    assert published is not None
    for link in (base / "site" / "evidence").glob("*.json"):
        meta = tree.evidence_meta(link.name.removesuffix(".json"), published)
        assert meta is not None
        sha = meta.sha256
        blob = base / "site" / "objects" / "sha256" / sha[:2] / sha
        blob.chmod(0o644)
        blob.write_bytes(b"tampered")
    env = home_env(base)
    _, token = issue_token(env, "contract")
    yield from _running(base, env, token)


TAMPERED_REVISION = 2


@pytest.fixture(scope="session")
def tampered_record_gateway(
    tmp_path_factory: pytest.TempPathFactory, demo_home: Path
) -> Iterator[Gateway]:
    """A copy of the demo whose record of revision 2 was altered on disk after the build."""
    base = tmp_path_factory.mktemp("tampered")
    shutil.copytree(demo_home / "home", base / "home")
    shutil.copytree(demo_home / "site", base / "site", symlinks=True)
    found = TreeReader(base / "site").log.location(TAMPERED_REVISION)
    assert found is not None
    name, offset, length = found
    pack = Path(name)
    data = bytearray(pack.read_bytes())
    record = bytes(data[offset : offset + length])
    at = (
        offset + record.index(b'"ts_commit":"') + len(b'"ts_commit":"') + 3
    )  # the year's last digit
    data[at] = ord("9") if data[at] != ord("9") else ord("8")
    pack.write_bytes(bytes(data))
    env = home_env(base)
    _, token = issue_token(env, "contract")
    yield from _running(base, env, token)


@pytest.fixture
def private_gateway(
    tmp_path: Path, demo_home: Path, request: pytest.FixtureRequest
) -> Iterator[Gateway]:
    """A gateway over a private copy of the demo; settings from ``@pytest.mark.gateway_env``."""
    marker = request.node.get_closest_marker("gateway_env")
    env, token = copy_demo(demo_home, tmp_path, **(marker.kwargs if marker else {}))
    yield from _running(tmp_path, env, token)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def _print_gateway_log_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed:
        return
    # The test's own fixture values: a function-scoped gateway may be torn down already, but its
    # log file is still there (getfixturevalue would fail on it).
    values = getattr(request.node, "funcargs", None) or {}
    for name, value in values.items():
        if isinstance(value, Gateway):
            print(f"--- {name} log ({value.log_path}) ---\n{value.log()}")
