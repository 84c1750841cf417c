"""Operational alerts, each condition injected: low disk, a clock off the source's ``Date``, the
NTP state, and a proxy (tunnel) that is down as distinct from a source that is down. These use
real HTTP to servers on 127.0.0.1, so no ``responses`` here."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from builder.capture.centralbank import capture_centralbank
from builder.capture.run import Stores
from builder.capture.taxauth import capture_taxauth_txt
from builder.core.canonical import utc_timestamp
from builder.core.settings import Settings
from builder.ops import health
from builder.ops.health import (
    STA_UNSYNC,
    TIME_ERROR,
    check_disk,
    clock_out_of_tolerance,
    date_header,
    ntp_state,
    ntp_state_of,
    read_adjtimex,
)
from tests.builder.conftest import NOW, lima
from tests.builder.localserver import LocalServer
from tests.support.ports import free_port

LINE = b"20/09/2026|3.354|3.362|"


def http_date(offset: timedelta) -> str:
    return format_datetime(datetime.now(UTC) + offset, usegmt=True)


# -- pure decisions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "status", "state"),
    [
        (0, 0, "sincronizado"),  # TIME_OK
        (1, 0, "sincronizado"),  # TIME_INS: a leap second pending, still synchronised
        (TIME_ERROR, 0, "no_sincronizado"),
        (0, STA_UNSYNC, "no_sincronizado"),
        (None, 0, "no_verificado"),  # the call failed
        (-1, 0, "no_verificado"),
    ],
)
def test_ntp_state_from_adjtimex(result: int | None, status: int, state: str) -> None:
    assert ntp_state_of(result, status) == state
    assert ntp_state(lambda: (result, status)) == state


class FakeLibc:
    """Stands for libc: its ``adjtimex`` fills in the status bits as the kernel does."""

    def __init__(self, result: int, status: int) -> None:
        self.result, self.status = result, status
        self.modes: list[int] = []

    def adjtimex(self, timex: Any) -> int:
        self.modes.append(timex._obj.modes)
        timex._obj.status = self.status
        return self.result


@pytest.mark.parametrize(
    ("result", "status", "read", "state"),
    [
        (0, 0, (0, 0), "sincronizado"),
        (TIME_ERROR, STA_UNSYNC, (TIME_ERROR, STA_UNSYNC), "no_sincronizado"),
        (0, STA_UNSYNC | 0x2000, (0, STA_UNSYNC | 0x2000), "no_sincronizado"),
        (-1, 0, (None, 0), "no_verificado"),  # EPERM, ENOSYS...: the call failed
    ],
)
def test_adjtimex_is_called_read_only_and_its_answer_read_back(
    monkeypatch: pytest.MonkeyPatch,
    result: int,
    status: int,
    read: tuple[int | None, int],
    state: str,
) -> None:
    libc = FakeLibc(result, status)
    monkeypatch.setattr(health, "_libc", lambda: libc)
    assert read_adjtimex() == read
    assert ntp_state() == state
    assert libc.modes == [0, 0]  # modes 0: a read, never an adjustment of the clock


@pytest.mark.parametrize("missing", [OSError("no libc"), object()], ids=["no-libc", "no-symbol"])
def test_no_adjtimex_to_call_is_no_verificado(
    monkeypatch: pytest.MonkeyPatch, missing: object
) -> None:
    def libc() -> object:
        if isinstance(missing, BaseException):
            raise missing
        return missing  # a libc without adjtimex: AttributeError

    monkeypatch.setattr(health, "_libc", libc)
    assert read_adjtimex() == (None, 0)
    assert ntp_state() == "no_verificado"


@pytest.mark.skipif(
    sys.platform != "linux" or ctypes.sizeof(ctypes.c_long) != 8, reason="64-bit Linux layout"
)
def test_the_struct_passed_to_the_kernel_has_its_64_bit_linux_layout() -> None:
    # <sys/timex.h>: 208 bytes, status at byte 40; a smaller struct would be overwritten past
    # its end, a misplaced status would read another field.
    assert ctypes.sizeof(health._Timex) == 208
    assert health._Timex.status.offset == 40


@pytest.mark.parametrize(
    ("offset_s", "alert"),
    [
        (0, False),
        (0.999, False),  # the same clock, read against a Date cut to its second
        (60.999, False),  # ahead by 59.999 to 60.999: one second may be the Date's rounding
        (61, True),  # ahead by more than 60 at least
        (-60, False),
        (-60.5, True),  # behind by 60.5 at least: the Date's rounding only makes it more
        (-61, True),
        (-3600, True),
    ],
)
def test_clock_tolerance_allows_the_dates_rounding_only_where_it_can_hide_an_offset(
    offset_s: float, alert: bool
) -> None:
    assert clock_out_of_tolerance(offset_s, 60) is alert


def test_date_header_is_read_case_insensitively_and_garbage_ignored() -> None:
    assert date_header([("date", "Sun, 20 Sep 2026 18:00:00 GMT")]) == datetime(
        2026, 9, 20, 18, tzinfo=UTC
    )
    assert date_header([("Date", "yesterday")]) is None
    assert date_header([("Server", "x")]) is None
    # A year past datetime's (ValueError) or past a C long (OverflowError, which crashed every
    # capture and tick with a traceback before anything was recorded): unreadable, as garbage.
    for year in ("10000", "99999999999999999999"):
        assert date_header([("Date", f"Mon, 01 Jan {year} 00:00:00 GMT")]) is None


# -- injected conditions -------------------------------------------------------------------------


def test_low_disk_raises_disco_and_the_capture_is_still_recorded(
    stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FXEV_MIN_FREE_BYTES=str(10**18))  # more than any disk has
    with LocalServer(LINE) as source:
        result = capture_taxauth_txt(stores, settings, NOW, url=source.url)
    assert result.outcome == "nueva"
    (alert,) = [a for a in result.alertas if a.tipo == "disco"]
    assert alert.detalle["minimo"] == 10**18
    again = check_disk(stores.alerts, settings.home, 10**18, NOW)
    assert again is not None and again.id == alert.id and again.contador == 2  # de-duplicated


def test_enough_disk_raises_nothing(stores: Stores, settings: Settings, tmp_path: Path) -> None:
    assert check_disk(stores.alerts, tmp_path / "not-yet-created", 1, NOW) is None


@pytest.mark.parametrize("offset", [timedelta(hours=2), timedelta(minutes=-5)])
def test_a_clock_off_the_sources_date_raises_reloj(
    stores: Stores, settings: Settings, offset: timedelta
) -> None:
    sent = http_date(offset)
    with LocalServer(LINE, headers={"Content-Type": "text/plain"}) as source:
        source.set(headers={"Content-Type": "text/plain", "Date": sent})
        result = capture_taxauth_txt(stores, settings, NOW, url=source.url)
    assert result.outcome == "nueva"
    (alert,) = [a for a in result.alertas if a.tipo == "reloj_fuera_de_tolerancia"]
    assert alert.fuente == "taxauth_txt"
    assert abs(abs(alert.detalle["desfase_s"]) - abs(offset.total_seconds())) < 5
    # Like every timestamp served (DECISIONS 9): UTC ending in Z, not "+00:00".
    assert alert.detalle["date_fuente"] == utc_timestamp(parsedate_to_datetime(sent))
    assert alert.detalle["date_fuente"].endswith("Z")
    # The alert's instant is the capture's (FXEV_NOW in tests), as for every capture's alert.
    assert alert.primera_vez == alert.ultima_vez == utc_timestamp(NOW)


def test_a_clock_within_tolerance_raises_nothing(stores: Stores, settings: Settings) -> None:
    with LocalServer(LINE) as source:
        source.set(headers={"Content-Type": "text/plain", "Date": http_date(timedelta(0))})
        result = capture_taxauth_txt(stores, settings, NOW, url=source.url)
    assert [a.tipo for a in result.alertas] == []


def test_the_central_bank_capture_checks_the_clock_too(
    stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FXEV_CENTRALBANK_DAYS="3")
    with LocalServer(b"<html></html>", path="/api") as source:
        source.set(headers={"Content-Type": "text/html", "Date": http_date(timedelta(days=1))})
        result = capture_centralbank(
            stores, settings, lima(NOW.date()), base_url=source.url.removesuffix("/api") + "/api"
        )
    assert sorted(a.tipo for a in result.alertas) == ["cambio_formato", "reloj_fuera_de_tolerancia"]


def test_an_unreachable_proxy_is_tunel_caido_not_the_source(
    stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(FXEV_PROXY=f"http://127.0.0.1:{free_port()}")
    with LocalServer(LINE) as source:
        result = capture_taxauth_txt(stores, settings, NOW, url=source.url)
        assert source.requests == 0
    assert result.outcome == "fallo"
    assert [a.tipo for a in result.alertas] == ["tunel_caido"]
    events = stores.registry.events_of_revision(result.revision)
    assert [(e.tipo, e.fecha_serie) for e in events] == [("tunel_caido", "2026-09-20")]


def test_a_source_down_behind_a_working_proxy_is_fuente_no_disponible(
    stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    # The proxy answers for the source it could not reach: 502 Bad Gateway.
    with LocalServer(b"Bad Gateway", status=502) as proxy:
        settings = make_settings(FXEV_PROXY=f"http://127.0.0.1:{proxy.port}")
        result = capture_taxauth_txt(
            stores, settings, NOW, url="http://taxauth.invalid/a/txt/tipoCambio.txt"
        )
        assert proxy.requests == 1  # the request did go through the tunnel
    assert [a.tipo for a in result.alertas] == ["fuente_no_disponible"]


def test_a_working_proxy_carries_the_capture(
    stores: Stores, make_settings: Callable[..., Settings]
) -> None:
    with LocalServer(LINE) as proxy:
        settings = make_settings(FXEV_PROXY=f"http://127.0.0.1:{proxy.port}")
        result = capture_taxauth_txt(
            stores, settings, NOW, url="http://taxauth.invalid/a/txt/tipoCambio.txt"
        )
    assert result.outcome == "nueva"
