"""The store down: ``fxev mirror`` fails in one line; ``fxev mirror --follow`` keeps its site,
says so in one line per poll, and catches up by itself when the store answers again.

The store is the session's SeaweedFS behind a TCP relay that the test closes and reopens: a
closed relay refuses connections exactly as a stopped store does.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from builder.tree.reader import TreeReader
from tests.fleet.conftest import Fxev, Host, capture_and_build
from tests.fleet.seaweed import Relay, relay_to
from tests.fleet.test_publish_mirror import env_of, gateway_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def relay(store_env: dict[str, str]) -> Iterator[Relay]:
    with relay_to(store_env) as relayed:
        yield relayed


def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_mirror_fails_in_one_line_when_the_store_is_down(
    operator: Host, gateway_site: Path, store_env: dict[str, str], relay: Relay, fxev: Fxev
) -> None:
    via_relay = {**store_env, "FXEV_S3_ENDPOINT": relay.endpoint}
    assert fxev(env_of(operator, via_relay), "publish").code == 0
    relay.down()
    failed = fxev(gateway_env(gateway_site, via_relay), "mirror")
    assert failed.code == 2
    assert failed.out == ""
    lines = failed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxev: store at ") and "unreachable" in lines[0]
    assert not (gateway_site / "PUBLISHED").exists()


def test_mirror_fails_in_one_line_when_the_store_hangs(
    gateway_site: Path, store_env: dict[str, str], fxev: Fxev
) -> None:
    """A store that accepts connections and never answers (stopped, or stalled on its disk):
    one line, exit 2, after two tries of 10 s, where each call used to wait for three of 30."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)  # connections complete in the backlog; nothing is ever read
        endpoint = f"http://127.0.0.1:{hung.getsockname()[1]}"
        started = time.monotonic()
        failed = fxev(
            gateway_env(gateway_site, {**store_env, "FXEV_S3_ENDPOINT": endpoint}), "mirror"
        )
        took = time.monotonic() - started
    assert failed.code == 2, failed
    assert failed.out == ""
    lines = failed.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxev: store at "), lines
    assert took < 60, took  # a bound on a hang, not a speed figure: about 30 s measured
    assert not (gateway_site / "PUBLISHED").exists()


def test_follow_keeps_going_while_the_store_is_down(
    operator: Host, gateway_site: Path, store_env: dict[str, str], relay: Relay, fxev: Fxev
) -> None:
    via_relay = {**store_env, "FXEV_S3_ENDPOINT": relay.endpoint}
    assert fxev(env_of(operator, via_relay), "publish").code == 0
    head = TreeReader(operator.site).published_revision()
    relay.down()

    env = {**os.environ, **gateway_env(gateway_site, via_relay), "FXEV_MIRROR_INTERVAL_S": "1"}
    out, err = gateway_site.parent / "follow.out", gateway_site.parent / "follow.err"
    gateway_site.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "builder", "mirror", "--follow"],
            cwd=ROOT, env=env, stdout=stdout, stderr=stderr,
        )  # fmt: skip
    try:
        wait_for(lambda: len(err.read_text().splitlines()) >= 2, 20, "two failed polls")
        assert process.poll() is None, "mirror --follow stopped while the store was down"
        for line in err.read_text().splitlines():
            assert line.startswith("fxev: mirror: store at ") and "unreachable" in line, line
        assert out.read_text() == ""

        relay.up()
        wait_for(
            lambda: out.read_text().count("\n") >= 1, 20, "the mirror after the store came back"
        )
        assert orjson.loads(out.read_text().splitlines()[0])["published_revision"] == head
        assert TreeReader(gateway_site).published_revision() == head

        assert head is not None
        capture_and_build(operator)
        assert fxev(env_of(operator, via_relay), "publish").code == 0
        wait_for(lambda: out.read_text().count("\n") >= 2, 20, "the next revision")
        assert orjson.loads(out.read_text().splitlines()[1])["published_revision"] == head + 1
        assert process.poll() is None
    finally:
        os.kill(process.pid, signal.SIGTERM)  # by its PID
        process.wait(timeout=10)
