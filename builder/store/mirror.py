"""``fxev mirror [--follow]``: pull the store into the local site, verified, the pointer moved last.

A gateway host serves its own copy of the tree (``FXEV_SITE``). A mirror at revision L whose
store's pointer names N fetches only what revisions L + 1 .. N added:

1. the publications since the one it holds (``builder.store.keys.Publication``), each checked
   against the hash that names it (the newest against the pointer);
2. the records L + 1 .. N, checked downwards: N against the pointer, each one below against the
   link the record above holds for it, and the link of L + 1 to L against the site's own record
   L (a store whose tree does not continue the site's is refused);
3. the objects those records' roots added (``builder.store.delta``; a level of nodes at a time)
   and their evidence bytes, each checked against its name, skipping what the site has;
4. the explorer: the pages the new map names that the site lacks, the observation pages and
   invalidations the publications list, each against the hash its publication records;
5. the transparency log's new tiles and checkpoint, the tiles checked against the checkpoint's
   root (``builder.store.logsync``).

Everything is checked *before* it is placed (``builder.disk.durable``: a new name, fsync,
rename); the records are appended to the site's packs, the evidence links and detail markers
are made from the records, and ``PUBLISHED`` is replaced last. A tampered key is refused, and
the site stays at L: what was placed before the refusal is unreferenced, like a killed build's
files. Under the site's build lock, so two mirrors never interleave.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from builder.core.errors import Conflict, FxevError, IntegrityError, NotFound
from builder.disk.durable import link_durably, mark_durably, replace_durably, write_once
from builder.objstore.s3 import ObjectStore, parallel
from builder.publish import sitelock
from builder.publish.writer import TreeWriter
from builder.store import keys
from builder.store.delta import Written, objects_added
from builder.store.logsync import finish_log, pull_log
from builder.store.publish import read_map, read_publication
from builder.tree import explorer as stored
from builder.tree import layout
from builder.tree.explorer import PageMap
from builder.tree.reader import TreeCorruptError, TreeReader
from builder.tree.revision import Pointer, RevisionRecord, RevisionRoot, links_of
from builder.tree.revlog import read_file


@dataclasses.dataclass(frozen=True, slots=True)
class MirrorResult:
    published_revision: int
    fetched: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Mirror:
    def __init__(self, site: Path, store: ObjectStore) -> None:
        self.site = site
        self.store = store
        self.fetched = 0
        self._count = threading.Lock()
        self.tree = TreeWriter(site)
        self.nodes: dict[str, bytes] = {}  # nodes fetched or read this run, by hash
        self.raw: dict[int, bytes] = {}  # the records fetched, verified, as stored

    def pointer_bytes(self) -> bytes:
        data = self.store.get(keys.POINTER)
        if data is None:
            raise NotFound(
                f"{self.store.where(keys.POINTER)} does not exist: nothing was published there"
                " yet (fxev publish, on the operator's host)"
            )
        return data

    def run(self, pointer_bytes: bytes | None = None) -> MirrorResult:
        raw = self.pointer_bytes() if pointer_bytes is None else pointer_bytes
        remote = keys.StorePointer.decode(raw, self.store.where(keys.POINTER))
        with sitelock.exclusive(self.site):
            sitelock.sweep_leftovers(self.site)
            self.tree = TreeWriter(self.site)
            local = self.tree.pointer()
            held = 0 if local is None else local.revision
            try:
                return self.pull(remote, local, held)
            except TreeCorruptError as error:
                raise TreeCorruptError(
                    f"{error}; {self.site} stays at revision {held or 'none'}"
                ) from None

    # -- one pull ------------------------------------------------------------------------------

    def pull(self, remote: keys.StorePointer, local: Pointer | None, held: int) -> MirrorResult:
        head = remote.site.revision
        if local is not None and local.registry_id != remote.site.registry_id:
            raise Conflict(
                f"{self.site} holds a tree of registry {local.registry_id}, the store one"
                f" of {remote.site.registry_id}; mirror into an empty FXEV_SITE"
            )
        if head < held:
            raise Conflict(
                f"{self.store.where(keys.POINTER)} is at revision {head}, behind this site's {held}"
            )
        local_map = self.local_map(held)
        publications = self.publications(remote.publication, held, local_map)
        if publications and publications[0].revision != head:  # before fetching any record
            raise TreeCorruptError(
                f"{self.store.where(keys.POINTER)} names revision {head}, its publication"
                f" {publications[0].revision}; refused"
            )
        if head == held:
            if local is not None and local.root_sha256 != remote.site.root_sha256:
                raise Conflict(f"the store's revision {head} is not this site's")
            if not publications:
                return MirrorResult(held, 0)
        records = self.records(held, head, remote.site)
        roots = {held: self.tree.root(held) if held else RevisionRoot.empty()}
        roots |= {r: record.root for r, record in records.items()}
        pairs = [(roots[r - 1], roots[r]) for r in range(held + 1, head + 1)]
        added = objects_added(pairs, self.load_nodes)
        written = {r: Written.of(record) for r, record in records.items()}
        for one in written.values():
            added.update(one.evidence.values())
        missing = sorted(h for h in added if h not in self.nodes and not self.has_object(h))
        parallel(self.fetch_object, missing, self.store.threads)
        page_map, map_bytes, pages, invalidations = self.explorer(publications, head, local_map)
        self.place_invalidations(invalidations)
        links = [(str(r), self.tree.evidence_path(i)) for r in written for i in written[r].evidence]
        parallel(lambda link: link_durably(link[1], link[0]), links, self.store.threads)
        markers: dict[Path, list[Path]] = {}  # by folder: one observation's markers in turn
        for key in (key for one in written.values() for key in one.markers):
            markers.setdefault((self.site / key).parent, []).append(self.site / key)
        parallel(mark_all, list(markers.values()), self.store.threads)
        recorded = {k: v for p in reversed(publications) for k, v in p.log.items()}
        pull_log(self.site, held, head, self.fetch_log, self.tree.staging, recorded)
        for revision in range(held + 1, head + 1):
            self.append(revision, self.raw[revision])
        if map_bytes is not None:
            replace_durably(stored.map_path(self.site, head), map_bytes, staging=self.tree.staging)
        replace_durably(self.site / layout.POINTER, remote.site.encode(), staging=self.tree.staging)
        finish_log(self.site, held, head, self.tree.staging)
        self.sweep(head, page_map, pages)
        return MirrorResult(head, self.fetched)

    def fetch_log(self, key: str) -> bytes | None:
        """A log key's bytes, or None when the store lacks it (checked by ``pull_log``)."""
        data = self.store.get(key)
        if data is not None:
            with self._count:
                self.fetched += 1
        return data

    def fetch(self, key: str, sha256: str | None = None) -> bytes:
        """The bytes of ``key``, checked against ``sha256`` when given; counted."""
        data = self.store.get(key)
        if data is None:
            raise TreeCorruptError(f"{self.store.where(key)} is missing")
        if sha256 is not None and keys.sha256_of(data) != sha256:
            raise TreeCorruptError(
                f"{self.store.where(key)} does not match its SHA-256 {sha256}; refused"
            )
        with self._count:
            self.fetched += 1
        return data

    def publications(self, newest: str, held: int, local_map: str | None) -> list[keys.Publication]:
        """The publications since the one the site holds, newest first, down to a base."""
        found: list[keys.Publication] = []
        current: str | None = newest
        while current is not None:
            publication = read_publication(self.store, current)
            if publication.revision < held or (
                publication.revision == held and publication.page_map == local_map
            ):
                break
            with self._count:
                self.fetched += 1
            found.append(publication)
            current = publication.previous
        return found

    def records(self, held: int, head: int, remote: Pointer) -> dict[int, RevisionRecord]:
        """The records held+1..head, each verified through the one above it (head: the
        pointer), and the link to ``held`` checked against the site's own record."""
        numbers = list(range(held + 1, head + 1))
        data = dict(zip(numbers, parallel(self.fetch_record, numbers), strict=True))
        expected = {head: remote.root_sha256}
        for revision in reversed(numbers):
            if keys.sha256_of(data[revision]) != expected[revision]:
                raise TreeCorruptError(
                    f"{self.store.where(keys.record_key(revision))} does not match the SHA-256"
                    f" {expected[revision]} recorded for it; refused"
                )
            if revision > 1:
                expected[revision - 1] = links_of(data[revision])[revision - 1]
        if held and numbers:
            self.tree.record(held)  # verified through the site's pointer
            if keys.sha256_of(self.tree.record_bytes(held)) != expected[held]:
                raise Conflict(f"the store's tree does not continue this site's at revision {held}")
        self.raw = data
        records = {r: RevisionRecord.decode(data[r]) for r in numbers}
        for revision, record in records.items():
            if record.revision != revision:
                raise TreeCorruptError(f"the store's record {revision} names {record.revision}")
        if records and (
            records[head].root.ts_commit != remote.ts_commit
            or records[head].registry_id != remote.registry_id
        ):
            raise TreeCorruptError(f"{self.store.where(keys.POINTER)} disagrees with its record")
        return records

    def fetch_record(self, revision: int) -> bytes:
        return self.fetch(keys.record_key(revision))  # checked by ``records``, in chain order

    def append(self, revision: int, data: bytes) -> None:
        if self.tree.log.has(revision):  # appended by a mirror killed before its pointer
            if self.tree.record_bytes(revision) != data:
                raise IntegrityError(
                    f"{self.site}: unpublished revision record {revision} differs from the store's"
                )
            return
        self.tree.log.append(revision, data)

    # -- objects -------------------------------------------------------------------------------

    def has_object(self, sha256: str) -> bool:
        return os.path.exists(self.tree.object_path(sha256))

    def load_nodes(self, hashes: set[str]) -> dict[str, bytes]:
        """Nodes by hash: read this run, the site's (verified), or fetched and placed."""
        wanted = [h for h in sorted(hashes) if h not in self.nodes]
        local = [h for h in wanted if self.has_object(h)]
        for sha256 in local:
            self.nodes[sha256] = self.tree.read_object(sha256)
        remote = [h for h in wanted if h not in self.nodes]
        for sha256, data in zip(remote, parallel(self.fetch_object, remote), strict=True):
            self.nodes[sha256] = data
        return {h: self.nodes[h] for h in hashes}

    def fetch_object(self, sha256: str) -> bytes:
        data = self.fetch(keys.object_key(sha256), sha256)
        write_once(self.tree.object_path(sha256), data, staging=self.tree.staging)
        return data

    # -- the explorer and invalidations ---------------------------------------------------------

    def local_map(self, revision: int) -> str | None:
        try:
            return keys.sha256_of(read_file(os.fspath(stored.map_path(self.site, revision))))
        except FileNotFoundError:
            return None

    def explorer(
        self, publications: list[keys.Publication], head: int, local_map: str | None
    ) -> tuple[PageMap | None, bytes | None, dict[str, str], dict[str, str]]:
        """Fetch and place the explorer's new pages; return the new map (parsed and as bytes),
        the observation pages and the invalidations the publications list."""
        pages: dict[str, str] = {}
        invalidations: dict[str, str] = {}
        for publication in reversed(publications):  # oldest first: a newer entry wins
            pages |= publication.observation_pages
            invalidations |= publication.invalidations
        newest = publications[0] if publications else None
        page_map = map_bytes = None
        if newest is not None and newest.page_map is not None:
            map_bytes = read_map(self.store, newest.page_map)
            with self._count:
                self.fetched += 1
            page_map = PageMap.decode(map_bytes)
            if page_map.revision != head:
                raise TreeCorruptError(f"the store's map of revision {head} names another")
            known = set()
            if local_map is not None:
                known = {sha for _, sha in self.old_map().pages.values()}
            wanted = {sha for _, sha in page_map.pages.values()} - known
            needed = [s for s in sorted(wanted) if not stored.page_path(self.site, s).exists()]
            parallel(self.fetch_page, needed, self.store.threads)
        parallel(self.fetch_observation_page, sorted(pages.items()), self.store.threads)
        return page_map, map_bytes, pages, invalidations

    def old_map(self) -> PageMap:
        held = self.tree.published_revision() or 0
        return PageMap.decode(read_file(os.fspath(stored.map_path(self.site, held))))

    def fetch_page(self, sha256: str) -> None:
        data = self.fetch(keys.page_key(sha256), sha256)
        replace_durably(stored.page_path(self.site, sha256), data, staging=self.tree.staging)

    def fetch_observation_page(self, item: tuple[str, str]) -> None:
        name, sha256 = item
        path = stored.explorer_dir(self.site) / stored.OBSERVATION_PAGES / f"{name}.html"
        try:
            if keys.sha256_of(read_file(os.fspath(path))) == sha256:
                return
        except FileNotFoundError:
            pass
        data = self.fetch(keys.page_key(sha256), sha256)
        replace_durably(path, data, staging=self.tree.staging)

    def place_invalidations(self, invalidations: dict[str, str]) -> None:
        for revision, sha256 in sorted(invalidations.items()):
            path = self.site / layout.invalidations_path(revision)
            if not path.exists():
                data = self.fetch(keys.invalidations_key(int(revision)), sha256)
                write_once(path, data, staging=self.tree.staging)

    def sweep(self, head: int, page_map: PageMap | None, pages: dict[str, str]) -> None:
        """Once the pointer names ``head``: remove the maps and pages it does not serve, and
        the older versions of the observation pages just placed (as ``fxev build`` does)."""
        folder = stored.explorer_dir(self.site)
        if page_map is not None:
            keep = {f"{sha}.html" for _, sha in page_map.pages.values()}
            for entry, kept in ((stored.MAPS, {f"{head}.json"}), (stored.PAGES, keep)):
                try:
                    names = os.listdir(folder / entry)
                except FileNotFoundError:
                    continue
                for name in sorted(set(names) - kept):
                    (folder / entry / name).unlink(missing_ok=True)
        for observation_id in sorted({name.rsplit(".", 1)[0] for name in pages}):
            versions = [v for v, _ in self.tree.detail_versions(observation_id) if v <= head]
            for version in versions[:-1]:
                stored.observation_page_path(self.site, observation_id, version).unlink(
                    missing_ok=True
                )


def mark_all(paths: list[Path]) -> None:
    for path in paths:
        mark_durably(path)


def mirror(site: Path, store: ObjectStore) -> MirrorResult:
    return Mirror(site, store).run()


def to_stderr(line: str) -> None:
    """A warning line of a command that goes on (a mirror's failed poll, a publish's wait)."""
    print(line, file=sys.stderr, flush=True)


def served_revision(site: Path) -> int | None:
    """The revision the site's pointer names, or None (no pointer yet, or one not readable)."""
    try:
        return TreeReader(site).published_revision()
    except FxevError:
        return None


def follow(
    site: Path,
    store: ObjectStore,
    interval_s: float,
    emit: Callable[[dict[str, Any]], None],
    warn: Callable[[str], None] = to_stderr,
    rounds: int | None = None,
    report: Callable[[int], None] | None = None,
) -> None:
    """Mirror, then poll the store's pointer every ``interval_s`` and mirror what is new. A
    failure (the store down, a tampered key) is one line through ``warn``; the site keeps the
    revision it has, and the next poll tries again. Emits a result whenever the site moved (and
    after the first pass); ``rounds`` bounds the polls (tests), None: forever. ``report`` is
    told the site's revision after every poll once it has one, a failed poll's too: the site
    serves it still, and ``fxev publish`` names a mirror stuck behind
    (``builder.store.mirrors``)."""
    seen: bytes | None = None
    shown: int | None = None
    serving = served_revision(site)  # before the first pass, and while every pass fails
    done = 0
    while rounds is None or done < rounds:
        done += 1
        try:
            mirror_ = Mirror(site, store)
            raw = mirror_.pointer_bytes()
            if raw != seen:
                result = mirror_.run(raw)
                seen = raw
                serving = result.published_revision
                if result.fetched or result.published_revision != shown:
                    emit(result.to_json())
                    shown = result.published_revision
        except FxevError as error:
            warn(f"fxev: mirror: {error}")
        if report is not None and serving is not None:  # a failed poll too: live, and behind
            report(serving)
        if rounds is None or done < rounds:
            time.sleep(interval_s)
