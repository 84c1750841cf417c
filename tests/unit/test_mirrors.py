"""What ``fxev publish`` waits for in fleet mode (builder.store.mirrors): every live mirror's
revision, read from Redis, until each reaches the published one or the wait ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builder.store import mirrors
from builder.store.commands import PublishReport
from builder.store.publish import PublishResult
from tests.support.ports import free_port


class FakeRedis:
    """The three calls the module makes, over a dict; ``script`` changes it at each scan."""

    def __init__(self, script: list[dict[str, int]]) -> None:
        self.script = script
        self.values: dict[bytes, bytes] = {}
        self.set_calls: list[tuple[str, str, int]] = []

    def scan_iter(self, match: str, count: int) -> list[bytes]:
        if self.script:
            state = self.script.pop(0)
            self.values = {(mirrors.PREFIX + k).encode(): str(v).encode() for k, v in state.items()}
        return list(self.values)

    def mget(self, keys: list[bytes]) -> list[bytes | None]:
        return [self.values.get(key) for key in keys]

    def set(self, key: str, value: str, ex: int) -> None:
        self.set_calls.append((key, value, ex))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def wait(client: Any, revision: int, timeout_s: float) -> tuple[list[str], list[str], float]:
    clock = Clock()
    served, lagging = mirrors.wait_for(client, revision, timeout_s, clock, clock.sleep)
    return served, lagging, clock.now


def test_publish_returns_as_soon_as_every_live_mirror_serves_the_revision() -> None:
    client = FakeRedis([{"a": 6, "b": 6}, {"a": 7, "b": 6}, {"a": 7, "b": 8}])
    served, lagging, waited = wait(client, 7, 10)
    assert (served, lagging) == (["a", "b"], [])
    assert waited == 2 * mirrors.POLL_S


def test_a_mirror_that_never_catches_up_is_named_when_the_wait_ends() -> None:
    client = FakeRedis([{"a": 7, "b": 6}])
    served, lagging, waited = wait(client, 7, 1.0)
    assert (served, lagging) == (["a"], ["b"])
    assert 1.0 <= waited < 1.0 + mirrors.POLL_S * 1.5


def test_a_mirror_that_stops_during_the_wait_is_lagging_and_not_waited_for() -> None:
    """Its key expires: it will not serve the revision, and the publish says so at once."""
    client = FakeRedis([{"a": 6, "b": 6}, {"a": 7, "b": 6}, {"a": 7}])
    served, lagging, waited = wait(client, 7, 10)
    assert (served, lagging) == (["a"], ["b"])
    assert waited == 2 * mirrors.POLL_S


def test_a_mirror_that_appears_during_the_wait_is_not_waited_for() -> None:
    client = FakeRedis([{"a": 6}, {"a": 7, "c": 5}])
    served, lagging, waited = wait(client, 7, 10)
    assert (served, lagging) == (["a"], [])
    assert waited == mirrors.POLL_S


def test_no_live_mirror_is_no_wait() -> None:
    assert wait(FakeRedis([{}]), 7, 10) == ([], [], 0.0)


def test_a_mirror_says_its_revision_for_three_polls_and_at_least_ten_seconds(
    tmp_path: Path,
) -> None:
    client = FakeRedis([])
    mirrors.report(client, tmp_path, 9, 5)  # type: ignore[arg-type]
    mirrors.report(client, tmp_path, 9, 1)  # type: ignore[arg-type]
    name = mirrors.PREFIX + mirrors.mirror_name(tmp_path)
    assert client.set_calls == [(name, "9", 15), (name, "9", 10)]
    assert mirrors.wait_s(5) == 15.0


def test_redis_down_is_a_warning_and_a_wait_that_saw_nothing() -> None:
    """fxev publish in fleet mode with Redis unreachable: the upload stands, its line says
    ``mirrored`` and ``lagging`` are unknown (null), and one warning names the revision."""
    warnings: list[str] = []
    seen = mirrors.await_mirrors(f"redis://127.0.0.1:{free_port()}/0", 7, 1, warnings.append)
    assert seen == mirrors.MirrorWait(None, None)
    assert len(warnings) == 1 and "which mirrors serve revision 7" in warnings[0], warnings
    line = PublishReport(PublishResult(7, uploaded=3, skipped=1), seen).to_json()
    assert line == {
        "published_revision": 7, "uploaded": 3, "skipped": 1, "mirrored": None, "lagging": None
    }  # fmt: skip


def test_publish_on_one_host_has_no_mirror_fields() -> None:
    waited = mirrors.MirrorWait(("a",), ("b",))
    result = PublishResult(7, uploaded=0, skipped=4, replaced=0)
    assert PublishReport(result, None).to_json() == {
        "published_revision": 7, "uploaded": 0, "skipped": 4, "replaced": 0
    }  # fmt: skip
    assert PublishReport(result, waited).to_json()["mirrored"] == ["a"]
    assert PublishReport(result, waited).to_json()["lagging"] == ["b"]
