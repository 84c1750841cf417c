"""Canonical rates (Decimal, half-up, exactly 3 places) and UTC timestamps
(docs/decisions.md#values)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.core.canonical import (
    canonical_rate,
    iso_date,
    parse_utc_timestamp,
    utc_timestamp,
)

DIGITS = "0123456789"


def oracle(raw: str) -> str:
    return str(Decimal(raw).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


@st.composite
def decimal_texts(draw: st.DrawFn) -> str:
    """Plain decimal text built from digit strings (never from a float): sign, 1-6 integer
    digits (leading zeros allowed), then nothing or a '.' and 1-12 decimals."""
    sign = draw(st.sampled_from(["", "-", "+"]))
    integer = draw(st.text(alphabet=DIGITS, min_size=1, max_size=6))
    decimals = draw(st.text(alphabet=DIGITS, min_size=0, max_size=12))
    return f"{sign}{integer}.{decimals}" if decimals else f"{sign}{integer}"


@given(decimal_texts())
def test_canonical_rate_equals_decimal_half_up_oracle(raw: str) -> None:
    assert canonical_rate(raw) == oracle(raw)


@given(decimal_texts())
def test_canonical_rate_always_has_exactly_three_decimals(raw: str) -> None:
    integer, _, decimals = canonical_rate(raw).lstrip("-").partition(".")
    assert integer.isdigit()
    assert len(decimals) == 3
    assert decimals.isdigit()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("3.3595", "3.360", id="half-rounds-up-carrying"),
        pytest.param("3.3585", "3.359", id="half-rounds-up-not-to-even"),
        pytest.param("2.0005", "2.001", id="half-above-even-digit"),
        pytest.param("3.3594999", "3.359", id="just-below-half-rounds-down"),
        pytest.param("3.36", "3.360", id="two-decimals-padded"),
        pytest.param("3.4", "3.400", id="one-decimal-padded"),
        pytest.param("3", "3.000", id="integer-padded"),
        pytest.param("3.354", "3.354", id="three-decimals-unchanged"),
        pytest.param("3.35914285714286", "3.359", id="many-decimals"),
        pytest.param("9.9995", "10.000", id="carry-into-integer"),
    ],
)
def test_canonical_rate_rounds_half_up_to_three_places(raw: str, expected: str) -> None:
    assert canonical_rate(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("3,354", id="decimal-comma"),
        pytest.param("abc", id="letters"),
        pytest.param("", id="empty"),
        pytest.param("1e3", id="exponent"),
        pytest.param("NaN", id="nan"),
        pytest.param("Infinity", id="infinity"),
        pytest.param(" 3.354", id="leading-space"),
        pytest.param("3.354\n", id="trailing-newline"),
        pytest.param("3.", id="point-without-decimals"),
        pytest.param(".5", id="point-without-integer"),
        pytest.param("3.3.5", id="two-points"),
    ],
)
def test_canonical_rate_rejects_non_decimal_text(raw: str) -> None:
    with pytest.raises(ValueError, match="not a plain decimal number"):
        canonical_rate(raw)


def test_utc_timestamp_has_microseconds_and_z() -> None:
    instant = datetime(2026, 9, 20, 8, 5, tzinfo=timezone(timedelta(hours=-5)))
    assert utc_timestamp(instant) == "2026-09-20T13:05:00.000000Z"


def test_utc_timestamp_pads_the_year_to_four_digits() -> None:
    # Timestamps are compared as text (revision lookup): "999-..." sorted after "2026-...".
    assert utc_timestamp(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000000Z"
    assert utc_timestamp(datetime.min.replace(tzinfo=UTC)) == "0001-01-01T00:00:00.000000Z"


@given(
    st.datetimes(
        min_value=datetime(2000, 1, 2),  # noqa: DTZ001 (hypothesis bounds are naive)
        max_value=datetime(2099, 12, 30),  # noqa: DTZ001
        timezones=st.sampled_from(
            [UTC, timezone(timedelta(hours=-5)), timezone(timedelta(hours=5, minutes=30))]
        ),
    )
)
def test_timestamp_round_trips_to_the_same_instant(instant: datetime) -> None:
    text = utc_timestamp(instant)
    parsed = parse_utc_timestamp(text)
    assert parsed == instant
    assert parsed.utcoffset() == timedelta(0)
    assert utc_timestamp(parsed) == text


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_timestamp_of_its_own_form_is_read_as_strptime_reads_it(instant: datetime) -> None:
    text = utc_timestamp(instant)
    expected = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert parse_utc_timestamp(text) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "2026-02-30T13:05:00.000000Z",  # of the form, not a day
        "2026-09-20T24:05:00.000000Z",
        "2026-09-20T24:00:00.000000Z",  # strptime refuses it; Python 3.14's fromisoformat won't
        "2026-09-20T13:60:00.000000Z",
        "2026-09-20 13:05:00.000000Z",  # not of the form: strptime refuses it too
        "2026-09-20T13:05:00.000000",
        "2026-09-20T13:05:00.000000+00:00",
        "",
    ],
)
def test_a_text_that_is_no_timestamp_is_a_value_error(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_utc_timestamp(raw)


def test_other_widths_are_still_read_as_before() -> None:
    # strptime's %f takes 1 to 6 digits; nothing fxev writes has fewer than 6.
    assert parse_utc_timestamp("2026-09-20T13:05:00.5Z") == datetime(
        2026, 9, 20, 13, 5, 0, 500_000, tzinfo=UTC
    )


def test_its_own_form_is_read_without_strptime() -> None:
    """strptime compiles its pattern on a process's first call (about 7 ms): a gateway
    worker's first request with a token waited for it (docs/performance.md#first-answer)."""
    code = (
        "import sys; from builder.core.canonical import parse_utc_timestamp;"
        "parse_utc_timestamp('2026-09-20T13:05:00.000000Z'); print('_strptime' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "False"


def test_utc_timestamp_rejects_naive_datetime() -> None:
    with pytest.raises(ValueError, match="naive"):
        utc_timestamp(datetime(2026, 9, 20, 13, 5))  # noqa: DTZ001 (the point of the test)


@pytest.mark.parametrize("raw", ["20260901", "2026-W36-2", "2026-9-1", " 2026-09-01", "2026-09-31"])
def test_iso_date_takes_only_yyyy_mm_dd(raw: str) -> None:
    """Python 3.11's ``date.fromisoformat`` alone takes the basic and week forms."""
    with pytest.raises(ValueError):
        iso_date(raw)
    assert iso_date("2026-09-01") == date(2026, 9, 1)
