"""Workers are supervised (docs/operating/ledger.md#workers): a gateway worker that dies is replaced
within 5 s, and the gateway goes on answering, every answer ledgered."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import orjson
import pytest
import requests

from tests.contract.conftest import WORKERS, Gateway, ledger_entries
from tests.contract.test_ledger_kills import argv, children, ledger_writers

REPLACED_WITHIN_S = 5.0


def wait_for_workers(
    gateway: Gateway, count: int, timeout: float, gone: int | None = None
) -> dict[int, list[int]]:
    """{worker: writers} once ``count`` workers run, each with its ledger writer, and the worker
    ``gone`` is not one of them (or once ``timeout`` has passed)."""
    deadline = time.monotonic() + timeout
    while True:
        writers = ledger_writers(gateway)
        if (len(writers) == count and gone not in writers) or time.monotonic() > deadline:
            return writers
        time.sleep(0.05)


def test_a_killed_worker_is_replaced_within_5_s_and_answers_stay_ledgered(
    private_gateway: Gateway,
) -> None:
    gw = private_gateway
    before = wait_for_workers(gw, WORKERS, 10)
    assert len(before) == WORKERS
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    time.sleep(0.1)  # gone, with its sockets
    answers: list[requests.Response] = []
    while True:  # the other worker answers meanwhile
        answers.append(ask(gw))
        after = ledger_writers(gw)
        if len(after) == WORKERS and victim not in after:
            break
        assert time.monotonic() - killed_at <= REPLACED_WITHIN_S, after
        time.sleep(0.05)
    assert time.monotonic() - killed_at <= REPLACED_WITHIN_S
    assert set(before) - {victim} < set(after)  # the other worker ran on, beside a new one

    (newcomer,) = set(after) - set(before)
    bound = len(answers) + 300
    while len(answers) < bound and not worker_file(gw, newcomer):
        answers.append(ask(gw))  # a new connection each time, so either worker may take it
    assert worker_file(gw, newcomer)  # the new worker answered, and ledgered
    sent = {resp.headers["X-Request-Id"] for resp in answers}
    assert {entry["x_request_id"] for entry in newcomer_entries(gw, newcomer)} <= sent
    for resp in answers[:3] + answers[-3:]:
        (entry,) = ledger_entries(gw.env, resp.headers["X-Request-Id"])
        assert entry["status"] == 200
        assert entry["sha256"] == hashlib.sha256(resp.content).hexdigest()

    time.sleep(1.0)
    assert sorted(ledger_writers(gw)) == sorted(after)  # no worker was replaced twice


@pytest.mark.parametrize("with_workers", [False, True], ids=["alone", "with every worker"])
def test_the_workers_state_process_killed_stops_the_gateway_in_one_line_with_exit_1(
    private_gateway: Gateway, with_workers: bool
) -> None:
    """Sanic keeps the workers' states in a process of its own (a multiprocessing manager).
    Killed, no worker can be supervised any more: the gateway ended in a traceback. It stops
    every worker and exits 1 after one line in its log, for its service manager to start it
    again (docs/operating/fleet.md#hosts: `Restart=always`). Killed together with the workers
    (a kill of the process group but the main process, say), the manager finds it gone while
    joining them, which ended in a traceback too."""
    gw = private_gateway
    assert gw.process is not None
    workers = wait_for_workers(gw, WORKERS, 10)
    spawned = [
        pid for pid in children(gw.process.pid) if "multiprocessing.spawn" in " ".join(argv(pid))
    ]
    (state,) = set(spawned) - set(workers)
    log_start = gw.log_path.stat().st_size
    for pid in [state, *workers] if with_workers else [state]:
        os.kill(pid, signal.SIGKILL)
    assert gw.process.wait(timeout=30) == 1
    log = gw.log_path.read_bytes()[log_start:].decode(errors="replace")
    assert log.count("The workers' state process is gone") == 1, log
    assert "Traceback" not in log, log
    for worker in workers:
        assert (
            not Path(f"/proc/{worker}").exists()
            or "(Z)" in Path(f"/proc/{worker}/stat").read_text()
        )


def ask(gateway: Gateway) -> requests.Response:
    """One request on a new connection; it must succeed."""
    resp = gateway.get("/v1/coverage")
    assert resp.status_code == 200
    return resp


def worker_files(gateway: Gateway, pid: int) -> list[Path]:
    """The ledger files of the worker ``pid`` (``<host>-<pid>-<start>.jsonl``)."""
    return [
        path
        for path in (gateway.home / "ledger").glob("*.jsonl")
        if path.name.split("-")[-2] == str(pid)
    ]


def worker_file(gateway: Gateway, pid: int) -> bool:
    return bool(worker_files(gateway, pid))


def newcomer_entries(gateway: Gateway, pid: int) -> list[dict[str, object]]:
    (path,) = worker_files(gateway, pid)
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line.startswith(b"{")]
