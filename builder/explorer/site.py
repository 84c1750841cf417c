"""Render the explorer for the published revision, redrawing only the pages whose inputs changed.

Every page has a *key*: a digest of exactly what it shows, taken from the published tree's own
content hashes (a year's node hash, an observation detail's hash, the revisions a log page
lists). ``explorer/manifest.json`` keeps the key each page was last drawn with; a build renders
a page only when its key differs, so an ordinary capture redraws the home page, one year, one
calendar, a few observations and the newest log page. A change of templates changes
``fingerprint`` and redraws everything. Pages are written under new names and renamed into
place; the manifest is written last, so it never names a page that was not written.

Layout under ``FXEV_SITE/explorer/`` (outside the per-revision tree):

    index.html                      home (with markers the gateway fills at request time)
    serie/<serie>/index.html        the series' years
    serie/<serie>/<year>.html       history of one year, SVG chart
    cobertura/<serie>/<year>.html   coverage calendar of one year
    observacion/<id>.html           one observation
    revisiones/<n>.html             revision log, page n (revisions 50(n-1)+1 .. 50n)
    revisiones/index.html           the newest log page
    manifest.json                   {"revision", "fingerprint", "keys": {path: key}}
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from builder import sitelock
from builder.durable import fsync_dir, replace_durably
from builder.explorer import pages
from builder.explorer.calendar import GAP_REASONS, year_calendar
from builder.explorer.chart import ChartPoint, year_chart
from builder.registry.records import TABLE_OF, Cotejo
from builder.registry.store import Registry
from builder.render import splice_item
from builder.tree import Tree

EXPLORER_DIR = "explorer"
MANIFEST = "manifest.json"
REVISIONS_PER_PAGE = 50
OBSERVATION_LINKS = 10
WRITER_THREADS = 8
MONEDA = "USD"


@dataclasses.dataclass(frozen=True, slots=True)
class Manifest:
    revision: int
    fingerprint: str
    keys: dict[str, str]

    @classmethod
    def empty(cls) -> Manifest:
        return cls(0, "", {})

    def encode(self) -> bytes:
        value = {"fingerprint": self.fingerprint, "keys": self.keys, "revision": self.revision}
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclasses.dataclass(frozen=True, slots=True)
class PageJob:
    path: str
    key: str
    draw: Callable[[], bytes]


@dataclasses.dataclass(frozen=True, slots=True)
class ExplorerResult:
    revision: int | None
    rendered: tuple[str, ...]


def write_file(path: Path, data: bytes, staging: Path) -> None:
    """``data`` at ``path`` through a fsynced temporary file in ``staging`` (where the next
    build sweeps what a killed one left, see ``builder.sitelock``) and an atomic rename; the
    caller fsyncs the folder."""
    replace_durably(path, data, staging=staging, sync_folder=False)


# -- pure helpers -------------------------------------------------------------------------------


def key_of(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


def revision_page_of(revision: int) -> int:
    return (revision - 1) // REVISIONS_PER_PAGE + 1


def revisions_in_page(number: int, published: int) -> range:
    first = (number - 1) * REVISIONS_PER_PAGE + 1
    return range(first, min(number * REVISIONS_PER_PAGE, published) + 1)


def stale(jobs: Iterable[PageJob], keys: dict[str, str]) -> list[PageJob]:
    """The jobs whose page was never drawn or was drawn from other inputs."""
    return [job for job in jobs if keys.get(job.path) != job.key]


def item_of(prefix: bytes) -> dict[str, Any]:
    """A stored rate item, decoded; valid at the latest revision, so not superseded."""
    return orjson.loads(splice_item(prefix, None))


def gaps_by_year(entry: dict[str, Any] | None) -> dict[str, list[dict[str, str]]]:
    result: dict[str, list[dict[str, str]]] = {}
    for gap in entry["huecos"] if entry else []:
        result.setdefault(gap["fecha"][:4], []).append(gap)
    return result


def gap_counts(gaps: list[dict[str, str]]) -> dict[str, int]:
    return {reason: sum(1 for g in gaps if g["motivo"] == reason) for reason in GAP_REASONS}


# -- the renderer -------------------------------------------------------------------------------


class ExplorerRenderer:
    def __init__(self, tree: Tree, registry: Registry) -> None:
        self.tree = tree
        self.registry = registry
        self.folder = tree.site / EXPLORER_DIR
        self.staging = sitelock.staging_dir(tree.site)

    def manifest(self) -> Manifest:
        try:
            value = orjson.loads((self.folder / MANIFEST).read_bytes())
        except FileNotFoundError:
            return Manifest.empty()
        return Manifest(value["revision"], value["fingerprint"], value["keys"])

    def render(self) -> ExplorerResult:
        """Bring the explorer up to the published revision; a no-op when it already is."""
        revision = self.tree.published_revision()
        if revision is None:
            return ExplorerResult(None, ())
        fingerprint = pages.template_fingerprint()
        manifest = self.manifest()
        if manifest.fingerprint != fingerprint:
            manifest = Manifest.empty()
        if manifest.revision == revision:
            return ExplorerResult(revision, ())
        keyed = stale(self.jobs(manifest.revision, revision), manifest.keys)
        # Observation pages are as many as observations: keeping their keys would make the
        # manifest grow with history. The tree already says which details changed since the
        # manifest's revision, and only those are drawn (again, after a killed render).
        observations = self.observation_jobs(manifest.revision, revision)
        written = self.write([(job.path, job.draw()) for job in [*keyed, *observations]])
        keys = manifest.keys | {job.path: job.key for job in keyed}
        manifest_bytes = Manifest(revision, fingerprint, keys).encode()
        replace_durably(self.folder / MANIFEST, manifest_bytes, staging=self.staging)
        return ExplorerResult(revision, tuple(written))

    def write(self, files: list[tuple[str, bytes]]) -> list[str]:
        """Each file under a new name, fsynced, renamed into place; each folder fsynced once.

        The fsyncs run on a few threads: a first render writes thousands of pages, and the
        file system commits concurrent fsyncs together.
        """
        folders = {(self.folder / relative).parent for relative, _ in files}
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir(parents=True, exist_ok=True)

        def put(item: tuple[str, bytes]) -> None:
            write_file(self.folder / item[0], item[1], self.staging)

        if len(files) <= WRITER_THREADS:  # an ordinary build: starting threads costs more
            for item in files:
                put(item)
        else:
            with ThreadPoolExecutor(max_workers=WRITER_THREADS) as pool:
                list(pool.map(put, files))
        for folder in sorted(folders):
            fsync_dir(folder)
        return [relative for relative, _ in files]

    # -- what each page shows, and its key ----------------------------------------------------

    def jobs(self, since: int, revision: int) -> list[PageJob]:
        root = self.tree.root(revision)
        coverage = {entry["serie"]: entry for entry in self.tree.coverage(revision)}
        jobs: list[PageJob] = []
        years: dict[str, tuple[str, ...]] = {}
        for serie in root.served:
            top = self.tree.series_top(serie, revision)
            if top is None:
                continue
            years[serie] = top.keys
            jobs.extend(
                self.series_jobs(serie, revision, top.keys, top.hashes, coverage.get(serie))
            )
        jobs.append(self.home_job(revision, root.ts_commit, years, coverage))
        jobs.extend(self.revision_jobs(since, revision))
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
            ref = self.tree.latest(serie, revision)
            if ref is not None:
                latest.append(pages.LatestValue(serie, item_of(ref.prefix)))
        page = pages.HomePage(
            revision,
            ts_commit,
            tuple(latest),
            tuple(coverage[s] for s in years if s in coverage),
            years,
        )
        return PageJob("index.html", key_of("home", revision), lambda: pages.home_page(page))

    def series_jobs(
        self,
        serie: str,
        revision: int,
        year_keys: tuple[str, ...],
        year_hashes: tuple[str, ...],
        entry: dict[str, Any] | None,
    ) -> list[PageJob]:
        gaps = gaps_by_year(entry)
        summaries = []
        jobs = []
        for index, (year, year_hash) in enumerate(zip(year_keys, year_hashes, strict=True)):
            previous_year = year_keys[index - 1] if index else None
            next_year = year_keys[index + 1] if index + 1 < len(year_keys) else None
            count = self.tree.node(year_hash).total
            summaries.append(pages.YearSummary(year, count, gap_counts(gaps.get(year, []))))
            jobs.append(
                PageJob(
                    f"serie/{serie}/{year}.html",
                    key_of("year", year_hash, previous_year, next_year),
                    self.year_drawer(serie, year, revision, previous_year, next_year),
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
                        key_of("calendar", year_hash, gaps.get(year, []), bounds),
                        self.calendar_drawer(serie, year, revision, entry, gaps.get(year, [])),
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

    def year_items(self, serie: str, year: str, revision: int) -> list[dict[str, Any]]:
        page = self.tree.rates(serie, f"{year}-01-01", f"{year}-12-31", revision, 0, 400)
        return [item_of(ref.prefix) for ref in page.items]

    def year_drawer(
        self, serie: str, year: str, revision: int, previous: str | None, following: str | None
    ) -> Callable[[], bytes]:
        def draw() -> bytes:
            items = self.year_items(serie, year, revision)
            points = [
                ChartPoint(
                    date.fromisoformat(i["fecha_serie"]), Decimal(i["compra"]), Decimal(i["venta"])
                )
                for i in items
            ]
            chart = year_chart(f"USD/PEN {serie} {year}: compra y venta", int(year), points)
            page = pages.YearPage(serie, year, tuple(items), chart, previous, following)
            return pages.year_page(page)

        return draw

    def calendar_drawer(
        self,
        serie: str,
        year: str,
        revision: int,
        entry: dict[str, Any],
        gaps: list[dict[str, str]],
    ) -> Callable[[], bytes]:
        def draw() -> bytes:
            with_data = [
                date.fromisoformat(i["fecha_serie"]) for i in self.year_items(serie, year, revision)
            ]
            calendar = year_calendar(
                int(year),
                with_data,
                {date.fromisoformat(g["fecha"]): g["motivo"] for g in gaps},
                date.fromisoformat(entry["primera"]),
                date.fromisoformat(entry["ultima"]),
            )
            page = pages.CalendarPage(serie, calendar, entry["criterio_huecos"])
            return pages.calendar_page(page)

        return draw

    # -- observations -------------------------------------------------------------------------

    def changed_observations(self, since: int, revision: int) -> set[str]:
        """Observations whose detail may differ between ``since`` and ``revision``."""
        if since == 0:
            rows = self.registry.conn.execute(
                "SELECT id FROM observations WHERE revision_creada <= ?", (revision,)
            )
            return {row[0] for row in rows}
        cotejos = TABLE_OF[Cotejo]
        ids: set[str] = set()
        for number in range(since + 1, revision + 1):
            ids |= {o.id for o in self.registry.observations_of_revision(number)}
            ids |= {
                e.observacion_id
                for e in self.registry.events_of_revision(number)
                if e.observacion_id
            }
            ids |= {c.observacion_id for c in self.registry.rows_touched(cotejos, number)}
        chained = set(ids)
        for observation_id in ids:
            observation = self.registry.observation(observation_id)
            if observation is None:
                continue
            ancestors, successors = self.registry.chain_at(observation, revision)
            chained |= {member.id for member in [*ancestors, *successors]}
        return chained

    def observation_jobs(self, since: int, revision: int) -> list[PageJob]:
        jobs = []
        for observation_id in sorted(self.changed_observations(since, revision)):
            prefix = self.tree.detail(observation_id, revision)
            if prefix is None:
                continue
            jobs.append(
                PageJob(
                    f"observacion/{observation_id}.html",
                    key_of("observation", hashlib.sha256(prefix).hexdigest()),
                    self.observation_drawer(prefix, revision),
                )
            )
        return jobs

    def observation_drawer(self, prefix: bytes, revision: int) -> Callable[[], bytes]:
        def draw() -> bytes:
            detail = orjson.loads(prefix + b"}")
            evidence_ids = {detail["observacion"]["evidencia_id"]}
            evidence_ids |= {e["evidencia_id"] for e in detail["eventos"] if e["evidencia_id"]}
            evidence = {}
            for evidence_id in sorted(evidence_ids):
                meta = self.tree.evidence_meta(evidence_id, revision)
                if meta is not None:
                    evidence[evidence_id] = meta
            return pages.observation_page(pages.ObservationPage(detail, evidence))

        return draw

    # -- the revision log ---------------------------------------------------------------------

    def revision_jobs(self, since: int, revision: int) -> list[PageJob]:
        first = revision_page_of(max(since, 1))
        last = revision_page_of(revision)
        jobs = []
        for number in range(first, last + 1):
            numbers = revisions_in_page(number, revision)
            has_newer = number < last
            key = key_of("revisions", numbers.start, numbers.stop, has_newer)
            draw = functools.cache(self.revisions_drawer(number, numbers, has_newer))
            jobs.append(PageJob(f"revisiones/{number}.html", key, draw))
            if number == last:
                jobs.append(PageJob("revisiones/index.html", key, draw))
        return jobs

    def revisions_drawer(self, number: int, numbers: range, has_newer: bool) -> Callable[[], bytes]:
        def draw() -> bytes:
            entries = [self.revision_entry(n) for n in reversed(numbers)]
            return pages.revisions_page(pages.RevisionsPage(number, has_newer, tuple(entries)))

        return draw

    def revision_entry(self, number: int) -> pages.RevisionEntry:
        meta = self.registry.revision(number)
        if meta is None:
            raise RuntimeError(f"registry has no revision {number}")
        shown, total = observations_created(self.registry, number, OBSERVATION_LINKS)
        return pages.RevisionEntry(
            number,
            meta.ts_commit,
            meta.kind,
            meta.summary,
            shown,
            total - len(shown),
            failures_recorded(self.registry, number),
        )


def observations_created(
    registry: Registry, revision: int, limit: int
) -> tuple[tuple[dict[str, str], ...], int]:
    """The last ``limit`` observations ``revision`` created (by series and date), and how many
    it created: an import creates thousands, and the log shows a few."""
    conn = registry.conn
    total = conn.execute(
        "SELECT count(*) FROM observations WHERE revision_creada = ?", (revision,)
    ).fetchone()[0]
    rows = conn.execute(
        "SELECT id, serie, fecha_serie FROM observations WHERE revision_creada = ?"
        " ORDER BY serie DESC, fecha_serie DESC LIMIT ?",
        (revision, limit),
    ).fetchall()
    shown = tuple({"id": row[0], "serie": row[1], "fecha_serie": row[2]} for row in reversed(rows))
    return shown, total


def failures_recorded(registry: Registry, revision: int) -> tuple[dict[str, Any], ...]:
    """Events of ``revision`` tied to no observation (failed captures), in order."""
    rows = registry.conn.execute(
        "SELECT tipo, fecha_serie, evidencia_id FROM events"
        " WHERE revision = ? AND observacion_id IS NULL ORDER BY seq",
        (revision,),
    ).fetchall()
    return tuple({"tipo": r[0], "fecha_serie": r[1], "evidencia_id": r[2]} for r in rows)


def render_explorer(tree: Tree, registry: Registry) -> ExplorerResult:
    """The one call the build makes after switching the published pointer."""
    return ExplorerRenderer(tree, registry).render()
