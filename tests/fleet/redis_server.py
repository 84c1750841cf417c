"""A real Redis for the fleet tests: Debian's ``redis-server`` (``tests/fleet/install-redis.sh``)
on a free 127.0.0.1 port, persisting to a temporary folder (AOF, ``appendfsync always``, no RDB
snapshots), stopped by its PID. ``stop`` then ``start`` restarts it on the same port and folder,
so what it held comes back from its AOF.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

from tests.fleet.seaweed import free_ports

START_TIMEOUT_S = 10.0


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_ports(1)[0]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (run tests/fleet/install-redis.sh)")
        self.folder.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        args += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"redis-server exited: {self.log()}")
                with contextlib.suppress(redis.RedisError):
                    if client.ping():
                        return
                time.sleep(0.05)
        finally:
            client.close()
        self.stop()
        raise RuntimeError(f"redis-server did not answer PING: {self.log()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()  # SIGTERM: redis-server flushes its AOF and exits
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""
