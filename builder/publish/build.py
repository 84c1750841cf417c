"""``fxev build``: render every revision not yet published, then switch the pointer atomically.

Each revision is rendered from the previous revision's root plus what the revision wrote: only
the months, observations and lists it touched are re-encoded; everything else is shared by hash.
Every file is written once under a new name and fsynced; the revision's record (its root, links to
earlier records, its evidence metadata and new details) is appended last to the revision packs,
so its index entry means the revision is complete. The explorer's pages for the new head are
written next (``builder.publish.explorer``: found through the revision's number, so the same
switch publishes them). With a ``LogSigner``, the transparency log's leaves of the new revisions
are made from the registry first, before anything is rendered, and checked to extend what the key
signed before (``builder.publish.log``: refused otherwise, leaving the site as it was); once the
revisions are rendered, they are appended and the head's checkpoint signed. The rows read for a
leaf are kept for the rendering of its revision (:data:`ROWS_KEPT` revisions at most), so that
an incremental build reads them once. The ``PUBLISHED`` pointer is replaced by an atomic
rename and its folder fsynced; last, the explorer pages that only the previous revision served
are removed.

A tree belongs to one registry (``docs/operating/tree.md#owner``): every record and the pointer
carry the registry's id, and a build over a tree of another registry (or of none: built before
ids) is refused (a ``Conflict``). ``build(rebuild=True)`` renders a fresh tree beside the site
and exchanges the two folders atomically (``builder.publish.swap``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

from builder.core.errors import IntegrityError
from builder.core.vocabulary import ALWAYS_SERVED, CURRENCY, FAILURE_TYPES, cache_tag
from builder.disk import faults
from builder.disk.blobs import BlobStore
from builder.publish import sitelock, swap
from builder.publish.explorer import ExplorerWriter
from builder.publish.leaves import Rows, leaf_of, revision_leaf, revision_rows
from builder.publish.log import LogSigner, LogWriter
from builder.publish.writer import TreeWriter, check_site_owner
from builder.registry.records import (
    Annotation,
    Cotejo,
    Event,
    Evidence,
    ManifestEntry,
    Observation,
    Revision,
    SeriesSwitch,
)
from builder.registry.store import Registry
from builder.render import api as render
from builder.tlog.leaf import Leaf
from builder.tree.format import EMPTY_CHUNK, EMPTY_NODE, Node
from builder.tree.revision import EvidenceMeta, RevisionRecord, RevisionRoot, SeriesRoot

ROWS_KEPT = 256  # revisions whose rows, read for their leaves, wait for their rendering


@dataclasses.dataclass(frozen=True, slots=True)
class BuildResult:
    published_revision: int | None
    built: tuple[int, ...]
    invalidated_tags: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "published_revision": self.published_revision,
            "built_revisions": len(self.built),
            "first_built": self.built[0] if self.built else None,
            "invalidated_tags": list(self.invalidated_tags),
        }


class Builder:
    def __init__(
        self,
        registry: Registry,
        blobs: BlobStore,
        tree: TreeWriter,
        log: LogSigner | None = None,
    ) -> None:
        self.registry = registry
        self.blobs = blobs
        self.tree = tree
        self.registry_id = registry.registry_id()
        self.log = log  # None: no transparency log (tests of the tree alone)
        self.rows: dict[int, tuple[Revision, Rows]] = {}  # read for leaves, to be rendered

    def build(self, rebuild: bool = False) -> BuildResult:
        """Build under the site's exclusive lock, after sweeping what killed builds left; with
        ``rebuild``, render a fresh tree and swap it in, whatever registry the site's was of."""
        if rebuild:
            swap.check_beside(self.tree.site.resolve())  # before the lock's file is made
        else:
            self.check_owner()  # a site of another registry is left untouched, lock file too
        with sitelock.exclusive(self.tree.site):
            sitelock.sweep_leftovers(self.tree.site)
            if rebuild:
                return self._rebuild_locked()
            swap.sweep(self.tree.site.resolve())  # what a killed rebuild left beside the site
            self.check_owner()  # again: a rebuild may have swapped the site in meanwhile
            return self._build_locked()

    def check_key(self) -> None:
        """Refuse a home whose log key (or origin) is not the one the tree's log is signed with
        (:meth:`builder.publish.log.LogWriter.check_key`), as the build would."""
        if self.log is not None:
            LogWriter(self.tree, self.log).check_key(self.registry.registry_id())

    def check_owner(self) -> None:
        """Refuse a site whose tree was rendered from another registry than this one."""
        self.registry_id = self.registry.registry_id()
        check_site_owner(self.tree, self.registry_id, self.registry.path)

    def _rebuild_locked(self) -> BuildResult:
        """A fresh tree of this registry beside the site, then the two folders exchanged."""
        site = self.tree.site.resolve()
        fresh = swap.prepare(site)
        log = None if self.log is None else dataclasses.replace(self.log, replaced=site)
        fresh_builder = Builder(self.registry, self.blobs, TreeWriter(fresh), log)
        try:
            result = fresh_builder._build_locked()
        except BaseException:
            swap.remove(fresh)  # a failed rebuild (a full disk) leaves no half tree behind
            raise
        old = swap.exchange(fresh, site)
        self.tree.forget()
        swap.remove(old)
        return result

    def _build_locked(self) -> BuildResult:
        self.registry_id = self.registry.registry_id()
        head = self.registry.head()
        published = self.tree.published_revision()
        if head is None:
            return BuildResult(published, (), ())
        done = published or 0
        while self.tree.has_root(
            done + 1
        ):  # completed by a build that was killed before publishing
            done += 1
        if done == 0:
            previous = RevisionRoot.empty()
        elif done == published:
            previous = self.tree.root(done)
        else:
            previous = self.tree.built_root(done)
        log = LogWriter(self.tree, self.log) if self.log is not None else None
        if log is not None:
            log.check_key(self.registry_id)
            self.registry.row_check = log.row_check(
                published or 0, lambda number: revision_leaf(self.registry, number)
            )
        try:
            return self._render_and_publish(head, published, done, previous, log)
        finally:
            self.registry.row_check = None
            self.rows.clear()  # those of revisions a failed build did not render

    def _render_and_publish(
        self,
        head: Revision,
        published: int | None,
        done: int,
        previous: RevisionRoot,
        log: LogWriter | None,
    ) -> BuildResult:
        extension = None
        if log is not None:  # the log's leaves, checked before anything is rendered

            def leaf(number: int) -> Leaf:  # the rows of a revision to render kept for it
                return self.leaf(number, keep_rows=number > done)

            extension = log.prepare(head.revision, published or 0, self.registry_id, leaf)
        built: list[int] = []
        tags: set[str] = set()
        for number in range(done + 1, head.revision + 1):
            previous, new_tags = self.build_revision(number, previous, published or 0)
            tags |= new_tags
            built.append(number)
            faults.crash_point("build_after_revision")
        # Tags of revisions rendered by a killed build are not known here: recompute them.
        for number in range((published or 0) + 1, done + 1):
            tags |= self.correction_tags(number)
        # The explorer's pages for the head, reached through its number: in place before the
        # pointer names it, swept of the previous revision's once it does.
        explorer = ExplorerWriter(self.tree, self.registry)
        drawn = explorer.prepare(head.revision)
        # The log's tiles and the checkpoint of the head: in place before the pointer names it.
        signed = False
        if log is not None and extension is not None:
            log.commit(extension)
            signed = True
        if head.revision != published:
            faults.crash_point("build_before_pointer")
            self.tree.publish(head.revision, sorted(tags))
            faults.crash_point("build_after_pointer")
        if log is not None and (signed or head.revision != published):
            log.finish(head.revision, published or 0)
        elif log is not None:
            log.catch_up(head.revision)  # a build killed between the pointer and finish
        explorer.sweep(drawn)
        return BuildResult(head.revision, tuple(built), tuple(sorted(tags)))

    # -- one revision ----------------------------------------------------------------------

    def build_revision(
        self, number: int, previous: RevisionRoot, published: int
    ) -> tuple[RevisionRoot, set[str]]:
        registry = self.registry
        kept = self.rows.pop(number, None)
        meta, touched = kept if kept is not None else revision_rows(registry, number)
        evidence: list[Evidence] = touched["evidence"]
        observations: list[Observation] = touched["observations"]
        events: list[Event] = touched["events"]
        cotejos: list[Cotejo] = touched["cotejos"]
        annotations: list[Annotation] = touched["annotations"]
        manifest: list[ManifestEntry] = touched["manifest_entries"]
        switches: list[SeriesSwitch] = touched["series_switches"]

        evidence_meta = {record.id: self.render_evidence(record, number) for record in evidence}

        changed_ids = {o.id for o in observations}
        changed_ids |= {e.observacion_id for e in events if e.observacion_id}
        changed_ids |= {c.observacion_id for c in cotejos}
        rendered, details = self.render_details(changed_ids, number)

        affected: dict[str, set[str]] = defaultdict(set)
        for observation in rendered:
            affected[observation.serie].add(observation.fecha_serie)
        series = dict(previous.series)
        for serie, fechas in affected.items():
            series[serie] = self.render_series(serie, fechas, number, previous.series.get(serie))

        supersessions = previous.supersessions
        tags: set[str] = set()
        new_links = {o.supersedes: o.id for o in observations if o.supersedes}
        if new_links:
            mapping = self.tree.supersessions(previous.supersessions) | new_links
            supersessions = self.tree.put_json(dict(sorted(mapping.items())))
            tags = self.correction_tags(number)

        annotations_hash = previous.annotations
        if annotations:
            records = registry.annotations_at(number)
            annotations_hash = self.tree.put_json([render.annotation_record(a) for a in records])

        served = set(previous.served) | set(ALWAYS_SERVED)
        served |= {s.serie for s in switches if s.estado == "produccion"}

        coverage = previous.coverage
        failures = [e for e in events if e.tipo in FAILURE_TYPES]
        # Only a new observation, a failure, a declaration or a switch can change coverage; an
        # identical re-capture (most revisions) cannot.
        if observations or failures or manifest or switches or coverage is None:
            coverage = self.render_coverage(number, sorted(served), series)

        root = RevisionRoot(
            revision=number,
            ts_commit=meta.ts_commit,
            served=tuple(sorted(served)),
            series=series,
            supersessions=supersessions,
            annotations=annotations_hash,
            coverage=coverage,
        )
        links = self.tree.link_hashes(number, published)
        if self.registry_id is None:  # revision 1 was written after this builder was made
            self.registry_id = registry.registry_id()
        record = RevisionRecord(root, links, evidence_meta, details, self.registry_id)
        self.tree.write_record(record)
        return root, tags

    def leaf(self, number: int, keep_rows: bool = False) -> Leaf:
        """Revision ``number``'s leaf, from the registry's rows; with ``keep_rows`` (a revision
        still to render) they are kept for its rendering, up to :data:`ROWS_KEPT` revisions (a
        first build of many reads the rest again)."""
        meta, touched = revision_rows(self.registry, number)
        if keep_rows and len(self.rows) < ROWS_KEPT:
            self.rows[number] = (meta, touched)
        return leaf_of(meta, touched)

    def render_evidence(self, record: Evidence, number: int) -> EvidenceMeta:
        """Store the evidence bytes; its metadata goes into the revision's record."""
        try:
            data = self.blobs.read(record.sha256)
        except FileNotFoundError:
            raise IntegrityError(
                f"evidence {record.id}: its blob sha256:{record.sha256} is missing from the"
                f" home ({self.blobs.path(record.sha256)}); fxev registry verify lists every one"
            ) from None
        stored = self.tree.objects.put(data)
        if stored != record.sha256:
            raise IntegrityError(
                f"evidence {record.id}: blob bytes hash to {stored}, registry says {record.sha256}"
            )
        meta = EvidenceMeta(
            record.id,
            record.sha256,
            record.size,
            record.content_type,
            record.capturado_en,
            record.identidad_consulta,
            record.revision,
        )
        self.tree.link_evidence(record.id, number)
        return meta

    def render_details(
        self, ids: set[str], number: int
    ) -> tuple[list[Observation], dict[str, bytes]]:
        """Re-render the detail of every changed observation and of everyone in its chain;
        return them, and the details that differ from their previous version."""
        rendered: dict[str, Observation] = {}
        details: dict[str, bytes] = {}
        for observation_id in sorted(ids):
            observation = self.registry.observation(observation_id)
            if observation is None or observation.id in rendered:
                continue
            ancestors, successors = self.registry.chain_at(observation, number)
            for member in [*ancestors, observation, *successors]:
                if member.id in rendered:
                    continue
                before, after = self.registry.chain_at(member, number)
                prefix = render.detail_prefix(
                    member,
                    before,
                    after,
                    self.registry.events_at(member.id, number),
                    self.registry.cotejos_at(member.id, number),
                )
                if self.tree.detail_changed(member.id, number, prefix):
                    details[member.id] = prefix
                    self.tree.mark_detail(member.id, number, prefix)
                rendered[member.id] = member
        return list(rendered.values()), details

    def render_series(
        self, serie: str, fechas: set[str], number: int, previous: SeriesRoot | None
    ) -> SeriesRoot:
        root_node = self.tree.node(previous.root) if previous and previous.root else EMPTY_NODE
        by_month: dict[str, dict[str, tuple[str, bytes] | None]] = defaultdict(dict)
        for fecha in fechas:
            valid = self.registry.valid_observation_at(CURRENCY, serie, fecha, number)
            if valid is None:
                by_month[fecha[:7]][fecha] = None
                continue
            prefix = render.item_prefix(
                valid,
                self.registry.events_at(valid.id, number),
                self.registry.cotejos_at(valid.id, number),
            )
            by_month[fecha[:7]][fecha] = (valid.id, prefix)
        years: dict[str, Node] = {}
        for month, updates in sorted(by_month.items()):
            year = month[:4]
            if year not in years:
                found = root_node.child(year)
                years[year] = self.tree.node(found[0]) if found else EMPTY_NODE
            found = years[year].child(month)
            chunk = self.tree.chunk(found[0]) if found else EMPTY_CHUNK
            chunk = chunk.replaced(updates)
            child = (
                (self.tree.objects.put(chunk.encode()), len(chunk.fechas)) if chunk.fechas else None
            )
            years[year] = years[year].replaced(month, child)
        for year, node in years.items():
            child = (self.tree.objects.put(node.encode()), node.total) if node.keys else None
            root_node = root_node.replaced(year, child)
        if not root_node.keys:
            return SeriesRoot(None, 0)
        return SeriesRoot(self.tree.objects.put(root_node.encode()), root_node.total)

    def render_coverage(self, number: int, served: list[str], series: dict[str, SeriesRoot]) -> str:
        entries = []
        for serie in served:
            entry = render.coverage_entry(
                CURRENCY,
                serie,
                self.registry.valid_dates_at(CURRENCY, serie, number),
                self.registry.failure_dates_at(serie, FAILURE_TYPES, number),
                self.registry.declared_no_data_at(serie, number),
            )
            if entry is not None:
                entries.append(entry)
        return self.tree.put_json(entries)

    def correction_tags(self, number: int) -> set[str]:
        """``Cache-Tag`` values whose as-of answers change because revision ``number`` corrected."""
        tags = set()
        for observation in self.registry.observations_of_revision(number):
            if observation.supersedes:
                old = self.registry.observation(observation.supersedes)
                if old is not None:
                    tags.add(cache_tag(old.moneda, old.serie, old.fecha_serie[:4]))
        return tags
