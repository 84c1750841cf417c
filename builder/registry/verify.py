"""``fxev registry verify``: walk the revision hash chain and every evidence blob.

Every bad blob is reported; the chain is reported at its first break (after a break, every later
hash is unverifiable by construction, so listing them would add noise, not information).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from builder.disk.blobs import BlobStore
from builder.registry.chain import GENESIS_HASH, revision_hash
from builder.registry.records import DATA_TABLES, Table
from builder.registry.store import Registry

_Group = tuple[int, list[dict[str, Any]]]


def _groups(registry: Registry, table: Table) -> Iterator[_Group]:
    cursor = registry.conn.execute(
        f"SELECT * FROM {table.name} ORDER BY {table.revision_column}, id"
    )
    rows = (dict(row) for row in cursor)
    for revision, group in itertools.groupby(rows, key=lambda row: row[table.revision_column]):
        yield revision, list(group)


def chain_break(registry: Registry) -> str | None:
    """The first break of the revision chain, described, or None when it is intact."""
    streams = {table.name: _groups(registry, table) for table in DATA_TABLES}
    pending: dict[str, _Group | None] = {name: next(it, None) for name, it in streams.items()}
    expected_prev = GENESIS_HASH
    expected_number = 1
    cursor = registry.conn.execute("SELECT * FROM revisions ORDER BY revision")
    for row in cursor:
        number = row["revision"]
        if number != expected_number:
            return f"revision {expected_number} is missing (next stored is {number})"
        for name, group in pending.items():
            if group is not None and group[0] < number:
                return f"{name} holds rows for revision {group[0]}, which has no revision record"
        if row["prev_hash"] != expected_prev:
            return f"revision {number}: prev_hash does not match revision {number - 1}'s hash"
        rows: dict[str, list[dict[str, Any]]] = {}
        for name, group in pending.items():
            if group is not None and group[0] == number:
                rows[name] = group[1]
                pending[name] = next(streams[name], None)
            else:
                rows[name] = []
        digest = revision_hash(
            row["prev_hash"], number, row["ts_commit"], row["kind"], row["summary"], rows
        )
        if digest != row["hash"]:
            return (
                f"revision {number}: stored rows hash to {digest}, the chain recorded "
                f"{row['hash']} (history was changed)"
            )
        expected_prev = row["hash"]
        expected_number = number + 1
    for name, group in pending.items():
        if group is not None:
            return f"{name} holds rows for revision {group[0]}, which was never committed"
    return None


def verify_registry(registry: Registry, blobs: BlobStore) -> list[str]:
    """Every finding: each bad or missing evidence blob, then the first chain break."""
    findings = [
        problem
        for sha256 in sorted(registry.evidence_hashes())
        if (problem := blobs.problem(sha256)) is not None
    ]
    broken = chain_break(registry)
    if broken:
        findings.append(f"chain break: {broken}")
    return findings
