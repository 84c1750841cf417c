"""Writing cross-checks (``cotejos``) inside the revision where either side changed
(docs/decisions.md#cross-checks).

The rule itself is pure (``builder.capture.crosscheck``); this module finds which pairs a write
touched and records them. A pair is a ``publicado`` observation of day D and the valid ``cierre``
observation of its counterpart date C (the last business day before D, moved back only by a
declared ``nd_fuente``). Each pair gives two rows, one on each side: the ``publicado`` row names
C and the close, the ``cierre`` row names D and the publication, so a close carries one cotejo
per publication that points to it. Nothing is written while the counterpart is absent or pending,
and the service never picks a winner: a ``discrepante`` result is exposed and alerted
(``builder.capture.alerting``), no more.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Sequence
from datetime import date, timedelta

from builder.capture.crosscheck import RULE_TEXT, compare, counterpart_date
from builder.capture.run import DateOutcome
from builder.core.vocabulary import CURRENCY, DISCREPANTE
from builder.registry.records import Cotejo, Observation
from builder.registry.store import Registry, WriteTransaction

PUBLICADO = "publicado"
CIERRE = "cierre"
# A counterpart is at most this many days before its publication (a long holiday run).
_MAX_SPAN_DAYS = 40


@dataclasses.dataclass(frozen=True, slots=True)
class Pair:
    """One cross-check written: a publication, its counterpart close, and the result."""

    publicado: Observation
    cierre: Observation
    resultado: str

    @property
    def discrepante(self) -> bool:
        return self.resultado == DISCREPANTE


def dates_pointing_to(close_date: date, declared: set[date]) -> list[date]:
    """Publication dates whose counterpart is ``close_date``."""
    found = []
    day = close_date
    for _ in range(_MAX_SPAN_DAYS):
        day += timedelta(days=1)
        counterpart = counterpart_date(day, declared)
        if counterpart == close_date:
            found.append(day)
        elif counterpart > close_date:
            break
    return found


def dates_skipping(declared_date: date, declared: set[date]) -> list[date]:
    """Publication dates whose counterpart moved before ``declared_date`` because it is n.d.:
    none when that day was no one's counterpart anyway (a weekend or a holiday the central bank
    lists as n.d.), whose pairs stand as they were."""
    without = declared - {declared_date}
    found = []
    day = declared_date
    for _ in range(_MAX_SPAN_DAYS):
        day += timedelta(days=1)
        counterpart = counterpart_date(day, declared)
        if counterpart > declared_date:
            break
        if counterpart != counterpart_date(day, without):
            found.append(day)
    return found


def write_cotejos(
    registry: Registry,
    tx: WriteTransaction,
    *,
    publicado_dates: Iterable[date] = (),
    cierre_dates: Iterable[date] = (),
    declared_dates: Iterable[date] = (),
) -> list[Pair]:
    """Cross-check every pair touched by this write: publications whose valid observation
    changed, closes whose valid observation changed, and dates newly declared ``n.d.``."""
    declared = declared_without_close(registry, tx.revision)
    to_check = set(publicado_dates)
    for close_date in cierre_dates:
        to_check.update(dates_pointing_to(close_date, declared))
    for declared_date in declared_dates:
        to_check.update(dates_skipping(declared_date, declared))
    pairs = []
    for day in sorted(to_check):
        publication = registry.valid_observation(CURRENCY, PUBLICADO, day.isoformat())
        if publication is None:
            continue
        close_date = counterpart_date(day, declared)
        close = registry.valid_observation(CURRENCY, CIERRE, close_date.isoformat())
        if close is None:
            continue  # absent or pending: nothing to check yet
        pair = Pair(publication, close, compare(publication, close))
        _add(tx, publication, close, pair.resultado)
        _add(tx, close, publication, pair.resultado)
        pairs.append(pair)
    return pairs


def declared_without_close(registry: Registry, revision: int) -> set[date]:
    """Dates the central bank declared ``n.d.`` that have no valid close as of ``revision``: a
    close it published later for such a date is that date's counterpart again (the declaration
    is kept in the manifest, but no longer moves anything)."""
    return {
        date.fromisoformat(day)
        for day in registry.declared_no_data_at(CIERRE, revision)
        if registry.valid_observation(CURRENCY, CIERRE, day) is None
    }


def _add(tx: WriteTransaction, mine: Observation, theirs: Observation, resultado: str) -> None:
    tx.add(
        Cotejo(
            id=str(uuid.uuid4()),
            revision=tx.revision,
            seq=tx.next_seq(),
            observacion_id=mine.id,
            contraparte=theirs.fuente,
            contraparte_observacion_id=theirs.id,
            contraparte_fecha=theirs.fecha_serie,
            resultado=resultado,
            regla=RULE_TEXT,
        )
    )


def cross_check(
    registry: Registry,
    tx: WriteTransaction,
    outcomes: Sequence[DateOutcome],
    declared: Sequence[date] = (),
) -> list[Pair]:
    """Cotejos for every date whose valid observation this write changed, of either series, in
    one pass: a write that changed both sides of a pair (an import of both series) checks it
    once."""
    changed: dict[str | None, list[date]] = {PUBLICADO: [], CIERRE: []}
    for item in outcomes:
        if item.outcome in ("nueva", "correccion") and item.serie in changed:
            changed[item.serie].append(date.fromisoformat(item.fecha_serie))
    return write_cotejos(
        registry,
        tx,
        publicado_dates=changed[PUBLICADO],
        cierre_dates=changed[CIERRE],
        declared_dates=declared,
    )
