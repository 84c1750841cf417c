"""The environment variables fxev reads, each declared once: its variable, the ``Settings``
field it fills, its default (as text, parsed by :func:`builder.core.settings.load_settings` like
any value from the environment), a one-line help and, for an integer, its largest value. The
docs' configuration table (``docs/operating/configuration.md``) is checked against ``SETTINGS``
by a test, so a setting cannot be added here without being documented there.

An integer's largest value is far past any use, and below where a date, a timer, a counter or a
file the setting feeds would overflow mid-command, after the command had begun to write.
"""

from __future__ import annotations

import dataclasses

from builder.core.vocabulary import CAPTURED_SOURCES

TAXAUTH_URL = "https://www.sunat.gob.pe/a/txt/tipoCambio.txt"
CENTRALBANK_URL = "https://estadisticas.bcrp.gob.pe/estadisticas/series/api"


@dataclasses.dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable: the ``Settings`` field it fills, its default and its help."""

    variable: str
    field: str
    default: str | None  # None: unset, the field is None (or, for FXEV_NOW, the clock)
    help: str
    unset: str = "unset"  # how the docs name the default when there is none
    maximum: int | None = None  # an integer setting's largest value

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
        maximum=10**9,  # a ring of that many slots per token (limits.ring)
    ),
    Setting(
        "FXEV_RATE_LIMIT_PER_DAY",
        "rate_limit_per_day",
        "5000",
        "requests per token per calendar day in Lima",
        maximum=2**62,
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
        maximum=3660,  # ten years: a capture asks for days, a backfill for history
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
        maximum=2**62,
    ),
    Setting(
        "FXEV_MIN_FREE_BYTES",
        "min_free_bytes",
        "1073741824",
        "free disk under which writes raise `disco`",
        maximum=2**62,
    ),
    Setting(
        "FXEV_CLOCK_TOLERANCE_S",
        "clock_tolerance_s",
        "60",
        "clock offset from the source's `Date` that raises an alert",
        maximum=10**9,
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
        maximum=10**9,  # under threading.TIMEOUT_MAX, the watchdog's wait
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
        maximum=10**9,
    ),
    Setting(
        "FXEV_CORS_ORIGINS",
        "cors_origins",
        None,
        "origins (comma-separated, or `*`) allowed to call the API from a browser",
        unset="unset (none)",
    ),
    Setting(
        "FXEV_PUBLIC_URL",
        "public_url",
        None,
        "the origin (`https://host[:port]`) browsers and consumers reach the gateway at, behind"
        " a TLS terminator or the edge: the explorer's cookie is `Secure` when it is https, its"
        " sign-in checks `Origin` against it, and its pages print it as `--url`",
        unset="unset (the request's own scheme and `Host`)",
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
DEFAULTS: dict[str, str | None] = {setting.variable: setting.default for setting in SETTINGS}

# variable -> the largest value of an integer setting.
MAXIMA: dict[str, int] = {s.variable: s.maximum for s in SETTINGS if s.maximum is not None}
