"""The tree writer: a ``TreeReader`` that also writes objects, records, markers and the pointer.

Every file goes through ``builder.disk.durable`` (temporary file in ``staging/``, fsync, rename,
fsync of the folder), and the pointer is switched last, by an atomic rename. The pointer names
the registry the published record was rendered from (``registry_id``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from builder.core.errors import Conflict
from builder.disk.blobs import BlobStore
from builder.disk.durable import link_durably, mark_durably, replace_durably, write_once
from builder.publish.revlog import RevisionLogWriter
from builder.tree import layout
from builder.tree.reader import TreeReader
from builder.tree.revision import Pointer, RevisionRecord, RevisionRoot, link_targets


class TreeWriter(TreeReader):
    def __init__(self, site: Path, cache_size: int = 4096) -> None:
        super().__init__(site, cache_size)
        self.staging = layout.staging_dir(site)
        self.objects = BlobStore(site / layout.OBJECTS, staging=self.staging)
        self._written: dict[int, tuple[str, dict[int, str]]] = {}  # (SHA-256, links) by revision

    def forget(self) -> None:
        super().forget()
        self.log = RevisionLogWriter(self.site / layout.REVISIONS)

    def owner(self) -> tuple[bool, str | None]:
        """(whether the site holds a tree, the id of the registry it was rendered from). The
        pointer names it; before the first publish, the first record a killed build wrote does.
        A tree built before registry ids names none (None)."""
        pointer = self.pointer()
        if pointer is not None:
            return True, pointer.registry_id
        if self.has_root(1):
            return True, RevisionRecord.decode(self.record_bytes(1)).registry_id
        return False, None

    def put_json(self, value: Any) -> str:
        return self.objects.put(orjson.dumps(value))

    def built_root(self, revision: int) -> RevisionRoot:
        """The root of a revision a killed build wrote but did not publish (nothing links to it
        yet, so it cannot be verified): only the builder reads it, to resume from it."""
        return RevisionRecord.decode(self.record_bytes(revision)).root

    def link_hashes(self, revision: int, published: int) -> dict[int, str]:
        """The links a new record ``revision`` holds, taken from the record before it."""
        targets = link_targets(revision)
        if not targets:
            return {}
        previous = revision - 1
        if previous <= published:
            digest, links = self._trusted_hash(previous), self.record(previous).links
        elif previous in self._written:
            digest, links = self._written[previous]
        else:  # written by a killed build, not yet published: the builder's own bytes
            data = self.record_bytes(previous)
            digest, links = hashlib.sha256(data).hexdigest(), RevisionRecord.decode(data).links
        return {t: digest if t == previous else links[t] for t in targets}

    def write_record(self, record: RevisionRecord) -> None:
        data = record.encode()
        self.log.append(record.revision, data)
        self._written = {record.revision: (hashlib.sha256(data).hexdigest(), record.links)}

    def publish(self, revision: int, invalidated_tags: list[str]) -> None:
        """Switch the pointer to ``revision``: new file, atomic rename, fsync of the folder."""
        data = self.record_bytes(revision)
        if invalidated_tags:
            write_once(
                self.site / layout.invalidations_path(revision),
                orjson.dumps({"revision": revision, "cache_tags": invalidated_tags}),
                staging=self.staging,
            )
        record = RevisionRecord.decode(data)
        pointer = Pointer(
            revision, record.root.ts_commit, hashlib.sha256(data).hexdigest(), record.registry_id
        )
        replace_durably(self.site / layout.POINTER, pointer.encode(), staging=self.staging)

    def detail_changed(self, observation_id: str, revision: int, prefix: bytes) -> bool:
        """Whether ``prefix`` differs from the version before ``revision`` (or there is none)."""
        before = [v for v in self.detail_versions(observation_id) if v[0] < revision]
        return not before or before[-1][1] != hashlib.sha256(prefix).hexdigest()

    def mark_detail(self, observation_id: str, revision: int, prefix: bytes) -> None:
        """Record that revision ``revision``'s record holds a new version of the detail."""
        digest = hashlib.sha256(prefix).hexdigest()
        mark_durably(self.detail_dir(observation_id) / layout.marker_name(revision, digest))

    def link_evidence(self, evidence_id: str, revision: int) -> None:
        """Point ``evidence/<id>.json`` at the revision whose record holds its metadata."""
        link_durably(self.evidence_path(evidence_id), str(revision))


def check_site_owner(tree: TreeWriter, registry_id: str | None, registry_path: Path) -> None:
    """Refuse a site whose tree was rendered from another registry than ``registry_id`` (None:
    one with no revision yet, or none at ``registry_path``: a command checks that before it
    opens the stores, so that its refusal makes no home, DECISIONS 3)."""
    held, owner = tree.owner()
    if held and owner != registry_id:
        theirs = owner or "none (built before registry ids)"
        ours = registry_id or "none yet (no revision)"
        raise Conflict(
            f"{tree.site} holds a tree of registry {theirs}, not of this registry {ours}"
            f" ({registry_path}); fxev build --rebuild renders a fresh tree in its place"
        )
