"""What each explorer page shows, from values already read (tree bytes, registry records). Pure.

``builder.publish.explorer`` reads the tree and the registry and calls these; the page *keys*
(digests of exactly what a page shows) are taken here too, so a page is redrawn only when one
of them differs.
"""

from __future__ import annotations

import hashlib
from datetime import date
from decimal import Decimal
from typing import Any

import orjson

from builder.core.vocabulary import GAP_REASONS
from builder.core.wire import splice_item
from builder.registry.records import Event, Observation, Revision
from builder.render.explorer import pages
from builder.render.explorer.calendar import year_calendar
from builder.render.explorer.chart import ChartPoint, year_chart

REVISIONS_PER_PAGE = 50
OBSERVATION_LINKS = 10


def key_of(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


def revision_page_of(revision: int) -> int:
    return (revision - 1) // REVISIONS_PER_PAGE + 1


def revisions_in_page(number: int, published: int) -> range:
    first = (number - 1) * REVISIONS_PER_PAGE + 1
    return range(first, min(number * REVISIONS_PER_PAGE, published) + 1)


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


def year_page(
    serie: str,
    year: str,
    prefixes: list[bytes],
    previous: str | None,
    following: str | None,
) -> bytes:
    """History of one year of a series, with its SVG chart; ``prefixes``: its stored items."""
    items = [item_of(prefix) for prefix in prefixes]
    points = [
        ChartPoint(date.fromisoformat(i["fecha_serie"]), Decimal(i["compra"]), Decimal(i["venta"]))
        for i in items
    ]
    chart = year_chart(f"USD/PEN {serie} {year}: compra y venta", int(year), points)
    return pages.year_page(pages.YearPage(serie, year, tuple(items), chart, previous, following))


def calendar_page(
    serie: str,
    year: str,
    prefixes: list[bytes],
    entry: dict[str, Any],
    gaps: list[dict[str, str]],
) -> bytes:
    """Coverage calendar of one year: its items' dates, its gaps, the series' bounds."""
    with_data = [date.fromisoformat(item_of(prefix)["fecha_serie"]) for prefix in prefixes]
    calendar = year_calendar(
        int(year),
        with_data,
        {date.fromisoformat(g["fecha"]): g["motivo"] for g in gaps},
        date.fromisoformat(entry["primera"]),
        date.fromisoformat(entry["ultima"]),
    )
    return pages.calendar_page(pages.CalendarPage(serie, calendar, entry["criterio_huecos"]))


def evidence_ids(detail: dict[str, Any]) -> list[str]:
    """The evidence an observation's detail cites: its own and its events'."""
    found = {detail["observacion"]["evidencia_id"]}
    found |= {e["evidencia_id"] for e in detail["eventos"] if e["evidencia_id"]}
    return sorted(found)


def revision_entry(
    meta: Revision,
    shown: list[Observation],
    created: int,
    failures: list[Event],
) -> pages.RevisionEntry:
    """A revision in the log: ``shown``, the last few of the ``created`` observations."""
    return pages.RevisionEntry(
        meta.revision,
        meta.ts_commit,
        meta.kind,
        meta.summary,
        tuple({"id": o.id, "serie": o.serie, "fecha_serie": o.fecha_serie} for o in shown),
        created - len(shown),
        tuple(
            {"tipo": e.tipo, "fecha_serie": e.fecha_serie, "evidencia_id": e.evidencia_id}
            for e in failures
        ),
    )
