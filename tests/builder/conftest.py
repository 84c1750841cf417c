"""Fixtures for capture tests: a fresh ``FXEV_HOME``, its stores, and a mocked source.

The source side is ``responses``: ``capture(body=..., status=..., headers=..., now=...)`` registers
exactly one answer for the configured URL (or raises the exception given as ``body``) and runs one
``capture_taxauth_txt``. Headers go out exactly as listed, duplicates included, and nothing is
added to them (no default ``Content-Type``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import responses

from builder.capture.run import CaptureResult, Stores
from builder.capture.taxauth import capture_taxauth_txt
from builder.core.settings import Settings, load_settings
from tests.realdata import SunatDay, sunat_history

LIMA = ZoneInfo("America/Lima")
TAXAUTH_URL = "https://taxauth.test/a/txt/tipoCambio.txt"
# A Sunday in Lima; the real text file said "20/09/2026|3.354|3.362|" that day.
NOW = datetime(2026, 9, 20, 13, 0, tzinfo=LIMA)
PCT = load_settings({}).plausibility_pct  # FXEV_PLAUSIBILITY_PCT's default
TEXT_PLAIN: tuple[tuple[str, str], ...] = (("Content-Type", "text/plain"),)

Body = bytes | str | BaseException
Headers = Sequence[tuple[str, str]]


def lima(day: date, hour: int = 13) -> datetime:
    """``hour`` o'clock of ``day`` in Lima, timezone-aware."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=LIMA)


def txt_line(day: SunatDay) -> str:
    """The text file's line for a real publication day: ``DD/MM/YYYY|compra|venta|``."""
    return f"{day.fecha:%d/%m/%Y}|{day.compra}|{day.venta}|"


@pytest.fixture(scope="session")
def sunat() -> dict[date, SunatDay]:
    """The tax authority's real history, by publication date."""
    return {day.fecha: day for day in sunat_history()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def make_settings(home: Path) -> Callable[..., Settings]:
    """Settings for ``home`` and the test URL, plus any extra ``FXEV_*`` variables."""

    def make(**extra: str) -> Settings:
        return load_settings({"FXEV_HOME": str(home), "FXEV_TAXAUTH_URL": TAXAUTH_URL, **extra})

    return make


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
def stores(home: Path) -> Iterator[Stores]:
    opened = Stores.open(home)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def source() -> Iterator[responses.RequestsMock]:
    """The mocked network: every ``requests`` call goes here; unmatched calls fail the test."""
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def capture(
    source: responses.RequestsMock, stores: Stores, settings: Settings
) -> Callable[..., CaptureResult]:
    """Run one capture against a source that answers ``body`` (or raises it)."""

    def run(
        body: Body = b"",
        status: int = 200,
        headers: Headers = TEXT_PLAIN,
        now: datetime = NOW,
        settings: Settings = settings,
    ) -> CaptureResult:
        payload = body.encode() if isinstance(body, str) else body
        answer = list(headers)

        def reply(_request: object) -> BaseException | tuple[int, list[tuple[str, str]], bytes]:
            if isinstance(payload, BaseException):
                return payload
            return status, answer, payload

        source.reset()
        source.add_callback(responses.GET, settings.taxauth_url, callback=reply, content_type=None)
        return capture_taxauth_txt(stores, settings, now)

    return run


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 another socket listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
