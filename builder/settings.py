"""Configuration: one pure function from an environment mapping to typed settings.

Every setting is an environment variable with a default that works from a fresh clone. The
README's configuration table is checked against ``SETTINGS_HELP`` by a test, so a setting cannot
be added here without being documented there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

TAXAUTH_URL = "https://www.sunat.gob.pe/a/txt/tipoCambio.txt"
CENTRALBANK_URL = "https://estadisticas.bcrp.gob.pe/estadisticas/series/api"
KNOWN_SOURCES = ("taxauth_txt", "centralbank")


class SettingsError(ValueError):
    """An environment variable holds a value that cannot be used."""


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    site: Path
    taxauth_url: str
    centralbank_url: str
    now: datetime | None
    rate_limit_per_min: int
    rate_limit_per_day: int
    token: str | None
    sources: tuple[str, ...]
    centralbank_days: int
    plausibility_pct: Decimal
    max_body_bytes: int
    min_free_bytes: int
    clock_tolerance_s: int
    proxy: str | None


# variable -> (default shown in the README, one-line help). Order is the README table's order.
SETTINGS_HELP: dict[str, tuple[str, str]] = {
    "FXEV_HOME": ("./var", "data folder: registry, evidence blobs, alerts, tokens, ledger"),
    "FXEV_SITE": ("./site_out", "the static tree rendered by `fxev build`"),
    "FXEV_TAXAUTH_URL": (TAXAUTH_URL, "the tax authority's exchange-rate text file"),
    "FXEV_CENTRALBANK_URL": (CENTRALBANK_URL, "base of the central bank's statistics API"),
    "FXEV_NOW": ("unset (the clock)", "fixed 'now' (ISO-8601 with offset); tests only"),
    "FXEV_RATE_LIMIT_PER_MIN": ("60", "requests per token in any 60 s window"),
    "FXEV_RATE_LIMIT_PER_DAY": ("5000", "requests per token per calendar day in Lima"),
    "FXEV_TOKEN": ("unset", "bearer token read by client-side commands (`fxev verify`)"),
    "FXEV_SOURCES": ("taxauth_txt,centralbank", "sources `fxev tick` captures"),
    "FXEV_CENTRALBANK_DAYS": ("10", "days back each central-bank capture asks for"),
    "FXEV_PLAUSIBILITY_PCT": ("3", "move (percent) that marks `plausibilidad_baja`"),
    "FXEV_MAX_BODY_BYTES": ("1048576", "largest source body accepted, after decompression"),
    "FXEV_MIN_FREE_BYTES": ("1073741824", "free disk under which writes raise `disco`"),
    "FXEV_CLOCK_TOLERANCE_S": ("60", "clock offset from the source's `Date` that raises an alert"),
    "FXEV_PROXY": (
        "unset",
        "proxy (tunnel) to reach the sources; unreachable raises `tunel_caido`",
    ),
}


def _int(environ: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def parse_now(raw: str) -> datetime:
    """Parse an ISO-8601 instant that must carry a UTC offset."""
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SettingsError(f"FXEV_NOW must be ISO-8601 with an offset, got {raw!r}") from None
    if value.tzinfo is None:
        raise SettingsError(f"FXEV_NOW needs a time zone offset, got {raw!r}")
    return value


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Read every setting from ``environ``; raise ``SettingsError`` on an unusable value."""
    raw_now = environ.get("FXEV_NOW", "").strip()
    raw_pct = environ.get("FXEV_PLAUSIBILITY_PCT", "").strip() or "3"
    try:
        pct = Decimal(raw_pct)
    except InvalidOperation:
        raise SettingsError(f"FXEV_PLAUSIBILITY_PCT must be a number, got {raw_pct!r}") from None
    if not pct.is_finite() or pct < 0:
        raise SettingsError(f"FXEV_PLAUSIBILITY_PCT must be >= 0, got {raw_pct!r}")
    sources = tuple(
        s.strip()
        for s in (environ.get("FXEV_SOURCES") or ",".join(KNOWN_SOURCES)).split(",")
        if s.strip()
    )
    unknown = [s for s in sources if s not in KNOWN_SOURCES]
    if unknown:
        raise SettingsError(f"FXEV_SOURCES names unknown sources: {', '.join(unknown)}")
    return Settings(
        home=Path(environ.get("FXEV_HOME") or "./var"),
        site=Path(environ.get("FXEV_SITE") or "./site_out"),
        taxauth_url=environ.get("FXEV_TAXAUTH_URL") or TAXAUTH_URL,
        centralbank_url=environ.get("FXEV_CENTRALBANK_URL") or CENTRALBANK_URL,
        now=parse_now(raw_now) if raw_now else None,
        rate_limit_per_min=_int(environ, "FXEV_RATE_LIMIT_PER_MIN", 60, minimum=1),
        rate_limit_per_day=_int(environ, "FXEV_RATE_LIMIT_PER_DAY", 5000, minimum=1),
        token=environ.get("FXEV_TOKEN") or None,
        sources=sources,
        centralbank_days=_int(environ, "FXEV_CENTRALBANK_DAYS", 10, minimum=1),
        plausibility_pct=pct,
        max_body_bytes=_int(environ, "FXEV_MAX_BODY_BYTES", 1048576, minimum=1),
        min_free_bytes=_int(environ, "FXEV_MIN_FREE_BYTES", 1073741824),
        clock_tolerance_s=_int(environ, "FXEV_CLOCK_TOLERANCE_S", 60, minimum=1),
        proxy=environ.get("FXEV_PROXY") or None,
    )
