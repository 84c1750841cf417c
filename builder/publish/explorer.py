"""The explorer as part of the publish: its pages for revision N are in place before the pointer
says N, and are reached through N, so the pointer's one atomic rename switches both.

**Design.** The pages that show the state of a revision (the home, a series, its years and
calendars, the revision log) are content-addressed (``explorer/pages/<sha256>.html``) and listed
in a page map per revision, ``explorer/maps/<N>.json`` (layout: ``builder.tree.explorer``). The
gateway serves the map of the revision the pointer names, so until the rename it serves N - 1's
pages, after it N's, never a mixture: a map is the explorer's own pointer, selected by the
published one. Observation pages are as many as observations: no map lists them. There is one
per version of an observation's detail (``explorer/observaciones/<id>.<R>.html``, the tree's
marker ``observations/<id>/<R>-<hex>``); a version never changes, and the gateway serves the
version the API serves at the published revision. So a build writes, in order: the map, the
changed pages, the new details' pages; then the pointer; then ``sweep`` removes what the new map
no longer names (a reader that misses a page asks the pointer again). A killed build leaves the
published map and its pages untouched, and its own map, by which the next one finds and sweeps
its leftovers.

**Incremental.** Every page of a map has a *key*, a digest of exactly what it shows, taken from
the tree's content hashes (a year's node hash, the revisions a log page lists). A build starts
from the published map and draws only the pages whose key changed, plus the pages of the details
written by the revisions it publishes (in their records): an ordinary capture draws the home,
one year, one calendar, the newest log page and a few observations. A map without the current
templates' ``fingerprint`` is not reused: everything is drawn again.

The explorer reads the tree (at a revision the build wrote, before it is published, so through
the builder's own records) and the registry's typed read methods; it runs no SQL.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from builder.disk import faults
from builder.disk.durable import fsync_dir, replace_durably
from builder.publish.built import BuiltTree
from builder.publish.explorerplan import PageJob, Planner, layout_fingerprint, settled_log_pages
from builder.publish.writer import TreeWriter
from builder.registry.store import Registry
from builder.tree import explorer as stored
from builder.tree import layout
from builder.tree.explorer import ExplorerReader, PageMap

WRITER_THREADS = 8


@dataclasses.dataclass(frozen=True, slots=True)
class ExplorerResult:
    revision: int | None
    rendered: tuple[str, ...]  # routes drawn: a map's, ``observacion/<id>.html``
    observations: tuple[str, ...] = ()  # ids whose observation page got a new version
    # The map written, which ``sweep`` then needs not read back (a large map at a long history),
    # and the published one it was drawn from, whose pages ``sweep`` removes when the new map no
    # longer names them; None for a first render or a new layout.
    page_map: PageMap | None = dataclasses.field(default=None, repr=False, compare=False)
    base: PageMap | None = dataclasses.field(default=None, repr=False, compare=False)


# -- writing and sweeping -------------------------------------------------------------------------


class ExplorerWriter:
    def __init__(self, tree: TreeWriter, registry: Registry) -> None:
        self.tree = tree
        self.registry = registry
        self.site = tree.site
        self.folder = stored.explorer_dir(tree.site)
        self.staging = layout.staging_dir(tree.site)
        self.reader = ExplorerReader(tree)

    def prepare(self, revision: int) -> ExplorerResult:
        """Write the explorer of ``revision`` (written to the tree, published or not yet): its
        changed pages, its new observation pages, then its map. A no-op when the published map
        is ``revision``'s, drawn with the current templates."""
        fingerprint = layout_fingerprint()
        published = self.tree.published_revision()
        base = None if published is None else self.reader.page_map(published)
        if base is None or base.fingerprint != fingerprint or base.revision > revision:
            base = PageMap(0, fingerprint, {})
        elif base.revision == revision:
            return ExplorerResult(revision, ())
        planner = Planner(BuiltTree(self.tree), self.registry)
        settled = settled_log_pages(base)
        jobs = planner.jobs(revision, len(settled) + 1)
        stale = [job for job in jobs if base.pages.get(job.route, ("",))[0] != job.key]
        entries = settled | {
            job.route: base.pages[job.route] for job in jobs if job.route in base.pages
        }
        drawn = self.draw_pages(stale)
        entries |= {route: (key, digest) for route, (key, digest, _) in drawn.items()}
        page_map = PageMap(revision, fingerprint, dict(sorted(entries.items())))
        # The map before the pages it names (it is served only once the pointer names it): a
        # build killed from here on leaves a map that is neither the published one nor its
        # base, which tells the next sweep to list the folder for what it left (``sweep``).
        replace_durably(
            stored.map_path(self.site, revision), page_map.encode(), staging=self.staging
        )
        faults.crash_point("build_explorer_map")
        files = {stored.page_path(self.site, digest): data for _, digest, data in drawn.values()}
        self.write_files([(path, data) for path, data in files.items() if not path.exists()])
        observations = planner.observation_pages(base.revision, revision)
        self.write_files(
            [
                (
                    stored.observation_page_path(self.site, observation_id, version),
                    planner.draw_observation(prefix),
                )
                for observation_id, version, prefix in observations
            ]
        )
        rendered = [job.route for job in stale]
        rendered += [f"observacion/{observation_id}.html" for observation_id, _, _ in observations]
        return ExplorerResult(
            revision,
            tuple(rendered),
            tuple(observation_id for observation_id, _, _ in observations),
            page_map,
            base if base.revision else None,
        )

    @staticmethod
    def draw_pages(jobs: list[PageJob]) -> dict[str, tuple[str, str, bytes]]:
        """Each page drawn, by route: its key, its SHA-256 (its name under ``pages/``), its
        bytes. A page already there is left as it is: renamed into place whole, it is
        complete."""
        drawn = {}
        for job in jobs:
            data = job.draw()
            drawn[job.route] = (job.key, hashlib.sha256(data).hexdigest(), data)
        return drawn

    def write_files(self, files: list[tuple[Path, bytes]]) -> None:
        """Each file under a new name in ``staging/``, fsynced, renamed into place; each folder
        fsynced once. On a few threads when there are many: a first render writes thousands of
        pages, and the file system commits concurrent fsyncs together."""
        if not files:
            return
        folders = {path.parent for path, _ in files}
        for folder in sorted(folders - {f for f in folders if f.is_dir()}):
            folder.mkdir(parents=True, exist_ok=True)  # a first build: its entry made durable too
            fsync_dir(folder.parent)
        self.staging.mkdir(parents=True, exist_ok=True)

        def put(item: tuple[Path, bytes]) -> None:
            replace_durably(item[0], item[1], staging=self.staging, sync_folder=False)

        if len(files) <= WRITER_THREADS:  # an ordinary build: starting threads costs more
            for item in files:
                put(item)
        else:
            with ThreadPoolExecutor(max_workers=WRITER_THREADS) as pool:
                list(pool.map(put, files))
        for folder in sorted(folders):
            fsync_dir(folder)

    def sweep(self, drawn: ExplorerResult | None = None) -> list[str]:
        """Remove what the published map does not name: the previous revision's map and pages
        once the pointer has moved, a killed build's leftovers, an older layout; and the older
        versions of the observation pages ``drawn`` wrote, which the published revision no
        longer serves (work in the observations drawn, not in all of them). Call under the site
        lock, never between a ``prepare`` and the pointer's switch.

        After an ordinary build (``drawn`` published, drawn from the map published before it,
        and no other map left) the pages to remove are those its base names and it does not:
        no listing of ``pages/``, which holds every page of a long revision log. Anything else
        (a first render, a new layout, a map a killed build left, which ``prepare`` writes
        before any page) lists the folders and removes whatever the map does not name."""
        published = self.tree.published_revision()
        if published is None:
            return []
        current = drawn.page_map if drawn is not None else None
        if current is None or current.revision != published:
            current = self.reader.page_map(published)
        if current is None:
            return []
        removed = self.sweep_observations(drawn.observations if drawn else (), published)
        base = drawn.base if drawn is not None and drawn.page_map is current else None
        maps = _names(self.folder / stored.MAPS)
        ordinary = maps <= {f"{published}.json", f"{base.revision}.json"} if base else False
        if ordinary and _names(self.folder) <= set(stored.ENTRIES):
            return removed + self.sweep_base(base, current)
        keep = {
            stored.MAPS: {f"{published}.json"},
            stored.PAGES: {f"{digest}.html" for _, digest in current.pages.values()},
        }
        for entry in sorted(_names(self.folder)):
            path = self.folder / entry
            if entry not in stored.ENTRIES:  # not this layout's: an earlier explorer's pages
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
                removed.append(entry)
            elif entry in keep:
                names = maps if entry == stored.MAPS else _names(path)
                for name in sorted(names - keep[entry]):
                    (path / name).unlink(missing_ok=True)
                    removed.append(f"{entry}/{name}")
        return removed

    def sweep_base(self, base: PageMap, current: PageMap) -> list[str]:
        """The base's map, and the pages it names that ``current`` does not."""
        named = {digest for _, digest in current.pages.values()}
        gone = sorted({digest for _, digest in base.pages.values()} - named)
        removed = []
        for name in [f"{stored.MAPS}/{base.revision}.json"] + [
            f"{stored.PAGES}/{digest}.html" for digest in gone
        ]:
            (self.folder / name).unlink(missing_ok=True)
            removed.append(name)
        return removed

    def sweep_observations(self, observation_ids: tuple[str, ...], published: int) -> list[str]:
        removed = []
        for observation_id in sorted(set(observation_ids)):
            versions = [v for v, _ in self.tree.detail_versions(observation_id) if v <= published]
            for version in versions[:-1]:
                path = stored.observation_page_path(self.site, observation_id, version)
                if path.exists():
                    path.unlink()
                    removed.append(os.fspath(path.relative_to(self.folder)))
        return removed


def _names(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except FileNotFoundError:
        return set()
