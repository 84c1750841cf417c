"""The static tree (``FXEV_SITE``): its layout, write-once files and the read API over it.

Layout (path -> what it holds; see the README for which paths a CDN edge may serve):

    PUBLISHED                          {"revision", "ts_commit", "root_sha256"}: the pointer
    revisions/<N>.json                 revision root: ts_commit, served series, object hashes
    objects/sha256/<ab>/<hex>          content-addressed: item chunks, tree nodes, lists, maps,
                                       evidence bytes; a file's name is the SHA-256 of its bytes
    evidence/<id>.json                 evidence metadata (write-once)
    observations/<id>/<R>-<hex>.json   observation detail as of revision R (one file per change)
    invalidations/<N>.json             Cache-Tag values the build that published N invalidated

Readers verify every content-addressed read against its name, and refuse a tree that does not
match (``TreeCorruptError``). Decoded immutable objects are cached by hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import orjson

from builder.durable import replace_durably, write_once
from builder.registry.blobs import BlobStore
from builder.render import Chunk, Node
from builder.sitelock import staging_dir

POINTER = "PUBLISHED"


class TreeCorruptError(RuntimeError):
    """The tree's bytes do not match the hashes recorded for them."""


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

    def encode(self) -> bytes:
        value = dataclasses.asdict(self)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def decode(cls, data: bytes) -> RevisionRoot:
        value = orjson.loads(data)
        value["served"] = tuple(value["served"])
        value["series"] = {k: SeriesRoot(**v) for k, v in value["series"].items()}
        return cls(**value)


@dataclasses.dataclass(frozen=True, slots=True)
class ItemRef:
    """A rate item as stored: its observation id and its prefix up to ``"superseded_por":``."""

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


class Tree:
    def __init__(self, site: Path, cache_size: int = 4096) -> None:
        self.site = site
        self.staging = staging_dir(site)
        self.objects = BlobStore(site / "objects", staging=self.staging)
        self._cache = _Lru(cache_size)

    # -- paths and raw reads ---------------------------------------------------------------

    def root_path(self, revision: int) -> Path:
        return self.site / "revisions" / f"{revision}.json"

    def evidence_path(self, evidence_id: str) -> Path:
        return self.site / "evidence" / f"{evidence_id}.json"

    def detail_dir(self, observation_id: str) -> Path:
        return self.site / "observations" / observation_id

    def read_object(self, sha256: str) -> bytes:
        try:
            data = self.objects.path(sha256).read_bytes()
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

    def put_json(self, value: Any) -> str:
        return self.objects.put(orjson.dumps(value))

    def supersessions(self, sha256: str | None) -> dict[str, str]:
        return self.get_json(sha256, {})

    # -- revisions and the pointer ---------------------------------------------------------

    def has_root(self, revision: int) -> bool:
        return self.root_path(revision).exists()

    def root(self, revision: int) -> RevisionRoot:
        key = ("root", revision)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            data = self.root_path(revision).read_bytes()
        except FileNotFoundError:
            raise TreeCorruptError(f"revision root {revision} is missing") from None
        return self._cache.put(key, RevisionRoot.decode(data))

    def write_root(self, root: RevisionRoot) -> None:
        write_once(self.root_path(root.revision), root.encode(), staging=self.staging)

    def pointer(self) -> dict[str, Any] | None:
        try:
            return orjson.loads((self.site / POINTER).read_bytes())
        except FileNotFoundError:
            return None

    def published_revision(self) -> int | None:
        pointer = self.pointer()
        return None if pointer is None else int(pointer["revision"])

    def publish(self, revision: int, invalidated_tags: list[str]) -> None:
        """Switch the pointer to ``revision``: new file, atomic rename, fsync of the folder."""
        root_bytes = self.root_path(revision).read_bytes()
        root = RevisionRoot.decode(root_bytes)
        write_once(
            self.site / "invalidations" / f"{revision}.json",
            orjson.dumps({"revision": revision, "cache_tags": invalidated_tags}),
            staging=self.staging,
        )
        pointer = {
            "revision": revision,
            "ts_commit": root.ts_commit,
            "root_sha256": hashlib.sha256(root_bytes).hexdigest(),
        }
        replace_durably(self.site / POINTER, orjson.dumps(pointer), staging=self.staging)

    # -- observation details and evidence --------------------------------------------------

    def write_detail(self, observation_id: str, revision: int, prefix: bytes) -> None:
        """Add a version of the detail, unless it equals the latest version already there."""
        digest = hashlib.sha256(prefix).hexdigest()
        try:
            names = [n for n in os.listdir(self.detail_dir(observation_id)) if n[0] != "."]
        except FileNotFoundError:
            names = []
        if names and max(names)[11:-5] == digest:
            return
        write_once(
            self.detail_dir(observation_id) / f"{revision:010d}-{digest}.json",
            prefix,
            staging=self.staging,
        )

    def detail(self, observation_id: str, revision: int) -> bytes | None:
        """The detail prefix of an observation as of ``revision``, or None if it did not exist."""
        try:
            names = sorted(os.listdir(self.detail_dir(observation_id)))
        except FileNotFoundError:
            return None
        chosen = None
        for name in names:
            if name.startswith(".") or int(name[:10]) > revision:
                continue
            chosen = name
        if chosen is None:
            return None
        data = (self.detail_dir(observation_id) / chosen).read_bytes()
        if hashlib.sha256(data).hexdigest() != chosen[11:-5]:
            raise TreeCorruptError(f"observation detail {observation_id}/{chosen} was altered")
        return data

    def evidence_meta(self, evidence_id: str, revision: int) -> dict[str, Any] | None:
        try:
            meta = orjson.loads(self.evidence_path(evidence_id).read_bytes())
        except FileNotFoundError:
            return None
        return meta if meta["revision"] <= revision else None

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
                ItemRef(chunk.ids[i], chunk.fechas[i], chunk.prefixes[i])
                for i in range(first, last)
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
    "RevisionRoot",
    "SeriesRoot",
    "Tree",
    "TreeCorruptError",
]
