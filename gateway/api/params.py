"""Pure validation of query strings and path ids (docs/decisions.md#parameters), and the canonical
request.

Order of checks: presence and form of every parameter and the range rules (``InvalidParams``),
then currency (``UnsupportedCurrency``), then series (``UnsupportedSeries``). Data checks belong
to the caller.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime
from urllib.parse import parse_qsl, quote, unquote

from builder.core.canonical import ISO_DATE, iso_date
from builder.core.vocabulary import CURRENCIES, SERIES, UUID
from gateway.api import pagetoken
from gateway.errors import InvalidParams, PathValidation, UnsupportedCurrency, UnsupportedSeries

MAX_YEARS = 5
# The forms values must take; the OpenAPI document's patterns are made from these.
DATE = ISO_DATE
REVISION = re.compile(r"[1-9][0-9]*")
INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"  # an offset: hours 00-23, minutes 00-59
)
# Digits of a second's fraction beyond the microsecond (.NET writes 7, Java and Go 9): cut, which
# answers alike, since every ts_commit is a whole microsecond.
BEYOND_MICROSECONDS = re.compile(r"(\.[0-9]{6})[0-9]+")


def parse_query(query_string: str) -> dict[str, str]:
    """Decoded query parameters; a repeated name, a percent-encoded NUL or bytes that are not
    UTF-8 are ``InvalidParams`` (docs/decisions.md#bad-requests)."""
    try:
        pairs = parse_qsl(query_string, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise InvalidParams("the query string is not valid UTF-8") from None
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            raise InvalidParams(f"parameter {name!r} is repeated")
        if "\x00" in name or "\x00" in value:
            raise InvalidParams("the query string holds a NUL character")
        params[name] = value
    return params


def check_names(params: Mapping[str, str], allowed: Collection[str]) -> None:
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InvalidParams(f"unknown parameter {unknown[0]!r}")


def canonical_request(path: str, params: Mapping[str, str]) -> str:
    """Path + query parameters sorted by name, each name and value percent-encoded one way."""
    pairs = sorted((quote(k, safe=""), quote(v, safe="")) for k, v in params.items())
    return path + "?" + "&".join(f"{k}={v}" for k, v in pairs)


def _not_empty(params: Mapping[str, str], name: str) -> str:
    """An optional parameter, given: it may not be empty."""
    if params[name] == "":
        raise InvalidParams(f"parameter {name!r} may not be empty")
    return params[name]


def _required(params: Mapping[str, str], name: str) -> str:
    value = params.get(name, "")
    if value == "":
        raise InvalidParams(f"parameter {name!r} is required")
    return value


def parse_date(name: str, raw: str) -> date:
    try:
        return iso_date(raw)
    except ValueError:
        raise InvalidParams(f"{name} must be a date YYYY-MM-DD") from None


def parse_bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    if raw in ("true", "false"):
        return raw == "true"
    raise InvalidParams(f"{name} must be true or false")


def latest_allowed_end(start: date) -> date:
    """The same month and day ``MAX_YEARS`` later; 29 February maps to 28 February. Past the
    year 9999, the last date there is."""
    if start.year + MAX_YEARS > MAXYEAR:
        return date.max
    try:
        return start.replace(year=start.year + MAX_YEARS)
    except ValueError:
        return date(start.year + MAX_YEARS, 2, 28)


def check_currency_and_series(currency: str | None, series: str | None) -> None:
    if currency is not None and currency not in CURRENCIES:
        raise UnsupportedCurrency(f"currency {currency!r} is not served; use USD")
    if series is not None and series not in SERIES:
        raise UnsupportedSeries(f"series {series!r} is not served; use publicado or cierre")


@dataclasses.dataclass(frozen=True, slots=True)
class SeriesQuery:
    currency: str
    series: str


def series_query(params: Mapping[str, str]) -> SeriesQuery:
    """``/v1/rates/latest``: ``currency`` and ``series``, both required."""
    check_names(params, ("currency", "series"))
    currency, series = _required(params, "currency"), _required(params, "series")
    check_currency_and_series(currency, series)
    return SeriesQuery(currency, series)


@dataclasses.dataclass(frozen=True, slots=True)
class RatesQuery:
    currency: str
    series: str
    start: str
    end: str
    include_annotations: bool
    as_of_revision: int | None
    revision: int
    offset: int

    @property
    def query_key(self) -> str:
        """What a page token binds besides revision and offset: the query, defaults explicit."""
        return canonical_request(
            "/v1/rates",
            {
                "currency": self.currency,
                "series": self.series,
                "from": self.start,
                "to": self.end,
                "include_annotations": "true" if self.include_annotations else "false",
            },
        )

    def years(self) -> range:
        return range(int(self.start[:4]), int(self.end[:4]) + 1)


RATES_PARAMS = (
    "currency",
    "series",
    "from",
    "to",
    "as_of_revision",
    "page_token",
    "include_annotations",
)


def rates_query(params: Mapping[str, str], published: int, secret: bytes) -> RatesQuery:
    """``/v1/rates``: every rule of docs/decisions.md#parameters, in its order."""
    check_names(params, RATES_PARAMS)
    currency, series = _required(params, "currency"), _required(params, "series")
    start = parse_date("from", _required(params, "from"))
    end = parse_date("to", _required(params, "to"))
    if end < start:
        raise InvalidParams("from must not be after to")
    if end > latest_allowed_end(start):
        raise InvalidParams(f"the range from..to spans at most {MAX_YEARS} years")
    include = parse_bool("include_annotations", params.get("include_annotations"), False)
    as_of = None
    if "as_of_revision" in params:
        raw = params["as_of_revision"]
        # Compared by length first: any number of digits is refused, never converted.
        too_long = len(raw) > len(str(published))
        if not REVISION.fullmatch(raw) or too_long or int(raw) > published:
            raise InvalidParams(f"as_of_revision must be an integer from 1 to {published}")
        as_of = int(raw)
    query = RatesQuery(
        currency, series, start.isoformat(), end.isoformat(), include, as_of, as_of or published, 0
    )
    if "page_token" in params:
        try:
            cursor = pagetoken.verify(secret, params["page_token"], query.query_key)
        except pagetoken.PageTokenError as error:
            raise InvalidParams(str(error)) from None
        if cursor.revision > published or (as_of is not None and as_of != cursor.revision):
            raise InvalidParams("page_token does not belong to this revision")
        query = dataclasses.replace(query, revision=cursor.revision, offset=cursor.offset)
    check_currency_and_series(currency, series)
    return query


def rates_canonical_request(query: RatesQuery, params: Mapping[str, str]) -> str:
    """The canonical form of an as-of ``/v1/rates`` request (frozen by golden tests)."""
    explicit = {
        "currency": query.currency,
        "series": query.series,
        "from": query.start,
        "to": query.end,
        "include_annotations": "true" if query.include_annotations else "false",
        "as_of_revision": str(query.revision),
    }
    if "page_token" in params:
        explicit["page_token"] = params["page_token"]
    return canonical_request("/v1/rates", explicit)


@dataclasses.dataclass(frozen=True, slots=True)
class AnnotationsQuery:
    currency: str | None
    series: str | None
    start: str | None
    end: str | None

    def matches(self, annotation: Mapping[str, object]) -> bool:
        fecha = str(annotation.get("fecha", ""))
        return (
            (self.currency is None or annotation.get("moneda") == self.currency)
            # An annotation without a series is about every series.
            and (self.series is None or annotation.get("serie") in (self.series, None))
            and (self.start is None or fecha >= self.start)
            and (self.end is None or fecha <= self.end)
        )


def annotations_query(params: Mapping[str, str]) -> AnnotationsQuery:
    """``/v1/annotations``: optional filters, validated like ``/v1/rates`` when present."""
    check_names(params, ("currency", "series", "from", "to"))
    currency = _not_empty(params, "currency") if "currency" in params else None
    series = _not_empty(params, "series") if "series" in params else None
    start = parse_date("from", params["from"]) if "from" in params else None
    end = parse_date("to", params["to"]) if "to" in params else None
    if start is not None and end is not None and end < start:
        raise InvalidParams("from must not be after to")
    check_currency_and_series(currency, series)
    return AnnotationsQuery(
        currency,
        series,
        None if start is None else start.isoformat(),
        None if end is None else end.isoformat(),
    )


def alerts_open(params: Mapping[str, str]) -> bool:
    check_names(params, ("open",))
    return parse_bool("open", params.get("open"), True)


def revisions_at(params: Mapping[str, str]) -> datetime:
    """``/v1/revisions?at=``: an instant with ``Z`` or ``±HH:MM``; a space stands for ``+``."""
    check_names(params, ("at",))
    raw = _required(params, "at").replace(" ", "+")
    try:
        if not INSTANT.fullmatch(raw):
            raise ValueError(raw)
        cut = BEYOND_MICROSECONDS.sub(r"\1", raw, count=1)
        instant = datetime.fromisoformat(cut.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParams("at must be an ISO-8601 date-time with Z or ±HH:MM") from None
    return in_utc(instant)


def in_utc(instant: datetime) -> datetime:
    """``instant`` in UTC; one that falls outside the years 1 to 9999 there is clamped to the
    bound it crossed, which resolves alike: before every revision, or after all of them."""
    try:
        return instant.astimezone(UTC)
    except OverflowError:
        if instant.year == MINYEAR:
            return datetime.min.replace(tzinfo=UTC)
        return datetime.max.replace(tzinfo=UTC)


def no_params(params: Mapping[str, str]) -> None:
    check_names(params, ())


def path_text(segment: str) -> str:
    """A path parameter as sent (still percent-encoded), decoded. One that decodes to a NUL or
    to bytes that are not UTF-8 is ``INVALID_PARAMS``, as in the query
    (docs/decisions.md#bad-requests): a bad request, not a name of the wrong form."""
    try:
        raw = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise InvalidParams("the path is not valid UTF-8 once percent-decoded") from None
    if "\x00" in raw:
        raise InvalidParams("the path holds a NUL character")
    return raw


def path_uuid(name: str, segment: str) -> str:
    """A 36-character hyphenated UUID, canonicalised to lower case; else the 422 body
    (:func:`path_text` first)."""
    raw = path_text(segment)
    lowered = raw.lower()
    if not UUID.fullmatch(lowered):
        raise PathValidation(name, raw)
    return lowered
