"""Recording a run: evidence bytes first (content-addressed, fsynced), then one registry transaction
with the execution, the evidence, the observation(s), their events, cotejos and manifest entries;
alerts after the commit, derived from what the revision recorded (``builder.capture.alerting``,
docs/operating/alerts.md#follow-the-registry). A failure is recorded with its evidence and an
event carrying the expected date, never dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from builder.capture.alerting import alerts_after_commit, sync_alerts
from builder.capture.cotejos import cross_check
from builder.capture.plausibility import plausibility_reasons
from builder.capture.run import (
    Answer,
    CaptureResult,
    DateOutcome,
    Run,
    SavedAnswer,
    Stores,
    worst_outcome,
)
from builder.core.canonical import iso_date
from builder.core.settings import Settings
from builder.core.vocabulary import ND_FUENTE, PLAUSIBILIDAD_BAJA
from builder.disk import faults
from builder.registry.records import Event, Evidence, Execution, ManifestEntry, Observation
from builder.registry.store import Registry, WriteTransaction
from builder.sources.common import ParsedRate


def store_evidence(
    stores: Stores,
    tx: WriteTransaction,
    run: Run,
    body: bytes,
    exchange: Answer | None,
    identidad_consulta: str,
    content_type: str | None = None,
    truncated: bool = False,
) -> Evidence:
    """Insert the evidence row of ``body``, whose bytes must already be in the blob store;
    ``truncated``: a part of an answer, whatever ``exchange`` says (none arrived whole)."""
    if isinstance(exchange, SavedAnswer):
        content_type = content_type or exchange.content_type
        exchange = None
    sha256 = stores.blobs.sha256_of_stored(body)
    return tx.add(
        Evidence(
            id=str(uuid.uuid4()),
            revision=tx.revision,
            ejecucion_id=run.ejecucion_id,
            sha256=sha256,
            size=len(body),
            content_type=content_type
            or (exchange.content_type if exchange else "application/octet-stream"),
            http_status=exchange.status if exchange else None,
            http_reason=exchange.reason if exchange else None,
            headers=[list(pair) for pair in exchange.headers] if exchange else [],
            identidad_consulta=identidad_consulta,
            capturado_en=run.stamp,
            truncated=truncated or (exchange.truncated if exchange else False),
        )
    )


def add_event(
    tx: WriteTransaction,
    run: Run,
    tipo: str,
    evidence: Evidence,
    *,
    observacion_id: str | None,
    fecha_serie: str | None,
    detalle: dict[str, Any],
) -> Event:
    return tx.add(
        Event(
            id=str(uuid.uuid4()),
            revision=tx.revision,
            seq=tx.next_seq(),
            tipo=tipo,
            ts=run.stamp,
            ejecucion_id=run.ejecucion_id,
            evidencia_id=evidence.id,
            observacion_id=observacion_id,
            fuente=run.spec.fuente,
            moneda=run.spec.moneda,
            serie=run.spec.serie,
            fecha_serie=fecha_serie,
            detalle=detalle,
        )
    )


def add_observation(
    tx: WriteTransaction,
    run: Run,
    evidence: Evidence,
    rate: ParsedRate,
    supersedes: Observation | None,
) -> Observation:
    """Insert a new observation of ``rate`` by ``run``'s source, backed by ``evidence``."""
    spec = run.spec
    return tx.add(
        Observation(
            id=str(uuid.uuid4()),
            revision_creada=tx.revision,
            moneda=spec.moneda,
            serie=spec.serie,
            fecha_serie=rate.fecha_serie.isoformat(),
            compra=rate.compra,
            venta=rate.venta,
            compra_cruda=rate.compra_cruda,
            venta_cruda=rate.venta_cruda,
            fuente=spec.fuente,
            identidad_consulta=evidence.identidad_consulta,
            fragmento=rate.fragmento,
            version_parser=spec.version_parser,
            capturado_en=run.stamp,
            ejecucion_id=run.ejecucion_id,
            evidencia_id=evidence.id,
            supersedes=supersedes.id if supersedes else None,
        )
    )


def record_failure(
    stores: Stores,
    run: Run,
    alert_type: str,
    message: str,
    exchange: Answer | None,
    identidad_consulta: str,
    expected_dates: Sequence[date],
    truncated: bool = False,
) -> CaptureResult:
    """Record a failed run: its evidence (zero bytes if nothing arrived; ``truncated``, a part of
    an answer cut short), one event per date."""
    body = exchange.body if exchange else b""
    spec = run.spec
    stores.blobs.put(body)
    faults.crash_point("after_blob_write")
    sync_alerts(stores.registry, stores.alerts)  # earlier revisions' alerts come first
    with stores.registry.write(run.revision_kind, run.now) as tx:
        evidence = store_evidence(
            stores, tx, run, body, exchange, identidad_consulta, truncated=truncated
        )
        for expected in expected_dates:
            add_event(
                tx,
                run,
                alert_type,
                evidence,
                observacion_id=None,
                fecha_serie=expected.isoformat(),
                detalle={
                    "mensaje": message,
                    "fecha_esperada": expected.isoformat(),
                    "sha256": evidence.sha256,
                    "http_status": evidence.http_status,
                },
            )
        tx.add(new_execution(tx, run, "fallo", {"tipo": alert_type, "mensaje": message}))
        tx.summary = {"fuente": spec.fuente, "outcome": "fallo", "tipo": alert_type}
    alerts = alerts_after_commit(stores, tx.revision)
    outcomes = tuple(DateOutcome(d.isoformat(), spec.serie, "fallo", None) for d in expected_dates)
    return CaptureResult(tx.revision, "fallo", None, outcomes, alerts)


def record_rates(
    stores: Stores,
    settings: Settings,
    run: Run,
    exchange: Answer,
    rates: Sequence[ParsedRate],
    declared_no_data: Sequence[date] = (),
    execution_detail: Mapping[str, Any] | None = None,
) -> CaptureResult:
    """Record a successful run: one revision holding every date's observation and events, the
    dates the source declared without data, and the cross-checks any of them touched.

    ``execution_detail`` adds keys to the execution's ``detalle`` (what a backfill found
    missing). Only a capture resolves the source's failure alerts (docs/decisions.md#alerts: "the
    next capture of that source").
    """
    recorded: list[DateOutcome] = []
    stores.blobs.put(exchange.body)
    faults.crash_point("after_blob_write")
    sync_alerts(stores.registry, stores.alerts)  # earlier revisions' alerts come first
    with stores.registry.write(run.revision_kind, run.now) as tx:
        evidence = store_evidence(
            stores, tx, run, exchange.body, exchange, exchange.identidad_consulta
        )
        for rate in rates:
            recorded.append(
                record_rate(stores.registry, tx, run, evidence, rate, settings.plausibility_pct)
            )
        declared = add_manifest_entries(stores.registry, tx, run, evidence, declared_no_data)
        cross_check(stores.registry, tx, recorded, declared)
        # A run that only declares dates without data still records something new.
        outcome = worst_outcome([r.outcome for r in recorded]) if recorded else "nueva"
        detalle = {
            "fechas": len(recorded),
            ND_FUENTE: [d.isoformat() for d in declared],
            **(execution_detail or {}),
        }
        tx.add(new_execution(tx, run, outcome, detalle))
        tx.summary = {"fuente": run.spec.fuente, "outcome": outcome, "fechas": len(recorded)}
    alerts = alerts_after_commit(stores, tx.revision)
    single = recorded[0].observacion_id if len(recorded) == 1 and not declared else None
    return CaptureResult(tx.revision, outcome, single, tuple(recorded), alerts)


def add_manifest_entries(
    registry: Registry,
    tx: WriteTransaction,
    run: Run,
    evidence: Evidence,
    dates: Sequence[date],
) -> list[date]:
    """Manifest entries ``nd_fuente`` for the dates not declared before; those dates."""
    spec = run.spec
    new = [d for d in dates if not registry.is_declared_no_data(spec.serie, d.isoformat())]
    for day in new:
        tx.add(
            ManifestEntry(
                id=str(uuid.uuid4()),
                revision=tx.revision,
                fuente=spec.fuente,
                moneda=spec.moneda,
                serie=spec.serie,
                fecha=day.isoformat(),
                estado=ND_FUENTE,
                ejecucion_id=run.ejecucion_id,
                evidencia_id=evidence.id,
            )
        )
    return new


def record_rate(
    registry: Registry,
    tx: WriteTransaction,
    run: Run,
    evidence: Evidence,
    rate: ParsedRate,
    threshold_pct: Decimal,
) -> DateOutcome:
    """Record one date's values: identical re-capture, new observation or correction."""
    spec = run.spec
    fecha = rate.fecha_serie.isoformat()
    current = registry.valid_observation(spec.moneda, spec.serie, fecha)
    if (
        current is not None
        and current.fuente == spec.fuente
        and (current.compra, current.venta) == (rate.compra, rate.venta)
    ):
        add_event(
            tx,
            run,
            "recaptura_identica",
            evidence,
            observacion_id=current.id,
            fecha_serie=fecha,
            detalle={"sha256": evidence.sha256},
        )
        return DateOutcome(fecha, spec.serie, "identica", current.id)

    observation = add_observation(tx, run, evidence, rate, current)
    add_event(
        tx,
        run,
        "capturada",
        evidence,
        observacion_id=observation.id,
        fecha_serie=fecha,
        detalle={"compra": rate.compra, "venta": rate.venta, "sha256": evidence.sha256},
    )
    # A direct observation replacing an import is new data, not a correction of the source.
    is_correction = current is not None and current.fuente == spec.fuente
    if current is not None:
        if is_correction:
            add_event(
                tx,
                run,
                "correccion",
                evidence,
                observacion_id=observation.id,
                fecha_serie=fecha,
                detalle={
                    "supersede": current.id,
                    "anterior": {"compra": current.compra, "venta": current.venta},
                },
            )
        add_event(
            tx,
            run,
            "supersedida",
            evidence,
            observacion_id=current.id,
            fecha_serie=fecha,
            detalle={"superseded_por": observation.id},
        )
    mark_implausible(registry, tx, run, evidence, observation, threshold_pct)
    outcome = "correccion" if is_correction else "nueva"
    return DateOutcome(fecha, spec.serie, outcome, observation.id)


def mark_implausible(
    registry: Registry,
    tx: WriteTransaction,
    run: Run,
    evidence: Evidence,
    observation: Observation,
    threshold_pct: Decimal,
) -> None:
    """The ``plausibilidad_baja`` event of a new ``observation`` whose values look odd
    (:mod:`builder.capture.plausibility`), measured from the valid observation of its series
    with the greatest earlier date, imports included; its alert follows
    (:mod:`builder.capture.alerting`)."""
    fecha = observation.fecha_serie
    previous = registry.previous_valid_observation(observation.moneda, observation.serie, fecha)
    reasons = plausibility_reasons(
        iso_date(fecha),
        observation.compra,
        observation.venta,
        previous,
        run.today_lima,
        threshold_pct,
    )
    if reasons:
        add_event(
            tx,
            run,
            PLAUSIBILIDAD_BAJA,
            evidence,
            observacion_id=observation.id,
            fecha_serie=fecha,
            detalle={"motivos": reasons},
        )


def new_execution(
    tx: WriteTransaction, run: Run, outcome: str, detalle: dict[str, Any]
) -> Execution:
    return Execution(
        id=run.ejecucion_id,
        revision=tx.revision,
        kind=run.kind,
        fuente=run.spec.fuente,
        started_at=run.stamp,
        outcome=outcome,
        detalle=detalle,
    )
