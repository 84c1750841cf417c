"""The revision hash chain: a pure function of the previous hash and what a revision wrote.

Each revision's hash covers the previous revision's hash, the revision row itself and every row
that revision inserted in every data table (ordered by id), encoded canonically. Changing any
stored row, removing one or adding one later breaks the chain at that revision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

GENESIS_HASH = "sha256:" + "0" * 64


def revision_hash(
    prev_hash: str,
    revision: int,
    ts_commit: str,
    kind: str,
    summary_json: str,
    rows_by_table: Mapping[str, Sequence[Mapping[str, Any]]],
) -> str:
    """``sha256:<hex>`` of the canonical encoding of one revision, chained to ``prev_hash``."""
    payload = {
        "prev_hash": prev_hash,
        "revision": revision,
        "ts_commit": ts_commit,
        "kind": kind,
        "summary": summary_json,
        "rows": {name: [dict(row) for row in rows] for name, rows in rows_by_table.items()},
    }
    encoded = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(encoded).hexdigest()
