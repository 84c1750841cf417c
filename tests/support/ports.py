"""Loopback ports for tests: one the kernel just handed out and nobody listens on."""

from __future__ import annotations

from builder.fleet.processes import free_ports


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on: bound, then closed (free until reused; for
    several distinct ones at once: ``builder.fleet.processes.free_ports``)."""
    return free_ports(1)[0]
