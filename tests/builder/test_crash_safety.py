"""A capture killed anywhere leaves the registry at the previous revision or the next.

Every test runs a real ``python -m builder capture`` subprocess against a real local HTTP server
and kills it with SIGKILL: at each named crash point (``FXEV_FAULT_KILL_AT``), for a successful
capture and for a recorded failure (503), and at seeded random instants. After each kill, a
fresh SQLite connection and ``fxev registry verify`` must find a whole registry: the head is the
previous revision or the next, no row belongs to a revision above the head, every evidence row
has its bytes on disk, the hash chain is intact, and the next normal capture works.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder import cli
from builder.disk import faults
from builder.registry.records import DATA_TABLES
from tests.builder.localserver import LocalServer
from tests.support.cli import verified_head

NOW = "2026-09-20T13:05:00-05:00"
FIRST = b"20/09/2026|3.354|3.362|\r\n"
CORRECTED = b"20/09/2026|3.356|3.364|\r\n"
OUTAGE = b"<html><body>Service Unavailable</body></html>"
FXEV = Path(sys.executable).with_name("fxev")
TIMEOUT = 60

# A 503 never returns from the fetch, so the run never reaches ``after_fetch``.
UNREACHABLE = {("failure", "after_fetch")}
CASES = [
    pytest.param(kind, point, id=f"{kind}-{point}")
    for kind in ("success", "failure")
    for point in faults.POINTS
    if (kind, point) not in UNREACHABLE
]


# -- helpers ------------------------------------------------------------------------------


def base_env(home: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(home), "FXEV_TAXAUTH_URL": url, "FXEV_NOW": NOW})
    return env


def run_capture(home: Path, url: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "builder", "capture"],
        env=base_env(home, url),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode().splitlines()[-1])


def run_verify(home: Path, url: str) -> int:
    """The head revision ``fxev registry verify`` finds whole."""
    proc = subprocess.run(
        [str(FXEV), "registry", "verify"],
        env=base_env(home, url),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout.decode(), proc.stderr.decode())
    return verified_head(proc.stdout.decode())


@contextlib.contextmanager
def raw_registry(home: Path) -> Iterator[sqlite3.Connection]:
    """A fresh connection of our own, as a process starting after the crash would open it."""
    with contextlib.closing(sqlite3.connect(home / "registry.sqlite")) as conn:
        conn.row_factory = sqlite3.Row
        yield conn


def head_revision(home: Path) -> int:
    with raw_registry(home) as conn:
        return conn.execute("SELECT COALESCE(MAX(revision), 0) FROM revisions").fetchone()[0]


def assert_registry_whole(home: Path, expected_heads: set[int]) -> int:
    """The invariants a crash must never break; returns the head revision."""
    with raw_registry(home) as conn:
        revisions = [row[0] for row in conn.execute("SELECT revision FROM revisions ORDER BY 1")]
        head = revisions[-1] if revisions else 0
        assert head in expected_heads, f"head is {head}, expected one of {expected_heads}"
        assert revisions == list(range(1, head + 1))

        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'revisions'"
            )
        ]
        checked = set()
        for table in tables:
            columns = {row["name"] for row in conn.execute(f"PRAGMA table_info({table})")}
            for column in columns & {"revision", "revision_creada"}:
                above = conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE {column} > ? OR {column} < 1", (head,)
                ).fetchone()[0]
                assert above == 0, f"{table} has {above} rows outside revisions 1..{head}"
                checked.add(table)
        assert {table.name for table in DATA_TABLES} <= checked

        hashes = [row[0] for row in conn.execute("SELECT DISTINCT sha256 FROM evidence")]
    assert hashes, "the registry should hold the evidence of revision 1 at least"
    for sha256 in hashes:
        blob = home / "evidence" / "sha256" / sha256[:2] / sha256
        assert blob.is_file(), f"evidence row sha256:{sha256} has no blob on disk"
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == sha256
    return head


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(body=FIRST) as local:
        yield local


@pytest.fixture(scope="module")
def revision_one(server: LocalServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A registry holding one good revision, made by one normal capture (copied per test)."""
    home = tmp_path_factory.mktemp("revision_one") / "home"
    server.set(body=FIRST, status=200)
    result = run_capture(home, server.url)
    assert (result["revision"], result["outcome"]) == (1, "nueva")
    return home


@pytest.fixture
def home(revision_one: Path, tmp_path: Path) -> Path:
    target = tmp_path / "home"
    shutil.copytree(revision_one, target)
    assert head_revision(target) == 1
    return target


# -- named crash points -------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "point"), CASES)
def test_capture_killed_at_a_crash_point_leaves_previous_or_next_revision(
    server: LocalServer, home: Path, kind: str, point: str
) -> None:
    if kind == "success":
        server.set(body=CORRECTED, status=200, headers={"Content-Type": "text/plain"})
    else:
        server.set(body=OUTAGE, status=503, headers={"Content-Type": "text/html"})
    env = {**base_env(home, server.url), "FXEV_FAULT_KILL_AT": point}

    proc = subprocess.run(
        [sys.executable, "-m", "builder", "capture"],
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )

    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr.decode())
    assert proc.stdout == b"", "a killed capture must not have reported a result"
    expected = 2 if point == "after_commit" else 1
    assert assert_registry_whole(home, {expected}) == expected
    assert run_verify(home, server.url) == expected

    # The next normal capture works on what the crash left, and the chain still verifies.
    server.set(body=CORRECTED if kind == "success" else FIRST, status=200)
    result = run_capture(home, server.url)
    assert result["revision"] == expected + 1
    if kind == "success":
        # The corrected values are either already committed (after_commit) or still new.
        assert result["outcome"] == ("identica" if expected == 2 else "correccion")
    else:
        assert result["outcome"] == "identica"
    assert assert_registry_whole(home, {expected + 1}) == expected + 1
    assert run_verify(home, server.url) == expected + 1


def test_failed_capture_never_reaches_after_fetch_and_records_its_failure(
    server: LocalServer, home: Path
) -> None:
    server.set(body=OUTAGE, status=503, headers={"Content-Type": "text/html"})
    env = {**base_env(home, server.url), "FXEV_FAULT_KILL_AT": "after_fetch"}

    proc = subprocess.run(
        [sys.executable, "-m", "builder", "capture"],
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout.decode().splitlines()[-1])
    assert (result["revision"], result["outcome"]) == (2, "fallo")
    assert_registry_whole(home, {2})


# -- random instants ----------------------------------------------------------------------

ATTEMPTS = 20
# The interpreter needs ~200 ms to start and import before it sends its request; after the
# request, the fetch, blob fsync and SQLite commit take only ~5-10 ms, then the process exits.
# The random delay is therefore counted from the moment the server sees the request, and most
# delays fall in 0-12 ms so that kills land before, inside and after the write (a few go up to
# the 150 ms bound, past the exit). Which instant each kill hits varies with machine load; the
# invariants must hold whatever it is.
MAX_DELAY_S = 0.150
SEED = 20260920


def test_capture_killed_at_random_instants_always_leaves_a_whole_registry(
    server: LocalServer, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    rng = random.Random(SEED)
    delays = [
        rng.uniform(0, 0.012) if rng.random() < 0.8 else rng.uniform(0, MAX_DELAY_S)
        for _ in range(ATTEMPTS)
    ]
    for name in [k for k in os.environ if k.startswith("FXEV_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FXEV_HOME", str(home))
    monkeypatch.setenv("FXEV_TAXAUTH_URL", server.url)
    monkeypatch.setenv("FXEV_NOW", NOW)

    killed = 0
    head = 1
    for attempt, delay in enumerate(delays):
        if attempt % 4 == 3:
            server.set(body=OUTAGE, status=503, headers={"Content-Type": "text/html"})
        else:
            compra = f"3.{354 + attempt:03d}"
            venta = f"3.{362 + attempt:03d}"
            server.set(
                body=f"20/09/2026|{compra}|{venta}|\r\n".encode(),
                status=200,
                headers={"Content-Type": "text/plain"},
            )
        seen = server.requests
        proc = subprocess.Popen(
            [sys.executable, "-m", "builder", "capture"],
            env=base_env(home, server.url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert server.wait_for_request(seen + 1, timeout=TIMEOUT), "capture never fetched"
            # The child is not reaped before wait(), so its pid cannot have been reused.
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            returncode = proc.wait(timeout=TIMEOUT)
        assert returncode in (0, -signal.SIGKILL), f"attempt {attempt}: exit {returncode}"
        killed += returncode == -signal.SIGKILL

        context = f"attempt {attempt} (delay {delay * 1000:.1f} ms, exit {returncode})"
        new_head = assert_registry_whole(home, {head, head + 1})
        if returncode == 0:
            assert new_head == head + 1, context
        head = new_head

        capsys.readouterr()
        assert cli.main(["registry", "verify"]) == 0, context
        assert verified_head(capsys.readouterr().out) == head, context

        # A following normal capture (in process: same code, no fault point set) succeeds.
        server.set(status=200)
        if attempt % 4 == 3:
            server.set(body=FIRST, headers={"Content-Type": "text/plain"})
        assert cli.main(["capture"]) == 0, context
        result = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert result["revision"] == head + 1, context
        assert result["outcome"] in ("nueva", "identica", "correccion"), context
        head = assert_registry_whole(home, {head + 1})

    assert killed > 0, "no attempt was actually killed: the delays never hit a running capture"
    assert run_verify(home, server.url) == head


def test_a_durable_replace_fsyncs_the_new_file_before_renaming_it_then_fsyncs_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The published pointer's write (DECISIONS 4): a file renamed into place before its bytes
    are on disk can be an empty pointer after a power cut; the rename itself needs the folder's
    fsync."""
    from builder.disk.durable import replace_durably

    site = tmp_path / "site"
    site.mkdir()
    pointer = site / "PUBLISHED"
    pointer.write_bytes(b"1\n")
    steps: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        steps.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        steps.append(("replace", os.fspath(src)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)

    replace_durably(pointer, b"2\n", staging=tmp_path / "staging")

    assert pointer.read_bytes() == b"2\n"
    renamed = [path for step, path in steps if step == "replace"]
    assert len(renamed) == 1, steps
    new_name = renamed[0]
    at = steps.index(("replace", new_name))
    assert ("fsync", new_name) in steps[:at], steps
    assert ("fsync", str(site)) in steps[at + 1 :], steps
