"""Body assembly cut around the request id: the same bytes as the whole envelope."""

from __future__ import annotations

import uuid

import pytest

from gateway.api.envelope import finish, finish_around_request_id, prefix_of


@pytest.mark.parametrize(
    "prefix",
    [b"{", prefix_of({"fecha": "2026-09-21", "venta": "3.362"}), prefix_of({"items": []})],
)
def test_head_request_id_tail_is_the_finished_body(prefix: bytes) -> None:
    head, tail = finish_around_request_id(prefix, 6)
    for _ in range(5):
        request_id = str(uuid.uuid4())
        assert head + request_id.encode() + tail == finish(prefix, 6, request_id)


def test_a_prefix_holding_the_placeholder_uuid_is_still_cut_at_the_request_id() -> None:
    prefix = prefix_of({"id": "00000000-0000-0000-0000-000000000000"})
    head, tail = finish_around_request_id(prefix, 1)
    request_id = str(uuid.uuid4())
    assert head + request_id.encode() + tail == finish(prefix, 1, request_id)
