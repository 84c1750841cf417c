"""The log's leaf: a canonical record of one registry revision and every row it wrote.

Leaf ``N - 1`` is revision ``N``: the canonical JSON (sorted keys, no spaces, UTF-8) of ::

    {"fxev_leaf": 1, "revision": N, "ts_commit": "...", "chain": "sha256:<hex>",
     "rows": {"<table>": ["<hex>", ...], ...}}

``chain`` is the registry's chained hash of the revision; ``rows`` holds, per table the revision
wrote into, the sorted SHA-256 (bare hex) of each row as :data:`ROW_RULES` says, so that what the
API serves can be hashed again by a consumer and found in the leaf. A revision that wrote too
many rows for a leaf of at most 65,535 bytes (an import) has ``"rows_sha256": "<hex>"`` instead:
the SHA-256 of the same ``rows`` object's canonical JSON, published in the tree beside the tiles
(``log/rows/<N>``). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

FORMAT = 1
MAX_LEAF = 0xFFFF

# How each table's row is hashed: what the consumer has in hand to hash it again.
ROW_RULES: dict[str, str] = {
    "observations": "the `observacion` object of /v1/observations/{id}",
    "events": "an item of `eventos` of /v1/observations/{id}",
    "evidence": "the evidence bytes themselves (/v1/evidence/{id}, `X-Sha256`)",
    "cotejos": "an item of `cotejos` of /v1/observations/{id}",
    "annotations": "an item of /v1/annotations",
    "executions": "the registry row (not served)",
    "manifest_entries": "the registry row (not served)",
    "series_switches": "the registry row (not served)",
}


class LeafError(ValueError):
    """Bytes that are not a leaf of this format."""


def canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def row_hash(record: Mapping[str, Any]) -> str:
    """The bare hex SHA-256 of a record's canonical JSON."""
    return hashlib.sha256(canonical(dict(record))).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class Leaf:
    revision: int
    ts_commit: str
    chain: str
    rows: Mapping[str, Sequence[str]]  # table -> sorted hex digests

    def rows_bytes(self) -> bytes:
        return canonical({table: sorted(hashes) for table, hashes in self.rows.items() if hashes})

    def encode(self) -> tuple[bytes, bytes | None]:
        """(the leaf, the rows list published beside it when the leaf cannot hold them)."""
        rows = self.rows_bytes()
        head = {"fxev_leaf": FORMAT, "revision": self.revision, "ts_commit": self.ts_commit}
        head["chain"] = self.chain
        inline = canonical(head | {"rows": orjson.loads(rows)})
        if len(inline) <= MAX_LEAF:
            return inline, None
        return canonical(head | {"rows_sha256": hashlib.sha256(rows).hexdigest()}), rows

    def has(self, table: str, digest: str) -> bool:
        return digest in self.rows.get(table, ())


def decode(data: bytes, rows_list: bytes | None = None) -> Leaf:
    """A leaf from its bytes (and, for a leaf naming ``rows_sha256``, the list it names)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise LeafError("the leaf is not JSON") from None
    if not isinstance(value, dict) or value.get("fxev_leaf") != FORMAT:
        raise LeafError("the leaf is not an fxev leaf of format 1")
    if canonical(value) != data:
        raise LeafError("the leaf is not in canonical form")
    rows = value.get("rows")
    if rows is None:
        if rows_list is None:
            raise LeafError("the leaf names a rows list that was not given")
        if hashlib.sha256(rows_list).hexdigest() != value.get("rows_sha256"):
            raise LeafError("the rows list does not match the leaf's rows_sha256")
        try:
            rows = orjson.loads(rows_list)
        except orjson.JSONDecodeError:
            raise LeafError("the rows list the leaf names is not JSON") from None
    try:
        return Leaf(
            int(value["revision"]),
            str(value["ts_commit"]),
            str(value["chain"]),
            {str(t): tuple(str(h) for h in hashes) for t, hashes in rows.items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        raise LeafError("the leaf lacks a field of format 1") from None


def needs_rows_list(data: bytes) -> bool:
    """Whether a leaf's rows are published beside it (``log/rows/<N>``)."""
    return b'"rows_sha256":' in data and b'"rows":' not in data
