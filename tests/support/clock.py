"""Lima's midnight on the real clock, for tests whose answers depend on the day in Lima.

The day limit and token expiry run on the real clock in Lima (DECISIONS 2, 9, 11), so a test
that counts a day's requests, or issues a token "valid through today", would see the day turn
if Lima's midnight (05:00 UTC) fell inside it. Such a test calls :func:`clear_of_lima_midnight`
with its own longest run before its first request: near midnight it waits until the new day
has begun, instead of failing or skipping afterwards.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from builder.core.vocabulary import LIMA

LONGEST_WAIT_S = 600.0
"""A test needing a longer clear run than this is too slow to hold one day in Lima."""


def seconds_to_lima_midnight(now: datetime | None = None) -> float:
    """Seconds from ``now`` (the real clock by default) to the next midnight in Lima."""
    now = (now or datetime.now(UTC)).astimezone(LIMA)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=LIMA)
    return (midnight - now).total_seconds()


def wait_for_a_clear_run(now: datetime, run_s: float) -> float:
    """Seconds to wait from ``now`` so that ``run_s`` seconds hold no midnight in Lima.

    Zero if the next midnight is at least ``run_s`` away; else just past that midnight
    (one second after it), when a whole day lies ahead.
    """
    if not 0 < run_s <= LONGEST_WAIT_S:
        raise ValueError(f"a clear run of {run_s} s is not between 0 and {LONGEST_WAIT_S} s")
    left = seconds_to_lima_midnight(now)
    return 0.0 if left >= run_s else left + 1.0


def clear_of_lima_midnight(run_s: float) -> None:
    """Return when the next ``run_s`` seconds of the real clock hold no midnight in Lima."""
    time.sleep(wait_for_a_clear_run(datetime.now(UTC), run_s))
