"""The write side's notion of "now": the real clock, or ``FXEV_NOW`` when tests fix it."""

from __future__ import annotations

from datetime import UTC, datetime

from builder.core.settings import Settings


def now(settings: Settings) -> datetime:
    return settings.now if settings.now is not None else datetime.now(UTC)
