"""A registry revision as the log's leaf (``builder.tlog.leaf``): each row hashed as it is served.

The row rules (``builder.tlog.leaf.ROW_RULES``) hash what a consumer receives: an observation is
hashed as the ``observacion`` object of its detail, an event as an item of ``eventos``, a cotejo
as an item of the detail's ``cotejos``, an annotation as an item of ``/v1/annotations``, and an
evidence record by its bytes' SHA-256. Rows the API does not serve (executions, manifest entries,
series switches) are hashed as their registry row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from builder.core.errors import IntegrityError
from builder.registry.records import DATA_TABLES, Revision, to_row
from builder.registry.store import Registry
from builder.render import api as render
from builder.tlog.leaf import Leaf, row_hash

Rows = dict[str, list[Any]]  # the rows a revision wrote, by table name

SERVED: dict[str, Callable[[Any], dict[str, Any]]] = {
    "observations": render.observation_record,
    "events": render.event_record,
    "cotejos": lambda c: render.cotejo_entry(c) | {"id": c.id},
    "annotations": render.annotation_record,
}


def row_digest(table: str, record: Any) -> str:
    if table == "evidence":
        return str(record.sha256)
    return row_hash(SERVED.get(table, to_row)(record))


def leaf_of(meta: Revision, touched: Mapping[str, Sequence[Any]]) -> Leaf:
    """The leaf of revision ``meta`` from the rows it wrote, by table name."""
    rows = {
        table: tuple(sorted(row_digest(table, record) for record in records))
        for table, records in touched.items()
        if records
    }
    return Leaf(meta.revision, meta.ts_commit, meta.hash, rows)


def revision_rows(registry: Registry, number: int) -> tuple[Revision, Rows]:
    """Revision ``number`` of the registry and the rows it wrote, by table name."""
    meta = registry.revision(number)
    if meta is None:
        raise IntegrityError(f"registry has no revision {number}")
    return meta, {table.name: registry.rows_touched(table, number) for table in DATA_TABLES}


def revision_leaf(registry: Registry, number: int) -> Leaf:
    """Revision ``number``'s leaf, from the registry's rows."""
    return leaf_of(*revision_rows(registry, number))
