"""What each page of the explorer shows at a revision, and its key (``builder.publish.explorer``
writes them): a :class:`Planner` makes one :class:`PageJob` per page of a revision's map (its
route, its key, how to draw it) and the pages of the observations a build wrote.

A page's key is a digest of exactly what it shows, taken from the tree's content hashes, so a
build draws only the pages whose key changed. The log's pages already full in the published map
are taken from it as they are (:func:`settled_log_pages`). It reads the tree and the registry's
typed read methods; it runs no SQL.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import orjson

from builder.core.errors import IntegrityError
from builder.publish.built import BuiltTree
from builder.registry.store import Registry
from builder.render.explorer import pages, views
from builder.render.explorer.views import key_of
from builder.tree.explorer import PageMap
from builder.tree.format import Node


@dataclasses.dataclass(frozen=True, slots=True)
class PageJob:
    route: str
    key: str
    draw: Callable[[], bytes]


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
