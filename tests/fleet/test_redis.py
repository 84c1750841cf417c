"""Fleet mode's Redis (docs/operating/fleet.md#redis): the limiter's script against one host's.
What two gateways sharing one Redis must do is tested on the whole topology
(``tests/fleet/test_topology.py``)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gateway.fleet_limits import RedisGate
from gateway.ratelimit import Limits, RateLimiter, epoch_us
from tests.fleet.conftest import seconds_to_lima_midnight
from tests.fleet.redis_server import RedisServer


def test_the_script_decides_as_the_file_limiter(redis_server: RedisServer, tmp_path: Path) -> None:
    """Same limits, same instants (across a Lima midnight): the same decisions, Retry-After
    included, from the Redis script and from one host's ring files."""
    limits = Limits(per_min=4, per_day=9)
    gate = RedisGate.open(redis_server.url, limits)
    files = RateLimiter.open(tmp_path, limits)
    rng = random.Random(5)
    # Instants from 5 minutes before the next Lima midnight (Redis expires the day's counter a
    # day after its day, on its own clock: a day long past would be gone at once).
    start = epoch_us(datetime.now(UTC) + timedelta(seconds=seconds_to_lima_midnight() - 300))
    try:
        now = start
        for _ in range(400):
            now += rng.choice((1, 1_000, 900_000, 7_000_000, 31_000_000))
            assert gate.acquire_us("0123456789abcdef", now) == files.acquire_us("tok", now), now
    finally:
        gate.close()
        files.close()
