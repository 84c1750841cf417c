"""A gateway worker loads Peru's calendar before it answers (``gateway.app.load_calendar_ahead``):
which years, and what a calendar that cannot be loaded does (stops nothing, says why). That the
load happens before a worker's first request is held by tests/contract/test_worker_start.py."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from builder.core import business_days
from gateway import app as gateway_app


def worker_app(now: datetime) -> SimpleNamespace:
    """What the listener reads of a worker's app: its settings' ``FXEV_NOW``."""
    return SimpleNamespace(ctx=SimpleNamespace(settings=SimpleNamespace(now=now)))


def test_the_years_loaded_are_this_one_and_the_last_in_lima(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[int]] = []
    monkeypatch.setattr(business_days, "load_calendar", lambda years: asked.append(list(years)))
    # 00:30 UTC on New Year's Day is still 31 December in Lima (UTC-5).
    asyncio.run(
        gateway_app.load_calendar_ahead(worker_app(datetime(2027, 1, 1, 0, 30, tzinfo=UTC)))
    )
    assert asked == [[2025, 2026]]


def test_a_calendar_that_cannot_be_loaded_stops_no_worker_and_the_log_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(years: object) -> None:
        raise ValueError("non_working_days.csv: header ['fecha'], want ['fecha', 'motivo', ...]")

    monkeypatch.setattr(business_days, "load_calendar", broken)
    with caplog.at_level(logging.WARNING):
        asyncio.run(gateway_app.load_calendar_ahead(worker_app(datetime(2026, 9, 21, tzinfo=UTC))))
    assert "Peru's calendar could not be loaded ahead: non_working_days.csv: header" in caplog.text
