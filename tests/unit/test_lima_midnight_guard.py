"""The guard that keeps Lima's midnight out of a test counting one day (``tests.support.clock``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.clock import seconds_to_lima_midnight, wait_for_a_clear_run

# Lima is UTC-5 all year: its midnight is 05:00 UTC.
NOON_IN_LIMA = datetime(2026, 11, 28, 17, 0, tzinfo=UTC)
BEFORE_MIDNIGHT = datetime(2026, 11, 29, 4, 59, 30, tzinfo=UTC)


def test_lima_midnight_is_five_in_the_morning_utc() -> None:
    assert seconds_to_lima_midnight(NOON_IN_LIMA) == 12 * 3600
    assert seconds_to_lima_midnight(BEFORE_MIDNIGHT) == 30
    # 01:00 UTC is still the evening before in Lima: four hours to go, not twenty-eight.
    assert seconds_to_lima_midnight(datetime(2026, 11, 29, 1, 0, tzinfo=UTC)) == 4 * 3600
    assert seconds_to_lima_midnight(datetime(2026, 11, 29, 5, 0, tzinfo=UTC)) == 24 * 3600


def test_a_run_that_fits_before_midnight_starts_at_once() -> None:
    assert wait_for_a_clear_run(NOON_IN_LIMA, 120) == 0
    assert wait_for_a_clear_run(BEFORE_MIDNIGHT, 30) == 0


def test_a_run_that_would_cross_midnight_starts_just_after_it() -> None:
    assert wait_for_a_clear_run(BEFORE_MIDNIGHT, 31) == 31
    assert wait_for_a_clear_run(BEFORE_MIDNIGHT, 120) == 31


@pytest.mark.parametrize("run_s", [0, -1, 601])
def test_a_run_too_short_or_longer_than_ten_minutes_is_refused(run_s: float) -> None:
    with pytest.raises(ValueError, match="clear run"):
        wait_for_a_clear_run(NOON_IN_LIMA, run_s)
