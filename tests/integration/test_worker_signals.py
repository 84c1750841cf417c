"""A gateway worker keeps every stop signal (gateway.server.serving.keep_stop_signals).

Sanic stops a worker by SIGINT through its event loop's signal handler, and uvloop drops a signal
that arrives while its loop is paused between two ``run_until_complete`` calls. A Ctrl-C sent as
the gateway first answered could so leave a worker serving and ``fxev serve`` waiting for it
forever (seen as a failure of tests/builder/test_cli_details.py's Ctrl-C test on a loaded CI
host, 6 times in 40 on a host kept busy).

Each case runs in a process of its own, on a real uvloop loop set up as a Sanic worker's is
(Sanic's handler first, then ours from a listener while the loop runs), and signals itself; the
last runs ``serve_factory`` itself, as ``fxev serve`` does, to see the handler in a worker."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from sanic import Request, Sanic
from sanic.response import HTTPResponse, text

from gateway.server.serving import STOP_SIGNALS
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]

WORKER = """
import asyncio, os, signal, sys
import uvloop
from gateway.server.serving import keep_stop_signals

loop = uvloop.new_event_loop()
asyncio.set_event_loop(loop)
stops = []
for signum in (signal.SIGINT, signal.SIGTERM):
    loop.add_signal_handler(signum, stops.append, "sanic")  # as Sanic's worker does


async def after_server_start():
    keep_stop_signals(loop, lambda: (stops.append("kept"), loop.stop()))


loop.run_until_complete(after_server_start())
when, signame, count = sys.argv[1], sys.argv[2], int(sys.argv[3])


async def signal_running():
    await asyncio.sleep(0.05)  # the loop idles in its poll when the signal comes
    for _ in range(count):
        os.kill(os.getpid(), getattr(signal, signame))


if when == "paused":  # between two runs, as Sanic's worker is while it asks its manager
    for _ in range(count):
        os.kill(os.getpid(), getattr(signal, signame))
    loop.run_until_complete(asyncio.sleep(0))  # the pause before the worker's last run
else:
    loop.create_task(signal_running())
loop.call_later(3, loop.stop)  # never stopped by the signal: stop anyway, and say so
loop.run_forever()
print(",".join(stops) or "lost")
"""


def run_worker(when: str, signame: str, count: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, when, signame, str(count)],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_stop_signal_while_the_loop_is_paused_stops_it_once_it_runs(signame: str) -> None:
    assert run_worker("paused", signame, 1) == "kept"


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_stop_signal_while_the_loop_runs_stops_it(signame: str) -> None:
    assert run_worker("running", signame, 1) == "kept"


@pytest.mark.parametrize("when", ["paused", "running"])
def test_a_second_stop_signal_asks_nothing_more(when: str) -> None:
    """One stop queued, not two: a second would stop the loop again during the worker's
    shutdown, which runs on the same loop."""
    assert run_worker(when, "SIGINT", 2) == "kept"


def probe_app() -> Sanic:
    """A worker's app that says which handlers its stop signals have while it serves."""
    app = Sanic("signal_probe")

    @app.get("/handlers")
    async def handlers(request: Request) -> HTTPResponse:
        named = (getattr(signal.getsignal(signum), "__name__", "?") for signum in STOP_SIGNALS)
        return text(",".join(named))

    return app


SERVE = (
    "import sys; from gateway.server.serving import serve_factory;"
    " from tests.integration.test_worker_signals import probe_app;"
    " serve_factory(probe_app, '127.0.0.1', int(sys.argv[1]), 1)"
)


def test_a_serving_worker_has_the_kept_handler_and_a_ctrl_c_stops_the_gateway() -> None:
    """The handler is in place while a worker serves (installed by ``serve_factory``'s own
    listener, not only by a test's call), and a Ctrl-C to the main process stops it all. (A
    worker may answer its first requests before Sanic sets any handler: Python's defaults.)"""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(port)], cwd=ROOT, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        seen: set[str] = set()
        while "on_signal,on_signal" not in seen:  # the first answers may come before it is set
            with contextlib.suppress(requests.RequestException):
                seen.add(requests.get(f"http://127.0.0.1:{port}/handlers", timeout=3).text)
            assert time.monotonic() < deadline and proc.poll() is None, seen
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group of the process this test started
            proc.wait(timeout=10)
