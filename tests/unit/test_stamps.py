"""The gateway's fresh ids and ledger timestamps: what uuid4 and utc_timestamp would give."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from builder.canonical import utc_timestamp
from gateway.stamps import RequestIds, utc_now_text, utc_text_of_us, uuid4_text

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


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    ids = RequestIds(per_draw=64)
    ids()  # the parent holds a buffer of ids not handed out yet
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send one id and leave
        os.close(read_end)
        os.write(write_end, ids().encode())
        os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 64).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert child != ids()


@given(st.integers(min_value=0, max_value=(2**31) * 1_000_000))
def test_ledger_timestamps_read_like_utc_timestamp(epoch_us: int) -> None:
    instant = EPOCH + timedelta(microseconds=epoch_us)
    assert utc_text_of_us(epoch_us) == utc_timestamp(instant)


def test_now_is_the_real_clock() -> None:
    before = utc_timestamp(datetime.now(UTC))
    assert before <= utc_now_text() <= utc_timestamp(datetime.now(UTC))
