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
import functools
import hashlib
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from builder.core.errors import IntegrityError
from builder.disk import faults
from builder.disk.durable import fsync_dir, replace_durably
from builder.publish.built import BuiltTree
from builder.publish.writer import TreeWriter
from builder.registry.store import Registry
from builder.render.explorer import pages, views
from builder.render.explorer.views import key_of
from builder.tree import explorer as stored
from builder.tree import layout
from builder.tree.explorer import ExplorerReader, PageMap
from builder.tree.format import Node

WRITER_THREADS = 8


@dataclasses.dataclass(frozen=True, slots=True)
class PageJob:
    route: str
    key: str
    draw: Callable[[], bytes]


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


def drawn_later(
    page: Callable[..., bytes], serie: str, year: str, read: Callable[[], list[bytes]], *rest: Any
) -> Callable[[], bytes]:
    """One of a year's pages, drawn when called from the year's items, read then."""
    return lambda: page(serie, year, read(), *rest)


# -- what each page of a revision shows, and its key --------------------------------------------


class Planner:
    def __init__(self, view: BuiltTree, registry: Registry) -> None:
        self.view = view
        self.registry = registry

    def jobs(self, revision: int, first_log_page: int = 1) -> list[PageJob]:
        """Every page of the map of ``revision`` (drawn only when its key is new), but the log's
        pages before ``first_log_page``, settled in the map it starts from."""
        root = self.view.root(revision)
        coverage = {entry["serie"]: entry for entry in self.view.coverage(revision)}
        jobs: list[PageJob] = []
        years: dict[str, tuple[str, ...]] = {}
        for serie in root.served:
            top = self.view.series_top(serie, revision)
            if top is None:
                continue
            years[serie] = top.keys
            jobs.extend(self.series_jobs(serie, top, coverage.get(serie)))
        jobs.append(self.home_job(revision, root.ts_commit, years, coverage))
        jobs.extend(self.revision_jobs(revision, first_log_page))
        return jobs

    def home_job(
        self,
        revision: int,
        ts_commit: str,
        years: dict[str, tuple[str, ...]],
        coverage: dict[str, dict[str, Any]],
    ) -> PageJob:
        latest = []
        for serie in years:
            prefix = self.view.latest(serie, revision)
            if prefix is not None:
                latest.append(pages.LatestValue(serie, views.item_of(prefix)))
        page = pages.HomePage(
            revision,
            ts_commit,
            tuple(latest),
            tuple(coverage[s] for s in years if s in coverage),
            years,
        )
        return PageJob("index.html", key_of("home", revision), lambda: pages.home_page(page))

    def series_jobs(self, serie: str, top: Node, entry: dict[str, Any] | None) -> list[PageJob]:
        gaps = views.gaps_by_year(entry)
        summaries = []
        jobs = []
        for index, (year, year_hash) in enumerate(zip(top.keys, top.hashes, strict=True)):
            previous = top.keys[index - 1] if index else None
            following = top.keys[index + 1] if index + 1 < len(top.keys) else None
            year_gaps = gaps.get(year, [])
            count = self.view.tree.node(year_hash).total
            summaries.append(pages.YearSummary(year, count, views.gap_counts(year_gaps)))
            read = functools.cache(functools.partial(self.view.year_prefixes, year_hash))
            jobs.append(
                PageJob(
                    f"serie/{serie}/{year}.html",
                    key_of("year", year_hash, previous, following),
                    drawn_later(views.year_page, serie, year, read, previous, following),
                )
            )
            if entry is not None:
                bounds = (
                    max(entry["primera"], f"{year}-01-01"),
                    min(entry["ultima"], f"{year}-12-31"),
                )
                jobs.append(
                    PageJob(
                        f"cobertura/{serie}/{year}.html",
                        key_of("calendar", year_hash, year_gaps, bounds),
                        drawn_later(views.calendar_page, serie, year, read, entry, year_gaps),
                    )
                )
        series_page = pages.SeriesPage(serie, entry, tuple(summaries))
        jobs.append(
            PageJob(
                f"serie/{serie}/index.html",
                key_of("series", series_page),  # orjson encodes the dataclass as it is
                lambda: pages.series_page(series_page),
            )
        )
        return jobs

    # -- the revision log ---------------------------------------------------------------------

    def revision_jobs(self, revision: int, first: int = 1) -> list[PageJob]:
        """The log's pages from ``first``; a key is what a page lists, so only the newest ones get
        new keys."""
        last = views.revision_page_of(revision)
        jobs = []
        for number in range(first, last + 1):
            numbers = views.revisions_in_page(number, revision)
            has_newer = number < last
            key = key_of("revisions", numbers.start, numbers.stop, has_newer)
            draw = functools.partial(self.draw_revisions, number, numbers, has_newer)
            if number == last:  # drawn once for both of its routes
                draw = functools.cache(draw)
                jobs.append(PageJob("revisiones/index.html", key, draw))
            jobs.append(PageJob(f"revisiones/{number}.html", key, draw))
        return jobs

    def draw_revisions(self, number: int, numbers: range, has_newer: bool) -> bytes:
        entries = [self.revision_entry(n) for n in reversed(numbers)]
        return pages.revisions_page(pages.RevisionsPage(number, has_newer, tuple(entries)))

    def revision_entry(self, number: int) -> pages.RevisionEntry:
        meta = self.registry.revision(number)
        if meta is None:
            raise IntegrityError(f"registry has no revision {number}")
        return views.revision_entry(
            meta,
            self.registry.last_observations_created(number, views.OBSERVATION_LINKS),
            self.registry.count_observations_created(number),
            self.registry.failures_of_revision(number),
        )

    # -- observations -------------------------------------------------------------------------

    def observation_pages(self, since: int, revision: int) -> list[tuple[str, int, bytes]]:
        """(id, version, detail prefix) of every detail the revisions after ``since`` wrote."""
        found = []
        for number in range(since + 1, revision + 1):
            details = self.view.record(number).details
            found.extend(
                (observation_id, number, details[observation_id])
                for observation_id in sorted(details)
            )
        return found

    def draw_observation(self, prefix: bytes) -> bytes:
        detail = orjson.loads(prefix + b"}")
        evidence = {}
        for evidence_id in views.evidence_ids(detail):
            meta = self.view.evidence_meta(evidence_id)
            if meta is not None:
                evidence[evidence_id] = meta
        return pages.observation_page(pages.ObservationPage(detail, evidence))


def layout_fingerprint() -> str:
    """The templates' fingerprint and the log's page size: a map made with other ones is not
    reused (its full log pages would list other revisions)."""
    return key_of("layout", pages.template_fingerprint(), views.REVISIONS_PER_PAGE)


def settled_log_pages(base: PageMap) -> dict[str, tuple[str, str]]:
    """The entries of ``base`` for the log's pages that were already full at its revision, from
    the first on while ``base`` has them. What such a page lists can no longer change, and its
    key says only that (:meth:`Planner.revision_jobs`): a later map takes the entry as it is,
    so a build does not make a job per page of a long log."""
    settled = {}
    for number in range(1, views.revision_page_of(base.revision) if base.revision else 1):
        route = f"revisiones/{number}.html"
        entry = base.pages.get(route)
        if entry is None:
            break
        settled[route] = entry
    return settled


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


def render_explorer(tree: TreeWriter, registry: Registry) -> ExplorerResult:
    """Bring the explorer up to the published revision (a no-op when it is) and sweep."""
    revision = tree.published_revision()
    if revision is None:
        return ExplorerResult(None, ())
    writer = ExplorerWriter(tree, registry)
    result = writer.prepare(revision)
    writer.sweep(result)
    return result
