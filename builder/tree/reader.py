"""The verified read API over a published tree (``FXEV_SITE``); the layout is ``layout``.

Readers verify every read against a recorded hash and refuse a tree that does not match
(``TreeCorruptError``): objects against their name, the published record against the pointer,
every earlier record through the links of later ones, details against their marker. Decoded
immutable values are cached.

A tree belongs to one registry, whose id the pointer names (``registry_id``). When the pointer
names another registry than the one last seen (``fxev build --rebuild`` swapped a fresh tree
in), what the reader held of the old tree (records, hashes, index bytes) is forgotten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from builder.tree import layout
from builder.tree.format import Chunk, Node
from builder.tree.revision import (
    EvidenceMeta,
    Pointer,
    RevisionRecord,
    RevisionRoot,
    links_of,
    next_hop,
)
from builder.tree.revlog import RevisionLog, TreeCorruptError, read_file


class ItemRef(NamedTuple):
    """A rate item as stored: its observation id and its prefix up to ``"superseded_por":``.

    A named tuple rather than a frozen dataclass: a page makes up to 366 of them, and a tuple is
    several times cheaper to build.
    """

    observacion_id: str
    fecha_serie: str
    prefix: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class RatesPage:
    items: tuple[ItemRef, ...]
    total: int


class _Lru:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        value = self.data.get(key)
        if value is not None:
            self.data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> Any:
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.size:
            self.data.popitem(last=False)
        return value


class TreeReader:
    """Verified reads of a published tree; it writes nothing."""

    def __init__(self, site: Path, cache_size: int = 4096) -> None:
        self.site = site
        self._site_prefix = str(site) + os.sep
        self._cache_size = cache_size
        self._registry_id: str | None = None  # the registry the pointer named when last read
        self.forget()

    def forget(self) -> None:
        """Drop everything read from the tree: it was replaced by another one."""
        self.log = RevisionLog(self.site / layout.REVISIONS)
        self._cache = _Lru(self._cache_size)
        self._trusted: dict[int, str] = {}  # revision -> verified SHA-256 of its record
        self._anchor = 0  # the newest published revision seen in the pointer
        self._followed: set[int] = set()  # revisions whose links are in ``_trusted``

    # -- paths and raw reads ---------------------------------------------------------------

    def evidence_path(self, evidence_id: str) -> Path:
        return self.site / layout.evidence_path(evidence_id)

    def detail_dir(self, observation_id: str) -> Path:
        return self.site / layout.OBSERVATIONS / observation_id

    def object_path(self, sha256: str) -> Path:
        return Path(self._site_prefix + layout.object_path(sha256))

    def read_object(self, sha256: str) -> bytes:
        try:
            data = read_file(self._site_prefix + layout.object_path(sha256))
        except FileNotFoundError:
            raise TreeCorruptError(f"object sha256:{sha256} is missing") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise TreeCorruptError(f"object sha256:{sha256} does not match its bytes")
        return data

    def _decoded(self, kind: str, sha256: str, decode: Any) -> Any:
        key = (kind, sha256)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return self._cache.put(key, decode(self.read_object(sha256)))

    def node(self, sha256: str) -> Node:
        return self._decoded("node", sha256, Node.decode)

    def chunk(self, sha256: str) -> Chunk:
        return self._decoded("chunk", sha256, Chunk.decode)

    def get_json(self, sha256: str | None, default: Any) -> Any:
        if sha256 is None:
            return default
        return self._decoded("json", sha256, orjson.loads)

    def supersessions(self, sha256: str | None) -> dict[str, str]:
        return self.get_json(sha256, {})

    # -- revision records and the pointer ----------------------------------------------------

    def has_root(self, revision: int) -> bool:
        return self.log.has(revision)

    def record_bytes(self, revision: int) -> bytes:
        """The record of ``revision`` as stored, unverified."""
        data = self.log.read(revision)
        if data is None:
            raise TreeCorruptError(f"revision record {revision} is missing")
        return data

    def record(self, revision: int) -> RevisionRecord:
        """The record of a published revision, verified against the hash recorded for it."""
        key = ("record", revision)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        record = RevisionRecord.decode(self._verified_bytes(revision))
        if record.revision != revision:
            raise TreeCorruptError(f"revision record {revision} names {record.revision}")
        self._trust_links(revision, record.links)
        return self._cache.put(key, record)

    def _verified_bytes(self, revision: int) -> bytes:
        expected = self._trusted_hash(revision)
        data = self.record_bytes(revision)
        if hashlib.sha256(data).hexdigest() != expected:
            raise TreeCorruptError(
                f"revision record {revision} does not match its recorded sha256:{expected}"
            )
        return data

    def _trust_links(self, revision: int, links: dict[int, str]) -> None:
        for linked, digest in links.items():
            self._trusted.setdefault(linked, digest)
        self._followed.add(revision)

    def _trusted_hash(self, revision: int) -> str:
        """The SHA-256 of record ``revision``: from the pointer, or hopping down the links."""
        if revision > self._anchor:
            pointer = self.pointer()
            if pointer is not None and pointer.revision > self._anchor:
                self._anchor = pointer.revision
                self._trusted[self._anchor] = pointer.root_sha256
            if revision > self._anchor or revision < 1:
                raise TreeCorruptError(f"revision {revision} is not published")
        current = self._anchor
        while revision not in self._trusted:
            linked = next_hop(current, revision)
            if current not in self._followed:  # only its links are needed, not the whole record
                self._trust_links(current, links_of(self._verified_bytes(current)))
            if linked not in self._trusted:
                raise TreeCorruptError(f"revision record {current} lacks its link to {linked}")
            current = linked
        return self._trusted[revision]

    def root(self, revision: int) -> RevisionRoot:
        """The root of a published revision, verified."""
        return self.record(revision).root

    def pointer(self) -> Pointer | None:
        """The ``PUBLISHED`` pointer, or None before the first build. A pointer naming another
        registry than the last one read means another tree: the reader forgets the old one."""
        path = self.site / layout.POINTER
        try:
            pointer = Pointer.decode(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValueError as error:
            why = f"{path.absolute()} is not a published pointer: {error}"
            raise TreeCorruptError(why) from None
        if pointer.registry_id != self._registry_id:
            self.forget()
            self._registry_id = pointer.registry_id
        return pointer

    def published_revision(self) -> int | None:
        pointer = self.pointer()
        return None if pointer is None else pointer.revision

    # -- observation details and evidence --------------------------------------------------

    def detail_versions(self, observation_id: str) -> list[tuple[int, str]]:
        """(revision, SHA-256) of every version of the observation's detail, ascending."""
        try:
            names = os.listdir(self.detail_dir(observation_id))
        except FileNotFoundError:
            return []
        return sorted(layout.marker_of(n) for n in names if n[0] != ".")

    def detail(self, observation_id: str, revision: int) -> bytes | None:
        """The detail prefix of an observation as of ``revision``, or None if it did not exist."""
        versions = [v for v in self.detail_versions(observation_id) if v[0] <= revision]
        if not versions:
            return None
        written, digest = versions[-1]
        data = self.record(written).details.get(observation_id)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise TreeCorruptError(
                f"observation detail {observation_id} of revision {written} was altered"
            )
        return data

    def evidence_meta(self, evidence_id: str, revision: int) -> EvidenceMeta | None:
        try:
            target = os.readlink(self.evidence_path(evidence_id))
        except FileNotFoundError:
            return None
        if not target.isdigit():
            raise TreeCorruptError(f"evidence {evidence_id} links to {target!r}")
        written = int(target)
        if written > revision:
            return None
        meta = self.record(written).evidence.get(evidence_id)
        if meta is None:
            raise TreeCorruptError(f"evidence {evidence_id} is not in revision record {written}")
        return meta

    def evidence_bytes(self, sha256: str) -> bytes:
        return self.read_object(sha256)

    # -- queries ---------------------------------------------------------------------------

    def series_top(self, serie: str, revision: int) -> Node | None:
        root = self.root(revision)
        series = root.series.get(serie)
        if serie not in root.served or series is None or series.root is None:
            return None
        return self.node(series.root)

    def rates(
        self, serie: str, start: str, end: str, revision: int, offset: int, limit: int
    ) -> RatesPage:
        """Items of ``serie`` with ``start <= fecha_serie <= end`` at ``revision``, one page."""
        top = self.series_top(serie, revision)
        if top is None:
            return RatesPage((), 0)
        segments: list[tuple[str, int, int]] = []
        for year, year_hash, _ in zip(top.keys, top.hashes, top.counts, strict=True):
            if not start[:4] <= year <= end[:4]:
                continue
            months = self.node(year_hash)
            for month, chunk_hash, count in zip(
                months.keys, months.hashes, months.counts, strict=True
            ):
                if not start[:7] <= month <= end[:7]:
                    continue
                if start <= f"{month}-01" and f"{month}-31" <= end:
                    segments.append((chunk_hash, 0, count))
                else:
                    low, high = self.chunk(chunk_hash).span(start, end)
                    if high > low:
                        segments.append((chunk_hash, low, high))
        total = sum(high - low for _, low, high in segments)
        items: list[ItemRef] = []
        skip = offset
        for chunk_hash, low, high in segments:
            if len(items) >= limit:
                break
            size = high - low
            if skip >= size:
                skip -= size
                continue
            chunk = self.chunk(chunk_hash)
            first = low + skip
            skip = 0
            last = min(high, first + limit - len(items))
            items.extend(
                map(
                    ItemRef,
                    chunk.ids[first:last],
                    chunk.fechas[first:last],
                    chunk.prefixes[first:last],
                )
            )
        return RatesPage(tuple(items), total)

    def latest(self, serie: str, revision: int) -> ItemRef | None:
        top = self.series_top(serie, revision)
        if top is None or not top.keys:
            return None
        months = self.node(top.hashes[-1])
        chunk = self.chunk(months.hashes[-1])
        return ItemRef(chunk.ids[-1], chunk.fechas[-1], chunk.prefixes[-1])

    def revision_at(self, ts_commit: str, published: int) -> RevisionRoot | None:
        """The last published revision whose ``ts_commit`` is at or before ``ts_commit``."""
        low, high = 1, published
        found = None
        while low <= high:
            middle = (low + high) // 2
            root = self.root(middle)
            if root.ts_commit <= ts_commit:
                found = root
                low = middle + 1
            else:
                high = middle - 1
        return found

    def coverage(self, revision: int) -> list[dict[str, Any]]:
        return self.get_json(self.root(revision).coverage, [])

    def annotations(self, revision: int) -> list[dict[str, Any]]:
        return self.get_json(self.root(revision).annotations, [])


__all__ = [
    "ItemRef",
    "RatesPage",
    "TreeCorruptError",
    "TreeReader",
]
