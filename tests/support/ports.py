"""Loopback ports for tests: one the kernel just handed out and nobody listens on."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on: bound, then closed (free until reused; for
    several distinct ones at once, hold them: ``tests.contract.conftest.free_ports``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
