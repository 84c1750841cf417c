"""What a run of revisions added to the tree, found from their records alone.

A revision's record lists what it wrote itself: its evidence (metadata and the SHA-256 of the
bytes), the observation details it changed (the markers' names), and its root, whose hashes
name its objects. The objects a revision added are those its root reaches and the previous
root does not reach at the same place: a series' item tree is compared node by node (root ->
years -> month chunks), descending only where a hash differs, and the supersession map,
annotations and coverage are compared by hash. So the work is in proportion to what the
revisions changed, never to the tree's history (see ``docs/operating/tree.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from builder.store import keys
from builder.tree.format import EMPTY_NODE, Node
from builder.tree.revision import RevisionRecord, RevisionRoot

NODE_LEVELS = 2  # a series' root node (years), its year nodes (months); below them, chunks

# Given object hashes, their bytes (verified); called once per level of the item trees.
LoadNodes = Callable[[set[str]], dict[str, bytes]]


def objects_added(pairs: Iterable[tuple[RevisionRoot, RevisionRoot]], load: LoadNodes) -> set[str]:
    """The objects each later root of ``pairs`` (previous root, root) reaches where its previous
    root does not: changed lists, nodes and chunks. ``load`` gives the nodes' bytes (of both
    roots), one level of every pair at a time, so a caller may fetch each level in parallel."""
    added: set[str] = set()
    level: list[tuple[str | None, str]] = []  # (node at this place before, node now)
    for before, after in pairs:
        for old, new in (
            (before.supersessions, after.supersessions),
            (before.annotations, after.annotations),
            (before.coverage, after.coverage),
        ):
            if new is not None and new != old:
                added.add(new)
        for serie, series in after.series.items():
            previous = before.series.get(serie)
            old_root = previous.root if previous is not None else None
            if series.root is not None and series.root != old_root:
                level.append((old_root, series.root))
    for _ in range(NODE_LEVELS):
        level = list(dict.fromkeys(level))
        added.update(new for _, new in level)
        data = load({h for pair in level for h in pair if h is not None})
        below: list[tuple[str | None, str]] = []
        for old, new in level:
            node = Node.decode(data[new])
            was = EMPTY_NODE if old is None else Node.decode(data[old])
            children = dict(zip(was.keys, was.hashes, strict=True))
            for key, child in zip(node.keys, node.hashes, strict=True):
                if children.get(key) != child:
                    below.append((children.get(key), child))
        level = below
    added.update(new for _, new in level)  # month chunks: leaves
    return added


@dataclasses.dataclass(frozen=True, slots=True)
class Written:
    """What one revision's record says the revision wrote, as store keys and object hashes."""

    evidence: dict[str, str]  # evidence id -> SHA-256 of its bytes
    markers: tuple[str, ...]  # keys of observations/<id>/<R>-<hex>

    @classmethod
    def of(cls, record: RevisionRecord) -> Written:
        return cls(
            evidence={i: meta.sha256 for i, meta in sorted(record.evidence.items())},
            markers=tuple(
                keys.marker_key(observation_id, record.revision, keys.sha256_of(detail))
                for observation_id, detail in sorted(record.details.items())
            ),
        )
