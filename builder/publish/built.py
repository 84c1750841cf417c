"""The tree at a revision the build wrote, before it is published: what the explorer draws from.

The verified reader refuses a revision the pointer does not name yet; the build trusts its own
records above the published revision and verifies everything below it.
"""

from __future__ import annotations

import os
from typing import Any

from builder.publish.writer import TreeWriter
from builder.tree.format import Node
from builder.tree.revision import EvidenceMeta, RevisionRecord, RevisionRoot

RECORDS_KEPT = 8  # decoded records of unpublished revisions kept at once


class BuiltTree:
    """Reads of the tree at a revision the build wrote, published or not yet: records up to the
    published revision are verified by the reader, newer ones are the builder's own bytes."""

    def __init__(self, tree: TreeWriter) -> None:
        self.tree = tree
        self.published = tree.published_revision() or 0
        self._records: dict[int, RevisionRecord] = {}

    def record(self, revision: int) -> RevisionRecord:
        if revision <= self.published:
            return self.tree.record(revision)
        found = self._records.get(revision)
        if found is None:
            if len(self._records) >= RECORDS_KEPT:
                self._records.pop(next(iter(self._records)))
            found = RevisionRecord.decode(self.tree.record_bytes(revision))
            self._records[revision] = found
        return found

    def root(self, revision: int) -> RevisionRoot:
        return self.record(revision).root

    def coverage(self, revision: int) -> list[dict[str, Any]]:
        return self.tree.get_json(self.root(revision).coverage, [])

    def series_top(self, serie: str, revision: int) -> Node | None:
        series = self.root(revision).series.get(serie)
        return None if series is None or series.root is None else self.tree.node(series.root)

    def year_prefixes(self, year_hash: str) -> list[bytes]:
        months = self.tree.node(year_hash)
        return [prefix for chunk in months.hashes for prefix in self.tree.chunk(chunk).prefixes]

    def latest(self, serie: str, revision: int) -> bytes | None:
        top = self.series_top(serie, revision)
        if top is None or not top.keys:
            return None
        return self.tree.chunk(self.tree.node(top.hashes[-1]).hashes[-1]).prefixes[-1]

    def evidence_meta(self, evidence_id: str) -> EvidenceMeta | None:
        try:
            written = os.readlink(self.tree.evidence_path(evidence_id))
        except FileNotFoundError:
            return None
        return self.record(int(written)).evidence.get(evidence_id)
