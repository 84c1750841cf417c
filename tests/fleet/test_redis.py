"""Fleet mode's Redis (docs/operating/fleet.md#redis): the limiter's script against one host's,
and the pipelined connection that carries it.
What two gateways sharing one Redis must do is tested on the whole topology
(``tests/fleet/test_topology.py``)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.fleet.gate import DAY_MS, RedisGate, day_key, minute_key
from gateway.fleet.pipe import PipeError, PipelinedScript
from gateway.limits.ring import RateLimiter
from gateway.limits.rule import WINDOW_US, LimaClock, Limits, epoch_us
from tests.fleet.redis_server import RedisServer
from tests.support.clock import seconds_to_lima_midnight

# What the minute list must outlive its newest instant by (ms): the window and a second. The
# script gives it twice that whenever less is left.
KEEP_MS = WINDOW_US // 1000 + 1000


def test_the_script_decides_as_the_file_limiter(redis_server: RedisServer, tmp_path: Path) -> None:
    """Same limits, same instants (across a Lima midnight): the same decisions, Retry-After
    included, from the Redis script and from one host's ring files."""
    from tokens.redis_store import RedisTokenStore

    limits = Limits(per_min=4, per_day=9)
    with RedisTokenStore.open(redis_server.url) as store:
        issued = store.issue("script-vs-files", None, datetime.now(UTC))
        text = issued.token_text
    gate = RedisGate.open(redis_server.url, limits)
    files = RateLimiter.open(tmp_path, limits)
    rng = random.Random(5)
    expiries: dict[str, int] = {}  # each Lima day's counter: a day after that day's end (ms)
    # Instants from 5 minutes before the next Lima midnight (Redis expires the day's counter a
    # day after its day, on its own clock: a day long past would be gone at once).
    start = epoch_us(datetime.now(UTC) + timedelta(seconds=seconds_to_lima_midnight() - 300))

    async def scenario() -> None:
        now = start
        try:
            for _ in range(400):
                now += rng.choice((1, 1_000, 900_000, 7_000_000, 31_000_000))
                record, decision = await gate.admit_async(text, now)
                assert record is not None
                assert decision == files.acquire_us("tok", now), now
                span = LimaClock().day(now)
                expiries[day_key(issued.id, span.day.isoformat())] = span.end_us // 1000 + DAY_MS
        finally:
            await gate.aclose()
            files.close()

    asyncio.run(scenario())
    # The minute list outlives the window and a second (61 s) at least, and twice that (122 s)
    # at most: its expiry was set by the first request, on Redis's clock, less than 61 s ago.
    admin = redis_server.client()
    left_ms = admin.pttl(minute_key(issued.id))
    kept = admin.llen(minute_key(issued.id))
    seconds, micros = admin.time()
    day_keys = admin.scan_iter(day_key(issued.id, "*"))
    days = {key.decode(): admin.pttl(key) for key in day_keys}
    admin.close()
    clock_ms = seconds * 1000 + micros // 1000
    assert KEEP_MS < left_ms <= 2 * KEEP_MS, left_ms
    assert kept == limits.per_min  # trimmed to the instants the minute rule reads, no more
    # Both days counted; each counter expires a day after its day, as its first request set it.
    assert len(days) == 2
    assert all(-1000 < left - (expiries[key] - clock_ms) <= 0 for key, left in days.items()), days


def test_the_script_writes_expiries_only_when_needed_and_trims_the_minute_list_once_it_is_full(
    redis_server: RedisServer,
) -> None:
    """Every write of the script goes to Redis's append-only file: the counter's expiry (the same
    instant for every request of its day) is written on the day's first request, or when the
    counter is found without one; the minute list's when the list is new, found without one,
    or found with less than the window and a second left; the list is trimmed only once longer
    than ``per_min``."""
    from tokens.redis_store import RedisTokenStore

    limits = Limits(per_min=3, per_day=9)
    with RedisTokenStore.open(redis_server.url) as store:
        issued = store.issue("first-of-the-day", None, datetime.now(UTC))
    span = LimaClock().day(epoch_us(datetime.now(UTC)))
    noon = span.end_us - 12 * 3600 * 1_000_000  # every instant below in the same Lima day
    key = day_key(issued.id, span.day.isoformat())
    expiry_ms = span.end_us // 1000 + DAY_MS
    admin = redis_server.client()
    admin.config_resetstat()

    async def admit(*instants: int) -> None:
        gate = RedisGate.open(redis_server.url, limits)
        try:
            for instant in instants:
                _, decision = await gate.admit_async(issued.token_text, instant)
                assert decision.allowed, instant
        finally:
            await gate.aclose()

    def calls(command: str) -> int:
        return int(admin.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))

    def expiry_left_ms() -> int:
        seconds, micros = admin.time()
        return int(admin.pttl(key)) - (expiry_ms - (seconds * 1000 + micros // 1000))

    # Three within a millisecond (the list fills), two a minute later (each pushes a fourth).
    asyncio.run(admit(noon, noon + 1, noon + 2, noon + 61_000_000, noon + 61_000_001))
    assert (calls("incr"), calls("pexpireat"), calls("ltrim")) == (5, 1, 2)
    assert admin.llen(minute_key(issued.id)) == 3 and int(admin.get(key) or 0) == 5
    assert -1000 < expiry_left_ms() <= 0
    assert calls("pexpire") == 1 and KEEP_MS < admin.pttl(minute_key(issued.id)) <= 2 * KEEP_MS
    admin.set(key, 5)  # as an operator might: the counter without an expiry
    admin.pexpire(minute_key(issued.id), KEEP_MS - 1)  # as if a window had passed in Redis
    asyncio.run(admit(noon + 122_000_000))
    assert (calls("pexpireat"), int(admin.get(key) or 0)) == (2, 6)
    assert -1000 < expiry_left_ms() <= 0
    assert calls("pexpire") == 3  # the script's second, after this test's own
    assert KEEP_MS < admin.pttl(minute_key(issued.id)) <= 2 * KEEP_MS
    admin.persist(minute_key(issued.id))  # as an operator might: the list without an expiry
    asyncio.run(admit(noon + 123_000_000))
    assert calls("pexpire") == 4
    assert KEEP_MS < admin.pttl(minute_key(issued.id)) <= 2 * KEEP_MS
    admin.close()


def test_the_pipe_answers_in_order_reloads_a_flushed_script_and_reconnects(
    redis_server: RedisServer,
) -> None:
    """The gate's pipelined connection (gateway/fleet/pipe.py): many calls in flight matched in
    order; after ``SCRIPT FLUSH`` the script is sent again in full; Redis down is a
    :class:`PipeError`, and the next call after it returns connects again."""
    script = "return {tonumber(ARGV[1]) * 2, KEYS[1]}"

    async def scenario() -> None:
        pipe = PipelinedScript(redis_server.url, script, timeout_s=2.0)
        try:
            replies = await asyncio.gather(*(pipe.call((f"k{n}",), (n,)) for n in range(200)))
            assert replies == [[2 * n, f"k{n}".encode()] for n in range(200)]
            admin = redis_server.client()
            admin.script_flush()
            admin.close()
            assert await pipe.call(("again",), (21,)) == [42, b"again"]
            redis_server.stop()
            with pytest.raises(PipeError):
                await pipe.call(("down",), (1,))
            redis_server.start()
            assert await pipe.call(("back",), (2,)) == [4, b"back"]
        finally:
            pipe.close()

    asyncio.run(scenario())


def test_the_awaited_token_check_knows_a_valid_token_and_counts_nothing(
    redis_server: RedisServer,
) -> None:
    """A request carrying a token to a path with no gate (an unknown path, a 405) is recorded
    when its token is valid: in fleet mode that check is awaited on the worker's pipe (the
    script told not to count), so a worker whose Redis hangs goes on serving. It answers the
    record of a valid token; None for an unknown, a revoked, an expired or a malformed one; and
    counts nothing against the limits."""
    from tokens.redis_store import RedisTokenStore

    now = datetime.now(UTC)
    with RedisTokenStore.open(redis_server.url) as store:
        valid = store.issue("s18-valid", None, now)
        revoked = store.issue("s18-revoked", None, now)
        store.revoke(revoked.id, now)
        expired = store.issue(
            "s18-expired", (now - timedelta(days=2)).date(), now - timedelta(days=3)
        )
    limits = Limits(per_min=2, per_day=5)
    gate = RedisGate.open(redis_server.url, limits)

    async def scenario() -> None:
        texts = [valid.token_text, revoked.token_text, expired.token_text]
        texts += [valid.token_text[:-1] + "x", "fxev_not-a-token"]
        try:
            for text in texts:
                awaited = await gate.check_async(text, epoch_us(datetime.now(UTC)))
                assert (awaited is None) == (text != valid.token_text), text
                assert awaited is None or (awaited.id, awaited.name) == (valid.id, valid.name)
            assert (await gate.check_async(valid.token_text, epoch_us(now))) is not None
            for _ in range(5):  # far past the limits: nothing was counted
                assert await gate.check_async(valid.token_text, epoch_us(now)) is not None
            record, decision = await gate.admit_async(valid.token_text, epoch_us(now))
            assert record is not None and decision.allowed
        finally:
            await gate.aclose()

    asyncio.run(scenario())


def test_a_token_expires_at_the_lima_midnight_that_ends_its_day_as_on_one_host(
    redis_server: RedisServer,
) -> None:
    """As :func:`tokens.store.expiry_instant` has it (and :mod:`tokens.cache` on one host): valid
    strictly before that midnight, refused from it on, by the script as by the file store."""
    from tokens.redis_store import RedisTokenStore
    from tokens.store import expiry_instant

    now = datetime.now(UTC)
    expires = now.date() + timedelta(days=3)
    with RedisTokenStore.open(redis_server.url) as store:
        token = store.issue("s29-expiry", expires, now)
    end_us = epoch_us(expiry_instant(expires))
    gate = RedisGate.open(redis_server.url, Limits(per_min=4, per_day=9))

    async def scenario() -> None:
        try:
            assert await gate.check_async(token.token_text, end_us - 1) is not None
            assert await gate.check_async(token.token_text, end_us) is None
            assert (await gate.admit_async(token.token_text, end_us))[0] is None
        finally:
            await gate.aclose()

    asyncio.run(scenario())


def test_the_gate_keeps_each_tokens_newest_revision_and_counts_nothing_behind_it(
    redis_server: RedisServer,
) -> None:
    """DECISIONS 4 across gateways (gateway/fleet/gate.py, the mark): a request counted at a
    revision raises the token's mark to it; one at a revision below the mark is
    :class:`~gateway.fleet.gate.Behind` (the mark, the token's record) with nothing counted;
    a refused one (over the limit) raises nothing; without a revision, no mark is read;
    ``mark_async`` raises it, never lowers it, and counts nothing."""
    from gateway.fleet.gate import Behind, mark_key, minute_key
    from tokens.redis_store import RedisTokenStore

    now = datetime.now(UTC)
    with RedisTokenStore.open(redis_server.url) as store:
        token = store.issue("s21-mark", None, now)
        bogus = token.token_text[:-1] + ("x" if token.token_text[-1] != "x" else "y")
    gate = RedisGate.open(redis_server.url, Limits(per_min=4, per_day=9))
    admin = redis_server.client()

    def state() -> tuple[int, int]:
        return admin.llen(minute_key(token.id)), int(admin.get(mark_key(token.id)) or 0)

    async def scenario() -> None:
        at = epoch_us(now)
        try:
            assert (await gate.admit_async(token.token_text, at, 5))[1].allowed
            assert state() == (1, 5)
            with pytest.raises(Behind) as behind:
                await gate.admit_async(token.token_text, at + 1, 4)
            assert (behind.value.mark, behind.value.record.id) == (5, token.id)
            assert state() == (1, 5)  # nothing counted
            assert (await gate.admit_async(bogus, at + 2, 1))[0] is None  # no mark for a bogus one
            assert (await gate.admit_async(token.token_text, at + 3, 5))[1].allowed
            assert (await gate.admit_async(token.token_text, at + 4, 6))[1].allowed
            assert state() == (3, 6)
            assert (await gate.admit_async(token.token_text, at + 5))[1].allowed  # no revision
            assert state() == (4, 6)
            refused = await gate.admit_async(token.token_text, at + 6, 9)
            assert not refused[1].allowed and state() == (4, 6)  # over the limit: not raised
            # Over the limit and behind: the 429 at once (it carries no revision), not a wait.
            assert not (await gate.admit_async(token.token_text, at + 6, 5))[1].allowed
            # The caller's pointer moved after its admission: raised, nothing counted.
            await gate.mark_async(token.token_text, at + 7, 8)
            assert state() == (4, 8)
            await gate.mark_async(token.token_text, at + 8, 7)  # never lowered
            await gate.mark_async(bogus, at + 9, 11)  # nor raised for another text
            assert state() == (4, 8)
            assert await gate.check_async(token.token_text, at + 10) is not None
            assert state() == (4, 8)  # a check alone reads and raises nothing
            await gate.mark_async(token.token_text, at + 11, 9)
            await gate.mark_async(token.token_text, at + 12, 10)  # numbers, not text: 10 > 9
            assert state() == (4, 10)
        finally:
            await gate.aclose()
            admin.close()

    asyncio.run(scenario())


def test_a_stalled_redis_never_holds_the_event_loop_while_alerts_are_read(
    redis_server: RedisServer,
) -> None:
    """docs/operating/fleet.md#failures: with Redis stalled, "the requests waiting on it get
    the same 503 ... and their workers go on serving meanwhile". ``/v1/alerts``,
    ``/v1/health/freshness`` and the explorer read the alert state from Redis; that read ran on
    the worker's event loop (a blocking call), which then served nothing until it timed out
    (about 2 s: one retry). Read in a thread, the loop keeps turning: here a ticker on the same
    loop never waits much longer than its own 10 ms while Redis is stopped (SIGSTOP, by PID)."""
    from types import SimpleNamespace

    from gateway.errors import NotReady
    from gateway.fleet.gate import FleetAlerts, connect
    from gateway.handlers.reading import alert_list

    client = connect(redis_server.url)
    alerts = FleetAlerts(client)
    request = SimpleNamespace(app=SimpleNamespace(ctx=SimpleNamespace(alerts=alerts, fleet=True)))
    assert redis_server.service is not None and redis_server.service.process is not None
    pid = redis_server.service.process.pid

    async def scenario() -> float:
        gaps: list[float] = []

        async def ticker() -> None:
            loop = asyncio.get_running_loop()
            while True:
                before = loop.time()
                await asyncio.sleep(0.01)
                gaps.append(loop.time() - before)

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(NotReady):
                await alert_list(request)  # type: ignore[arg-type]
        finally:
            os.kill(pid, signal.SIGCONT)
        await asyncio.sleep(0.05)  # the tick that waited across the read, if the read held it
        ticking.cancel()
        return max(gaps)

    try:
        longest = asyncio.run(scenario())
    finally:
        client.close()
    assert longest < 0.5, f"the event loop was held {longest:.2f} s"


def test_a_script_redis_runs_after_its_caller_gave_up_is_taken_back(
    redis_server: RedisServer,
) -> None:
    """docs/operating/fleet.md#failures: Redis stalled (SIGSTOP, by PID) past the gate's wait,
    the requests waiting on it get 503; the scripts already sent run once Redis resumes. Each
    that counted its request is taken back (gateway.fleet.gate.UNDO, sent on the same
    connection, so after it); one that refused its request (over the limit) changed nothing and
    is left. The stalled connection closes once every late reply is in: no connection leaks."""
    from gateway.errors import NotReady
    from gateway.fleet.gate import ADMIT, UNDO_LATE, connect
    from tokens.redis_store import RedisTokenStore

    now = datetime.now(UTC)
    with RedisTokenStore.open(redis_server.url) as store:
        counted = store.issue("s20-counted", None, now)
        refused = store.issue("s20-refused", None, now)
    limits = Limits(per_min=3, per_day=9)
    pipe = PipelinedScript(redis_server.url, ADMIT, 0.3, UNDO_LATE)
    gate = RedisGate(connect(redis_server.url), limits, pipe)
    admin = redis_server.client()
    day = LimaClock().day(epoch_us(now)).day.isoformat()
    assert redis_server.service is not None and redis_server.service.process is not None
    pid = redis_server.service.process.pid

    def state(token_id: str) -> tuple[int, int]:
        kept = admin.llen(minute_key(token_id))
        return kept, int(admin.get(day_key(token_id, day)) or 0)

    def clients() -> int:
        return len(admin.client_list())

    async def stalled(text: str, instants: list[int]) -> None:
        os.kill(pid, signal.SIGSTOP)
        try:
            for outcome in await asyncio.gather(
                *(gate.admit_async(text, at) for at in instants), return_exceptions=True
            ):
                assert isinstance(outcome, NotReady), outcome
        finally:
            os.kill(pid, signal.SIGCONT)

    async def settled(before: int) -> None:
        """Until the stalled connection has read its late replies (and undos) and closed."""
        for _ in range(100):
            if clients() < before:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the stalled connection is still open: {admin.client_list()}")

    async def scenario() -> None:
        start = epoch_us(now)
        assert (await gate.admit_async(counted.token_text, start))[1].allowed
        open_before = clients()
        await stalled(counted.token_text, [start + 1, start + 2])
        await settled(open_before)
        assert state(counted.id) == (1, 1)  # the two late counts taken back
        allowed = [(await gate.admit_async(counted.token_text, start + n))[1].allowed
                   for n in (3, 4, 5)]  # fmt: skip
        assert allowed == [True, True, False]  # exactly the limit, as if no stall

        for n in range(3):
            assert (await gate.admit_async(refused.token_text, start + n))[1].allowed
        open_before = clients()
        await stalled(refused.token_text, [start + 10])
        await settled(open_before)
        assert state(refused.id) == (3, 3)  # refused late: nothing to take back

    async def closing() -> None:
        try:
            await scenario()
        finally:
            pipe.close()

    try:
        asyncio.run(closing())
    finally:
        gate.close()
        admin.close()


def test_publish_names_a_mirror_behind_with_the_time_it_waited(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """docs/operating/fleet.md#publish: a mirror that does not reach the published revision
    within the wait is `lagging`, in the result and in one warning line that says how long
    the publish waited (formerly always the longest wait, also when it ended early)."""
    from builder.store.mirrors import await_mirrors, mirror_name, report, wait_s

    client = redis_server.client()
    try:
        report(client, tmp_path / "behind", 1, 0.1)
        report(client, tmp_path / "caught-up", 2, 0.1)
        warnings: list[str] = []
        result = await_mirrors(redis_server.url, 2, 0.1, warnings.append)
    finally:
        client.delete(
            *(f"fxev:mirror:{mirror_name(tmp_path / s)}" for s in ("behind", "caught-up"))
        )
        client.close()
    assert result.mirrored is not None and mirror_name(tmp_path / "caught-up") in result.mirrored
    assert result.lagging == (mirror_name(tmp_path / "behind"),)
    [warning] = warnings
    assert f"not yet served by {mirror_name(tmp_path / 'behind')} after 5 s" in warning, warning
    assert f"waited for {wait_s(0.1):g} s" in warning and "\n" not in warning
