"""Pure body assembly: stored prefixes + the envelope, concatenated, never re-encoded.

A *prefix* is a JSON object without its closing brace. ``finish`` closes it with the common
envelope (docs/api.md: ``dataset_revision``, ``request_id``, ``schema_version``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from builder.core.vocabulary import SCHEMA_VERSION
from builder.core.wire import prefix_of, splice_item


def finish(prefix: bytes, revision: int, request_id: str) -> bytes:
    """Close ``prefix`` with the envelope fields, in the order the stored bodies expect."""
    tail = orjson.dumps(
        {"dataset_revision": revision, "request_id": request_id, "schema_version": SCHEMA_VERSION}
    )[1:]
    return prefix + (tail if prefix == b"{" else b"," + tail)


def finish_around_request_id(prefix: bytes, revision: int) -> tuple[bytes, bytes]:
    """``finish`` cut where the request id goes: ``head + request_id + tail`` is the same bytes as
    ``finish(prefix, revision, request_id)`` for a UUID (nothing in it to escape), so a body
    whose only fresh part is its ``request_id`` is assembled without encoding anything."""
    marker = "00000000-0000-0000-0000-000000000000"
    head, _, tail = finish(prefix, revision, marker).rpartition(marker.encode())
    return head, tail


def items_array(items: Iterable[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"


def rates_body(
    items: Sequence[tuple[bytes, str | None]],
    total: int,
    next_page_token: str | None,
    annotations: list[dict[str, Any]] | None,
    revision: int,
    request_id: str,
) -> bytes:
    """``/v1/rates``: ``items`` are (stored item prefix, ``superseded_por``)."""
    prefix = (
        b'{"items":'
        + items_array(splice_item(p, s) for p, s in items)
        + b',"total":'
        + orjson.dumps(total)
        + b',"next_page_token":'
        + orjson.dumps(next_page_token)
    )
    if annotations is not None:
        prefix += b',"annotations":' + orjson.dumps(annotations)
    return finish(prefix, revision, request_id)


def latest_prefix(
    item_prefix: bytes, superseded_por: str | None, frescura: Mapping[str, Any]
) -> bytes:
    """``/v1/rates/latest`` before its envelope: the item, then ``frescura``."""
    item = splice_item(item_prefix, superseded_por)[:-1]
    return item + b',"frescura":' + orjson.dumps(frescura)


def listing_body(items: Sequence[Any], revision: int, request_id: str) -> bytes:
    return finish(prefix_of({"items": list(items), "total": len(items)}), revision, request_id)


def object_body(value: Mapping[str, Any], revision: int, request_id: str) -> bytes:
    return finish(prefix_of(value), revision, request_id)
