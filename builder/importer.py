"""``fxev import``: human-provided values as ``importado`` observations, in one revision.

An import fills only dates with no direct observation and never replaces one. Its evidence is
the CSV file itself; each observation's ``fragmento`` is its line. Re-importing the same values
records nothing, so seeding twice duplicates nothing. The whole file is validated before
anything is written: one bad line rejects the file with its line number.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
from datetime import date, datetime
from pathlib import Path

from builder.canonical import canonical_rate
from builder.capture import (
    CaptureResult,
    DateOutcome,
    Run,
    SourceSpec,
    Stores,
    _execution,
    add_event,
    add_observation,
    cross_check,
    raise_discrepancies,
    store_evidence,
    worst_outcome,
)
from builder.sources.common import InvariantError, ParsedRate, check_rate_invariants

FUENTE = "importado"
PARSER_VERSION = "importado_csv-1.0"
CONTENT_TYPE = "text/csv"
REQUIRED = ("fecha_serie", "compra", "venta")
OPTIONAL = ("moneda", "serie")
SERIES = ("publicado", "cierre")


class ImportError_(ValueError):
    """The file cannot be imported; the message names the line."""


@dataclasses.dataclass(frozen=True, slots=True)
class ImportRow:
    line: int
    moneda: str
    serie: str
    rate: ParsedRate


def parse_import_csv(data: bytes, today_lima: date) -> list[ImportRow]:
    """Validate the whole file; raise ``ImportError_`` naming the first bad line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportError_("the file is not UTF-8 text") from None
    lines = text.splitlines()
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [name for name in REQUIRED if name not in header]
    unknown = [name for name in header if name not in REQUIRED + OPTIONAL]
    if missing or unknown:
        raise ImportError_(
            f"line 1: header must be fecha_serie,compra,venta[,moneda,serie]; "
            f"missing {missing or '-'}, unknown {unknown or '-'}"
        )
    rows: list[ImportRow] = []
    seen: set[tuple[str, str, str]] = set()
    for record in reader:
        number = reader.line_num
        moneda = (record.get("moneda") or "USD").strip()
        serie = (record.get("serie") or "publicado").strip()
        if moneda != "USD":
            raise ImportError_(f"line {number}: moneda must be USD, got {moneda!r}")
        if serie not in SERIES:
            raise ImportError_(f"line {number}: serie must be publicado or cierre, got {serie!r}")
        try:
            fecha = date.fromisoformat((record.get("fecha_serie") or "").strip())
            compra = (record.get("compra") or "").strip()
            venta = (record.get("venta") or "").strip()
            canonical_rate(compra)
            canonical_rate(venta)
        except ValueError as error:
            raise ImportError_(f"line {number}: {error}") from None
        key = (moneda, serie, fecha.isoformat())
        if key in seen:
            raise ImportError_(f"line {number}: {fecha} appears twice for {serie}")
        seen.add(key)
        rate = ParsedRate(fecha, compra, venta, lines[number - 1])
        try:
            check_rate_invariants(rate, today_lima)
        except InvariantError as error:
            raise ImportError_(f"line {number}: {error}") from None
        rows.append(ImportRow(number, moneda, serie, rate))
    if not rows:
        raise ImportError_("the file has no data lines")
    return rows


def import_csv(
    stores: Stores,
    path: Path,
    actor: str,
    justification: str,
    now: datetime,
) -> CaptureResult:
    """Import ``path`` as one revision (or none, when every date is already covered)."""
    if not actor.strip() or not justification.strip():
        raise ImportError_("an import needs a non-empty --actor and --justification")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ImportError_(f"cannot read {path}: {error.strerror}") from None
    first_run = Run(SourceSpec(FUENTE, "publicado", PARSER_VERSION), now)
    rows = parse_import_csv(data, first_run.today_lima)
    sha256 = hashlib.sha256(data).hexdigest()
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
    outcomes: list[DateOutcome] = []
    with registry.write("importacion", now) as tx:
        evidence = store_evidence(
            stores, tx, first_run, data, None, f"IMPORT {path.name}", CONTENT_TYPE
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
            outcome = "correccion" if current is not None else "nueva"
            outcomes.append(DateOutcome(fecha, row.serie, outcome, observation.id))
        pairs = []
        for serie in sorted({o.serie for o in outcomes}):
            mine = [o for o in outcomes if o.serie == serie]
            pairs += cross_check(registry, tx, serie, mine)
        outcome = worst_outcome([o.outcome for o in outcomes])
        tx.add(
            dataclasses.replace(
                _execution(tx, first_run, outcome, {"actor": actor, "lineas": len(rows)}),
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
    alerts = raise_discrepancies(stores.alerts, pairs, tx.revision, now)
    single = outcomes[0].observacion_id if len(outcomes) == 1 else None
    return CaptureResult(tx.revision, outcome, single, tuple(outcomes), tuple(alerts))
