"""Shipping the request ledger to the store (docs/operating/ledger.md#shipping), against the real
SeaweedFS endpoint and real gateways in fleet mode: ``fxev ledger ship`` ships what is settled
once, ``fxev requests show`` finds it from another home, the gateway ships by itself every
interval and at shutdown."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.ledger.shipping import INTERVAL_VARIABLE
from tests.contract.conftest import Gateway, home_env, issue_token
from tests.fleet.conftest import Fxev, Host

PATHS = ("/v1/coverage", "/v1/health/ready", "/v1/no-such-path")


def start_gateway(operator: Host, store_env: dict[str, str], interval: str) -> Gateway:
    env = home_env(operator.home.parent) | store_env | {INTERVAL_VARIABLE: interval}
    _, token = issue_token(env, "shipping")
    gateway = Gateway(env=env, token=token, log_path=operator.home.parent / "gateway.log")
    gateway.start()
    return gateway


@pytest.fixture
def running(operator: Host, store_env: dict[str, str]) -> Iterator[Gateway]:
    """A fleet-mode gateway that does not ship by itself until it stops."""
    gateway = start_gateway(operator, store_env, interval="3600")
    try:
        yield gateway
    finally:
        gateway.stop()


def served(gateway: Gateway, count: int) -> list[str]:
    """``count`` answers to the gateway's token; their X-Request-Id."""
    ids = []
    for number in range(count):
        response = gateway.get(PATHS[number % len(PATHS)])
        ids.append(response.headers["X-Request-Id"])
    return ids


def shown_elsewhere(fxev: Fxev, elsewhere: dict[str, str], request_id: str) -> list[dict]:
    ran = fxev(elsewhere, "requests", "show", request_id)
    assert ran.code in (0, 1), ran.err
    if not ran.out.strip():  # nothing shipped yet: no ledger anywhere, named in one line
        assert "no request ledger at" in ran.err and "ledger/" in ran.err, ran.err
        return []
    return ran.last["entries"]  # type: ignore[no-any-return]


@pytest.fixture
def elsewhere(tmp_path: Path, store_env: dict[str, str]) -> dict[str, str]:
    """An operator's home with no ledger of its own, on the same store."""
    home = tmp_path / "elsewhere" / "home"
    return {"FXEV_HOME": str(home), "FXEV_SITE": str(home.parent / "site"), **store_env}


def test_ship_once_then_nothing_found_from_another_home(
    running: Gateway, fxev: Fxev, store_env: dict[str, str], elsewhere: dict[str, str]
) -> None:
    ids = served(running, 6)
    time.sleep(0.2)  # each writer settles its last batch when its worker acknowledges it
    env = {"FXEV_HOME": str(running.home), "FXEV_SITE": str(running.site), **store_env}
    first = fxev(env, "ledger", "ship")
    assert first.code == 0, first.err
    assert first.last == {"shipped": 6}
    assert fxev(env, "ledger", "ship").last == {"shipped": 0}

    for request_id in (ids[0], ids[-1]):
        entries = shown_elsewhere(fxev, elsewhere, request_id)
        assert [entry["x_request_id"] for entry in entries] == [request_id]
    # On the gateway's host, its local line and its shipped copy are one entry.
    assert len(shown_elsewhere(fxev, env, ids[0])) == 1

    later = served(running, 2)
    assert shown_elsewhere(fxev, elsewhere, later[0]) == []
    running.stop()  # the main process ships the rest at shutdown
    for request_id in later:
        assert len(shown_elsewhere(fxev, elsewhere, request_id)) == 1
    assert fxev(env, "ledger", "ship").last == {"shipped": 0}


def test_a_home_without_a_ledger_is_refused(fxev: Fxev, elsewhere: dict[str, str]) -> None:
    ran = fxev(elsewhere, "ledger", "ship")
    assert ran.code == 1 and ran.out == ""
    assert ran.err.count("\n") == 1 and "no request ledger at" in ran.err
    assert not Path(elsewhere["FXEV_HOME"]).exists()


def test_the_gateway_ships_every_interval(
    operator: Host, store_env: dict[str, str], fxev: Fxev, elsewhere: dict[str, str]
) -> None:
    gateway = start_gateway(operator, store_env, interval="0.5")
    try:
        (request_id,) = served(gateway, 1)
        deadline = time.monotonic() + 15
        while not (found := shown_elsewhere(fxev, elsewhere, request_id)):
            assert time.monotonic() < deadline, "not shipped within 15 s"
            time.sleep(0.3)
        assert found[0]["x_request_id"] == request_id
    finally:
        gateway.stop()


def test_only_settled_lines_are_shipped_and_zeros_skipped(
    tmp_path: Path, store_env: dict[str, str]
) -> None:
    """A live worker's file (this process's PID in its name): what lies past the writer's
    settled mark may still be voided, so it waits; once the writer stops, the rest goes."""
    import os
    import socket

    from builder.objstore.s3 import ObjectStore
    from gateway.ledger.shipping import ship
    from gateway.ledger.writer import SETTLED_FORMAT, SETTLED_SUFFIX

    folder = tmp_path / "ledger"
    folder.mkdir()
    path = folder / f"{socket.gethostname()}-{os.getpid()}-20260101T000000.jsonl"
    settled = b'{"x_request_id":"a"}\n' + bytes(21) + b'{"x_request_id":"b"}\n'
    path.write_bytes(settled + b'{"x_request_id":"c"}\n' + bytes(64))
    marker = path.with_name(path.name + SETTLED_SUFFIX)
    inode = path.stat().st_ino
    marker.write_bytes(SETTLED_FORMAT % (inode, len(settled), os.getpid(), 0))
    store = ObjectStore(store_env["FXEV_STORE_URL"], store_env["FXEV_S3_ENDPOINT"])
    with pytest.MonkeyPatch.context() as patch:
        for name, value in store_env.items():
            patch.setenv(name, value)
        assert ship(folder, store) == 2
        assert ship(folder, store) == 0
        marker.write_bytes(SETTLED_FORMAT % (inode, len(settled), os.getpid(), 1))
        assert ship(folder, store) == 1
        keys = store.list_keys("ledger/")
        assert [key.rsplit("/", 1)[1] for key in keys] == [
            f"{0:012d}-{len(settled):012d}.jsonl",
            f"{len(settled):012d}-{len(settled) + 21:012d}.jsonl",
        ]
        assert store.get(keys[0]) == b'{"x_request_id":"a"}\n{"x_request_id":"b"}\n'
    store.close()
