"""Settings: every variable parsed, every unusable value a clear error."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from builder.core.settings import SettingsError, load_settings
from builder.core.variables import MAXIMA, SETTINGS


def test_values_are_parsed_into_typed_settings():
    settings = load_settings(
        {
            "FXEV_NOW": "2026-09-20T13:00:00-05:00",
            "FXEV_PLAUSIBILITY_PCT": "2.5",
            "FXEV_SOURCES": "taxauth_txt",
            "FXEV_MAX_BODY_BYTES": "64",
            "FXEV_PROXY": "http://127.0.0.1:3128",
        }
    )
    assert settings.now == datetime(2026, 9, 20, 18, 0, tzinfo=UTC)
    assert settings.plausibility_pct == Decimal("2.5")
    assert settings.sources == ("taxauth_txt",)
    assert settings.max_body_bytes == 64
    assert settings.proxy == "http://127.0.0.1:3128"


def test_now_accepts_a_z_suffix():
    assert load_settings({"FXEV_NOW": "2026-09-20T18:00:00Z"}).now.hour == 18


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("FXEV_NOW", "2026-09-20T13:00:00", "offset"),
        ("FXEV_NOW", "yesterday", "ISO-8601"),
        ("FXEV_RATE_LIMIT_PER_MIN", "sixty", "integer"),
        ("FXEV_RATE_LIMIT_PER_MIN", "0", "at least 1"),
        ("FXEV_MAX_BODY_BYTES", "-5", "at least 1"),
        ("FXEV_PLAUSIBILITY_PCT", "three", "number"),
        ("FXEV_PLAUSIBILITY_PCT", "-1", ">= 0"),
        ("FXEV_SOURCES", "taxauth_txt,sbs", "unknown sources: sbs"),
        ("FXEV_SOURCES", ",", "each source once"),
        ("FXEV_SOURCES", "taxauth_txt,taxauth_txt", "each source once"),
        ("FXEV_MAX_BODY_BYTES", "1_000", "integer"),
        ("FXEV_RATE_LIMIT_PER_DAY", "\u0665\u0660", "integer"),
        ("FXEV_REDIS_URL", "nonsense", "redis://"),
        # redis-py refused these only when a command or a worker first connected: a traceback.
        ("FXEV_REDIS_URL", "redis://127.0.0.1:notaport/0", "Port could not be cast"),
        ("FXEV_REDIS_URL", "redis://127.0.0.1:99999/0", "Port out of range"),
        ("FXEV_REDIS_URL", "redis://[::1/0", "cannot be used"),
        ("FXEV_REDIS_URL", "redis://127.0.0.1:6379/0?socket_timeout=abc", "socket_timeout"),
        # redis-py parses any option, and refused one it does not know only when it connected:
        # a traceback, after `fxev publish` had moved the store's pointer.
        ("FXEV_REDIS_URL", "redis://127.0.0.1:6379/0?timeout=5", "no query option 'timeout'"),
        ("FXEV_REDIS_URL", "redis://h:6379/0?ssl_cert_reqs=none", "'ssl_cert_reqs'"),
        # ... and it read these paths as database 0, and 12, without a word.
        ("FXEV_REDIS_URL", "redis://127.0.0.1:6379/abc", "no database number \\(/DB\\): '/abc'"),
        ("FXEV_REDIS_URL", "redis://127.0.0.1:6379/1/2", "no database number"),
        ("FXEV_S3_ENDPOINT", "notaurl", "not an http"),
        ("FXEV_TAXAUTH_URL", "www.sunat.gob.pe/a/txt/tipoCambio.txt", "not an http"),
        ("FXEV_TAXAUTH_URL", "file:///tmp/tipoCambio.txt", "not an http"),
        ("FXEV_CENTRALBANK_URL", "https://", "not an http"),
        ("FXEV_CENTRALBANK_URL", "http://127.0.0.1:80x/api", "not an http"),
        # A SOCKS proxy's connections escaped the capture deadline (a source dripping a byte a
        # second ran for as long as it dripped) and its failures read as the source's.
        ("FXEV_PROXY", "socks5://127.0.0.1:1080", "SOCKS is not supported"),
        ("FXEV_PROXY", "socks5h://127.0.0.1:1080", "SOCKS is not supported"),
        ("FXEV_PROXY", "127.0.0.1:3128", "not an http"),
        # Values past any use overflowed a date or a timer mid-command, after it had made the
        # home (and, in `fxev tick`, committed the first source's capture).
        ("FXEV_CENTRALBANK_DAYS", "99999999", "at most 3660"),
        ("FXEV_CAPTURE_DEADLINE_S", "10000000000", "at most 1000000000"),
        ("FXEV_RATE_LIMIT_PER_DAY", "9" * 25, "at most"),
        ("FXEV_MIN_FREE_BYTES", "9" * 40, "integer"),
        ("FXEV_NOW", "9999-12-31T23:59:59-05:00", "from 1970 to 9000"),
        ("FXEV_NOW", "0001-01-01T00:00:00+00:00", "from 1970 to 9000"),
        # An origin is what a browser compares: a path, a query or credentials are refused.
        ("FXEV_PUBLIC_URL", "fx.example", "must be an origin"),
        ("FXEV_PUBLIC_URL", "ftp://fx.example", "must be an origin"),
        ("FXEV_PUBLIC_URL", "https://fx.example/api", "must be an origin"),
        ("FXEV_PUBLIC_URL", "https://fx.example?x=1", "must be an origin"),
        ("FXEV_PUBLIC_URL", "https://user@fx.example", "must be an origin"),
        ("FXEV_PUBLIC_URL", "https://fx.example:port", "must be an origin"),
        ("FXEV_STORE_URL", "http://bucket/prefix", "must be s3://BUCKET/PREFIX"),
        ("FXEV_STORE_URL", "s3://bad bucket/x", "names a bucket no S3 client takes"),
    ],
)
def test_an_unusable_value_is_a_clear_error(name, value, message):
    with pytest.raises(SettingsError, match=message):
        load_settings({name: value})


def test_every_integer_setting_has_a_largest_value():
    """Each integer setting takes its bound and refuses one more; its default is within it."""
    for name, largest in MAXIMA.items():
        assert load_settings({name: str(largest)}) is not None, name
        with pytest.raises(SettingsError, match=f"{name} must be at most"):
            load_settings({name: str(largest + 1)})
        assert int(next(x.default for x in SETTINGS if x.variable == name) or 0) <= largest


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0",
        "redis://127.0.0.1:6379",
        "redis://127.0.0.1:6379/",
        "redis://127.0.0.1:6379/15/",
        "redis://127.0.0.1:6379/0?socket_timeout=3",
        "rediss://h.example:6380/1?ssl_cert_reqs=none",
        "unix:///run/redis.sock?db=2",
    ],
)
def test_a_redis_url_a_client_can_use_is_kept_as_given(url):
    """Checked by making (not opening) the connection every client makes: no network."""
    assert load_settings({"FXEV_REDIS_URL": url}).redis_url == url


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("", None),
        ("https://FX.example/", "https://fx.example"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_the_public_url_is_kept_as_a_lower_case_origin(raw, kept):
    assert load_settings({"FXEV_PUBLIC_URL": raw}).public_url == kept
