"""Bad input is a 400, never a 500 (docs/decisions.md#bad-requests): the pure parts.

Parameters: dates up to the end of year 9999, integers of any length, a query string that is not
UTF-8 or holds a NUL. The HTTP layer: a head with a bare LF, a target httptools refuses, and
Sanic's refusals mapped to the API's errors.
"""

from __future__ import annotations

from datetime import date

import pytest
from sanic import exceptions as sanic_exceptions

from gateway import errors
from gateway.api import params
from gateway.http.head import has_bare_lf
from gateway.http.sending import as_api_error
from gateway.server.http1 import printable_target

PUBLISHED = 42
SECRET = b"k" * 32
RATES = {"currency": "USD", "series": "publicado", "from": "2026-09-01", "to": "2026-09-30"}


def rates(**given: str) -> params.RatesQuery:
    return params.rates_query(RATES | given, PUBLISHED, SECRET)


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("9995-01-01", "9995-01-02"),
        ("9995-01-01", "9999-12-31"),
        ("9996-02-29", "9999-12-31"),
        ("9999-12-31", "9999-12-31"),
        ("0001-01-01", "0005-01-01"),
    ],
)
def test_a_range_near_the_ends_of_the_calendar_is_valid(start: str, end: str) -> None:
    query = rates(**{"from": start, "to": end})
    assert (query.start, query.end) == (start, end)
    assert list(query.years()) == list(range(int(start[:4]), int(end[:4]) + 1))


def test_the_five_year_bound_past_9999_is_the_last_date() -> None:
    assert params.latest_allowed_end(date(9995, 1, 1)) == date.max
    assert params.latest_allowed_end(date(9994, 12, 31)) == date(9999, 12, 31)
    assert params.latest_allowed_end(date(9994, 2, 28)) == date(9999, 2, 28)
    with pytest.raises(errors.InvalidParams, match="5 years"):
        rates(**{"from": "0001-01-01", "to": "0006-01-02"})


@pytest.mark.parametrize("raw", ["0000-01-01", "10000-01-01", "-001-01-01", "9999-12-32"])
def test_dates_outside_the_years_1_to_9999_are_invalid(raw: str) -> None:
    with pytest.raises(errors.InvalidParams):
        rates(**{"from": raw})
    with pytest.raises(errors.InvalidParams):
        params.annotations_query({"to": raw})


@pytest.mark.parametrize("digits", [3, 20, 4300, 4301, 5000, 100_000])
def test_an_integer_of_any_length_is_refused_without_converting_it(digits: int) -> None:
    with pytest.raises(errors.InvalidParams, match="as_of_revision"):
        rates(as_of_revision="1" * digits)
    assert rates(as_of_revision="42").as_of_revision == 42


@pytest.mark.parametrize(
    "query",
    ["x=%FF", "%C3%28=1", "currency=US%FFD", "from=%ED%A0%80", "x=%00", "%00=1", "currency=US%00D"],
)
def test_a_query_that_decodes_to_a_nul_or_to_no_utf8_is_invalid(query: str) -> None:
    with pytest.raises(errors.InvalidParams):
        params.parse_query(query)


def test_a_query_in_utf8_is_decoded() -> None:
    assert params.parse_query("a=%C3%B1&b=&c=x+y") == {"a": "ñ", "b": "", "c": "x y"}


@pytest.mark.parametrize(
    ("head", "bare"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n", False),
        (b"GET / HTTP/1.1\r\nHost: x\r", False),  # the LF may be on its way
        (b"GET / HTTP/1.1", False),
        (b"GET / HTTP/1.1\nHost: x\n\n", True),
        (b"GET / HTTP/1.1\r\nHost: x\n", True),
        (b"GET / HTTP/1.1\r\n\n", True),
    ],
)
def test_a_bare_lf_is_found_wherever_it_is(head: bytes, bare: bool) -> None:
    assert has_bare_lf(bytearray(head)) is bare


def test_a_target_is_made_printable_byte_by_byte() -> None:
    assert printable_target("/v1/cover\x00age") == "/v1/cover%00age"
    assert printable_target("/a b") == "/a%20b"
    raw = b"/v1/\xff\xc3\xb1?x=1".decode(errors="surrogateescape")
    assert printable_target(raw) == "/v1/%FF%C3%B1?x=1"
    assert printable_target("/v1/coverage?a=%00") == "/v1/coverage?a=%00"


@pytest.mark.parametrize(
    ("exception", "status", "code"),
    [
        (
            sanic_exceptions.PayloadTooLarge("Request header exceeds the size limit"),
            400,
            "INVALID_PARAMS",
        ),
        (sanic_exceptions.URITooLong("URL exceeds the maximum size"), 400, "INVALID_PARAMS"),
        (sanic_exceptions.BadRequest("Bad URL: /\x00"), 400, "INVALID_PARAMS"),
        (sanic_exceptions.ExpectationFailed("Unknown Expect: x"), 400, "INVALID_PARAMS"),
        (sanic_exceptions.RequestTimeout("Request Timeout"), 408, "REQUEST_TIMEOUT"),
        (sanic_exceptions.ServiceUnavailable("Response Timeout"), 503, "INTERNAL"),
        (sanic_exceptions.NotFound("x"), 404, "NOT_FOUND"),
        (sanic_exceptions.MethodNotAllowed("x", "OPTIONS", ["GET"]), 405, "METHOD_NOT_ALLOWED"),
        (sanic_exceptions.ServerError("x"), 500, "INTERNAL"),
        (ValueError("year 10000 is out of range"), 500, "INTERNAL"),
    ],
)
def test_sanics_refusals_are_the_apis_errors(exception: Exception, status: int, code: str) -> None:
    error = as_api_error(exception)
    assert (error.status, error.code) == (status, code)
    assert error.retryable is (status in (408, 500, 503))
    assert "\x00" not in error.message and "/" not in error.message  # no echo of the request
