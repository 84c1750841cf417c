"""The rate limiter's shared store: ring files under ``tmp_path``, two instances standing for two
workers, restarts, and the files' sizes. The arithmetic alone is in tests/unit/test_ratelimit.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.limits.ring import RateLimiter, RingFile, ring_path
from gateway.limits.rule import Decision, Limits, epoch_us

T0 = datetime(2026, 9, 21, 15, 0, tzinfo=UTC)  # 10:00 in Lima


def open_pair(home: Path, limits: Limits) -> tuple[RateLimiter, RateLimiter]:
    return RateLimiter.open(home, limits), RateLimiter.open(home, limits)


def test_two_workers_share_one_count(tmp_path: Path) -> None:
    first, second = open_pair(tmp_path, Limits(5, 1000))
    results = [
        (first if i % 2 else second).acquire("tok", T0 + timedelta(seconds=i)) for i in range(8)
    ]
    assert [d.allowed for d in results] == [True] * 5 + [False] * 3
    assert results[5].retry_after == 55  # the first accepted (t=0) leaves at t=60; now t=5


def test_refused_requests_do_not_count(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(2, 1000))
    for i in range(2):
        assert limiter.acquire("tok", T0 + timedelta(seconds=i)).allowed
    for i in range(2, 50):
        assert not limiter.acquire("tok", T0 + timedelta(seconds=i)).allowed
    assert limiter.acquire("tok", T0 + timedelta(seconds=60)).allowed  # t=0 left the window
    assert not limiter.acquire("tok", T0 + timedelta(seconds=60.5)).allowed
    assert limiter.acquire("tok", T0 + timedelta(seconds=61)).allowed


def test_tokens_are_counted_apart(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(1, 1000))
    assert limiter.acquire("a", T0).allowed
    assert limiter.acquire("b", T0).allowed
    assert not limiter.acquire("a", T0).allowed


def test_a_restart_keeps_the_days_count(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(100, 3))
    for i in range(3):
        assert limiter.acquire("tok", T0 + timedelta(minutes=i)).allowed
    limiter.close()
    reopened = RateLimiter.open(tmp_path, Limits(100, 3))
    decision = reopened.acquire("tok", T0 + timedelta(minutes=5))
    assert not decision.allowed
    assert decision.retry_after == 14 * 3600 - 5 * 60  # until midnight in Lima


def test_the_day_count_starts_again_at_lima_midnight_not_utc(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(100, 1))
    late_evening = datetime(2026, 9, 22, 4, 0, tzinfo=UTC)  # 23:00 on the 21st in Lima
    assert limiter.acquire("tok", late_evening).allowed
    # 00:30 UTC on the 22nd was 19:30 on the 21st in Lima: same day, refused earlier on.
    assert not limiter.acquire("tok", late_evening + timedelta(minutes=30)).allowed
    assert limiter.acquire("tok", late_evening + timedelta(hours=1)).allowed  # 00:00 in Lima


def test_a_request_timed_before_midnight_that_takes_the_lock_after_the_next_days_first(
    tmp_path: Path,
) -> None:
    """Two workers race at Lima midnight: the one timed at 23:59:59.999999 takes the lock
    after the one timed at 00:00:00. It counts in the new day with it (it wrote the old day
    back, which started the new day's count again)."""
    limiter = RateLimiter.open(tmp_path, Limits(100, 2))
    midnight = datetime(2026, 9, 22, 5, 0, tzinfo=UTC)  # 00:00 on the 22nd in Lima
    assert limiter.acquire("tok", midnight).allowed
    assert limiter.acquire("tok", midnight - timedelta(microseconds=1)).allowed
    assert not limiter.acquire("tok", midnight + timedelta(seconds=1)).allowed


def test_a_file_that_is_no_ring_is_refused_at_the_first_decision(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(3, 1000))
    path = ring_path(tmp_path, "tok")
    path.write_bytes(b"SQLite format 3\0" + b"\1" * 200)
    with pytest.raises(ValueError, match="not a rate-limit ring file"):
        limiter.acquire("tok", T0)
    assert path.read_bytes()[:16] == b"SQLite format 3\0"  # left as it was


def test_a_changed_limit_counts_the_requests_already_in_the_window(tmp_path: Path) -> None:
    """DECISIONS 9: "at most N in (t-60 s, t]", exact across restarts, N being the limit the
    gateway runs with now: a raised limit lets through exactly the difference, a lowered one
    nothing until enough requests leave the window (a lowered limit let up to N-1 through)."""
    limiter = RateLimiter.open(tmp_path, Limits(3, 1000))
    for i in range(3):
        assert limiter.acquire("tok", T0 + timedelta(seconds=i)).allowed
    limiter.close()
    raised = RateLimiter.open(tmp_path, Limits(5, 1000))
    allowed = [raised.acquire("tok", T0 + timedelta(seconds=10 + i)).allowed for i in range(8)]
    assert allowed == [True, True] + [False] * 6
    raised.close()
    lowered = RateLimiter.open(tmp_path, Limits(2, 1000))
    refused = lowered.acquire("tok", T0 + timedelta(seconds=30))
    assert refused == Decision(False, 40)  # the 2nd most recent (at 10 s) leaves at 70 s
    assert not lowered.acquire("tok", T0 + timedelta(seconds=69, microseconds=999_999)).allowed
    assert lowered.acquire("tok", T0 + timedelta(seconds=70)).allowed
    assert not lowered.acquire("tok", T0 + timedelta(seconds=70, microseconds=1)).allowed


@pytest.mark.parametrize(("before", "after"), [(10, 5), (10, 1), (7, 3), (3, 7), (1, 4)])
def test_after_a_changed_limit_the_window_is_counted_as_a_sliding_log_counts_it(
    tmp_path: Path, before: int, after: int
) -> None:
    """A burst under one limit, a restart under another: every later decision is the one a plain
    log of the accepted instants gives under the new limit."""
    accepted: list[datetime] = []
    first = RateLimiter.open(tmp_path, Limits(before, 10**6))
    for i in range(before + 2):
        now = T0 + timedelta(seconds=i * 7)
        if first.acquire("tok", now).allowed:
            accepted.append(now)
    first.close()
    second, other = open_pair(tmp_path, Limits(after, 10**6))
    for i in range(40):
        now = T0 + timedelta(seconds=20 + i * 3)
        in_window = [t for t in accepted if t > now - timedelta(seconds=60)]
        allowed = (second if i % 2 else other).acquire("tok", now).allowed
        assert allowed is (len(in_window) < after), (i, now, len(in_window))
        if allowed:
            accepted.append(now)


@pytest.mark.parametrize("per_min", [1, 7])
def test_the_store_keeps_at_most_per_min_instants_per_token(tmp_path: Path, per_min: int) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(per_min, 10**6))
    for i in range(200):
        limiter.acquire("tok", T0 + timedelta(seconds=i * 30))
    size = ring_path(tmp_path, "tok").stat().st_size
    assert size == RingFile.slot_offset(per_min)  # the header and per_min slots, no more


def test_a_count_written_by_one_worker_is_read_back_after_a_restart_of_both(tmp_path: Path) -> None:
    first, second = open_pair(tmp_path, Limits(3, 1000))
    assert first.acquire("tok", T0).allowed
    assert second.acquire("tok", T0 + timedelta(seconds=1)).allowed
    first.close()
    second.close()
    again = RateLimiter.open(tmp_path, Limits(3, 1000))
    assert again.acquire("tok", T0 + timedelta(seconds=2)).allowed
    assert again.acquire("tok", T0 + timedelta(seconds=3)) == Decision(False, 57)


def test_acquire_at_an_instant_in_microseconds_is_acquire_at_that_datetime(tmp_path: Path) -> None:
    by_datetime = RateLimiter.open(tmp_path / "a", Limits(per_min=2, per_day=100))
    by_micros = RateLimiter.open(tmp_path / "b", Limits(per_min=2, per_day=100))
    for seconds in (0, 1, 2, 59.5, 60, 61):
        instant = T0 + timedelta(seconds=seconds)
        assert by_micros.acquire_us("tok", epoch_us(instant)) == by_datetime.acquire("tok", instant)


@pytest.mark.parametrize("per_min", [3, 2_000_000])  # mapped whole; beyond MAPPED_SLOTS
def test_mapped_and_sparse_rings_decide_alike(tmp_path: Path, per_min: int) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(per_min=per_min, per_day=10**9))
    for second in range(per_min if per_min < 10 else 50):
        assert limiter.acquire("tok", T0 + timedelta(seconds=second / 10)).allowed
    if per_min < 10:
        assert limiter.acquire("tok", T0 + timedelta(seconds=1)) == Decision(False, 59)
    limiter.close()
    reopened = RateLimiter.open(tmp_path, Limits(per_min=per_min, per_day=10**9))
    assert reopened.acquire("tok", T0 + timedelta(seconds=61)).allowed


def test_a_ring_beyond_the_mapped_size_stays_a_small_sparse_file(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(per_min=10**9, per_day=10**9))
    for second in range(100):
        assert limiter.acquire("tok", T0 + timedelta(seconds=second)).allowed
    limiter.close()
    stat = ring_path(tmp_path, "tok").stat()
    assert stat.st_size == RingFile.slot_offset(101)  # the header and the slots written
    assert stat.st_blocks * 512 <= 64 * 1024
