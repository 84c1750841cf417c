"""Rate-limit arithmetic, the ring file's encoding and the Lima day, all pure.

The shared store on disk is in tests/integration/test_ratelimit_store.py.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.limits.ring import Counter, RingFile, ring_path
from gateway.limits.rule import (
    WINDOW_US,
    Decision,
    LimaClock,
    LimaDay,
    Limits,
    decide,
    epoch_us,
    lima_day,
    next_lima_midnight,
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
