"""Canonical values and instants: the one place where money and time become text.

Money never passes through floating point: raw text -> ``Decimal`` -> half-up to 3 places.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Context, Decimal
from urllib.parse import quote

THREE_PLACES = Decimal("0.001")
_DECIMAL_TEXT = re.compile(r"[+-]?([0-9]+)(?:\.([0-9]+))?")  # ASCII digits only
ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# utc_timestamp's form; the hour bounded, since a later fromisoformat reads 24:00 as midnight.
_UTC_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-9]{2}:[0-9]{2}\.[0-9]{6}Z"
)


def iso_date(raw: str) -> date:
    """A calendar date written ``YYYY-MM-DD``, the one form dates take in fxev; ValueError for
    anything else (``date.fromisoformat`` alone also takes ``20260901`` and ``2026-W36-2``)."""
    if not ISO_DATE.fullmatch(raw):
        raise ValueError(f"{raw!r} is not a date YYYY-MM-DD")
    return date.fromisoformat(raw)


def canonical_rate(raw: str) -> str:
    """Round a raw decimal text half-up to exactly three decimals, as text.

    >>> canonical_rate("3.36")
    '3.360'
    >>> canonical_rate("3.35914285714286")
    '3.359'
    """
    if not _DECIMAL_TEXT.fullmatch(raw):
        raise ValueError(f"not a plain decimal number: {raw!r}")
    # Enough precision for any digit count, so quantize never raises InvalidOperation.
    context = Context(prec=len(raw) + 4, rounding=ROUND_HALF_UP)
    return str(Decimal(raw).quantize(THREE_PLACES, context=context))


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(instant: datetime) -> int:
    """Microseconds since the epoch of an aware instant, in integer arithmetic (no float): what
    the rate limiter and the fleet's token expiry compare."""
    delta = instant - EPOCH  # aware datetimes subtract across zones
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def utc_timestamp(instant: datetime) -> str:
    """ISO-8601 UTC with microseconds and ``Z``: ``2026-09-20T13:05:00.000000Z``."""
    if instant.tzinfo is None:
        raise ValueError("naive datetime: an instant needs a time zone")
    utc = instant.astimezone(UTC)
    # strftime's %Y does not pad years before 1000, and these timestamps are compared as text.
    return f"{utc.year:04d}" + utc.strftime("-%m-%dT%H:%M:%S.%fZ")


def parse_utc_timestamp(text: str) -> datetime:
    """Inverse of :func:`utc_timestamp`. Its form is read by ``datetime.fromisoformat``;
    ``strptime``, which takes other widths too and reads any other text as before, compiles
    its pattern the first time a process calls it, about 7 ms in a gateway worker's first
    request with a token (docs/performance.md#first-answer)."""
    if _UTC_TIMESTAMP.fullmatch(text):
        return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def header_text(value: str) -> str:
    """A text as an HTTP header value (the gateway's ``X-Identidad-Consulta``): printable ASCII
    kept but ``%``, anything else percent-encoded (UTF-8), so percent-decoding the header gives
    the text back exactly, a URL's own ``%20`` included (sent as ``%2520``)."""
    return "".join(c if 32 <= ord(c) < 127 and c != "%" else quote(c, safe="") for c in value)
