"""A revision of the tree as values: its root, and the record that holds it on disk. Pure.

``RevisionRoot`` is what a query starts from: the served series, the hash of each series' item
tree, of the supersession map, of the annotations and of the coverage.

``RevisionRecord`` is what ``fxev build`` writes for one revision, once: the root, the SHA-256 of
earlier records (``links``), the metadata of the evidence and the observation details that the
revision changed, and the id of the registry it was rendered from (``registry_id``: a tree
belongs to one registry, see ``docs/operating/tree.md``). Small records live together so that a
revision costs one record appended to a pack rather than a few files of one disk block each.

**Links.** Record N holds the SHA-256 of record N - 1 and of the last record before N whose
number is a multiple of 4**k, for every k >= 1 (``link_targets``). The ``PUBLISHED`` pointer holds
the SHA-256 of the published record, so any earlier record is verified by hopping down from the
published one, each hop as long as it can be (``next_hop``): about two hops per base-4 digit of
the distance. Every link of record N but N - 1 is also a link of record N - 1, so a build finds
the links of a new record in the record before it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import orjson

LINK_BASE = 4
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclasses.dataclass(frozen=True, slots=True)
class SeriesRoot:
    root: str | None
    count: int


@dataclasses.dataclass(frozen=True, slots=True)
class RevisionRoot:
    revision: int
    ts_commit: str
    served: tuple[str, ...]
    series: dict[str, SeriesRoot]
    supersessions: str | None
    annotations: str | None
    coverage: str | None

    @classmethod
    def empty(cls) -> RevisionRoot:
        return cls(0, "", (), {}, None, None, None)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> RevisionRoot:
        return cls(
            revision=value["revision"],
            ts_commit=value["ts_commit"],
            served=tuple(value["served"]),
            series={k: SeriesRoot(**v) for k, v in value["series"].items()},
            supersessions=value["supersessions"],
            annotations=value["annotations"],
            coverage=value["coverage"],
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Pointer:
    """What the ``PUBLISHED`` pointer says: the revision a site serves, its ``ts_commit``, the
    SHA-256 of its record (``root_sha256``, from which every earlier record is verified), and
    the registry the tree was rendered from (None in a tree built before registry ids)."""

    revision: int
    ts_commit: str
    root_sha256: str
    registry_id: str | None = None

    def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "revision": self.revision,
            "ts_commit": self.ts_commit,
            "root_sha256": self.root_sha256,
        }
        if self.registry_id is not None:
            fields["registry_id"] = self.registry_id
        return fields

    def encode(self) -> bytes:
        return orjson.dumps(self.fields())

    @classmethod
    def from_fields(cls, value: Any) -> Pointer:
        """The pointer ``value`` holds; a ``ValueError`` naming what is wrong with it."""
        if not isinstance(value, dict):
            raise ValueError("not an object")
        revision = value.get("revision")
        if type(revision) is not int or revision < 1:
            raise ValueError(f"its revision is {revision!r}, not a revision number")
        ts_commit, root = value.get("ts_commit"), value.get("root_sha256")
        registry_id = value.get("registry_id")
        if not isinstance(ts_commit, str):
            raise ValueError(f"its ts_commit is {ts_commit!r}, not a timestamp")
        if not isinstance(root, str) or not _SHA256_HEX.fullmatch(root):
            raise ValueError(f"its root_sha256 is {root!r}, not a SHA-256")
        if registry_id is not None and not isinstance(registry_id, str):
            raise ValueError(f"its registry_id is {registry_id!r}, not a registry id")
        return cls(revision, ts_commit, root, registry_id)

    @classmethod
    def decode(cls, data: bytes) -> Pointer:
        """The pointer in ``data``; a ``ValueError`` naming what is wrong with it."""
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as error:
            raise ValueError(str(error)) from None
        return cls.from_fields(value)


def link_targets(revision: int) -> list[int]:
    """The earlier records record ``revision`` links to, descending (see the module docstring)."""
    if revision <= 1:
        return []
    previous = revision - 1
    targets = [previous]
    step = LINK_BASE
    while step <= previous:
        aligned = previous // step * step
        if aligned != targets[-1]:
            targets.append(aligned)
        step *= LINK_BASE
    return targets


def next_hop(current: int, target: int) -> int:
    """The link of record ``current`` nearest to ``target`` without going below it."""
    if not 1 <= target < current:
        raise ValueError(f"cannot hop from revision {current} to {target}")
    return min(t for t in link_targets(current) if t >= target)


def links_of(data: bytes) -> dict[int, str]:
    """Only the links of an encoded record (what a reader hopping through it needs)."""
    header = orjson.loads(data[: data.index(b"\n")])
    return {int(r): h for r, h in header["links_sha256"].items()}


@dataclasses.dataclass(frozen=True, slots=True)
class EvidenceMeta:
    """What a revision record says of one evidence file: where its bytes are (``sha256``, an
    object of the tree) and what ``GET /v1/evidence/{id}`` sends with them."""

    id: str
    sha256: str  # hex, the object holding the bytes and the answer's ETag
    size: int
    content_type: str
    capturado_en: str
    identidad_consulta: str
    revision: int  # the registry revision that captured it

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> EvidenceMeta:
        """Raises ValueError for fields that are not this record's."""
        try:
            meta = cls(**fields)
        except TypeError as error:
            raise ValueError(f"evidence metadata {sorted(fields)}: {error}") from None
        if not _SHA256_HEX.fullmatch(str(meta.sha256)):
            raise ValueError(f"evidence {meta.id}: sha256 {meta.sha256!r}")
        return meta


@dataclasses.dataclass(frozen=True, slots=True)
class RevisionRecord:
    """One revision as written: root, links to earlier records, evidence metadata, details.

    Encoded as one JSON header line, then the details' bytes back to back (the header gives each
    detail's offsets), so a detail is served as stored, never re-encoded.
    """

    root: RevisionRoot
    links: dict[int, str]  # earlier revision -> SHA-256 (hex) of its record
    evidence: dict[str, EvidenceMeta]  # evidence id -> metadata
    details: dict[str, bytes]  # observation id -> detail prefix
    registry_id: str | None = None  # the registry's id; None only in trees built before ids

    @property
    def revision(self) -> int:
        return self.root.revision

    def encode(self) -> bytes:
        offsets: dict[str, list[int]] = {}
        position = 0
        for observation_id in sorted(self.details):
            size = len(self.details[observation_id])
            offsets[observation_id] = [position, position + size]
            position += size
        header = {
            "root": self.root.to_json(),
            "links_sha256": {str(r): h for r, h in sorted(self.links.items())},
            "evidence": {i: meta.to_json() for i, meta in self.evidence.items()},
            "details": offsets,
        }
        if self.registry_id is not None:
            header["registry_id"] = self.registry_id
        body = b"".join(self.details[i] for i in sorted(self.details))
        return orjson.dumps(header, option=orjson.OPT_SORT_KEYS) + b"\n" + body

    @classmethod
    def decode(cls, data: bytes) -> RevisionRecord:
        newline = data.index(b"\n")
        header = orjson.loads(data[:newline])
        body = data[newline + 1 :]
        return cls(
            root=RevisionRoot.from_json(header["root"]),
            links={int(r): h for r, h in header["links_sha256"].items()},
            evidence={i: EvidenceMeta.from_json(m) for i, m in header["evidence"].items()},
            details={i: body[a:b] for i, (a, b) in header["details"].items()},
            registry_id=header.get("registry_id"),
        )
