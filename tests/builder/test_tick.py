"""``fxev tick``, what a scheduler runs: every enabled source captured, then one build; a tick
that finds nothing new makes no revision beyond what its captures record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.builder.localserver import LocalServer
from tests.realdata import bcrp_recording

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-09-08T20:00:00-05:00"
TEXT = b"08/09/2026|3.351|3.372|\r\n"  # the real publication of 8 September
TIMEOUT = 120


def run_tick(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", "tick"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def tick(env: dict[str, str]) -> dict[str, Any]:
    proc = run_tick(env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_tick_captures_every_enabled_source_then_builds(tmp_path: Path) -> None:
    text = LocalServer(TEXT, headers={"Content-Type": "text/plain"})
    bank = LocalServer(
        bcrp_recording().body, headers={"Content-Type": "text/html; charset=UTF-8"}, path="/api"
    )
    with text, bank:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")} | {
            "FXEV_HOME": str(tmp_path / "home"),
            "FXEV_SITE": str(tmp_path / "site"),
            "FXEV_NOW": NOW,
            "FXEV_TAXAUTH_URL": text.url,
            "FXEV_CENTRALBANK_URL": bank.url,
            "FXEV_CENTRALBANK_DAYS": "8",
            "PYTHONPATH": str(ROOT),
        }
        first = tick(env)
        assert set(first["captures"]) == {"taxauth_txt", "centralbank"}
        assert first["captures"]["taxauth_txt"]["outcome"] == "nueva"
        assert first["captures"]["centralbank"]["outcome"] == "nueva"
        assert first["build"]["published_revision"] == 2
        # The publication of the 8th was checked against the close of the 7th, in revision 2.
        second = tick(env)
        assert {c["outcome"] for c in second["captures"].values()} == {"identica"}
        assert second["build"]["published_revision"] == 4  # two identical re-captures, no more

        only_text = env | {"FXEV_SOURCES": "taxauth_txt"}
        third = tick(only_text)
        assert list(third["captures"]) == ["taxauth_txt"]
        assert third["build"]["published_revision"] == 5
        assert bank.requests == 2  # the disabled source was not asked


def test_a_tick_on_a_site_of_another_registry_captures_nothing(tmp_path: Path) -> None:
    """DECISIONS 3: "errors go to stderr with a non-zero exit and change nothing"; 14: "`fxev
    build` on a site of another registry refuses (one line naming both, exit 1)". A tick whose
    build would refuse the site refuses before its captures: the registry keeps its revisions
    (before, both captures were committed, then the build refused and no summary was printed)."""
    text = LocalServer(TEXT, headers={"Content-Type": "text/plain"})
    with text:
        base = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")} | {
            "FXEV_NOW": NOW,
            "FXEV_TAXAUTH_URL": text.url,
            "FXEV_SOURCES": "taxauth_txt",
            "PYTHONPATH": str(ROOT),
        }
        ours = base | {"FXEV_HOME": str(tmp_path / "a"), "FXEV_SITE": str(tmp_path / "site-a")}
        theirs = base | {"FXEV_HOME": str(tmp_path / "b"), "FXEV_SITE": str(tmp_path / "site-b")}
        assert tick(ours)["build"]["published_revision"] == 1
        assert tick(theirs)["build"]["published_revision"] == 1
        registry = tmp_path / "b" / "registry.sqlite"
        before = registry.read_bytes()
        refused = run_tick(theirs | {"FXEV_SITE": ours["FXEV_SITE"]})
        assert refused.returncode == 1, refused
        assert len(refused.stderr.splitlines()) == 1 and "not of this registry" in refused.stderr
        assert refused.stdout == ""
        assert registry.read_bytes() == before
        assert text.requests == 2  # the refused tick asked no source

        # A home not made yet (a mistyped FXEV_HOME) owns no tree: refused before its stores
        # are made, so a later command does not find an empty registry there.
        mistyped = theirs | {"FXEV_HOME": str(tmp_path / "c"), "FXEV_SITE": ours["FXEV_SITE"]}
        refused = run_tick(mistyped)
        assert refused.returncode == 1, refused
        assert len(refused.stderr.splitlines()) == 1 and "not of this registry" in refused.stderr
        assert "none yet" in refused.stderr
        assert not (tmp_path / "c").exists()
        assert text.requests == 2


def test_a_tick_whose_build_would_refuse_the_log_key_captures_nothing(tmp_path: Path) -> None:
    """DECISIONS 3: an error changes nothing. A home whose log origin is not the published
    log's (FXEV_LOG_ORIGIN set for the first build, then unset) is refused by the build; the
    tick captured first, committed a revision, then failed, its captures never printed."""
    text = LocalServer(TEXT, headers={"Content-Type": "text/plain"})
    with text:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")} | {
            "FXEV_HOME": str(tmp_path / "home"),
            "FXEV_SITE": str(tmp_path / "site"),
            "FXEV_NOW": NOW,
            "FXEV_TAXAUTH_URL": text.url,
            "FXEV_SOURCES": "taxauth_txt",
            "PYTHONPATH": str(ROOT),
        }
        assert tick(env | {"FXEV_LOG_ORIGIN": "example.org/fxev"})["build"]["published_revision"]
        registry = tmp_path / "home" / "registry.sqlite"
        before = registry.read_bytes()
        refused = run_tick(env)
        assert refused.returncode == 1, refused
        assert len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "example.org/fxev" in refused.stderr and "refusing to sign" in refused.stderr
        assert refused.stdout == ""
        assert registry.read_bytes() == before
        assert text.requests == 1  # the refused tick asked no source
