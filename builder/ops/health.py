"""Operational checks of the machine the service runs on: disk space, clock offset, NTP state.

- ``disco``: free space of ``FXEV_HOME`` under ``FXEV_MIN_FREE_BYTES`` before a registry write.
  The write still goes ahead (refusing it would lose the source's answer); the alert says to act.
- ``reloj_fuera_de_tolerancia``: the real clock differs from the source's HTTP ``Date`` header
  by more than ``FXEV_CLOCK_TOLERANCE_S``, both read when the response's headers arrived (the
  caller passes that instant, never the end of a slow body). Revision timestamps depend on this
  clock.
- ``ntp``: the kernel's clock-synchronisation state, read with ``adjtimex(2)`` (modes 0: a read,
  allowed without privileges): ``sincronizado``, ``no_sincronizado``, or ``no_verificado`` when it
  cannot be read (not Linux, a sandbox refusing the call).

The decisions are pure functions of the measured values; reading them is at the edge.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import shutil
from collections.abc import Callable, Sequence
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from builder.core.canonical import utc_timestamp
from builder.core.vocabulary import (
    DISCO,
    NO_SINCRONIZADO,
    NO_VERIFICADO,
    RELOJ_FUERA_DE_TOLERANCIA,
    SINCRONIZADO,
)
from builder.ops.alerts import Alert, AlertStore

# adjtimex(2): return values and the status bit that says the clock is not synchronised.
TIME_ERROR = 5
STA_UNSYNC = 0x0040


def disk_low(free_bytes: int, min_free_bytes: int) -> bool:
    return free_bytes < min_free_bytes


def free_bytes(path: Path) -> int:
    """Free bytes for unprivileged use on the file system holding ``path`` (or its parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def check_disk(
    alerts: AlertStore,
    home: Path,
    min_free_bytes: int,
    now: datetime,
    measure: Callable[[Path], int] = free_bytes,
) -> Alert | None:
    """Raise ``disco`` when ``home`` is short of space; the alert, or None."""
    free = measure(home)
    if not disk_low(free, min_free_bytes):
        return None
    return alerts.raise_alert(
        DISCO,
        now,
        fuente=None,
        detalle={"ruta": str(home), "libres": free, "minimo": min_free_bytes},
    )


def date_header(headers: Sequence[Sequence[str]]) -> datetime | None:
    """The instant of a response's ``Date`` header, or None when absent or unreadable."""
    for name, value in headers:
        if name.lower() == "date":
            try:
                instant = parsedate_to_datetime(value)
            except (TypeError, ValueError, OverflowError):  # a year of 20 digits: Overflow
                return None
            return instant if instant.tzinfo is not None else None
    return None


def clock_offset_s(clock: datetime, source_date: datetime) -> float:
    """How far our clock is ahead of the source's (negative: behind)."""
    return (clock - source_date).total_seconds()


def clock_out_of_tolerance(offset_s: float, tolerance_s: float) -> bool:
    """Whether the clocks are surely further apart than ``tolerance_s``. The ``Date`` header
    has whole seconds, cut from the source's instant, so the true offset lies in
    ``(offset_s - 1, offset_s]``: it is surely beyond the tolerance from ``tolerance_s + 1``
    when our clock reads ahead of the source's, from past ``tolerance_s`` when it reads behind."""
    return offset_s >= tolerance_s + 1 or offset_s < -tolerance_s


def check_clock(
    alerts: AlertStore,
    fuente: str,
    headers: Sequence[Sequence[str]],
    clock: datetime,
    tolerance_s: float,
    *,
    now: datetime,
) -> Alert | None:
    """Raise ``reloj_fuera_de_tolerancia`` when ``clock`` (the real one) is off the source's;
    the alert's instant is ``now``, the capture's (``FXEV_NOW`` when set), as every alert a
    capture raises has it, and ``date_fuente`` is UTC with ``Z`` like every timestamp served."""
    source_date = date_header(headers)
    if source_date is None:
        return None
    offset = clock_offset_s(clock, source_date)
    if not clock_out_of_tolerance(offset, tolerance_s):
        return None
    return alerts.raise_alert(
        RELOJ_FUERA_DE_TOLERANCIA,
        now,
        fuente=fuente,
        detalle={
            "desfase_s": round(offset, 3),
            "tolerancia_s": tolerance_s,
            "date_fuente": utc_timestamp(source_date),
        },
    )


# -- NTP state --------------------------------------------------------------------------------


class _Timex(ctypes.Structure):
    # struct timex of <sys/timex.h> on 64-bit Linux: 'modes' then longs, then padding.
    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time_sec", ctypes.c_long),
        ("time_usec", ctypes.c_long),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("padding", ctypes.c_int * 11),
    ]


def ntp_state_of(result: int | None, status: int) -> str:
    """The ``ntp`` value from what ``adjtimex`` returned (None: the call failed)."""
    if result is None or result < 0:
        return NO_VERIFICADO
    if result == TIME_ERROR or status & STA_UNSYNC:
        return NO_SINCRONIZADO
    return SINCRONIZADO


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def read_adjtimex() -> tuple[int | None, int]:
    """(adjtimex's return value or None when it cannot be called, the status bits)."""
    try:
        timex = _Timex()  # modes 0: read only
        result = _libc().adjtimex(ctypes.byref(timex))
    except (OSError, AttributeError):
        return None, 0
    return (None if result < 0 else result), timex.status


def ntp_state(read: Callable[[], tuple[int | None, int]] = read_adjtimex) -> str:
    return ntp_state_of(*read())
