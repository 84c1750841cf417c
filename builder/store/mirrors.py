"""Which revision each live mirror serves (fleet mode, ``FXEV_REDIS_URL``), so that ``fxev
publish`` returns once the gateway hosts serve what it published (DECISIONS 12: a published
correction is visible on the very next request through the edge).

A mirror (``fxev mirror``, and ``--follow`` after every poll) sets its key after it moved its
site's pointer, or found nothing new::

    fxev:mirror:<host>:<site>   the revision the site's pointer names; expires after three
                                polls (at least 10 s), so a mirror that stopped is no longer
                                waited for

``fxev publish`` then waits until every live mirror's revision reaches the one it published, at most
:func:`wait_s` (two polls and 5 s): a mirror that does not, or whose key expires during the wait, is
named in its result (``lagging``) and in one warning line, and the publish stands. Redis unreachable
is the same warning, never a failed mirror or publish: the keys only tell who already serves what.
"""

from __future__ import annotations

import dataclasses
import math
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.errors import is_redis_error
from builder.ops.redisclient import connect

if TYPE_CHECKING:
    import redis

PREFIX = "fxev:mirror:"
MIN_TTL_S = 10
WAIT_MARGIN_S = 5.0
POLL_S = 0.05


def mirror_name(site: Path) -> str:
    """This mirror's name: the machine and the site it keeps."""
    return f"{socket.gethostname()}:{site.resolve()}"


def ttl_s(interval_s: float) -> int:
    """How long a mirror's key outlives its last poll: three polls, at least 10 s."""
    return max(MIN_TTL_S, math.ceil(3 * interval_s))


def wait_s(interval_s: float) -> float:
    """How long ``fxev publish`` waits for the mirrors: two polls and a margin for the pull."""
    return 2 * interval_s + WAIT_MARGIN_S


def report(client: redis.Redis, site: Path, revision: int, interval_s: float) -> None:
    """Say that the mirror of ``site`` serves ``revision``, for the next three polls."""
    client.set(PREFIX + mirror_name(site), str(revision), ex=ttl_s(interval_s))


def live(client: redis.Redis) -> dict[str, int]:
    """Every live mirror's revision, by name."""
    keys = sorted(client.scan_iter(match=PREFIX + "*", count=100))
    if not keys:
        return {}
    values = client.mget(keys)
    return {
        key.decode()[len(PREFIX) :]: int(value)
        for key, value in zip(keys, values, strict=True)
        if value is not None and value.isdigit()
    }


def wait_for(
    client: redis.Redis,
    revision: int,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[str], list[str]]:
    """(mirrors that serve ``revision`` or a later one, mirrors that did not within
    ``timeout_s``), by name, each sorted. The mirrors waited for are those live when the wait
    begins; one whose key expires meanwhile has stopped: it is lagging, and not waited for."""
    deadline = clock() + timeout_s
    expected: set[str] | None = None
    while True:
        held = live(client)
        if expected is None:
            expected = set(held)
        behind = [name for name in expected if name in held and held[name] < revision]
        if not behind or clock() >= deadline:
            stopped = [name for name in expected if name not in held]
            served = sorted(name for name, serves in held.items() if serves >= revision)
            return served, sorted(behind + stopped)
        sleep(POLL_S)


class Reporter:
    """A mirror's side, called with the site's revision after every poll. Redis unreachable is
    one warning line (then silence until it answers again), never a failed mirror."""

    def __init__(self, url: str, site: Path, interval_s: float, warn: Callable[[str], None]):
        self.client = connect(url)
        self.site = site
        self.interval_s = interval_s
        self.warn = warn
        self.failing = False

    def __call__(self, revision: int) -> None:
        try:
            report(self.client, self.site, revision, self.interval_s)
        except Exception as error:
            if not is_redis_error(error):
                raise
            if not self.failing:
                self.warn(
                    f"fxev: mirror: warning: Redis cannot be told this site's revision ({error})"
                )
            self.failing = True
        else:
            self.failing = False

    def close(self) -> None:
        self.client.close()


@dataclasses.dataclass(frozen=True, slots=True)
class MirrorWait:
    """What ``fxev publish`` saw waiting for the live mirrors: those serving the revision and
    those behind it, both None when Redis could not be asked."""

    mirrored: tuple[str, ...] | None
    lagging: tuple[str, ...] | None

    def to_json(self) -> dict[str, list[str] | None]:
        return {
            "mirrored": None if self.mirrored is None else list(self.mirrored),
            "lagging": None if self.lagging is None else list(self.lagging),
        }


def await_mirrors(
    url: str, revision: int, interval_s: float, warn: Callable[[str], None]
) -> MirrorWait:
    """``fxev publish``'s wait for the mirrors, and a warning line for either kind of trouble."""
    began = time.monotonic()
    try:
        client = connect(url)
        try:
            served, lagging = wait_for(client, revision, wait_s(interval_s))
        finally:
            client.close()
    except Exception as error:
        if not is_redis_error(error):
            raise
        warn(
            f"fxev: publish: warning: Redis cannot say which mirrors serve revision {revision}"
            f" ({error})"
        )
        return MirrorWait(None, None)
    if lagging:
        warn(
            f"fxev: publish: warning: revision {revision} is published, but not yet served by"
            f" {', '.join(lagging)} after {time.monotonic() - began:.0f} s (a mirror whose"
            f" report expired has stopped; one behind is waited for {wait_s(interval_s):g} s)"
        )
    return MirrorWait(tuple(served), tuple(lagging))
