"""The rate-limit rule, as pure arithmetic (docs/decisions.md#rate-limits).

At most ``per_min`` requests in (t - 60 s, t] and ``per_day`` per calendar day in Lima, per
token, on the real clock. A request that passes counts; a rejected one does not.
``Retry-After`` is the number of seconds until a request would pass, rounded up, at least 1.

:func:`decide` needs only two facts about a token: the instant of the ``per_min``-th most
recent accepted request (a new one passes the minute rule exactly when that one has left the
window, or when there are fewer than ``per_min``) and today's count. Where those facts are kept
is the stores' business: one host's ring files (:mod:`gateway.limits.ring`), or Redis in fleet
mode (:mod:`gateway.fleet.gate`, whose script computes the same wait and hands it to
:func:`after_wait`). Instants are microseconds since the epoch; the clock is read by the caller
(:func:`gateway.http.stamps.now_us`).
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, time, timedelta

from builder.core.business_days import next_lima_midnight, today_in_lima
from builder.core.canonical import EPOCH, epoch_us
from builder.core.vocabulary import LIMA

WINDOW_US = 60_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    per_min: int
    per_day: int


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: int = 0  # seconds; 0 when allowed


ALLOWED = Decision(True)


def lima_day(instant: datetime) -> date:
    return today_in_lima(instant)  # the calendar module's rule, one definition


@dataclasses.dataclass(frozen=True, slots=True)
class LimaDay:
    """A calendar day in Lima as a span of the real clock: [start_us, end_us)."""

    day: date
    start_us: int
    end_us: int

    @classmethod
    def of(cls, instant: datetime) -> LimaDay:
        day = lima_day(instant)
        start = datetime.combine(day, time(0), tzinfo=LIMA)
        return cls(day, epoch_us(start), epoch_us(next_lima_midnight(day)))

    @classmethod
    def containing(cls, now_us: int) -> LimaDay:
        return cls.of(EPOCH + timedelta(microseconds=now_us))

    def holds(self, now_us: int) -> bool:
        return self.start_us <= now_us < self.end_us


class LimaClock:
    """The Lima day of an instant of the real clock, the zone arithmetic done once a day."""

    def __init__(self) -> None:
        self._span: LimaDay | None = None

    def day(self, now_us: int) -> LimaDay:
        span = self._span
        if span is None or not span.holds(now_us):
            span = self._span = LimaDay.containing(now_us)
        return span


def decide(
    limits: Limits,
    now_us: int,
    nth_recent_us: int | None,
    day_count: int,
    day_end_us: int,
) -> Decision:
    """Whether a request at ``now_us`` passes, and if not, when one would.

    ``nth_recent_us``: the instant of the ``per_min``-th most recent accepted request, or None
    when there are fewer (or it is no longer known because it left the window long ago).
    ``day_count``: requests accepted today in Lima; ``day_end_us``: the next Lima midnight.
    """
    wait_us = 0  # each wait below is > 0: nth_recent_us is in the window, now_us before day end
    if nth_recent_us is not None and nth_recent_us > now_us - WINDOW_US:
        wait_us = nth_recent_us + WINDOW_US - now_us
    if day_count >= limits.per_day:
        wait_us = max(wait_us, day_end_us - now_us)
    return after_wait(wait_us)


def after_wait(wait_us: int) -> Decision:
    """The decision for a wait of ``wait_us`` (0: pass): ``Retry-After`` in whole seconds,
    rounded up, at least 1. Shared with the fleet's limiter (:mod:`gateway.fleet.gate`),
    whose script computes the same wait as :func:`decide` inside Redis."""
    if wait_us <= 0:
        return ALLOWED
    return Decision(False, max(1, -(-wait_us // 1_000_000)))
