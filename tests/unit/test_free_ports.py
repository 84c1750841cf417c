"""The rule for loopback ports the fleet, the tests and the benchmarks start servers on: free when
chosen, outside the range outgoing connections take their local ends from, never given twice."""

from __future__ import annotations

import contextlib
import errno
import socket
from pathlib import Path

import pytest

from builder.fleet import processes
from builder.fleet.processes import free_ports


def test_the_ports_lie_below_the_ephemeral_range_so_no_outgoing_connection_takes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gateway once found its port taken at start: the store's parts, connecting to each other,
    # had been given it as a local end, since binding port 0 picks from that same range.
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    monkeypatch.setattr(processes, "EPHEMERAL_RANGE", ranges)
    ports = free_ports(40)
    assert len(set(ports)) == 40
    assert all(processes.LOWEST_PORT <= port < 32768 for port in ports)


def test_no_port_is_given_twice_by_one_process() -> None:
    # Each was free when chosen, but a caller may not have started its server on it yet.
    given = [port for _ in range(60) for port in free_ports(3)]
    assert len(set(given)) == len(given)


def test_a_port_something_listens_on_is_never_given(monkeypatch: pytest.MonkeyPatch) -> None:
    span = range(processes.LOWEST_PORT, processes.LOWEST_PORT + 40)
    monkeypatch.setattr(processes, "_below_ephemeral", lambda: span)
    monkeypatch.setattr(processes, "_handed_out", set())
    listeners = []
    try:
        for port in span[:30]:
            listener = socket.socket()
            listeners.append(listener)
            with contextlib.suppress(OSError):  # taken already: as good
                listener.bind(("127.0.0.1", port))
                listener.listen()
        assert set(free_ports(3)) <= set(span[30:])
    finally:
        for listener in listeners:
            listener.close()


def test_a_port_reserved_by_its_caller_is_never_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # make fleet's --ports: Redis or the store, started first, must not take a gateway's port.
    span = range(processes.LOWEST_PORT + 100, processes.LOWEST_PORT + 125)
    monkeypatch.setattr(processes, "_below_ephemeral", lambda: span)
    monkeypatch.setattr(processes, "_handed_out", set())
    processes.reserve_ports(span[:15])
    assert set(free_ports(3)) <= set(span[15:])


def test_a_host_that_cannot_be_bound_is_its_own_error_not_a_shortage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(processes, "HOST", "192.0.2.1")  # TEST-NET-1: no address of this host
    with pytest.raises(OSError) as raised:
        free_ports(1)
    assert raised.value.errno == errno.EADDRNOTAVAIL


@pytest.mark.parametrize("content", [None, "", "many\n", "40000 60999\n"])
def test_where_the_range_is_unknown_or_leaves_too_few_the_kernel_picks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None
) -> None:
    ranges = tmp_path / "ip_local_port_range"
    if content is not None:
        ranges.write_text(content)
    monkeypatch.setattr(processes, "EPHEMERAL_RANGE", ranges)
    monkeypatch.setattr(processes, "LOWEST_PORT", 39500)
    assert processes._below_ephemeral() is None
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
