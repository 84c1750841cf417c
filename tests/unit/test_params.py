"""Pure gateway functions: validation, canonical form, page tokens, envelope, freshness."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime

import orjson
import pytest

from gateway.api import envelope, pagetoken, params
from gateway.api.freshness import freshness
from gateway.errors import (
    InvalidParams,
    PathValidation,
    UnsupportedCurrency,
    UnsupportedSeries,
)

SECRET = b"k" * 32
BASE = {"currency": "USD", "series": "publicado", "from": "2026-09-01", "to": "2026-09-30"}
NAMESPACE = uuid.UUID("6f1d3c2e-5b7a-4e0f-9a61-2f4c8d9e7b10")


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (date(2021, 9, 21), date(2026, 9, 21)),
        (date(2024, 2, 29), date(2029, 2, 28)),
        (date(2023, 3, 1), date(2028, 3, 1)),
    ],
)
def test_latest_allowed_end_is_same_day_five_years_later(start: date, end: date) -> None:
    assert params.latest_allowed_end(start) == end


def test_repeated_parameter_is_invalid() -> None:
    with pytest.raises(InvalidParams):
        params.parse_query("currency=USD&currency=USD")


def test_blank_values_are_kept_so_empty_is_not_missing() -> None:
    assert params.parse_query("currency=&series=x") == {"currency": "", "series": "x"}


def test_rates_query_checks_form_before_currency_and_currency_before_series() -> None:
    with pytest.raises(InvalidParams):
        params.rates_query(BASE | {"currency": "EUR", "to": "2026-13-01"}, 5, SECRET)
    with pytest.raises(UnsupportedCurrency):
        params.rates_query(BASE | {"currency": "EUR", "series": "x"}, 5, SECRET)
    with pytest.raises(UnsupportedSeries):
        params.rates_query(BASE | {"series": "x"}, 5, SECRET)


@pytest.mark.parametrize("raw", ["0", "01", "6", "1.0", " 1", "", "-2"])
def test_as_of_revision_outside_1_to_published_is_invalid(raw: str) -> None:
    with pytest.raises(InvalidParams):
        params.rates_query(BASE | {"as_of_revision": raw}, 5, SECRET)


def test_rates_query_defaults_to_published_revision_and_first_page() -> None:
    query = params.rates_query(BASE, 5, SECRET)
    assert (query.revision, query.offset, query.as_of_revision) == (5, 0, None)
    assert query.include_annotations is False


def test_canonical_request_is_frozen() -> None:
    given = BASE | {"as_of_revision": "3", "from": "2026-09-15"}
    query = params.rates_query(given, 5, SECRET)
    canonical = params.rates_canonical_request(query, given)
    assert canonical == (
        "/v1/rates?as_of_revision=3&currency=USD&from=2026-09-15"
        "&include_annotations=false&series=publicado&to=2026-09-30"
    )
    assert str(uuid.uuid5(NAMESPACE, canonical)) == "a01168a6-2b9c-5666-acad-943db7d15841"


def test_canonical_request_normalises_percent_encoding() -> None:
    one = params.canonical_request("/p", params.parse_query("a=%55SD&b=x%20y"))
    two = params.canonical_request("/p", params.parse_query("b=x+y&a=USD"))
    assert one == two == "/p?a=USD&b=x%20y"


def test_page_token_round_trips_and_binds_the_query() -> None:
    token = pagetoken.sign(SECRET, 4, "/v1/rates?q", 366)
    assert token == pagetoken.sign(SECRET, 4, "/v1/rates?q", 366)
    assert pagetoken.verify(SECRET, token, "/v1/rates?q") == pagetoken.PageCursor(4, 366)
    with pytest.raises(pagetoken.PageTokenError):
        pagetoken.verify(SECRET, token, "/v1/rates?other")
    with pytest.raises(pagetoken.PageTokenError):
        pagetoken.verify(b"x" * 32, token, "/v1/rates?q")
    with pytest.raises(pagetoken.PageTokenError):
        pagetoken.verify(SECRET, token.replace("4.", "3.", 1), "/v1/rates?q")


def test_page_token_fixes_revision_and_offset_in_rates_query() -> None:
    first = params.rates_query(BASE, 5, SECRET)
    token = pagetoken.sign(SECRET, 4, first.query_key, 366)
    query = params.rates_query(BASE | {"page_token": token}, 5, SECRET)
    assert (query.revision, query.offset) == (4, 366)
    with pytest.raises(InvalidParams):
        params.rates_query(BASE | {"page_token": token, "as_of_revision": "5"}, 5, SECRET)


def test_a_page_token_of_a_revision_not_published_yet_is_invalid_params() -> None:
    """A token made for a later revision (by a gateway whose mirror is ahead, or of a revision
    written but not pointed at yet) never reads past the published revision here."""
    first = params.rates_query(BASE, 5, SECRET)
    current = pagetoken.sign(SECRET, 5, first.query_key, 366)
    assert params.rates_query(BASE | {"page_token": current}, 5, SECRET).revision == 5
    ahead = pagetoken.sign(SECRET, 6, first.query_key, 366)
    with pytest.raises(InvalidParams):
        params.rates_query(BASE | {"page_token": ahead}, 5, SECRET)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-09-21T15:00:00 05:00", datetime(2026, 9, 21, 10, tzinfo=UTC)),
        ("2026-09-21T15:00:00-05:00", datetime(2026, 9, 21, 20, tzinfo=UTC)),
        ("2026-09-21T15:00Z", datetime(2026, 9, 21, 15, tzinfo=UTC)),
        ("2026-09-21T15:00:00.25Z", datetime(2026, 9, 21, 15, 0, 0, 250000, tzinfo=UTC)),
        # Past the microsecond, cut: .NET's 7 digits, Java's and Go's 9.
        ("2026-09-21T15:00:00.9999999Z", datetime(2026, 9, 21, 15, 0, 0, 999999, tzinfo=UTC)),
        (
            "2026-09-21T15:00:00.123456789+00:00",
            datetime(2026, 9, 21, 15, 0, 0, 123456, tzinfo=UTC),
        ),
    ],
)
def test_revisions_at_reads_offsets_and_a_space_as_plus(raw: str, expected: datetime) -> None:
    assert params.revisions_at({"at": raw}) == expected


@pytest.mark.parametrize("raw", ["2026-09-21T15:00:00", "2026-09-21", "yesterday", ""])
def test_revisions_at_without_offset_is_invalid(raw: str) -> None:
    with pytest.raises(InvalidParams):
        params.revisions_at({"at": raw})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0001-01-01T00:00:01+01:01", datetime.min.replace(tzinfo=UTC)),
        ("9999-12-31T23:59:59-01:00", datetime.max.replace(tzinfo=UTC)),
    ],
)
def test_revisions_at_beyond_the_representable_years_is_clamped(
    raw: str, expected: datetime
) -> None:
    assert params.revisions_at({"at": raw}) == expected


def test_path_uuid_lowercases_and_rejects_other_shapes() -> None:
    upper = "AE837D67-1520-44F3-B959-0020D7590BB0"
    assert params.path_uuid("obs_id", upper) == upper.lower()
    with pytest.raises(PathValidation) as caught:
        params.path_uuid("ev_id", "%7Bx%7D")
    body = orjson.loads(caught.value.body("rid"))
    assert body == {
        "detail": [
            {
                "type": "uuid_parsing",
                "loc": ["path", "ev_id"],
                "msg": "Input should be a valid UUID",
                "input": "{x}",
            }
        ]
    }


@pytest.mark.parametrize("name", ["currency", "series"])
def test_an_optional_filter_given_empty_is_refused_as_empty(name: str) -> None:
    with pytest.raises(InvalidParams, match=f"parameter '{name}' may not be empty"):
        params.annotations_query({name: ""})


def test_annotations_query_filters_only_what_is_given() -> None:
    wanted = params.annotations_query({"from": "2026-09-01"})
    assert wanted.matches({"fecha": "2026-09-02", "moneda": "USD", "serie": "cierre"})
    assert not wanted.matches({"fecha": "2026-08-31", "moneda": "USD", "serie": "cierre"})


def test_envelope_closes_a_prefix_without_re_encoding() -> None:
    body = envelope.finish(b'{"a":1.10', 7, "rid")
    assert body == b'{"a":1.10,"dataset_revision":7,"request_id":"rid","schema_version":"1.0"}'
    assert envelope.finish(b"{", 1, "r") == (
        b'{"dataset_revision":1,"request_id":"r","schema_version":"1.0"}'
    )


def test_rates_body_splices_superseded_por() -> None:
    prefix = b'{"observacion_id":"a","superseded_por":'
    body = orjson.loads(envelope.rates_body([(prefix, "b"), (prefix, None)], 2, None, None, 3, "r"))
    assert [item["superseded_por"] for item in body["items"]] == ["b", None]
    assert body["total"] == 2
    assert "annotations" not in body


def test_frescura_saturday_with_fridays_value_is_late_by_zero_days() -> None:
    block = freshness("publicado", "2026-09-18", date(2026, 9, 19)).to_json()
    assert (block["estado"], block["n_dias_habiles"]) == ("atrasada", 0)


def test_frescura_cierre_expects_the_day_before_the_last_business_day() -> None:
    block = freshness("cierre", "2026-09-17", date(2026, 9, 20)).to_json()
    assert block["fecha_esperada"] == "2026-09-17"
    assert block["estado"] == "al_dia"
