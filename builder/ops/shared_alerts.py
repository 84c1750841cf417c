"""The alert state in Redis (fleet mode, ``FXEV_REDIS_URL``): what every gateway serves.

The operator's host keeps the alert store (:mod:`builder.ops.alerts`); a gateway host has none.
After a command changed alerts, the operator's side writes the **whole** state, as the API
serves it, to one Redis hash, and gateways read it from there, so ``/v1/alerts`` and the
``alertas_abiertas`` of ``/v1/health/freshness`` agree on every gateway:

``fxev:alerts``  a hash: ``version`` (``<store id>:<generation>``), ``store`` (the alert store's
                 id), ``generation`` (the store's counter of changing transactions) and
                 ``snapshot`` (JSON: every alert, newest ``ultima_vez`` first, then ``id``)

One snapshot rather than a hash per alert: a few hundred alerts at most, read only when they
changed, and a reader can never see half of a change. Writing is :data:`PUBLISH`, a script that
keeps the newest generation (two operator commands that finish out of order cannot put an older
state back); a state from another alert store (an operator's home moved) replaces it. Reading is
:data:`READ`: a gateway sends the version it holds and gets the snapshot only when it changed,
one small round trip otherwise.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import orjson

from builder.core.errors import RemoteError, is_redis_error
from builder.core.vocabulary import RESUELTA
from builder.ops.alerts import Alert, AlertState, AlertStore
from builder.ops.redisclient import connect

if TYPE_CHECKING:
    import redis

KEY = "fxev:alerts"

# KEYS[1] the hash; ARGV: store id, generation, snapshot. 1 if written, 0 if Redis holds the
# same store's generation or a newer one.
PUBLISH = """
local held = redis.call('HMGET', KEYS[1], 'store', 'generation')
if held[1] == ARGV[1] and tonumber(held[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'store', ARGV[1], 'generation', ARGV[2],
           'version', ARGV[1] .. ':' .. ARGV[2], 'snapshot', ARGV[3])
return 1
"""

# KEYS[1] the hash; ARGV[1] the version the reader holds. {} nothing published yet; {version}
# unchanged; {version, snapshot} changed.
READ = """
local version = redis.call('HGET', KEYS[1], 'version')
if not version then return {} end
if version == ARGV[1] then return {version} end
return {version, redis.call('HGET', KEYS[1], 'snapshot')}
"""


def snapshot_bytes(alerts: tuple[Alert, ...]) -> bytes:
    return orjson.dumps([alert.to_json() for alert in alerts])


def parse_snapshot(payload: bytes) -> tuple[Alert, ...]:
    return tuple(Alert(**item) for item in orjson.loads(payload))


def publish(client: redis.Redis, state: AlertState) -> bool:
    """Write ``state`` unless Redis holds it or a newer one; whether it wrote."""
    args = (state.store_id, state.generation, snapshot_bytes(state.alerts))
    return bool(client.eval(PUBLISH, 1, KEY, *args))


def share(store: AlertStore, url: str, *, always: bool = False) -> bool:
    """Publish the store's state to Redis at ``url`` if it changed since it was last shared (or
    ``always``), then remember it was; whether it published. Redis errors propagate."""
    state = store.state()
    if not always and state.shared >= state.generation:
        return False
    client = connect(url)
    try:
        publish(client, state)
    finally:
        client.close()
    store.mark_shared(state.generation)
    return True


def check_reachable(url: str) -> None:
    """A ``RemoteError`` (exit 2) when Redis at ``url`` cannot be reached: an ``alerts`` command
    asks before it changes anything, so that its error changes nothing (DECISIONS 3)."""
    try:
        client = connect(url)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:
        if not is_redis_error(error):
            raise
        raise RemoteError(
            f"Redis at FXEV_REDIS_URL cannot be reached ({error}); nothing was changed, since"
            " the gateways could not be told"
        ) from None


def share_or_warn(store: AlertStore, url: str, *, strict: bool) -> None:
    """:func:`share` at the end of a command. Redis unreachable fails an ``alerts`` command
    (``strict``: exit 2; it was reachable when the command began, :func:`check_reachable`, so
    the change is kept and the next command publishes it) and is one warning line on stderr for
    any other (a capture stays recorded and reported)."""
    try:
        share(store, url, always=strict)
    except Exception as error:
        if not is_redis_error(error):
            raise
        message = (
            f"alert state not published: Redis at FXEV_REDIS_URL cannot be reached ({error});"
            " the next command that opens the home publishes it"
        )
        if strict:
            raise RemoteError(message) from None
        print(f"fxev: warning: {message}", file=sys.stderr, flush=True)


class SharedAlerts:
    """A gateway's view of the alert state in Redis: :meth:`list` as
    :meth:`builder.ops.alerts.AlertView.list`, one round trip, parsing only a new version.

    Redis errors propagate (the gateway turns them into 503); :class:`NotShared` when no operator
    command has published a state yet."""

    def __init__(self, client: redis.Redis) -> None:
        self._read = client.register_script(READ)
        self.version: bytes = b""
        self._all: tuple[Alert, ...] = ()
        self._open: tuple[Alert, ...] = ()

    def refresh(self) -> None:
        found: list[Any] = self._read(keys=(KEY,), args=(self.version,))
        if not found:
            raise NotShared("no alert state has been published to Redis yet")
        if len(found) == 2:
            alerts = parse_snapshot(found[1])
            self._all = alerts
            self._open = tuple(alert for alert in alerts if alert.estado != RESUELTA)
            self.version = found[0]

    def list(self, open_only: bool = True) -> list[Alert]:
        self.refresh()
        return list(self._open if open_only else self._all)

    def close(self) -> None:
        """The client is the caller's."""


class NotShared(LookupError):
    """Fleet mode, and no operator command has published the alert state yet."""
