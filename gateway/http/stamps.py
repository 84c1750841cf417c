"""What every response needs fresh: a random request id and the instant, both made cheaply.

``uuid.uuid4()`` asks the kernel for 16 random bytes per call and builds a ``UUID`` object only
to print it; :class:`RequestIds` draws random bytes from the kernel 256 ids at a time and writes
the text directly (122 random bits per id, version 4, RFC 4122 variant, as ``uuid4``). A
process's buffer is dropped in a forked child, so no two processes hand out the same ids.

:func:`utc_now_text` is the ledger's timestamp, ISO-8601 UTC with microseconds and ``Z`` like
:func:`builder.core.canonical.utc_timestamp`, from the real clock, formatting the date and time part
only once a second; :func:`now_us` is the same real clock as an integer, which rate limits and
revision marks are judged at.
"""

from __future__ import annotations

import os
import time

IDS_PER_DRAW = 256
_HEX_PER_ID = 32
# The variant's hex digit: its two high bits are 10, so 8, 9, a or b, from two random bits.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uuid4_text(hex32: str) -> str:
    """A version-4 UUID's text made from 32 random hex digits (two of them overwritten)."""
    h = hex32
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


class RequestIds:
    """Fresh UUID4 texts, the random bytes drawn from ``os.urandom`` in batches."""

    def __init__(self, per_draw: int = IDS_PER_DRAW) -> None:
        self._per_draw = per_draw
        self._hex = ""
        self._at = 0
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._hex, self._at = "", 0

    def __call__(self) -> str:
        at = self._at
        if at >= len(self._hex):
            self._hex, at = os.urandom(16 * self._per_draw).hex(), 0
        self._at = at + _HEX_PER_ID
        return uuid4_text(self._hex[at : at + _HEX_PER_ID])


fresh_request_id = RequestIds()

_second: int | None = None
_second_text = ""


def utc_text_of_us(epoch_us: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` of an instant in microseconds since the epoch (UTC)."""
    global _second, _second_text
    seconds, micros = divmod(epoch_us, 1_000_000)
    if seconds != _second:
        _second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second = seconds
    return f"{_second_text}.{micros:06d}Z"


def now_us() -> int:
    """Now on the real clock (never ``FXEV_NOW``), in microseconds since the epoch: the instant
    a rate limit and a revision mark are judged at."""
    return time.time_ns() // 1000


def utc_now_text() -> str:
    """Now on the real clock (never ``FXEV_NOW``), as :func:`utc_text_of_us` writes it."""
    return utc_text_of_us(time.time_ns() // 1000)
