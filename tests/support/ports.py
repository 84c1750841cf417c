"""Loopback ports for tests: one nobody listens on, by the fleet's rule for choosing them."""

from __future__ import annotations

from builder.fleet.processes import free_ports


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on, outside the range outgoing connections take
    their local ends from where that range is known (for several at once, and the rule:
    ``builder.fleet.processes.free_ports``)."""
    return free_ports(1)[0]
