"""The shipped edge as a process: nginx run with what ``fxev edge config`` printed.

:func:`start_edge` writes the printed configuration into a prefix folder of its own (pid,
temporary files, error log; ``user root;`` put first when running as root, as nginx's workers
would otherwise run as ``nobody``), starts nginx in the foreground and waits until it answers
through to a gateway; :meth:`Edge.stop` stops it by its PID. The edge tests and the benchmarks
use it; so can a topology that puts the edge in front of its gateways.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from builder.fleet.processes import nginx_binary

START_TIMEOUT_S = 20.0


@dataclasses.dataclass
class Edge:
    prefix: Path
    base_url: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def url(self, path: str) -> str:
        return self.base_url + path

    def error_log(self) -> str:
        path = self.prefix / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """SIGQUIT (nginx's graceful stop) to its master, then SIGKILL to its group if it
        lingers."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def start_edge(config_text: str, prefix: Path, base_url: str, ready_path: str) -> Edge:
    """nginx with ``config_text`` (``fxev edge config``'s output, listening at ``base_url``),
    answering ``ready_path`` (any status but 5xx) before this returns."""
    prefix.mkdir(parents=True, exist_ok=True)
    config = prefix / "nginx.conf"
    head = "user root;\n" if os.geteuid() == 0 else ""
    config.write_text(head + config_text)
    config.chmod(0o600)
    log = prefix / "error.log"
    command = [nginx_binary(), "-p", str(prefix), "-e", str(log), "-c", str(config)]
    command += ["-g", "daemon off;"]  # in the foreground: its PID is the master's
    with (prefix / "nginx.out").open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    edge = Edge(prefix, base_url, process)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"nginx exited: {(prefix / 'nginx.out').read_text()}{edge.error_log()}"
            )
        try:
            with urllib.request.urlopen(edge.url(ready_path), timeout=2):
                return edge
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return edge
        except OSError:
            pass
        time.sleep(0.1)
    edge.stop()
    raise RuntimeError(f"the edge did not answer within {START_TIMEOUT_S:g} s: {edge.error_log()}")
