"""The gateway's fresh ids and ledger timestamps: what uuid4 and utc_timestamp would give."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from builder.core.canonical import utc_timestamp
from gateway.http.stamps import RequestIds, utc_text_of_us, uuid4_text

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32))
def test_any_32_hex_digits_make_a_version_4_rfc_4122_uuid(hex32: str) -> None:
    text = uuid4_text(hex32)
    parsed = uuid.UUID(text)
    assert str(parsed) == text  # canonical: lower case, hyphenated
    assert parsed.version == 4
    assert parsed.variant == uuid.RFC_4122
    kept = text.replace("-", "")
    assert kept[:12] + kept[13:16] + kept[17:] == hex32[:12] + hex32[13:16] + hex32[17:]


def test_request_ids_are_distinct_across_many_draws() -> None:
    ids = RequestIds(per_draw=8)
    drawn = [ids() for _ in range(5000)]
    assert len(set(drawn)) == len(drawn)
    assert all(uuid.UUID(text).version == 4 for text in drawn)


@given(st.integers(min_value=0, max_value=(2**31) * 1_000_000))
def test_ledger_timestamps_read_like_utc_timestamp(epoch_us: int) -> None:
    instant = EPOCH + timedelta(microseconds=epoch_us)
    assert utc_text_of_us(epoch_us) == utc_timestamp(instant)
