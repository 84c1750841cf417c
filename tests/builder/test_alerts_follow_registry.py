"""Alerts follow the registry (docs/operating/alerts.md#follow-the-registry).

A capture killed right after its registry commit (``FXEV_FAULT_KILL_AT=after_commit``) never
wrote its alert; the next command that touches alerts must bring the alert store up to what the
registry recorded, so the alerts end exactly as in the same sequence run without the kill. Each
test runs real ``python -m builder`` subprocesses against a real local HTTP server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from builder.capture.alerting import sync_alerts
from builder.capture.run import Stores
from builder.ops.alerts import ALERTS_FILE, AlertStore
from tests.builder.localserver import LocalServer

NOW = "2026-09-20T13:05:00-05:00"
GOOD = b"20/09/2026|3.354|3.362|\r\n"
OUTAGE = b"<html><body>Service Unavailable</body></html>"
TIMEOUT = 60

# A step: (the source's answer, the command's arguments, whether to kill it at after_commit).
Step = tuple[str | None, Sequence[str], bool]
CAPTURE = ("capture",)
LIST_ALL = ("alerts", "list", "--all")


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer(body=GOOD) as local:
        yield local


def fxev(home: Path, url: str, args: Sequence[str], kill: bool = False) -> dict[str, Any] | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(home), "FXEV_TAXAUTH_URL": url, "FXEV_NOW": NOW})
    if kill:
        env["FXEV_FAULT_KILL_AT"] = "after_commit"
    proc = subprocess.run(
        [sys.executable, "-m", "builder", *args],
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    if kill:
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr.decode())
        assert proc.stdout == b""
        return None
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode().splitlines()[-1])


def serve(server: LocalServer, answer: str | None) -> None:
    if answer == "good":
        server.set(body=GOOD, status=200, headers={"Content-Type": "text/plain"})
    elif answer == "503":
        server.set(body=OUTAGE, status=503, headers={"Content-Type": "text/html"})


def alert_state(alerts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must not depend on the kill: everything but ids (random per run)."""
    return sorted(
        (
            a["tipo"], a["estado"], a["contador"], a["condicion"], a["fuente"],
            a["fecha_serie"], a["primera_vez"], a["ultima_vez"], a["resuelta_por"],
            a["detalle"].get("revision"), a["detalle"].get("fecha_esperada"),
            a["detalle"].get("mensaje"), sorted(a["detalle"]),
        )
        for a in alerts
    )  # fmt: skip


def run_sequence(server: LocalServer, home: Path, steps: Sequence[Step]) -> list[list[tuple]]:
    """Run ``steps``; after each ``alerts list --all``, the alert state it printed."""
    states = []
    for answer, args, kill in steps:
        serve(server, answer)
        printed = fxev(home, server.url, args, kill)
        if tuple(args) == LIST_ALL:
            assert printed is not None
            states.append(alert_state(printed["items"]))
    return states


def killed_and_reference(
    server: LocalServer, tmp_path: Path, steps: Sequence[Step]
) -> tuple[list[list[tuple]], list[list[tuple]]]:
    killed = run_sequence(server, tmp_path / "killed", steps)
    reference = run_sequence(
        server, tmp_path / "reference", [(answer, args, False) for answer, args, _ in steps]
    )
    return killed, reference


# -- a failure killed after its commit ------------------------------------------------------


def test_a_failure_killed_after_commit_still_opens_its_alert_and_the_next_one_bumps_it(
    server: LocalServer, tmp_path: Path
) -> None:
    steps: list[Step] = [
        ("good", CAPTURE, False),  # revision 1
        ("503", CAPTURE, True),  # revision 2: recorded, then killed before its alert
        (None, LIST_ALL, False),
        ("503", CAPTURE, False),  # revision 3: the same condition again
        (None, LIST_ALL, False),
    ]
    killed, reference = killed_and_reference(server, tmp_path, steps)

    assert killed == reference
    after_kill, after_next = killed
    assert [(s[0], s[1], s[2], s[3]) for s in after_kill] == [
        ("fuente_no_disponible", "abierta", 1, "fuente_no_disponible:taxauth_txt")
    ]
    assert [(s[0], s[1], s[2], s[9]) for s in after_next] == [
        ("fuente_no_disponible", "abierta", 2, 3)
    ]


def test_the_next_capture_alone_applies_the_failure_a_killed_capture_recorded(
    server: LocalServer, tmp_path: Path
) -> None:
    """No ``alerts list`` in between, and the very first revision of the home killed: the next
    capture reports the alert with both failures counted."""
    home = tmp_path / "home"
    serve(server, "503")
    fxev(home, server.url, CAPTURE, kill=True)
    result = fxev(home, server.url, CAPTURE)
    assert result is not None
    (alert,) = result["alertas"]
    assert (alert["tipo"], alert["estado"], alert["contador"]) == (
        "fuente_no_disponible",
        "abierta",
        2,
    )
    assert alert["detalle"]["revision"] == result["revision"] == 2


# -- a recovery killed after its commit -----------------------------------------------------


def test_a_good_capture_killed_after_commit_still_resolves_the_failure_by_the_system(
    server: LocalServer, tmp_path: Path
) -> None:
    steps: list[Step] = [
        ("good", CAPTURE, False),  # revision 1
        ("503", CAPTURE, False),  # revision 2: the alert opens
        (None, LIST_ALL, False),
        ("good", CAPTURE, True),  # revision 3: recovered, killed before resolving
        (None, LIST_ALL, False),
    ]
    killed, reference = killed_and_reference(server, tmp_path, steps)

    assert killed == reference
    opened, recovered = killed
    assert [(s[0], s[1], s[2]) for s in opened] == [("fuente_no_disponible", "abierta", 1)]
    assert [(s[0], s[1], s[2], s[8]) for s in recovered] == [
        ("fuente_no_disponible", "resuelta", 1, "sistema")
    ]


# -- the sync itself --------------------------------------------------------------------------


def alert_rows(home: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(home / ALERTS_FILE)) as conn:
        rows = conn.execute("SELECT * FROM alerts ORDER BY id").fetchall()
        links = conn.execute("SELECT * FROM revision_alerts ORDER BY revision, ord").fetchall()
        mark = conn.execute("SELECT * FROM registry_applied").fetchall()
    return [*rows, *links, *mark]


def test_syncing_again_changes_nothing_and_a_replay_derives_the_live_alerts(
    server: LocalServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    for answer in ("good", "503", "503", "good", "503"):
        serve(server, answer)
        fxev(home, server.url, CAPTURE)
    live = fxev(home, server.url, LIST_ALL)
    assert live is not None
    before = alert_rows(home)

    with closing(Stores.open(home)) as stores:
        assert stores.alerts.applied_revision() == 5
        assert sync_alerts(stores.registry, stores.alerts) == 0
        assert sync_alerts(stores.registry, stores.alerts) == 0
        # A revision already applied is never applied again, whoever asks.
        assert stores.alerts.apply_revision(5, []) is False
    assert alert_rows(home) == before

    # A store that follows the registry from its start derives the same alerts, once.
    with closing(Stores.open(home)) as stores, closing(AlertStore.open(tmp_path / "replay")) as new:
        new.follow_from(0)
        assert sync_alerts(stores.registry, new) == 5
        assert sync_alerts(stores.registry, new) == 0
        replayed = [alert.to_json() for alert in new.list(open_only=False)]
    assert alert_state(replayed) == alert_state(live["items"])
    assert [(a[0], a[1], a[2]) for a in alert_state(replayed)] == [
        ("fuente_no_disponible", "abierta", 1),
        ("fuente_no_disponible", "resuelta", 2),
    ]
