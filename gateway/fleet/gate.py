"""Fleet mode's shared state in Redis (``FXEV_REDIS_URL``): tokens, limits, the page secret,
and the alert state the operator publishes (:class:`FleetAlerts`).

Every gateway of every host asks one Redis, so the rules of one host (docs/rate-limits.md) hold
across the fleet. A request of ``/v1`` costs **one round trip**: one ``EVALSHA`` of
:data:`ADMIT`, which checks the token and counts it against its limits atomically; the worker
awaits it, serving other requests meanwhile, on one pipelined connection
(:mod:`gateway.fleet.pipe`), which sends the script in full (``EVAL``) when Redis answers
``NOSCRIPT``, as after a restart. Keys, all of one token under one cluster hash tag ``{<id>}``:

``fxev:tok:{<id>}``             the token's record, a hash (:mod:`tokens.redis_store`)
``fxev:rl:{<id>}:min``          a list: the instants (us) of its last ``per_min`` accepted
                                requests, newest first; expires 61 to 122 s after the last one
``fxev:rl:{<id>}:day:<date>``   the count of the Lima day ``<date>``; expires a day after it ends
``fxev:rv:{<id>}``              the newest published revision a gateway answered the token at
``fxev:page_secret``            the page-token secret, set once (``SET NX``)
``fxev:edge_secret``            the edge's credential (:mod:`gateway.edge.steps`), set once likewise

The script mirrors :func:`gateway.limits.rule.decide`: the minute rule needs the ``per_min``-th
most recent accepted instant (``LINDEX per_min-1``), the day rule today's count; a request that
passes is pushed (``LPUSH``, then ``LTRIM`` once the list is longer than ``per_min``) and counted
(``INCR``); a refused one writes nothing. Every write goes to Redis's append-only file, fsynced
always, so the expiries are written only when needed (docs/performance.md#fleet): the day's
first request sets its counter's (the same instant for every request of that day), as does a
request that finds the counter without one; a request that finds the list without an expiry
(new, or as an operator left it) or with less than the window and a second to live (61 s) sets
it to twice that (122 s). It returns the wait in microseconds, which
:func:`gateway.limits.rule.after_wait` turns into ``Retry-After`` as on one host. Instants come
from the gateway's real clock (never ``FXEV_NOW``); the Lima day and its end from
:class:`gateway.limits.rule.LimaClock`.

Each gateway host mirrors a publish on its own poll, so for a moment two gateways serve two
revisions. The script also keeps, per token, the newest revision it was answered at (its
*mark*), so that a client's ``dataset_revision`` never goes back when it moves to another
gateway (DECISIONS 4): a gateway whose published revision is below the mark is told so, with
nothing counted, and waits for its mirror (:func:`gateway.handlers.access.admitted_at_mark`).

Redis unreachable: every call raises :class:`~gateway.errors.NotReady` (503 ``INTERNAL``,
retryable); nothing passes unlimited. The client reconnects by itself on the next request.
Redis stalled past :data:`TIMEOUT_S`: the same 503; a script Redis runs once it resumes, whose
request it counted, is then taken back by :data:`UNDO` (:class:`gateway.fleet.pipe.Undo`).
"""

from __future__ import annotations

import secrets
from typing import Any

import redis

from builder.ops import redisclient
from builder.ops.alerts import Alert
from builder.ops.shared_alerts import NotShared, SharedAlerts
from gateway.errors import NotReady
from gateway.fleet.pipe import PipeError, PipelinedScript, Undo
from gateway.limits.rule import WINDOW_US, Decision, LimaClock, Limits, after_wait
from tokens.redis_store import record_of, token_key
from tokens.store import TokenRecord, parse_token_id, token_hash

SECRET_KEY = "fxev:page_secret"
EDGE_SECRET_KEY = "fxev:edge_secret"
TIMEOUT_S = 1.0
MEMO_SIZE = 1024
DAY_MS = 86_400_000  # a day counter outlives its day by a day

# KEYS: the token's hash, its minute list, its day counter, its revision mark.
# ARGV: the presented text's hash ('' = the caller checked the token), now (us), per_min,
#       per_day, the Lima day's end (us), the window (us), the day counter's expiry (ms),
#       '1' to count the request against the limits ('0': the token checked alone, wait 0),
#       the caller's published revision ('' = no mark read or raised).
# Returns {0} for a refused token; {2, mark, name, created_at, expires} for a valid one under
# its limits whose mark is above the caller's revision (nothing counted); else {1, wait_us, name,
# created_at, expires} (over a limit: its 429 carries no revision, and is answered at once), and
# a request counted raises the mark to the caller's revision. Not counting ('0'),
# the revision given only raises the mark of a valid token (the caller's pointer moved).
ADMIT = """
local now = tonumber(ARGV[2])
local t = redis.call('HMGET', KEYS[1], 'hash', 'revoked_at', 'expires_at_us', 'name',
                     'created_at', 'expires')
if ARGV[1] ~= '' then
  if t[1] ~= ARGV[1] or (t[2] and t[2] ~= '') then return {0} end
  if t[3] and t[3] ~= '' and now >= tonumber(t[3]) then return {0} end
end
local revision = tonumber(ARGV[9])
local mark = 0
if revision then mark = tonumber(redis.call('GET', KEYS[4]) or '0') end
if ARGV[8] == '0' then
  if revision and revision > mark then redis.call('SET', KEYS[4], ARGV[9]) end
  return {1, 0, t[4] or '', t[5] or '', t[6] or ''}
end
local per_min = tonumber(ARGV[3])
local window = tonumber(ARGV[6])
local wait = 0
local nth = redis.call('LINDEX', KEYS[2], per_min - 1)
if nth then
  nth = tonumber(nth)
  if nth > now - window then wait = nth + window - now end
end
local count = tonumber(redis.call('GET', KEYS[3]) or '0')
local day_end = tonumber(ARGV[5])
if count >= tonumber(ARGV[4]) and day_end - now > wait then wait = day_end - now end
if wait == 0 and mark > (revision or mark) then
  return {2, mark, t[4] or '', t[5] or '', t[6] or ''}
end
if wait == 0 then
  if redis.call('LPUSH', KEYS[2], ARGV[2]) > per_min then
    redis.call('LTRIM', KEYS[2], 0, per_min - 1)
  end
  -- The list must outlive its newest instant by the window and a second (61 s): found without
  -- an expiry (new, or as an operator left it) or with less left, it gets twice that (122 s),
  -- so its expiry is written about once a window, not on every request.
  local keep = math.floor(window / 1000) + 1000
  if redis.call('PTTL', KEYS[2]) < keep then redis.call('PEXPIRE', KEYS[2], 2 * keep) end
  -- The expiry is the same for every request of the day: written once (a read, PTTL, finds a
  -- counter left without one, as by an operator's SET).
  if redis.call('INCR', KEYS[3]) == 1 or redis.call('PTTL', KEYS[3]) == -1 then
    redis.call('PEXPIREAT', KEYS[3], ARGV[7])
  end
  if revision and revision > mark then redis.call('SET', KEYS[4], ARGV[9]) end
end
return {1, wait, t[4] or '', t[5] or '', t[6] or ''}
"""


# Run after an ADMIT whose caller was answered 503 (Redis did not answer in time) and which Redis
# ran once it resumed, counting the request: with the same KEYS and ARGV, it takes that count
# back (the minute list's instant, if still there, and one from the day's counter).
UNDO = """
redis.call('LREM', KEYS[2], 1, ARGV[2])
if tonumber(redis.call('GET', KEYS[3]) or '0') > 0 then redis.call('DECR', KEYS[3]) end
return 1
"""


def counted(args: tuple[Any, ...], reply: Any) -> bool:
    """Whether :data:`ADMIT`, called with ``args``, counted a request: its reply says the token
    passed with no wait, and it was asked to count."""
    return args[7] == "1" and reply[0] == 1 and reply[1] == 0


UNDO_LATE = Undo(UNDO, counted)


class Behind(Exception):
    """A valid token whose mark (the newest revision a gateway answered it at) is above the
    caller's published revision: nothing was counted."""

    def __init__(self, record: TokenRecord, mark: int) -> None:
        super().__init__(f"the token was answered at revision {mark}")
        self.record = record
        self.mark = mark


def minute_key(token_id: str) -> str:
    return "fxev:rl:{" + token_id + "}:min"


def day_key(token_id: str, day: str) -> str:
    return "fxev:rl:{" + token_id + "}:day:" + day


def mark_key(token_id: str) -> str:
    return "fxev:rv:{" + token_id + "}"


def connect(url: str) -> redis.Redis:
    """A client that fails fast (one retry, which reconnects) rather than hang a worker."""
    return redisclient.connect(url, timeout_s=TIMEOUT_S, retry_once=True)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisGate:
    """The token check, the limiter and the page secret of a gateway worker in fleet mode: both
    steps in one round trip (:meth:`admit_async`), or the check alone, counting nothing
    (:meth:`check_async`), each awaited on the worker's pipe."""

    def __init__(self, client: redis.Redis, limits: Limits, pipe: PipelinedScript | None = None):
        self.client = client
        self.pipe = pipe
        self.limits = limits
        self._lima = LimaClock()
        self._records: dict[tuple[str, ...], TokenRecord] = {}

    @classmethod
    def open(cls, url: str, limits: Limits) -> RedisGate:
        """In a worker, on its event loop: a client for each side (the ``/v1`` gate awaits its
        round trip; the few synchronous paths, such as the explorer's, block on theirs)."""
        return cls(connect(url), limits, PipelinedScript(url, ADMIT, TIMEOUT_S, UNDO_LATE))

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        self.close()
        if self.pipe is not None:
            self.pipe.close()

    def _call(
        self,
        token_id: str,
        text_hash: str,
        now_us: int,
        count: bool = True,
        revision: int | None = None,
    ) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """The script's keys and arguments for one request (``count``: against its limits;
        ``revision``: the caller's published revision, checked against the token's mark)."""
        span = self._lima.day(now_us)
        keys = (
            token_key(token_id),
            minute_key(token_id),
            day_key(token_id, span.day.isoformat()),
            mark_key(token_id),
        )
        limits = self.limits
        day_expiry_ms = span.end_us // 1000 + DAY_MS
        args = (
            text_hash,
            now_us,
            limits.per_min,
            limits.per_day,
            span.end_us,
            WINDOW_US,
            day_expiry_ms,
            "1" if count else "0",
            "" if revision is None else revision,
        )
        return keys, args

    async def _script(
        self, token_text: str, now_us: int, count: bool = True, revision: int | None = None
    ) -> tuple[str, Any] | None:
        """One :data:`ADMIT` through the worker's pipe (its arguments as :meth:`_call`'s): the
        token's id and the script's reply, or None for a text that is no fxev token (Redis not
        asked). Redis unreachable or stalled: :class:`~gateway.errors.NotReady`."""
        token_id = parse_token_id(token_text)
        if token_id is None:
            return None
        keys, args = self._call(token_id, token_hash(token_text), now_us, count, revision)
        assert self.pipe is not None, "opened without its event loop's pipe"
        try:
            return token_id, await self.pipe.call(keys, args)
        except PipeError as error:
            raise NotReady("The shared state is unavailable.") from error

    async def admit_async(
        self, token_text: str, now_us: int, revision: int | None = None
    ) -> tuple[TokenRecord | None, Decision]:
        """The token's record (None: unknown, revoked or expired at ``now_us``) and, for a valid
        one, the limiter's decision, counted if it passes: one round trip, awaited on the
        worker's event loop. While Redis answers, the worker serves other requests, and Redis
        writes the scripts of all of them to its AOF with one fsync.

        With ``revision`` (the caller's published revision, 0 before its first), the token's
        mark is checked, and raised by a request counted: :class:`Behind` if the token was
        answered at a later revision already, with nothing counted."""
        asked = await self._script(token_text, now_us, revision=revision)
        if asked is None or asked[1][0] == 0:
            return None, after_wait(0)
        token_id, found = asked
        if found[0] == 2:
            raise Behind(self._record(token_id, found[2:]), int(found[1]))
        return self._record(token_id, found[2:]), after_wait(int(found[1]))

    async def check_async(self, token_text: str, now_us: int) -> TokenRecord | None:
        """The token's record if it is valid at ``now_us``, else None, through the same pipe as
        the gate (the script with nothing counted): a worker whose Redis hangs goes on serving
        meanwhile."""
        asked = await self._script(token_text, now_us, count=False)
        if asked is None or asked[1][0] == 0:
            return None
        return self._record(asked[0], asked[1][2:])

    async def mark_async(self, token_text: str, now_us: int, revision: int) -> None:
        """Raise the mark of a token just admitted to ``revision``, the caller's published
        revision when its pointer moved during the admission's round trip; nothing counted."""
        await self._script(token_text, now_us, count=False, revision=revision)

    def _record(self, token_id: str, fields: list[Any]) -> TokenRecord:
        """An active token's record, parsed once per (id, name, created_at, expires)."""
        key = (token_id, *(_text(field) for field in fields))
        record = self._records.get(key)
        if record is None:
            if len(self._records) >= MEMO_SIZE:
                self._records.clear()
            name, created_at, expires = key[1:]
            record = self._records[key] = record_of(
                token_id, {"name": name, "created_at": created_at, "expires": expires}
            )
        return record

    def page_secret(self, key: str = SECRET_KEY) -> bytes:
        """The fleet's page-token secret (or the edge's credential, under ``key``): the first
        gateway sets it, every other reads it."""
        self.client.set(key, secrets.token_hex(32), nx=True)
        value = self.client.get(key)
        if value is None:
            raise NotReady("A shared secret is missing from Redis.")
        return bytes.fromhex(_text(value))


class FleetAlerts(SharedAlerts):
    """The alert state a gateway serves in fleet mode, read from Redis on each ``/v1/alerts``
    and ``/v1/health/freshness`` (:mod:`builder.ops.shared_alerts`): Redis unreachable, or no
    state published yet, is 503 ``INTERNAL``, retryable, never an empty list."""

    def list(self, open_only: bool = True) -> list[Alert]:
        try:
            return super().list(open_only)
        except redis.RedisError as error:
            raise NotReady("The shared state is unavailable.") from error
        except NotShared as error:
            raise NotReady("The alert state has not been published yet.") from error
