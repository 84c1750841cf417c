"""Configuration: one pure function from an environment mapping to typed settings.

Every setting is an environment variable with a default that works from a fresh clone. Each is
declared once, in ``SETTINGS``: its variable, its default (as text, parsed by ``load_settings``
like any value from the environment) and a one-line help. The docs' configuration table
(``docs/operating/configuration.md``) is checked against ``SETTINGS`` by a test, so a setting
cannot be added here without being documented there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import urlsplit

from builder.core.errors import ConfigurationError
from builder.core.vocabulary import CAPTURED_SOURCES

TAXAUTH_URL = "https://www.sunat.gob.pe/a/txt/tipoCambio.txt"
CENTRALBANK_URL = "https://estadisticas.bcrp.gob.pe/estadisticas/series/api"


class SettingsError(ConfigurationError, ValueError):
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
    capture_deadline_s: int
    store_url: str | None = None
    s3_endpoint: str | None = None
    mirror_interval_s: int = 5
    cors_origins: tuple[str, ...] | None = None
    redis_url: str | None = None
    log_origin: str | None = None
    log_vkey: str | None = None
    edge_lane: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable: the ``Settings`` field it fills, its default and its help."""

    variable: str
    field: str
    default: str | None  # None: unset, the field is None (or, for FXEV_NOW, the clock)
    help: str
    unset: str = "unset"  # how the docs name the default when there is none

    @property
    def shown_default(self) -> str:
        """The default as the docs' table shows it."""
        return self.unset if self.default is None else self.default


# Every setting, in the order of the docs' table.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        "FXEV_HOME",
        "home",
        "./var",
        "data folder: registry, evidence blobs, alerts, tokens, ledger",
    ),
    Setting("FXEV_SITE", "site", "./site_out", "the static tree rendered by `fxev build`"),
    Setting(
        "FXEV_TAXAUTH_URL",
        "taxauth_url",
        TAXAUTH_URL,
        "the tax authority's exchange-rate text file",
    ),
    Setting(
        "FXEV_CENTRALBANK_URL",
        "centralbank_url",
        CENTRALBANK_URL,
        "base of the central bank's statistics API",
    ),
    Setting(
        "FXEV_NOW",
        "now",
        None,
        "fixed 'now' (ISO-8601 with offset); tests only",
        unset="unset (the clock)",
    ),
    Setting(
        "FXEV_RATE_LIMIT_PER_MIN",
        "rate_limit_per_min",
        "60",
        "requests per token in any 60 s window",
    ),
    Setting(
        "FXEV_RATE_LIMIT_PER_DAY",
        "rate_limit_per_day",
        "5000",
        "requests per token per calendar day in Lima",
    ),
    Setting(
        "FXEV_TOKEN", "token", None, "bearer token read by client-side commands (`fxev verify`)"
    ),
    Setting("FXEV_SOURCES", "sources", ",".join(CAPTURED_SOURCES), "sources `fxev tick` captures"),
    Setting(
        "FXEV_CENTRALBANK_DAYS",
        "centralbank_days",
        "10",
        "days back each central-bank capture asks for",
    ),
    Setting(
        "FXEV_PLAUSIBILITY_PCT",
        "plausibility_pct",
        "3",
        "move (percent) that marks `plausibilidad_baja`",
    ),
    Setting(
        "FXEV_MAX_BODY_BYTES",
        "max_body_bytes",
        "1048576",
        "largest source body accepted, after decompression",
    ),
    Setting(
        "FXEV_MIN_FREE_BYTES",
        "min_free_bytes",
        "1073741824",
        "free disk under which writes raise `disco`",
    ),
    Setting(
        "FXEV_CLOCK_TOLERANCE_S",
        "clock_tolerance_s",
        "60",
        "clock offset from the source's `Date` that raises an alert",
    ),
    Setting(
        "FXEV_PROXY",
        "proxy",
        None,
        "proxy (tunnel) to reach the sources; unreachable raises `tunel_caido`",
    ),
    Setting(
        "FXEV_CAPTURE_DEADLINE_S",
        "capture_deadline_s",
        "60",
        "whole-request deadline of one source fetch (connect, redirects, headers, body)",
    ),
    Setting(
        "FXEV_REDIS_URL",
        "redis_url",
        None,
        "fleet mode: Redis shared by every gateway (limits, tokens, page-token secret, alerts)",
        unset="unset (one host, local files)",
    ),
    Setting(
        "FXEV_EDGE_LANE",
        "edge_lane",
        None,
        "`HOST:PORT` where each gateway worker also answers the edge's common auth steps (the"
        " auth lane); `fxev edge config --lane` names it",
        unset="unset (no lane: every auth step goes through Sanic)",
    ),
    Setting(
        "FXEV_STORE_URL",
        "store_url",
        None,
        "fleet mode: `s3://BUCKET/PREFIX` of the object store the tree is published to",
    ),
    Setting(
        "FXEV_S3_ENDPOINT",
        "s3_endpoint",
        None,
        "endpoint of an S3-compatible store",
        unset="unset (the client's default)",
    ),
    Setting(
        "FXEV_MIRROR_INTERVAL_S",
        "mirror_interval_s",
        "5",
        "how often `fxev mirror --follow` polls the store's pointer; a fleet gateway waits up"
        " to this and 2 s for its mirror (set it alike on a host's gateway and mirror)",
    ),
    Setting(
        "FXEV_CORS_ORIGINS",
        "cors_origins",
        None,
        "origins (comma-separated, or `*`) allowed to call the API from a browser",
        unset="unset (none)",
    ),
    Setting(
        "FXEV_LOG_ORIGIN",
        "log_origin",
        None,
        "the transparency log's origin: its checkpoints' first line and its key's name",
        unset="unset (`fxev.local/` + the registry id's first 16 hex)",
    ),
    Setting(
        "FXEV_LOG_VKEY",
        "log_vkey",
        None,
        "the log's verifier key `fxev verify` checks checkpoints with (`--vkey`)",
        unset="unset (no log check)",
    ),
)
_DEFAULTS: dict[str, str | None] = {setting.variable: setting.default for setting in SETTINGS}

# variable -> (default as the docs show it, one-line help), in the docs' order.
SETTINGS_HELP: dict[str, tuple[str, str]] = {
    setting.variable: (setting.shown_default, setting.help) for setting in SETTINGS
}


def _default(name: str) -> str:
    default = _DEFAULTS[name]
    if default is None:
        raise KeyError(f"{name} has no default")
    return default


def http_url(raw: str) -> str:
    """``raw`` when it is an http(s) URL with a host; ValueError naming it otherwise. A source's
    URL mistyped is the operator's error, refused before anything is written, never recorded as
    the source being down."""
    try:
        parts = urlsplit(raw)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{raw!r} is not an http(s) URL with a host")
    return raw


def _url(environ: Mapping[str, str], name: str) -> str:
    raw = environ.get(name) or _default(name)
    try:
        return http_url(raw)
    except ValueError as error:
        raise SettingsError(f"{name}: {error}") from None


def _proxy(environ: Mapping[str, str]) -> str | None:
    """``FXEV_PROXY``: an HTTP(S) proxy. A SOCKS one is refused: its connections are made by a
    library of their own, which the capture deadline does not reach, and its failures would not
    read as the tunnel's (``tunel_caido``)."""
    raw = environ.get("FXEV_PROXY", "")
    if not raw:
        return None
    try:
        return http_url(raw)
    except ValueError as error:
        socks = (
            " (SOCKS is not supported: use an HTTP proxy)"
            if raw.lower().startswith("socks")
            else ""
        )
        raise SettingsError(f"FXEV_PROXY: {error}{socks}") from None


def _redis_url(environ: Mapping[str, str]) -> str | None:
    raw = environ.get("FXEV_REDIS_URL", "").strip()
    if raw and urlsplit(raw).scheme not in ("redis", "rediss", "unix"):
        raise SettingsError(f"FXEV_REDIS_URL must be a redis://, rediss:// or unix:// URL: {raw!r}")
    return raw or None


def _folder(environ: Mapping[str, str], name: str) -> Path:
    """A folder setting; a path that exists must be a folder (it is created when missing)."""
    path = Path(environ.get(name) or _default(name))
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{name} {path.absolute()} is a file, not a folder")
    return path


_DIGITS = re.compile(r"-?[0-9]+")


def _int(environ: Mapping[str, str], name: str, minimum: int = 0) -> int:
    raw = environ.get(name, "").strip() or _default(name)
    if not _DIGITS.fullmatch(raw):  # int() alone also takes "1_000" and non-ASCII digits
        raise SettingsError(f"{name} must be an integer, got {raw!r}")
    value = int(raw)
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://[^/?#\s,]+")


def parse_now(raw: str) -> datetime:
    """Parse an ISO-8601 instant that must carry a UTC offset."""
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SettingsError(f"FXEV_NOW must be ISO-8601 with an offset, got {raw!r}") from None
    if value.tzinfo is None:
        raise SettingsError(f"FXEV_NOW needs a time zone offset, got {raw!r}")
    return value


def parse_origins(raw: str) -> tuple[str, ...] | None:
    """FXEV_CORS_ORIGINS: origins (``scheme://host[:port]``, lower-cased) or ``*``; None when
    empty."""
    origins = tuple(dict.fromkeys(o.strip().lower() for o in raw.split(",") if o.strip()))
    for origin in origins:
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise SettingsError(
                f"FXEV_CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port]) or *"
            )
    return origins or None


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Read every setting from ``environ``; raise ``SettingsError`` on an unusable value."""
    raw_now = environ.get("FXEV_NOW", "").strip()
    raw_pct = environ.get("FXEV_PLAUSIBILITY_PCT", "").strip() or _default("FXEV_PLAUSIBILITY_PCT")
    try:
        pct = Decimal(raw_pct)
    except InvalidOperation:
        raise SettingsError(f"FXEV_PLAUSIBILITY_PCT must be a number, got {raw_pct!r}") from None
    if not pct.is_finite() or pct < 0:
        raise SettingsError(f"FXEV_PLAUSIBILITY_PCT must be >= 0, got {raw_pct!r}")
    sources = tuple(
        s.strip()
        for s in (environ.get("FXEV_SOURCES") or _default("FXEV_SOURCES")).split(",")
        if s.strip()
    )
    unknown = [s for s in sources if s not in CAPTURED_SOURCES]
    if unknown:
        raise SettingsError(f"FXEV_SOURCES names unknown sources: {', '.join(unknown)}")
    if not sources or len(set(sources)) != len(sources):
        raise SettingsError(f"FXEV_SOURCES must name each source once, got {sources!r}")
    return Settings(
        home=_folder(environ, "FXEV_HOME"),
        site=_folder(environ, "FXEV_SITE"),
        taxauth_url=_url(environ, "FXEV_TAXAUTH_URL"),
        centralbank_url=_url(environ, "FXEV_CENTRALBANK_URL"),
        now=parse_now(raw_now) if raw_now else None,
        rate_limit_per_min=_int(environ, "FXEV_RATE_LIMIT_PER_MIN", minimum=1),
        rate_limit_per_day=_int(environ, "FXEV_RATE_LIMIT_PER_DAY", minimum=1),
        token=environ.get("FXEV_TOKEN") or None,
        sources=sources,
        centralbank_days=_int(environ, "FXEV_CENTRALBANK_DAYS", minimum=1),
        plausibility_pct=pct,
        max_body_bytes=_int(environ, "FXEV_MAX_BODY_BYTES", minimum=1),
        min_free_bytes=_int(environ, "FXEV_MIN_FREE_BYTES"),
        clock_tolerance_s=_int(environ, "FXEV_CLOCK_TOLERANCE_S", minimum=1),
        proxy=_proxy(environ),
        capture_deadline_s=_int(environ, "FXEV_CAPTURE_DEADLINE_S", minimum=1),
        store_url=environ.get("FXEV_STORE_URL") or None,
        s3_endpoint=_url(environ, "FXEV_S3_ENDPOINT") if environ.get("FXEV_S3_ENDPOINT") else None,
        mirror_interval_s=_int(environ, "FXEV_MIRROR_INTERVAL_S", minimum=1),
        cors_origins=parse_origins(environ.get("FXEV_CORS_ORIGINS", "")),
        redis_url=_redis_url(environ),
        log_origin=_log_origin(environ.get("FXEV_LOG_ORIGIN", "")),
        log_vkey=environ.get("FXEV_LOG_VKEY", "").strip() or None,
        edge_lane=_address("FXEV_EDGE_LANE", environ.get("FXEV_EDGE_LANE", "")),
    )


def _address(variable: str, raw: str) -> str | None:
    """``HOST:PORT`` (a port 1-65535), or None when unset."""
    text = raw.strip()
    if not text:
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"{variable} must be HOST:PORT, got {raw!r}")
    return text


def _log_origin(raw: str) -> str | None:
    origin = raw.strip()
    # A key name of a C2SP signed note (builder.tlog.note): no space, '+' or control character.
    if origin and not re.fullmatch(r"[^\s+\x00-\x1f]+", origin):
        raise SettingsError(
            f"FXEV_LOG_ORIGIN must have no space, no '+' and no control character, got {raw!r}"
        )
    return origin or None
