"""``fxev publish``: upload to the store what the site's last build published and the store lacks.

The store's own pointer is the record of what was published: it names the revision the store
holds (P) and the publication that put it there. A publish of revision N reads the records of
P + 1 .. N from the site (verified, as the gateway reads them) and uploads, in order:

1. the immutable keys those revisions wrote (``builder.store.delta``: the objects their roots
   added, their evidence bytes and ``evidence/<id>.json``, their detail markers, any
   ``invalidations/<N>.json``) and the explorer's pages the new map names and the previous one
   did not, the observation pages of the new details, and the map; and the transparency log's
   new tiles, rows lists, the checkpoint of N and the key (``builder.store.logsync``);
2. the revision records (one key each) and the publication;
3. the pointer.

Each step waits for the one before it, so a mirror that sees the pointer finds everything it
names. Keys go up on a thread pool; a key the store holds with the same bytes is skipped, with
other bytes refused (a ``Conflict``: nothing after it is written). The work is in proportion to
what the builds since P added; with nothing new, a publish reads the pointer and its
publication, and uploads nothing.

It reads the site under the build lock, so a build neither moves the pointer nor sweeps the
explorer's pages meanwhile.

A **repair** (``fxev publish --repair``) is for a store that lost keys after they were written,
or holds other bytes under them (docs/operating/fleet.md#repair), which a publish cannot see: it
trusts only the store's pointer, read as a publish reads it (the same tree, not ahead of the
site). It uploads every key of revisions 1 .. N and every page and log file the site serves, as
if the store were empty, with a new base publication; each key is read back first and written
only when the store lacks it or holds other bytes (``replaced``). The site's bytes are the
truth, read as a publish reads them: records verified from the site's pointer down, objects and
pages by their names.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from builder.core.errors import Conflict, NotFound
from builder.objstore.s3 import ObjectStore, Put, parallel
from builder.publish import sitelock
from builder.store import keys
from builder.store.delta import Written, objects_added
from builder.store.logsync import log_keys, unpinned_hashes
from builder.tree import explorer as stored
from builder.tree import layout
from builder.tree.explorer import PageMap
from builder.tree.reader import TreeCorruptError, TreeReader
from builder.tree.revision import RevisionRoot
from builder.tree.revlog import read_file


@dataclasses.dataclass(frozen=True, slots=True)
class Upload:
    key: str
    read: Callable[[], bytes]


@dataclasses.dataclass(frozen=True, slots=True)
class PublishResult:
    published_revision: int
    uploaded: int
    skipped: int
    replaced: int | None = None  # a repair's: keys that held other bytes (among ``uploaded``)

    def to_json(self) -> dict[str, Any]:
        found = dataclasses.asdict(self)
        if self.replaced is None:  # a publish's result, as DECISIONS 3 words it
            del found["replaced"]
        return found


def read_store_pointer(store: ObjectStore) -> keys.StorePointer | None:
    data = store.get(keys.POINTER)
    return None if data is None else keys.StorePointer.decode(data, store.where(keys.POINTER))


def read_publication(store: ObjectStore, sha256: str) -> keys.Publication:
    """A publication of the store, checked against the hash that names it."""
    key = keys.publication_key(sha256)
    data = store.get(key)
    if data is None:
        raise TreeCorruptError(f"{store.where(key)} is missing")
    if keys.sha256_of(data) != sha256:
        raise TreeCorruptError(f"{store.where(key)} does not match its SHA-256; refused")
    return keys.Publication.decode(data)


def read_map(store: ObjectStore, sha256: str) -> bytes:
    key = keys.map_key(sha256)
    data = store.get(key)
    if data is None or keys.sha256_of(data) != sha256:
        raise TreeCorruptError(f"{store.where(key)} is missing or does not match its SHA-256")
    return data


def check_same_tree(pointer: keys.StorePointer, registry_id: str | None, where: str) -> None:
    held = pointer.site.registry_id
    if held != registry_id:
        raise Conflict(
            f"{where} holds a tree of registry {held}, this site one of {registry_id}; publish to"
            " a new FXEV_STORE_URL prefix (a store holds one registry's tree)"
        )


def publish(site: Path, store: ObjectStore, repair: bool = False) -> PublishResult:
    with sitelock.exclusive(site):
        return Publisher(site, store, repair).run()


class Publisher:
    def __init__(self, site: Path, store: ObjectStore, repair: bool = False) -> None:
        self.site = site
        self.store = store
        self.repair = repair
        self.tree = TreeReader(site)

    def run(self) -> PublishResult:
        pointer = self.tree.pointer()
        if pointer is None:
            raise NotFound(f"no published tree at {self.site.absolute()}/{layout.POINTER}")
        head = pointer.revision
        remote = read_store_pointer(self.store)
        base, previous = 0, None
        if remote is not None:
            check_same_tree(remote, pointer.registry_id, self.store.where(""))
            base = remote.site.revision
            if base > head:
                raise Conflict(
                    f"{self.store.where(keys.POINTER)} is at revision {base}, ahead of this"
                    f" site's {head}; build first (or publish from the host that is ahead)"
                )
            self.tree.record(base)  # verified through the site's pointer
            if keys.sha256_of(self.tree.record_bytes(base)) != remote.site.root_sha256:
                raise Conflict(
                    f"the store's revision {base} is not this site's: another tree was"
                    " published there"
                )
            if not self.repair:  # a repair reads no more of the store than its pointer
                previous = read_publication(self.store, remote.publication)
        if self.repair:
            base, remote = 0, None  # every key, and a base publication
        map_bytes = self.local_map(head)
        map_sha = None if map_bytes is None else keys.sha256_of(map_bytes)
        if previous is not None and base == head and previous.page_map == map_sha:
            return PublishResult(head, 0, 0)

        immutable, records, invalidations = self.revision_uploads(base, head)
        publication, explorer = self.explorer_uploads(
            base, head, map_bytes, previous, remote, invalidations
        )
        immutable += explorer
        added_to_log = log_keys(self.site, base, head)
        immutable += [Upload(key, self.file_reader(key)) for key in added_to_log]
        publication = dataclasses.replace(publication, log=unpinned_hashes(self.site, added_to_log))
        publication_bytes = publication.encode()
        publication_sha = keys.sha256_of(publication_bytes)
        records.append(Upload(keys.publication_key(publication_sha), constant(publication_bytes)))
        counts = dict.fromkeys(Put, 0)
        for step in (immutable, records):
            for put in parallel(self.upload, step, self.store.threads):
                counts[put] += 1
        self.store.put(keys.POINTER, keys.StorePointer(pointer, publication_sha).encode())
        uploaded = counts[Put.WRITTEN] + counts[Put.REPLACED] + 1
        replaced = counts[Put.REPLACED] if self.repair else None
        return PublishResult(head, uploaded, counts[Put.SAME], replaced)

    def upload(self, upload: Upload) -> Put:
        if self.repair:
            return self.store.put_checked(upload.key, upload.read())
        return Put.WRITTEN if self.store.put_new(upload.key, upload.read()) else Put.SAME

    def local_map(self, revision: int) -> bytes | None:
        try:
            return read_file(os.fspath(stored.map_path(self.site, revision)))
        except FileNotFoundError:
            return None

    # -- the tree ------------------------------------------------------------------------------

    def revision_uploads(
        self, base: int, head: int
    ) -> tuple[list[Upload], list[Upload], dict[str, str]]:
        """(immutable keys, record keys, invalidations by revision) of revisions base+1..head."""
        immutable: dict[str, Upload] = {}
        records: list[Upload] = []
        invalidations: dict[str, str] = {}
        objects: set[str] = set()
        roots: dict[int, RevisionRoot] = {0: RevisionRoot.empty()}
        for revision in range(head, base, -1):  # downwards: each record vouches for the next
            record = self.tree.record(revision)
            roots[revision] = record.root
            data = self.tree.record_bytes(revision)
            records.append(Upload(keys.record_key(revision), constant(data)))
            written = Written.of(record)
            for evidence_id, sha256 in written.evidence.items():
                objects.add(sha256)
                key = keys.evidence_key(evidence_id)
                immutable[key] = Upload(key, constant(str(revision).encode()))
            for key in written.markers:
                immutable[key] = Upload(key, constant(b""))
            path = self.site / layout.invalidations_path(revision)
            if path.exists():
                data = path.read_bytes()
                invalidations[str(revision)] = keys.sha256_of(data)
                key = keys.invalidations_key(revision)
                immutable[key] = Upload(key, constant(data))
        if base:
            roots[base] = self.tree.root(base)
        pairs = [(roots[r - 1], roots[r]) for r in range(base + 1, head + 1)]
        objects |= objects_added(pairs, self.read_objects)
        for sha256 in sorted(objects):
            key = keys.object_key(sha256)
            immutable[key] = Upload(key, self.object_reader(sha256))
        records.reverse()
        return list(immutable.values()), records, invalidations

    def file_reader(self, key: str) -> Callable[[], bytes]:
        return lambda: (self.site / key).read_bytes()

    def read_objects(self, hashes: set[str]) -> dict[str, bytes]:
        return {h: self.tree.read_object(h) for h in hashes}

    def object_reader(self, sha256: str) -> Callable[[], bytes]:
        return lambda: self.tree.read_object(sha256)  # verified against its name

    # -- the explorer --------------------------------------------------------------------------

    def explorer_uploads(
        self,
        base: int,
        head: int,
        map_bytes: bytes | None,
        previous: keys.Publication | None,
        remote: keys.StorePointer | None,
        invalidations: dict[str, str],
    ) -> tuple[keys.Publication, list[Upload]]:
        """The publication of ``head`` and the explorer's keys it names that are new."""
        if map_bytes is None:
            page_map = None
            fingerprint = None
        else:
            page_map = PageMap.decode(map_bytes)
            fingerprint = page_map.fingerprint
        continues = previous is not None and previous.fingerprint == fingerprint
        uploads: dict[str, Upload] = {}
        if page_map is not None and map_bytes is not None:
            known: set[str] = set()
            if continues and previous is not None and previous.page_map is not None:
                old = PageMap.decode(read_map(self.store, previous.page_map))
                known = {sha256 for _, sha256 in old.pages.values()}
            for _, sha256 in page_map.pages.values():
                if sha256 not in known:
                    uploads[keys.page_key(sha256)] = Upload(
                        keys.page_key(sha256), self.page_reader(sha256)
                    )
            map_sha = keys.sha256_of(map_bytes)
            uploads[keys.map_key(map_sha)] = Upload(keys.map_key(map_sha), constant(map_bytes))
        pages = self.observation_pages(base if continues else None, head)
        for sha256, data in pages.values():
            uploads[keys.page_key(sha256)] = Upload(keys.page_key(sha256), constant(data))
        publication = keys.Publication(
            revision=head,
            previous=remote.publication if continues and remote else None,
            page_map=None if map_bytes is None else keys.sha256_of(map_bytes),
            fingerprint=fingerprint,
            observation_pages={name: sha256 for name, (sha256, _) in sorted(pages.items())},
            invalidations=invalidations if continues else self.all_invalidations(invalidations),
        )
        return publication, list(uploads.values())

    def page_reader(self, sha256: str) -> Callable[[], bytes]:
        def read() -> bytes:
            data = read_file(os.fspath(stored.page_path(self.site, sha256)))
            if keys.sha256_of(data) != sha256:
                raise TreeCorruptError(f"explorer page {sha256}.html does not match its name")
            return data

        return read

    def observation_pages(self, since: int | None, head: int) -> dict[str, tuple[str, bytes]]:
        """The observation pages the site serves that the revisions after ``since`` wrote (every
        one when ``since`` is None: a base), as ``<id>.<R>`` -> (SHA-256, bytes)."""
        folder = stored.explorer_dir(self.site) / stored.OBSERVATION_PAGES
        if since is None:
            try:
                names = sorted(n[: -len(".html")] for n in os.listdir(folder) if n[0] != ".")
            except FileNotFoundError:
                names = []
        else:
            names = [
                f"{observation_id}.{revision}"
                for revision in range(since + 1, head + 1)
                for observation_id in sorted(self.tree.record(revision).details)
            ]
        pages = {}
        for name in names:
            try:
                data = read_file(os.fspath(folder / f"{name}.html"))
            except FileNotFoundError:  # a later version was published and this one swept
                continue
            pages[name] = (keys.sha256_of(data), data)
        return pages

    def all_invalidations(self, new: dict[str, str]) -> dict[str, str]:
        """Every ``invalidations/<N>.json`` of the site: a base lists them all."""
        folder = self.site / layout.INVALIDATIONS
        found = dict(new)
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return found
        for name in names:
            if name.endswith(".json") and name[: -len(".json")].isdigit():
                found.setdefault(
                    name[: -len(".json")], keys.sha256_of((folder / name).read_bytes())
                )
        return found


def constant(data: bytes) -> Callable[[], bytes]:
    return lambda: data
