"""Two builds of one site never run at once, and a build sweeps what a killed build left.

Every test runs real ``python -m builder build`` processes against a small synthetic registry.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from builder.publish import sitelock
from builder.tree import layout
from builder.tree.layout import POINTER
from builder.tree.reader import TreeReader
from tests.builder.treefiles import tree_files
from tests.support.synth import Synth

HEAD = 40
TIMEOUT = 60


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lock") / "home"
    with Synth(folder, seed=5, captures_per_date=4, correction_rate=0.2) as writer:
        writer.advance(HEAD)
    return folder


def build_env(home: Path, site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(home), "FXEV_SITE": str(site), **extra})
    return env


def start_build(home: Path, site: Path, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "builder", "build"],
        env=build_env(home, site, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def result_of(process: subprocess.Popen[bytes]) -> dict[str, object]:
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, err.decode()
    return orjson.loads(out.splitlines()[-1])


def waiting_for_a_lock(pid: int) -> bool:
    """True when ``pid`` is blocked on a file lock (Linux lists waiters with ``->``)."""
    with open("/proc/locks") as handle:
        return any("->" in line and f" {pid} " in f" {line} " for line in handle)


def test_a_build_waits_for_the_build_holding_the_site_lock(home: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with sitelock.exclusive(site):
        process = start_build(home, site)
        deadline = time.monotonic() + TIMEOUT
        while not waiting_for_a_lock(process.pid):
            assert process.poll() is None, "the build ran while another held the site lock"
            assert time.monotonic() < deadline, "the build never waited for the site lock"
            time.sleep(0.05)
        assert not (site / POINTER).exists()
        assert not (site / "revisions").exists()
    assert result_of(process)["published_revision"] == HEAD
    assert TreeReader(site).published_revision() == HEAD


def test_two_builds_started_together_render_each_revision_once(home: Path, tmp_path: Path) -> None:
    site, alone = tmp_path / "site", tmp_path / "alone"
    first, second = start_build(home, site), start_build(home, site)
    results = [result_of(first), result_of(second)]
    assert sorted(r["built_revisions"] for r in results) == [0, HEAD]
    assert all(r["published_revision"] == HEAD for r in results)
    assert result_of(start_build(home, alone))["built_revisions"] == HEAD
    assert tree_files(site) == tree_files(alone)


def test_a_build_sweeps_the_temporary_files_a_killed_build_left(home: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    killed = start_build(home, site, FXEV_FAULT_KILL_AT="build_staged_write")
    killed.communicate(timeout=TIMEOUT)
    assert killed.returncode == -signal.SIGKILL
    staging = layout.staging_dir(site)
    left = [name for name in os.listdir(staging) if name.startswith(sitelock.TEMP_PREFIX)]
    assert len(left) == 1
    assert not (site / POINTER).exists()

    assert result_of(start_build(home, site))["published_revision"] == HEAD
    assert os.listdir(staging) == []
    assert TreeReader(site).published_revision() == HEAD
