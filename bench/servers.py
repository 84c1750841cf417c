"""The two servers of the gateway benchmark, as processes on 127.0.0.1, and their CPU time.

* the gateway: ``python -m bench.serve`` (the real app, 2 workers, ledger on or off);
* nginx: the same response bytes from files (``tests.support.nginx.nginx_config`` renders its
  configuration), or passing every request to the gateway (``proxy_config``).

CPU time is read from ``/proc``: user + system time of a process and all its descendants.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from builder.fleet.processes import nginx_binary
from tests.support.nginx import nginx_config, proxy_config
from tests.support.ports import free_port

START_TIMEOUT_S = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# -- CPU time of a process tree -----------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def descendants(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds used so far by ``pids`` (those still alive)."""
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / CLOCK_TICKS


# -- waiting and stopping -----------------------------------------------------------------------


def wait_until_answering(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url}: no answer within {START_TIMEOUT_S:g} s: {log.read_text()[-2000:]}")


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- the gateway, and the bare Sanic under it ---------------------------------------------------


@contextlib.contextmanager
def python_server(
    module: str, args: list[str], env: dict[str, str], log: Path, ready_path: str
) -> Iterator[tuple[str, int]]:
    """``python -m module --port P ...`` on a free port: yields (base URL, PID of its main
    process)."""
    port = free_port()
    command = [sys.executable, "-m", module, "--port", str(port), *args]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(base + ready_path, process, log)
        yield base, process.pid
    finally:
        stop(process)


def gateway(
    env: dict[str, str], workers: int, ledger: bool, log: Path
) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """The real gateway (``bench.serve``), the ledger on or off."""
    args = ["--workers", str(workers)] + ([] if ledger else ["--no-ledger"])
    return python_server("bench.serve", args, env, log, "/v1/health/live")


def bare_sanic(
    env: dict[str, str], workers: int, root: Path, ready_file: str, log: Path
) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """A bare Sanic serving the files of ``root`` from memory (``bench.bare``)."""
    args = ["--workers", str(workers), "--root", str(root)]
    return python_server("bench.bare", args, env, log, "/" + ready_file)


# -- nginx --------------------------------------------------------------------------------------


def nginx(
    root: Path, prefix: Path, workers: int
) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """nginx serving ``root`` on a free port: yields (base URL, PID of its master process)."""
    return _nginx(partial(nginx_config, prefix, root), workers, prefix, "/")


def nginx_proxy(
    upstream: str, prefix: Path, workers: int, ready_path: str
) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """nginx passing every request to ``upstream`` (``HOST:PORT``), uncached, on a free port:
    yields (base URL, PID of its master process)."""
    return _nginx(partial(proxy_config, prefix, upstream), workers, prefix, ready_path)


@contextlib.contextmanager
def _nginx(
    render: Callable[[int, int, bool], str], workers: int, prefix: Path, ready_path: str
) -> Iterator[tuple[str, int]]:
    """nginx run with what ``render(port, workers, as_root)`` makes, on a free port."""
    port = free_port()
    prefix.mkdir(parents=True, exist_ok=True)
    config = prefix / "nginx.conf"
    config.write_text(render(port, workers, os.geteuid() == 0))
    log = prefix / "error.log"
    command = [nginx_binary(), "-p", str(prefix), "-e", str(log), "-c", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(base + ready_path, process, log)
        yield base, process.pid
    finally:
        stop(process, signal.SIGQUIT)
