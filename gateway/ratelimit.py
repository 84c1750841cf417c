"""Per-token rate limits, exact across the worker processes of a host and across restarts.

The rule (DECISIONS 9): at most ``per_min`` requests in (t - 60 s, t] and ``per_day`` per calendar
day in Lima, per token, on the real clock. A request that passes counts; a rejected one does not.
``Retry-After`` is the number of seconds until a request would pass, rounded up, at least 1.

The arithmetic is :func:`decide`, a pure function. It needs only two facts: the instant of the
``per_min``-th most recent accepted request (a new one passes the minute rule exactly when that
one has left the window, or when there are fewer than ``per_min``) and today's count. The store
numbers each token's accepted requests (``seq``) and keeps the instants of the last ``per_min`` in
a ring (``slot = seq % per_min``), so the first fact is one lookup by primary key whatever the
traffic, and a token never holds more than ``per_min`` rows. A slot holding another ``seq`` (the
limit was changed between restarts) counts as unknown: the ring refills within a minute.

The state lives in ``FXEV_HOME/ratelimit.sqlite`` (WAL; a committed count survives a killed
process). Every worker of the host opens it; one decision is one transaction taken under an
exclusive ``flock`` of ``ratelimit.lock``, so two workers never interleave a read and a write, and
a waiting worker is woken by the kernel the moment the lock is free (SQLite's own busy handler
would sleep in steps of milliseconds).
"""

from __future__ import annotations

import dataclasses
import fcntl
import math
import os
import sqlite3
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

RATELIMIT_FILE = "ratelimit.sqlite"
LOCK_FILE = "ratelimit.lock"
WINDOW_US = 60_000_000
LIMA = ZoneInfo("America/Lima")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counters (
    token_id  TEXT PRIMARY KEY,
    last_seq  INTEGER NOT NULL,
    day       TEXT NOT NULL,
    day_count INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hits (
    token_id TEXT NOT NULL,
    slot     INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    ts_us    INTEGER NOT NULL,
    PRIMARY KEY (token_id, slot)
) WITHOUT ROWID;
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    per_min: int
    per_day: int


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: int = 0  # seconds; 0 when allowed


def epoch_us(instant: datetime) -> int:
    delta = instant.astimezone(UTC) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def lima_day(instant: datetime) -> date:
    return instant.astimezone(LIMA).date()


def next_lima_midnight(day: date) -> datetime:
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=LIMA)


def decide(
    limits: Limits,
    now_us: int,
    nth_recent_us: int | None,
    day_count: int,
    day_end_us: int,
) -> Decision:
    """Whether a request at ``now_us`` passes, and if not, when one would.

    ``nth_recent_us``: the instant of the ``per_min``-th most recent accepted request, or None
    when there are fewer (or it is no longer known because it left the window long ago).
    ``day_count``: requests accepted today in Lima; ``day_end_us``: the next Lima midnight.
    """
    waits: list[int] = []
    if nth_recent_us is not None and nth_recent_us > now_us - WINDOW_US:
        waits.append(nth_recent_us + WINDOW_US - now_us)
    if day_count >= limits.per_day:
        waits.append(day_end_us - now_us)
    if not waits:
        return Decision(True)
    return Decision(False, max(1, math.ceil(max(waits) / 1_000_000)))


class RateLimiter:
    """The host's shared rate-limit state; one instance per worker process."""

    def __init__(self, conn: sqlite3.Connection, lock_fd: int, limits: Limits) -> None:
        self._conn = conn
        self._lock_fd = lock_fd
        self.limits = limits

    @classmethod
    def open(cls, home: Path, limits: Limits) -> RateLimiter:
        home.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        conn = sqlite3.connect(home / RATELIMIT_FILE, isolation_level=None, timeout=30)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.executescript(_SCHEMA)
            finally:
                fcntl.flock(lock_fd, fcntl.LOCK_UN)
        except BaseException:
            conn.close()
            os.close(lock_fd)
            raise
        return cls(conn, lock_fd, limits)

    def close(self) -> None:
        self._conn.close()
        os.close(self._lock_fd)

    def acquire(self, token_id: str, now: datetime) -> Decision:
        """Decide for one request of ``token_id`` at ``now`` (real clock); count it if it passes."""
        now_us = epoch_us(now)
        today = lima_day(now)
        day_end_us = epoch_us(next_lima_midnight(today))
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT last_seq, day, day_count FROM counters WHERE token_id = ?",
                    (token_id,),
                ).fetchone()
                last_seq, day, day_count = row if row else (0, today.isoformat(), 0)
                if day != today.isoformat():
                    day_count = 0
                nth_seq = last_seq - self.limits.per_min + 1
                nth = None
                if nth_seq >= 1:
                    found = conn.execute(
                        "SELECT seq, ts_us FROM hits WHERE token_id = ? AND slot = ?",
                        (token_id, nth_seq % self.limits.per_min),
                    ).fetchone()
                    nth = found[1] if found and found[0] == nth_seq else None
                decision = decide(self.limits, now_us, nth, day_count, day_end_us)
                if decision.allowed:
                    self._count(token_id, last_seq + 1, now_us, today.isoformat(), day_count + 1)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        return decision

    def _count(self, token_id: str, seq: int, now_us: int, day: str, day_count: int) -> None:
        conn = self._conn
        slot = seq % self.limits.per_min
        conn.execute(
            "INSERT OR REPLACE INTO hits VALUES (?, ?, ?, ?)", (token_id, slot, seq, now_us)
        )
        conn.execute(
            "INSERT INTO counters VALUES (?, ?, ?, ?) ON CONFLICT(token_id) DO UPDATE SET"
            " last_seq = excluded.last_seq, day = excluded.day, day_count = excluded.day_count",
            (token_id, seq, day, day_count),
        )
