"""Configuration: one pure function from an environment mapping to typed settings.

Every setting is an environment variable with a default that works from a fresh clone, declared
once in :mod:`builder.core.variables` (``SETTINGS``); ``load_settings`` parses its default like
any value from the environment, and refuses what a command could not use.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import urlsplit

from builder.core.errors import ConfigurationError
from builder.core.variables import DEFAULTS, MAXIMA
from builder.core.vocabulary import CAPTURED_SOURCES


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
    public_url: str | None = None


def _default(name: str) -> str:
    default = DEFAULTS[name]
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
    """A URL redis-py can connect to; one it would refuse later (a port that is no number, a
    broken IPv6 address, a bad query option), or read as another database than it names, is
    refused here, before any store is touched."""
    raw = environ.get("FXEV_REDIS_URL", "").strip()
    if not raw:
        return None
    if not raw.lower().startswith(("redis://", "rediss://", "unix://")):
        raise SettingsError(f"FXEV_REDIS_URL must be a redis://, rediss:// or unix:// URL: {raw!r}")
    from redis import ConnectionPool  # only when set: an embedded host never loads redis

    try:  # a connection made as every client makes it, not connected: no network here
        ConnectionPool.from_url(raw).make_connection()
    except ValueError as error:
        raise SettingsError(f"FXEV_REDIS_URL cannot be used: {error}") from None
    except TypeError as error:  # a query option the connection does not take
        unknown = str(error).rpartition("argument ")[2]
        raise SettingsError(f"FXEV_REDIS_URL cannot be used: no query option {unknown}") from None
    path = urlsplit(raw).path
    if not raw.lower().startswith("unix://") and path.strip("/") and not _DATABASE.fullmatch(path):
        # redis-py reads /abc, or /1/2 (as 12), without a word: not the database one meant.
        raise SettingsError(f"FXEV_REDIS_URL names no database number (/DB): {path!r}")
    return raw


def _folder(environ: Mapping[str, str], name: str) -> Path:
    """A folder setting; a path that exists must be a folder (it is created when missing)."""
    path = Path(environ.get(name) or _default(name))
    if path.is_symlink() and not path.exists():  # it cannot be created where the link points
        target = os.readlink(path)
        raise SettingsError(f"{name} {path.absolute()} is a link to {target}, which is missing")
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{name} {path.absolute()} is a file, not a folder")
    return path


_DIGITS = re.compile(r"-?[0-9]+")
_DATABASE = re.compile(r"/[0-9]+/?")  # a Redis URL's path: /DB


def _int(environ: Mapping[str, str], name: str, minimum: int = 0) -> int:
    raw = environ.get(name, "").strip() or _default(name)
    if not _DIGITS.fullmatch(raw) or len(raw) > 30:  # int() also takes "1_000", non-ASCII digits
        raise SettingsError(f"{name} must be an integer, got {raw[:40]!r}")
    value = int(raw)
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    largest = MAXIMA[name]
    if value > largest:
        raise SettingsError(f"{name} must be at most {largest}, got {value}")
    return value


_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]*://[^/?#\s,]+")


# FXEV_NOW's range: dates computed from it (Lima's today, five years back, a year ahead) stay
# inside the calendar Python can hold.
NOW_RANGE = (datetime(1970, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC))


def parse_now(raw: str) -> datetime:
    """Parse an ISO-8601 instant that must carry a UTC offset."""
    try:
        value = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SettingsError(f"FXEV_NOW must be ISO-8601 with an offset, got {raw!r}") from None
    if value.tzinfo is None:
        raise SettingsError(f"FXEV_NOW needs a time zone offset, got {raw!r}")
    if not NOW_RANGE[0] <= value <= NOW_RANGE[1]:
        raise SettingsError(
            f"FXEV_NOW must lie from {NOW_RANGE[0].year} to {NOW_RANGE[1].year}, got {raw!r}"
        )
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
        store_url=_store_url(environ),
        s3_endpoint=_url(environ, "FXEV_S3_ENDPOINT") if environ.get("FXEV_S3_ENDPOINT") else None,
        mirror_interval_s=_int(environ, "FXEV_MIRROR_INTERVAL_S", minimum=1),
        cors_origins=parse_origins(environ.get("FXEV_CORS_ORIGINS", "")),
        redis_url=_redis_url(environ),
        log_origin=_log_origin(environ.get("FXEV_LOG_ORIGIN", "")),
        log_vkey=environ.get("FXEV_LOG_VKEY", "").strip() or None,
        edge_lane=_address("FXEV_EDGE_LANE", environ.get("FXEV_EDGE_LANE", "")),
        public_url=parse_public_url(environ.get("FXEV_PUBLIC_URL", "")),
    )


# The bucket names boto3 sends at all (AWS's own rule is narrower; other stores differ).
BUCKET_NAME = re.compile(r"[a-zA-Z0-9.\-_]{1,255}")


def parse_store_url(url: str | None) -> tuple[str, str]:
    """(bucket, prefix without slashes at its ends) of ``s3://BUCKET/PREFIX``."""
    if not url:
        raise SettingsError("FXEV_STORE_URL is not set (s3://BUCKET/PREFIX of the store)")
    if not url.startswith("s3://"):
        raise SettingsError(f"FXEV_STORE_URL must be s3://BUCKET/PREFIX, got {url!r}")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not bucket:
        raise SettingsError(f"FXEV_STORE_URL names no bucket: {url!r}")
    if not BUCKET_NAME.fullmatch(bucket):
        raise SettingsError(
            f"FXEV_STORE_URL names a bucket no S3 client takes: {bucket!r} (letters, digits,"
            " '.', '-' and '_' only)"
        )
    return bucket, prefix.strip("/")


def _store_url(environ: Mapping[str, str]) -> str | None:
    """FXEV_STORE_URL as set, once :func:`parse_store_url` reads it: a malformed one stops every
    command, not only those that reach the store."""
    raw = environ.get("FXEV_STORE_URL") or None
    if raw is not None:
        parse_store_url(raw)
    return raw


def parse_public_url(raw: str) -> str | None:
    """FXEV_PUBLIC_URL: an http(s) origin, ``scheme://host[:port]`` lower-cased, a trailing
    slash dropped; None when unset. A path, query or credentials are refused: an origin is all
    a browser compares."""
    text = raw.strip().lower().removesuffix("/")
    if not text:
        return None
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (a port that is not a number raises here)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise SettingsError(
            f"FXEV_PUBLIC_URL must be an origin, http(s)://host[:port] with no path, got {raw!r}"
        )
    return text


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
