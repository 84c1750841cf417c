"""Revision records and their links: pure."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder.tree.revision import (
    EvidenceMeta,
    RevisionRecord,
    RevisionRoot,
    SeriesRoot,
    link_targets,
    next_hop,
)

META = {
    "id": "ev",
    "sha256": "3" * 64,
    "size": 5,
    "content_type": "text/plain",
    "capturado_en": "2026-09-21T20:00:00Z",
    "identidad_consulta": "q",
    "revision": 7,
}


def test_link_targets_are_the_previous_record_and_the_last_multiples_of_powers_of_four() -> None:
    assert link_targets(1) == []
    assert link_targets(2) == [1]
    assert link_targets(5) == [4]
    assert link_targets(100) == [99, 96, 64]
    assert link_targets(100_000) == [99_999, 99_996, 99_984, 99_968, 99_840, 99_328, 98_304, 65_536]


@given(st.integers(min_value=3, max_value=10**7))
def test_every_link_but_the_previous_one_is_a_link_of_the_previous_record(revision: int) -> None:
    assert set(link_targets(revision)) - {revision - 1} <= set(link_targets(revision - 1))


def format_base4(number: int) -> str:
    text = ""
    while number:
        number, digit = divmod(number, 4)
        text = str(digit) + text
    return text


@given(st.integers(min_value=2, max_value=300_000), st.data())
def test_hopping_down_reaches_any_earlier_record_in_few_hops(
    current: int, data: st.DataObject
) -> None:
    target = data.draw(st.integers(min_value=1, max_value=current - 1))
    digits = len(format_base4(current))
    hops = 0
    while current != target:
        linked = next_hop(current, target)
        assert linked in link_targets(current)
        assert target <= linked < current
        current = linked
        hops += 1
    assert hops <= 3 * digits  # at most three hops per base-4 digit


def test_a_record_round_trips_and_keeps_detail_bytes_as_they_are() -> None:
    root = RevisionRoot(
        7,
        "2026-09-21T20:00:00.000000Z",
        ("publicado",),
        {"publicado": SeriesRoot("ab", 3)},
        None,
        "cd",
        "ef",
    )
    details = {"b-id": b'{"observacion":{"compra":"3.370"', "a-id": b'{"x":"\\n"'}
    evidence = {"ev": EvidenceMeta.from_json(META)}
    record = RevisionRecord(root, {6: "1" * 64, 4: "2" * 64}, evidence, details)
    encoded = record.encode()
    assert RevisionRecord.decode(encoded) == record
    header = orjson.loads(encoded.split(b"\n", 1)[0])
    assert header["evidence"]["ev"] == META  # the fields as earlier builds wrote them
    assert encoded.endswith(details["a-id"] + details["b-id"])


@pytest.mark.parametrize(
    "fields",
    [
        {"sha256": "3" * 64},  # fields missing
        {**META, "extra": 1},
        {**META, "sha256": "not hex"},
    ],
)
def test_evidence_metadata_that_is_not_a_records_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="evidence"):
        EvidenceMeta.from_json(fields)
