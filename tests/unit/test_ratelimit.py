"""Rate-limit arithmetic (pure) and the shared store, two instances standing for two workers."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.ratelimit import (
    WINDOW_US,
    Counter,
    Decision,
    LimaClock,
    LimaDay,
    Limits,
    RateLimiter,
    RingFile,
    decide,
    epoch_us,
    lima_day,
    next_lima_midnight,
    ring_path,
)

FAR = 10**18  # a day end that never matters
T0 = datetime(2026, 9, 21, 15, 0, tzinfo=UTC)  # 10:00 in Lima


def test_passes_when_fewer_than_the_minute_limit() -> None:
    assert decide(Limits(3, 100), 0, None, 0, FAR) == Decision(True)


def test_passes_when_the_nth_recent_request_left_the_window() -> None:
    now = 100 * 1_000_000
    assert decide(Limits(3, 100), now, now - WINDOW_US, 5, FAR).allowed  # (t-60, t] excludes it


def test_refuses_while_the_nth_recent_request_is_in_the_window() -> None:
    now = 100 * 1_000_000
    decision = decide(Limits(3, 100), now, now - WINDOW_US + 1, 5, FAR)
    assert decision == Decision(False, 1)  # 1 us to wait: rounded up to one second


def test_retry_after_rounds_up_to_whole_seconds() -> None:
    now = 100 * 1_000_000
    decision = decide(Limits(3, 100), now, now - 20_500_000, 0, FAR)
    assert decision == Decision(False, 40)  # 39.5 s left -> 40


def test_day_limit_waits_until_lima_midnight() -> None:
    now = epoch_us(T0)
    day_end = epoch_us(next_lima_midnight(lima_day(T0)))
    decision = decide(Limits(60, 10), now, None, 10, day_end)
    assert decision == Decision(False, 14 * 3600)  # 10:00 -> 24:00 in Lima


def test_both_limits_exceeded_waits_for_the_later() -> None:
    now = 1_000_000_000
    decision = decide(Limits(1, 1), now, now - 1_000_000, 1, now + 5_000_000)
    assert decision == Decision(False, 59)


@settings(max_examples=200, deadline=None)
@given(
    per_min=st.integers(1, 5),
    gaps=st.lists(st.integers(0, 40_000_000), min_size=1, max_size=40),
)
def test_decide_agrees_with_a_plain_sliding_log(per_min: int, gaps: list[int]) -> None:
    """Over any sequence of request instants, accepted ones never exceed per_min in 60 s and a
    refused request is refused exactly when per_min accepted ones lie in (t-60, t]."""
    accepted: list[int] = []
    now = 0
    for gap in gaps:
        now += gap
        in_window = [t for t in accepted if t > now - WINDOW_US]
        nth = accepted[-per_min] if len(accepted) >= per_min else None
        decision = decide(Limits(per_min, 10**9), now, nth, len(accepted), FAR)
        assert decision.allowed is (len(in_window) < per_min)
        if decision.allowed:
            accepted.append(now)
        else:
            # Retry-After is exactly when the oldest of the blocking ones leaves the window.
            leaves = in_window[-per_min] + WINDOW_US
            assert decision.retry_after == max(1, -(-(leaves - now) // 1_000_000))


# -- the store ------------------------------------------------------------------------------------


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


def test_a_changed_limit_takes_effect_within_a_minute(tmp_path: Path) -> None:
    limiter = RateLimiter.open(tmp_path, Limits(3, 1000))
    for i in range(3):
        assert limiter.acquire("tok", T0 + timedelta(seconds=i)).allowed
    limiter.close()
    raised = RateLimiter.open(tmp_path, Limits(5, 1000))
    allowed = [raised.acquire("tok", T0 + timedelta(seconds=10 + i)).allowed for i in range(8)]
    assert allowed.count(True) >= 2
    lowered = RateLimiter.open(tmp_path, Limits(2, 1000))
    allowed = [lowered.acquire("tok", T0 + timedelta(seconds=30 + i)).allowed for i in range(5)]
    assert allowed.count(True) <= 2


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


def test_ring_header_round_trips_and_a_foreign_file_is_refused() -> None:
    counter = Counter(last_seq=12, day=date(2026, 9, 21).toordinal(), day_count=5)
    assert RingFile.decode_header(RingFile.encode_header(counter)) == counter
    assert RingFile.decode_header(b"") is None  # a new, empty file
    assert RingFile.decode_slot(b"\0" * RingFile.SLOT.size) is None  # a hole: never written
    with pytest.raises(ValueError, match="ring"):
        RingFile.decode_header(b"SQLite format 3\0" + b"\0" * 16)


@pytest.mark.parametrize("token_id", ["", "../x", "a/b", "x" * 65])
def test_a_token_id_that_is_not_a_plain_name_never_becomes_a_path(token_id: str) -> None:
    with pytest.raises(ValueError, match="token id"):
        ring_path(Path("/home"), token_id)


def test_lima_day_spans_the_real_clock_from_midnight_to_midnight_in_lima() -> None:
    span = LimaDay.of(T0)
    assert span.day == date(2026, 9, 21)
    assert span.start_us == epoch_us(datetime(2026, 9, 21, 5, 0, tzinfo=UTC))
    assert span.end_us == epoch_us(datetime(2026, 9, 22, 5, 0, tzinfo=UTC))
    assert span.holds(span.start_us) and not span.holds(span.end_us)


def test_the_lima_clock_turns_the_day_at_lima_midnight_not_utc() -> None:
    clock = LimaClock()
    before = epoch_us(datetime(2026, 9, 21, 4, 59, 59, 999999, tzinfo=UTC))  # 23:59:59 in Lima
    assert clock.day(before).day == date(2026, 9, 20)
    assert clock.day(before + 1).day == date(2026, 9, 21)
    assert clock.day(before).day == date(2026, 9, 20)  # and back: the span is checked each time


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
