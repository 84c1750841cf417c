"""Fleet tests: ONE real SeaweedFS S3 endpoint for the session, an operator's home seeded once
per session (synthetic captures through the registry's write path, an annotation, ``fxev
build``), copied for each test, and ``fxev`` run in process against a prefix of its own.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from builder.capture.operator import annotate, parse_annotation
from builder.capture.run import Stores
from builder.cli import main
from builder.fleet.topology import Ran
from builder.publish.build import Builder
from builder.publish.writer import TreeWriter
from tests.fleet.redis_server import RedisServer
from tests.fleet.seaweed import BUCKET, CREDENTIALS, seaweedfs
from tests.support.synth import Synth

SEED_REVISIONS = 24
SEED_START = date(1996, 12, 28)  # the captures cross into 1997: two years, two months
LATER_START = date(1997, 3, 1)  # a later capture: a new month


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as endpoint:
        yield endpoint


@dataclasses.dataclass(frozen=True)
class Host:
    home: Path
    site: Path


def build(host: Host) -> None:
    stores = Stores.open(host.home)
    try:
        Builder(stores.registry, stores.blobs, TreeWriter(host.site)).build()
    finally:
        stores.close()


def capture_and_build(host: Host, revisions: int = 1, seed: int = 7) -> None:
    """More revisions (synthetic captures of days after the seed's), then ``fxev build``."""
    with Synth(host.home, seed=seed, start=LATER_START, captures_per_date=2) as synth:
        synth.advance(revisions)
    build(host)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Host:
    folder = tmp_path_factory.mktemp("seeded")
    host = Host(folder / "home", folder / "site")
    with Synth(
        host.home, seed=3, start=SEED_START, captures_per_date=3, correction_rate=0.3,
        failure_rate=0.1,
    ) as synth:  # fmt: skip
        synth.advance(SEED_REVISIONS)
        request = parse_annotation("1996-12-20", "nota de prueba", "fleet-test", "una prueba")
        annotate(synth.stores, request, datetime(1997, 1, 31, tzinfo=UTC))
    build(host)
    return host


@pytest.fixture
def operator(seeded: Host, tmp_path: Path) -> Host:
    """A copy of the seeded home and site: the operator's host of one test."""
    host = Host(tmp_path / "operator" / "home", tmp_path / "operator" / "site")
    shutil.copytree(seeded.home, host.home, symlinks=True)
    shutil.copytree(seeded.site, host.site, symlinks=True)
    return host


@pytest.fixture
def gateway_site(tmp_path: Path) -> Path:
    """A gateway host's empty ``FXEV_SITE``."""
    return tmp_path / "gateway" / "site"


@pytest.fixture
def store_env(s3_endpoint: str) -> dict[str, str]:
    """The store settings of one test: the session's endpoint, a prefix of its own."""
    return {
        "FXEV_STORE_URL": f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}",
        "FXEV_S3_ENDPOINT": s3_endpoint,
        **CREDENTIALS,
    }


def bucket_key(store_env: dict[str, str], key: str) -> str:
    """The bucket's key of a store key under the test's prefix."""
    return f"{store_env['FXEV_STORE_URL'].split('/', 3)[3]}/{key}"


Fxev = Callable[..., Ran]


@pytest.fixture
def fxev(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Fxev:
    """``fxev ARGS`` in this process with ``env`` set (FXEV_HOME, FXEV_SITE, the store's)."""

    def run(env: dict[str, str], *args: str) -> Ran:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real ``redis-server`` for a test module (AOF on, in a temporary folder)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Each phase's report on the item (``rep_call``), for the fixtures that print logs."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
