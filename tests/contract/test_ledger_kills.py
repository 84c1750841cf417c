"""The ledger when its writer processes are killed under load (docs/operating/ledger.md#failed):
for every answer a client received, the ledger shows exactly that answer, the 503s sent when a
batch failed included, and never the answer that did not leave.

Processes are found by the gateway's process tree (``/proc/<pid>/task/*/children``) and killed
by PID: the writers are the children of the workers, the workers the children of the gateway's
main process that have one.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

from gateway.ledger.reading import read_entries, shown
from tests.contract.conftest import Gateway, ledger_entries
from tests.contract.test_ledger import RATES, evidence_path

WRITER_MODULE = "gateway.ledger.writer"
CLIENTS = 8
LOAD_S = 6.0
KILL_EVERY_S = 0.35  # per kill, alternating workers: each worker's writer every 0.7 s
# Only a writer this old is killed: a new one has written its first batch, which records the 503s
# of the batch its predecessor failed (were it killed too, they would go unrecorded, as
# documented, and this test wants every answer's entry).
WRITER_AGE_S = 0.5
Observed = tuple[str, int, str]  # (X-Request-Id, status, SHA-256 of the body)


def children(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children (empty once it is gone)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except OSError:
            continue
    return found


def argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def age_s(pid: int) -> float:
    """How long the process ``pid`` has run (0 once it is gone)."""
    try:
        started = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return 0.0
    return uptime - started / os.sysconf("SC_CLK_TCK")


def ledger_writers(gateway: Gateway) -> dict[int, list[int]]:
    """{worker PID: the PIDs of its ledger writers} of the running gateway."""
    assert gateway.process is not None
    found: dict[int, list[int]] = {}
    for worker in children(gateway.process.pid):
        writers = [pid for pid in children(worker) if WRITER_MODULE in argv(pid)]
        if writers:
            found[worker] = writers
    return found


def load(gateway: Gateway, paths: list[str], stop: threading.Event) -> list[Observed]:
    """CLIENTS threads asking ``paths`` in turn until ``stop`` (or a bound); what they got."""
    observed: list[Observed] = []
    lock = threading.Lock()
    deadline = time.monotonic() + LOAD_S + 20  # bounded whatever happens

    def client(offset: int) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {gateway.token}"
        n = offset
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                resp = session.get(gateway.url(paths[n % len(paths)]), timeout=10)
            except requests.RequestException:
                continue  # nothing received
            n += 1
            seen = (resp.headers["X-Request-Id"], resp.status_code, sha256(resp.content))
            with lock:
                observed.append(seen)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    stop.wait(LOAD_S + 20)
    for thread in threads:
        thread.join(timeout=30)
    return observed


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="1000000", FXEV_RATE_LIMIT_PER_DAY="1000000")
def test_killed_writers_leave_the_ledger_showing_what_each_client_got(
    private_gateway: Gateway,
) -> None:
    gw = private_gateway
    paths = [
        "/v1/coverage",
        RATES.replace("/v1/rates?", "/v1/rates/latest?"),
        RATES + "&from=2025-01-01&to=2025-12-31&as_of_revision=5",
        evidence_path(gw),
        "/v1/nothing",  # 404
    ]
    stop = threading.Event()
    observed: list[Observed] = []
    loader = threading.Thread(target=lambda: observed.extend(load(gw, paths, stop)))
    loader.start()
    kills = 0
    workers = sorted(ledger_writers(gw))
    assert len(workers) == 2
    try:
        time.sleep(0.5)
        end = time.monotonic() + LOAD_S
        turn = 0
        while time.monotonic() < end:
            # The worker's writer, if it has one now (a new one starts with its next batch).
            for pid in ledger_writers(gw).get(workers[turn % len(workers)], []):
                if age_s(pid) >= WRITER_AGE_S:
                    os.kill(pid, signal.SIGKILL)
                    kills += 1
            turn += 1
            time.sleep(KILL_EVERY_S)
    finally:
        stop.set()
        loader.join(timeout=60)
    assert kills >= 8
    assert gw.process is not None
    assert set(workers) <= set(children(gw.process.pid))  # both workers ran on (not replaced)
    statuses = [status for _, status, _ in observed]
    assert statuses.count(200) > 100
    assert statuses.count(503) > 0  # some batches failed: the path under test was taken

    recorded: dict[str, list[tuple[int, str]]] = {}
    for entry in shown(read_entries(gw.home / "ledger")):
        recorded.setdefault(entry["x_request_id"], []).append((entry["status"], entry["sha256"]))
    mismatches = [
        (rid, status, digest, recorded.get(rid))
        for rid, status, digest in observed
        if recorded.get(rid) != [(status, digest)]
    ]
    assert mismatches == []
    for rid, status, digest in [seen for seen in observed if seen[1] == 503][:5]:
        (entry,) = ledger_entries(gw.env, rid)  # `fxev requests show` agrees
        assert (entry["status"], entry["sha256"], entry["supersedes"]) == (status, digest, True)
