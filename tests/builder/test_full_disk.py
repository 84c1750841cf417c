"""A disk that fills up during ``fxev capture``: a real one, a 2 MiB tmpfs mounted as FXEV_HOME.

The home is mounted, seeded by one successful capture, then filled by a file until the file
system refuses a byte, and given back ``slack`` bytes: different amounts make the capture meet
the full disk at different writes (opening the databases, the evidence blob, the registry's
transaction, the alert store after the commit). Whatever the write, ``fxev capture`` (a
subprocess, ``FXEV_MIN_FREE_BYTES=0`` so nothing stops it early) either records its outcome or
fails with exactly one ``fxev: `` line on stderr and no traceback; the registry stays intact
(``fxev registry verify`` exits 0 once space is freed), and the next capture works.

Mounting needs root (CAP_SYS_ADMIN); where it is refused, the test is skipped and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builder.localserver import LocalServer

FXEV = Path(sys.executable).with_name("fxev")
NOW = "2026-09-20T13:05:00-05:00"
DOCUMENTED = b"20/09/2026|3.354|3.362|\r\n"
CHANGED = b"20/09/2026|3.357|3.365|\r\n"  # a correction: a new blob, a revision, alerts
OUTAGE = b"<html><body>" + b"<p>Service Unavailable</p>" * 8_000 + b"</body></html>"  # 208 KB
KIB = 1024


@pytest.fixture
def small_home(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs at ``tmp_path/home``, unmounted afterwards whatever happened."""
    home = tmp_path / "home"
    home.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) on this machine: cannot make a small real file system")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(home)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        reason = mounted.stderr.strip() or f"exit {mounted.returncode}"
        pytest.skip(f"mounting a tmpfs is not permitted here (needs root): {reason}")
    try:
        yield home
    finally:
        if subprocess.run(["umount", str(home)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(home)], check=False)


def fill(home: Path, slack: int) -> Path:
    """Fill ``home``'s file system until it refuses a byte, then give ``slack`` bytes back."""
    filler = home / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (64 * KIB, 4 * KIB, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - slack))
    return filler


def fxev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FXEV), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def assert_one_line_failure(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, proc
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("fxev: "), proc.stderr


@pytest.mark.parametrize(
    ("slack", "answer"),
    [
        (0, CHANGED),
        (64 * KIB, CHANGED),
        (96 * KIB, CHANGED),
        (148 * KIB, CHANGED),
        (128 * KIB, OUTAGE),
    ],
    ids=["full", "64k", "96k", "148k", "outage-evidence-128k"],
)
def test_a_capture_on_a_full_disk_fails_in_one_line_and_leaves_the_registry_intact(
    slack: int, answer: bytes, small_home: Path, tmp_path: Path
) -> None:
    with LocalServer(body=DOCUMENTED, headers={"Content-Type": "text/plain"}) as source:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
        env |= {
            "FXEV_HOME": str(small_home),
            "FXEV_SITE": str(tmp_path / "site"),
            "FXEV_TAXAUTH_URL": source.url,
            "FXEV_NOW": NOW,
            "FXEV_MIN_FREE_BYTES": "0",
        }
        seeded = fxev(env, "capture")
        assert seeded.returncode == 0, seeded.stderr
        source.set(body=answer, status=503 if answer == OUTAGE else 200)
        filler = fill(small_home, slack)

        on_full_disk = fxev(env, "capture")

        assert "Traceback" not in on_full_disk.stderr, on_full_disk.stderr
        if on_full_disk.returncode == 0:  # it fitted: a recorded outcome, nothing on stderr
            assert on_full_disk.stderr == ""
            assert json.loads(on_full_disk.stdout.splitlines()[-1])["revision"] == 2
        else:
            assert_one_line_failure(on_full_disk)
        if slack == 0:
            assert on_full_disk.returncode != 0  # nothing at all can be written
        as_is = fxev(env, "registry", "verify")
        if as_is.returncode != 0:  # even reading SQLite may need a byte of disk
            assert_one_line_failure(as_is)

        filler.unlink()
        verified = fxev(env, "registry", "verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert json.loads(verified.stdout.splitlines()[-1])["ok"] is True
        again = fxev(env, "capture")
        assert again.returncode == 0, again.stderr
        assert fxev(env, "registry", "verify").returncode == 0
