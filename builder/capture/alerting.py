"""Alerts follow the registry (docs/operating/alerts.md#follow-the-registry).

This is the one way alerts are derived from what the registry recorded. The alert store keeps
the last registry revision it applied; :func:`sync_alerts` applies every revision after it, in
order, each in one alert-store transaction that also moves the mark, so a revision is applied
exactly once whichever process gets to it. A write applies its own revision the same way right
after its commit (:func:`alerts_after_commit`), so a process killed between the commit and the
alert write loses nothing: the next command that touches alerts applies the revision.

What a revision calls for, with the rules of docs/decisions.md#alerts:

- a failed run (execution ``fallo``) raises or bumps its failure type (``fuente_no_disponible``,
  ``cambio_formato``, ``tunel_caido``, ``invariante_fallida``), keyed by type + source;
- a successful capture (execution kind ``capture``; a backfill does not count) resolves its
  source's failure alerts, ``resuelta_por: "sistema"``; so does one that recorded no revision
  because every date was still pending (:func:`resolved_without_revision`);
- a backfill that left dates missing raises ``backfill_incompleto`` (its ``fechas`` accumulate);
- a ``discrepante`` cotejo raises ``discrepancia`` and a ``plausibilidad_baja`` event raises
  ``plausibilidad_baja``, keyed by type + source + ``fecha_serie``.

Alerts about the machine (``disco``, ``reloj_fuera_de_tolerancia``) are not in the registry;
``builder.ops.health`` raises them directly.
"""

from __future__ import annotations

from datetime import datetime

from builder.capture.run import Stores
from builder.core.canonical import parse_utc_timestamp
from builder.core.vocabulary import (
    BACKFILL_INCOMPLETO,
    DISCREPANCIA,
    DISCREPANTE,
    PLAUSIBILIDAD_BAJA,
)
from builder.ops.alerts import (
    SYSTEM_RESOLVED,
    Alert,
    AlertAction,
    AlertStore,
    Raise,
    ResolveSource,
)
from builder.registry.records import Execution, Observation
from builder.registry.store import Registry

PUBLICADO = "publicado"


def sync_alerts(registry: Registry, alerts: AlertStore) -> int:
    """Bring the alert store up to the registry's head; the number of revisions applied.

    A store that follows no registry yet (a new file, or one from before this rule) starts
    following at the current head: what came before is not replayed.
    """
    head = registry.head()
    last = 0 if head is None else head.revision
    mark = alerts.applied_revision()
    if mark is None:
        mark = alerts.follow_from(last)
    applied = 0
    for revision in range(mark + 1, last + 1):
        applied += alerts.apply_revision(revision, actions_of_revision(registry, revision))
    return applied


def alerts_after_commit(stores: Stores, revision: int) -> tuple[Alert, ...]:
    """After a write committed ``revision``: sync, then the alerts that revision touched."""
    sync_alerts(stores.registry, stores.alerts)
    return tuple(stores.alerts.alerts_of_revision(revision))


def resolved_without_revision(stores: Stores, fuente: str, now: datetime) -> tuple[Alert, ...]:
    """A capture of ``fuente`` that succeeded but recorded nothing (``sin_cambios``: every date
    still pending) is still a success: after the registry's revisions, its source's failure
    alerts are resolved (docs/decisions.md#alerts); the alerts it resolved."""
    sync_alerts(stores.registry, stores.alerts)
    return tuple(stores.alerts.resolve_source(ResolveSource(fuente, now)))


def actions_of_revision(registry: Registry, revision: int) -> list[AlertAction]:
    """The alert actions registry ``revision`` calls for, in the order a run reports them."""
    executions = registry.executions_of_revision(revision)
    actions: list[AlertAction] = []
    for execution in executions:
        actions += _incomplete(registry, execution)
        actions += _failure(registry, execution)
        if execution.kind == "capture" and execution.outcome != "fallo" and execution.fuente:
            now = parse_utc_timestamp(execution.started_at)
            actions.append(ResolveSource(execution.fuente, now))
    stamp = executions[0].started_at if executions else _commit_stamp(registry, revision)
    actions += _discrepancies(registry, revision, stamp)
    actions += _implausible(registry, revision)
    return actions


def _failure(registry: Registry, execution: Execution) -> list[AlertAction]:
    tipo = execution.detalle.get("tipo")
    if execution.outcome != "fallo" or tipo not in SYSTEM_RESOLVED:
        return []
    events = [
        event
        for event in registry.events_of_revision_of_types(execution.revision, (tipo,))
        if event.ejecucion_id == execution.id and event.observacion_id is None
    ]
    return [
        Raise(
            tipo,
            parse_utc_timestamp(execution.started_at),
            execution.fuente,
            detalle={
                "mensaje": execution.detalle.get("mensaje", ""),
                "revision": execution.revision,
                "ejecucion_id": execution.id,
                "evidencia_id": events[0].evidencia_id if events else None,
                "fecha_esperada": [event.fecha_serie for event in events],
            },
        )
    ]


def _incomplete(registry: Registry, execution: Execution) -> list[AlertAction]:
    missing = execution.detalle.get("faltantes") or []
    if execution.kind != "backfill" or not missing:
        return []
    start, end = execution.detalle.get("desde"), execution.detalle.get("hasta")
    events = registry.events_of_revision(execution.revision)
    return [
        Raise(
            BACKFILL_INCOMPLETO,
            parse_utc_timestamp(execution.started_at),
            execution.fuente,
            detalle={
                "mensaje": (
                    f"{len(missing)} business days from {start} to {end} are neither in the "
                    "answer nor declared without data"
                ),
                "serie": events[0].serie if events else None,
                "fechas": sorted(missing),
                "faltantes": list(missing),
                "desde": start,
                "hasta": end,
                "revision": execution.revision,
                "ejecucion_id": execution.id,
            },
            accumulate="fechas",
        )
    ]


def _discrepancies(registry: Registry, revision: int, stamp: str) -> list[AlertAction]:
    """One ``discrepancia`` per publication found to disagree with its close (a pair writes a
    row on each side; the publication's row is the one raised)."""
    actions: list[AlertAction] = []
    for cotejo in registry.cotejos_of_revision(revision, DISCREPANTE):
        publication = registry.observation(cotejo.observacion_id)
        close = registry.observation(cotejo.contraparte_observacion_id)
        if publication is None or close is None or publication.serie != PUBLICADO:
            continue
        actions.append(
            Raise(
                DISCREPANCIA,
                parse_utc_timestamp(stamp),
                publication.fuente,
                publication.fecha_serie,
                detalle={
                    "revision": revision,
                    PUBLICADO: _side(publication),
                    "cierre": _side(close),
                },
            )
        )
    return actions


def _side(observation: Observation) -> dict[str, str]:
    return {
        "observacion_id": observation.id,
        "fecha_serie": observation.fecha_serie,
        "compra": observation.compra,
        "venta": observation.venta,
    }


def _implausible(registry: Registry, revision: int) -> list[AlertAction]:
    return [
        Raise(
            PLAUSIBILIDAD_BAJA,
            parse_utc_timestamp(event.ts),
            event.fuente,
            event.fecha_serie,
            detalle={
                "observacion_id": event.observacion_id,
                "revision": revision,
                "motivos": event.detalle.get("motivos", []),
            },
        )
        for event in registry.events_of_revision_of_types(revision, (PLAUSIBILIDAD_BAJA,))
    ]


def _commit_stamp(registry: Registry, revision: int) -> str:
    found = registry.revision(revision)
    assert found is not None, f"revision {revision} is not in the registry"
    return found.ts_commit
