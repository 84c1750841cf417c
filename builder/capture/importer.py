"""``fxev import``: human-provided values as ``importado`` observations, in one revision.

An import fills only dates with no direct observation and never replaces one. Its evidence is
the CSV file itself; each observation's ``fragmento`` is its line. What it records is what an
operator says a source published, checked like a capture: a value that looks odd is kept and
marked ``plausibilidad_baja``, with its alert (DECISIONS 6). Re-importing the same values
records nothing, so seeding twice duplicates nothing. The whole file is validated before
anything is written: one bad line rejects the file with its line number. :func:`read_import`
does that part alone, touching no store, so that the command refuses a bad file before it opens
(or creates) a home; :func:`record_import` then writes the checked file.
"""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import datetime
from decimal import Decimal
from pathlib import Path

from builder.capture.alerting import alerts_after_commit, sync_alerts
from builder.capture.cotejos import cross_check
from builder.capture.record import (
    add_event,
    add_observation,
    mark_implausible,
    new_execution,
    store_evidence,
)
from builder.capture.run import (
    CaptureResult,
    DateOutcome,
    Run,
    SourceSpec,
    Stores,
    worst_outcome,
)
from builder.core.business_days import today_in_lima
from builder.registry.records import Observation
from builder.sources.import_csv import (
    CONTENT_TYPE,
    FUENTE,
    PARSER_VERSION,
    ImportFileError,
    ImportFileUnreadable,
    ImportRow,
    parse_import_csv,
)


@dataclasses.dataclass(frozen=True, slots=True)
class ImportFile:
    """A CSV read and checked whole, with who imports it and why; nothing written yet."""

    name: str
    data: bytes
    rows: list[ImportRow]
    actor: str
    justification: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def read_import(path: Path, actor: str, justification: str, now: datetime) -> ImportFile:
    """Read and validate ``path``; raise ``ImportFileError`` naming the first problem. Pure
    but for reading the file: it opens no store."""
    if not actor.strip() or not justification.strip():
        raise ImportFileError("an import needs a non-empty --actor and --justification")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ImportFileUnreadable(f"cannot read {path}: {error.strerror}") from None
    rows = parse_import_csv(data, today_in_lima(now))
    return ImportFile(path.name, data, rows, actor, justification)


def import_csv(
    stores: Stores,
    path: Path,
    actor: str,
    justification: str,
    now: datetime,
    plausibility_pct: Decimal,
) -> CaptureResult:
    """Import ``path`` as one revision (or none, when every date is already covered)."""
    checked = read_import(path, actor, justification, now)
    return record_import(stores, checked, now, plausibility_pct)


def record_import(
    stores: Stores, checked: ImportFile, now: datetime, plausibility_pct: Decimal
) -> CaptureResult:
    """Record a file :func:`read_import` checked, as one revision (or none, when every date is
    already covered); a value moving more than ``plausibility_pct`` from the date before it is
    marked ``plausibilidad_baja``."""
    data, rows, sha256 = checked.data, checked.rows, checked.sha256
    actor, justification = checked.actor, checked.justification
    first_run = Run(SourceSpec(FUENTE, "publicado", PARSER_VERSION), now)
    registry = stores.registry

    def pending(row: ImportRow) -> bool:
        current = registry.valid_observation(
            row.moneda, row.serie, row.rate.fecha_serie.isoformat()
        )
        return current is None or (
            current.fuente == FUENTE
            and (current.compra, current.venta) != (row.rate.compra, row.rate.venta)
        )

    if not any(pending(row) for row in rows):
        return CaptureResult(None, "sin_cambios", None, (), ())
    stores.blobs.put(data)
    sync_alerts(registry, stores.alerts)  # earlier revisions' alerts come first
    outcomes: list[DateOutcome] = []
    recorded: list[tuple[Run, Observation]] = []
    with registry.write("importacion", now) as tx:
        evidence = store_evidence(
            stores, tx, first_run, data, None, f"IMPORT {checked.name}", CONTENT_TYPE
        )
        for row in rows:
            if not pending(row):
                continue
            run = Run(
                SourceSpec(FUENTE, row.serie, PARSER_VERSION, row.moneda),
                now,
                first_run.ejecucion_id,
            )
            fecha = row.rate.fecha_serie.isoformat()
            current = registry.valid_observation(row.moneda, row.serie, fecha)
            observation = add_observation(tx, run, evidence, row.rate, current)
            add_event(
                tx, run, "importada", evidence,
                observacion_id=observation.id, fecha_serie=fecha,
                detalle={
                    "actor": actor,
                    "justificacion": justification,
                    "linea": row.line,
                    "sha256": sha256,
                },
            )  # fmt: skip
            if current is not None:
                add_event(
                    tx, run, "correccion", evidence,
                    observacion_id=observation.id, fecha_serie=fecha,
                    detalle={"supersede": current.id},
                )  # fmt: skip
                add_event(
                    tx, run, "supersedida", evidence,
                    observacion_id=current.id, fecha_serie=fecha,
                    detalle={"superseded_por": observation.id},
                )  # fmt: skip
            recorded.append((run, observation))
            outcome = "correccion" if current is not None else "nueva"
            outcomes.append(DateOutcome(fecha, row.serie, outcome, observation.id))
        # Once every row is in: a row's move is measured from the date before it whatever the
        # file's order (a history listed newest first too).
        for run, observation in recorded:
            mark_implausible(registry, tx, run, evidence, observation, plausibility_pct)
        cross_check(registry, tx, outcomes)
        outcome = worst_outcome([o.outcome for o in outcomes])
        tx.add(
            dataclasses.replace(
                new_execution(tx, first_run, outcome, {"actor": actor, "lineas": len(rows)}),
                kind="import",
            )
        )
        tx.summary = {
            "fuente": FUENTE,
            "outcome": outcome,
            "fechas": len(outcomes),
            "actor": actor,
            "justificacion": justification,
            "sha256": sha256,
        }
    alerts = alerts_after_commit(stores, tx.revision)
    single = outcomes[0].observacion_id if len(outcomes) == 1 else None
    return CaptureResult(tx.revision, outcome, single, tuple(outcomes), alerts)
