"""JSON *prefixes*: the byte format the builder stores and the gateway finishes.

A prefix is a JSON object's bytes without the closing brace, so the gateway appends what only it
knows (the envelope; ``superseded_por`` from the published map) without re-encoding anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

ITEM_TAIL = b',"superseded_por":'


def prefix_of(value: Mapping[str, Any]) -> bytes:
    """A JSON object's bytes without the closing brace."""
    return orjson.dumps(value)[:-1]


def splice_item(prefix: bytes, superseded_por: str | None) -> bytes:
    value = b"null" if superseded_por is None else b'"' + superseded_por.encode() + b'"'
    return prefix + value + b"}"
