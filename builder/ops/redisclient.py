"""The one way fxev opens a Redis client (fleet mode, ``FXEV_REDIS_URL``).

The operator's commands (the alert state, the mirrors' reports), the token store and each
gateway worker's gate all connect here, each with the wait it can afford: an operator's command
5 s, a worker 1 s (:data:`gateway.fleet.gate.TIMEOUT_S`), which also retries a failed command
once, at once, on a new connection, as after Redis restarted. ``redis`` is imported only when a
client is made: a host with no ``FXEV_REDIS_URL`` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

COMMAND_TIMEOUT_S = 5.0  # an operator's command waits this long, to connect and for each answer


def connect(
    url: str, *, timeout_s: float = COMMAND_TIMEOUT_S, retry_once: bool = False
) -> redis.Redis:
    """A client that gives up after ``timeout_s`` (connecting, and for each answer) rather than
    hang its caller; with ``retry_once``, a command that failed is sent once more, at once."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {"socket_timeout": timeout_s, "socket_connect_timeout": timeout_s}
    if retry_once:  # otherwise redis-py's own retry policy
        options["retry"] = Retry(NoBackoff(), 1)
    return redis.Redis.from_url(url, **options)
