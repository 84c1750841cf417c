"""One host's rate-limit store: exact across the worker processes of a host and across restarts.

The rule is :func:`gateway.limits.rule.decide`; this store keeps the two facts it needs. It
numbers each token's accepted requests (``seq``) and keeps the instants of the last ``per_min``
in a ring (``slot = seq % per_min``), so the ``per_min``-th most recent is one read at a fixed
offset whatever the traffic. A worker opening a token's ring checks that the slots of its last
``per_min`` requests are where this limit looks for them; a ring written under another limit
(changed between restarts) is laid out again first, from every slot of the file
(:meth:`Ring.settle`), so a changed limit still counts the requests already in the window. A
request the file no longer holds was not among the last ones of the old limit, so outside the
window, whenever the limit changes at most once a minute. (A ring beyond :data:`MAPPED_SLOTS` is
not laid out again: a slot holding another ``seq`` counts as unknown, and such a ring refills
within a minute.)

The state of a token is one fixed-layout file, ``FXEV_HOME/ratelimit/<token id>.ring``
(:class:`RingFile`): a header (``seq`` of the last accepted request, the Lima day and its count)
then the ring's slots (``seq``, instant in microseconds). Every worker of the host maps it into
memory (``MAP_SHARED``: every process sees the same page-cache pages); one decision reads the
header and one slot and, when the request passes, writes them, all under an exclusive ``flock`` of
that file, so two workers never interleave a read and a write and a waiting worker is woken by the
kernel the moment the lock is free. The two ``flock`` calls are the decision's only system calls.
Writes go to the page cache: a count survives a killed process, as the SQLite store this replaces
(WAL, ``synchronous=NORMAL``) did.

The mapped part of the file is allocated first (``posix_fallocate``), so a write through the map
never needs a new block (a full disk would otherwise kill the worker with ``SIGBUS``). A ring of
up to :data:`MAPPED_SLOTS` slots (16 MB) is mapped whole; a larger one (a limit raised beyond any
real traffic) keeps only its header in the map and reads and writes its slots in place
(``pread``/``pwrite``) in a sparse file that holds only the slots used. A file is never shrunk,
since another process may map all of it; a lower limit uses its first slots.
"""

from __future__ import annotations

import dataclasses
import fcntl
import mmap
import os
import re
import struct
from datetime import datetime
from pathlib import Path

from gateway.limits.rule import Decision, LimaClock, Limits, decide, epoch_us

RATELIMIT_DIR = "ratelimit"
SUFFIX = ".ring"
Buffer = bytearray | mmap.mmap  # what a header is written into
MAPPED_SLOTS = 1_000_000  # rings up to this many slots (16 MB) are mapped whole
RELAYOUT_CHUNK = 1 << 20  # bytes read at a time when a ring is laid out again (whole slots)
_SAFE_TOKEN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


# -- one token's file ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Counter:
    """A token's header: the ``seq`` of its last accepted request, and a Lima day's count."""

    last_seq: int
    day: int  # the Lima day as a proleptic ordinal (``date.toordinal``)
    day_count: int


class RingFile:
    """Layout of ``<token id>.ring``: a header, then slot ``i`` at a fixed offset.

    header: magic ``FXRL``, format version, ``last_seq``, Lima day, its count (little-endian);
    slot: ``seq``, instant (microseconds since the epoch). A short read (a new file, a slot never
    written) reads as nothing.
    """

    MAGIC = b"FXRL"
    VERSION = 1
    HEADER = struct.Struct("<4sIqqq")
    SLOT = struct.Struct("<qq")

    @classmethod
    def slot_offset(cls, slot: int) -> int:
        return cls.HEADER.size + slot * cls.SLOT.size

    @classmethod
    def encode_header(cls, counter: Counter) -> bytes:
        header = bytearray(cls.HEADER.size)
        cls.write_header(header, counter.last_seq, counter.day, counter.day_count)
        return bytes(header)

    @classmethod
    def write_header(cls, buffer: Buffer, last_seq: int, day: int, count: int) -> None:
        """Write a header in place (a decision's path: no record made)."""
        cls.HEADER.pack_into(buffer, 0, cls.MAGIC, cls.VERSION, last_seq, day, count)

    @classmethod
    def decode_header(cls, data: bytes) -> Counter | None:
        """The header's counter; None for a new file (short, or allocated and still zero)."""
        if len(data) < cls.HEADER.size:
            return None
        magic, version, last_seq, day, day_count = cls.HEADER.unpack_from(data)
        if magic == b"\0\0\0\0" and last_seq == 0:
            return None
        if magic != cls.MAGIC or version != cls.VERSION:
            raise ValueError(f"not a rate-limit ring file (magic {magic!r}, version {version})")
        return Counter(last_seq, day, day_count)

    @classmethod
    def decode_slot(cls, data: bytes) -> tuple[int, int] | None:
        """(seq, instant) of a slot, or None if it was never written."""
        if len(data) < cls.SLOT.size:
            return None
        seq, ts_us = cls.SLOT.unpack_from(data)
        return None if seq == 0 else (seq, ts_us)


def ring_path(home: Path, token_id: str) -> Path:
    if not _SAFE_TOKEN_ID.fullmatch(token_id):
        raise ValueError(f"not a token id: {token_id!r}")
    return home / RATELIMIT_DIR / (token_id + SUFFIX)


# -- the store ----------------------------------------------------------------------------------


class Ring:
    """One token's open ring file: its header (and, up to :data:`MAPPED_SLOTS`, its slots) in a
    shared map of the file."""

    def __init__(self, path: Path, per_min: int) -> None:
        size = RingFile.slot_offset(per_min)
        self.slots_mapped = per_min <= MAPPED_SLOTS
        mapped = size if self.slots_mapped else RingFile.HEADER.size
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self.lock()  # once: the file grown, mapped and laid out for this limit
            try:
                if os.fstat(self.fd).st_size < mapped:
                    os.posix_fallocate(self.fd, 0, mapped)  # grows the file; new bytes read 0
                self.map = mmap.mmap(self.fd, mapped)
                if self.slots_mapped:
                    self.settle(per_min)
            finally:
                self.unlock()
        except BaseException:
            os.close(self.fd)
            raise

    def lock(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def unlock(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def read_slot(self, slot: int) -> tuple[int, int]:
        """(seq, instant) of a slot; (0, 0) if it was never written."""
        offset = RingFile.slot_offset(slot)
        if self.slots_mapped:
            return RingFile.SLOT.unpack_from(self.map, offset)
        return RingFile.decode_slot(os.pread(self.fd, RingFile.SLOT.size, offset)) or (0, 0)

    def write_slot(self, slot: int, seq: int, instant_us: int) -> None:
        offset = RingFile.slot_offset(slot)
        if self.slots_mapped:
            RingFile.SLOT.pack_into(self.map, offset, seq, instant_us)
        else:
            os.pwrite(self.fd, RingFile.SLOT.pack(seq, instant_us), offset)

    def settle(self, per_min: int) -> None:
        """Lay the ring out for ``per_min`` when its last requests are not where this limit looks
        for them (written under another limit, at ``seq % old``): every slot of the file is read,
        and the last ``per_min`` requests' instants written at ``seq % per_min``; one the file no
        longer holds is marked as long gone (instant 0). Under the lock, on a mapped ring; a file
        that is no ring is left to the first decision, which refuses it."""
        try:
            counter = RingFile.decode_header(self.map[: RingFile.HEADER.size])
        except ValueError:
            return
        if counter is None:
            return
        last_seq = counter.last_seq
        low = max(0, last_seq - per_min)
        placed = RingFile.SLOT.iter_unpack(
            self.map[RingFile.slot_offset(0) : RingFile.slot_offset(min(per_min, last_seq + 1))]
        )
        held = sum(
            low < seq <= last_seq and seq % per_min == i for i, (seq, _) in enumerate(placed)
        )
        if held == last_seq - low:
            return
        found: dict[int, int] = {}
        size, offset = os.fstat(self.fd).st_size, RingFile.HEADER.size
        while offset < size:
            chunk = os.pread(self.fd, min(RELAYOUT_CHUNK, size - offset), offset)
            whole = len(chunk) - len(chunk) % RingFile.SLOT.size
            if not whole:
                break
            for seq, instant_us in RingFile.SLOT.iter_unpack(chunk[:whole]):
                if low < seq <= last_seq:
                    found[seq] = instant_us
            offset += whole
        for seq in range(low + 1, last_seq + 1):
            self.write_slot(seq % per_min, seq, found.get(seq, 0))

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class RateLimiter:
    """The host's shared rate-limit state; one instance per worker process."""

    def __init__(self, home: Path, limits: Limits) -> None:
        self.home = home
        self.limits = limits
        self._rings: dict[str, Ring] = {}
        self._lima = LimaClock()

    @classmethod
    def open(cls, home: Path, limits: Limits) -> RateLimiter:
        (home / RATELIMIT_DIR).mkdir(parents=True, exist_ok=True)
        return cls(home, limits)

    def close(self) -> None:
        rings, self._rings = self._rings, {}
        for ring in rings.values():
            ring.close()

    def _ring(self, token_id: str) -> Ring:
        """The token's ring, opened and mapped once."""
        ring = self._rings.get(token_id)
        if ring is None:
            ring = self._rings[token_id] = Ring(ring_path(self.home, token_id), self.limits.per_min)
        return ring

    def acquire(self, token_id: str, now: datetime) -> Decision:
        """Decide for one request of ``token_id`` at ``now`` (real clock); count it if it passes."""
        return self.acquire_us(token_id, epoch_us(now))

    def acquire_us(self, token_id: str, now_us: int) -> Decision:
        """:meth:`acquire` at ``now_us``, microseconds since the epoch
        (:func:`gateway.http.stamps.now_us`)."""
        span = self._lima.day(now_us)
        today, day_end_us = span.day.toordinal(), span.end_us
        per_min = self.limits.per_min
        ring = self._ring(token_id)
        header = ring.map
        ring.lock()
        try:
            # The header's fields read in place (no record made); decode_header checks the rest.
            magic, version, last_seq, day, day_count = RingFile.HEADER.unpack_from(header)
            if magic != RingFile.MAGIC or version != RingFile.VERSION:
                RingFile.decode_header(header)  # raises for a foreign file; a new one is zeros
                last_seq = day_count = 0
            if day > today:  # the next Lima day's first request took the lock first
                today = day  # (timed before this one): this one counts in that day too
            elif day != today:
                day_count = 0
            nth_seq = last_seq - per_min + 1
            nth = None
            if nth_seq >= 1:
                slot_seq, slot_us = ring.read_slot(nth_seq % per_min)
                nth = slot_us if slot_seq == nth_seq else None
            decision = decide(self.limits, now_us, nth, day_count, day_end_us)
            if decision.allowed:
                seq = last_seq + 1
                ring.write_slot(seq % per_min, seq, now_us)
                RingFile.write_header(header, seq, today, day_count + 1)
        finally:
            ring.unlock()
        return decision
