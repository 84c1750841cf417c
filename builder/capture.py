"""A capture run: fetch a source, record what it said (or how it failed) as one revision.

fetch -> store the bytes (content-addressed, fsynced) -> parse -> one registry transaction with
the execution, the evidence, the observation(s) and their events -> alerts. A failure is recorded
with its evidence and an event carrying the expected date, never dropped.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import requests

from builder import faults, health
from builder.alerts import Alert, AlertStore
from builder.business_days import today_in_lima
from builder.canonical import utc_timestamp
from builder.cotejos import Pair, write_cotejos
from builder.fetch import FetchFailure, HttpExchange, fetch
from builder.plausibility import plausibility_reasons
from builder.registry.blobs import BlobStore
from builder.registry.records import Event, Evidence, Execution, ManifestEntry, Observation
from builder.registry.store import Registry, WriteTransaction
from builder.settings import Settings
from builder.sources import taxauth_txt
from builder.sources.common import InvariantError, ParsedRate, SourceFormatError

MONEDA = "USD"
# Worst first: the run's outcome is the worst of its dates' outcomes.
OUTCOME_SEVERITY = ("fallo", "correccion", "nueva", "identica")
# A run's execution kind -> the kind of the registry revision it writes (schema.sql).
REVISION_KINDS = {"capture": "captura", "backfill": "backfill"}


@dataclasses.dataclass(frozen=True, slots=True)
class SourceSpec:
    """Who a source is in the registry: its ``fuente``, series and parser version."""

    fuente: str
    serie: str
    version_parser: str
    moneda: str = MONEDA


TAXAUTH_TXT = SourceSpec(taxauth_txt.FUENTE, taxauth_txt.SERIE, taxauth_txt.PARSER_VERSION)


@dataclasses.dataclass(slots=True)
class Stores:
    """The stores a write touches: the registry, the evidence blobs and the alerts."""

    registry: Registry
    blobs: BlobStore
    alerts: AlertStore

    @classmethod
    def open(cls, home: Path) -> Stores:
        return cls(Registry.open(home), BlobStore(home / "evidence"), AlertStore.open(home))

    def close(self) -> None:
        self.registry.close()
        self.alerts.close()


@dataclasses.dataclass(frozen=True, slots=True)
class DateOutcome:
    fecha_serie: str
    serie: str
    outcome: str
    observacion_id: str | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class CaptureResult:
    revision: int | None
    outcome: str
    observacion_id: str | None
    observaciones: tuple[DateOutcome, ...]
    alertas: tuple[Alert, ...]

    def to_json(self) -> dict[str, Any]:
        alerts = [alert.to_json() for alert in self.alertas]
        return {
            "revision": self.revision,
            "outcome": self.outcome,
            "observacion_id": self.observacion_id,
            "observaciones": [item.to_json() for item in self.observaciones],
            "alerta": alerts[0] if alerts else None,
            "alertas": alerts,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Run:
    """One execution: its id, its instant, the source it reads, and its kind.

    ``kind`` is the execution kind (``capture`` or ``backfill``); it names the registry revision
    the run writes (``captura`` or ``backfill``).
    """

    spec: SourceSpec
    now: datetime
    ejecucion_id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    kind: str = "capture"

    def __post_init__(self) -> None:
        if self.kind not in REVISION_KINDS:
            raise ValueError(f"run kind {self.kind!r}: expected one of {sorted(REVISION_KINDS)}")

    @property
    def revision_kind(self) -> str:
        return REVISION_KINDS[self.kind]

    @property
    def stamp(self) -> str:
        return utc_timestamp(self.now)

    @property
    def today_lima(self) -> date:
        return today_in_lima(self.now)


@dataclasses.dataclass(frozen=True, slots=True)
class SavedAnswer:
    """A source's answer that reached us as a file an operator saved, not through our own fetch.

    Its bytes are evidence like a fetched body, with no HTTP status or headers (we saw none);
    ``identidad_consulta`` names the query that produced it.
    """

    body: bytes
    identidad_consulta: str
    content_type: str


Answer = HttpExchange | SavedAnswer


@dataclasses.dataclass(frozen=True, slots=True)
class Recorded:
    """What recording one date produced, and the data alerts it calls for after commit."""

    outcome: DateOutcome
    implausible: list[dict[str, Any]]


def worst_outcome(outcomes: Sequence[str]) -> str:
    return min(outcomes, key=OUTCOME_SEVERITY.index)


# -- the tax authority's text file --------------------------------------------------------


def capture_taxauth_txt(
    stores: Stores,
    settings: Settings,
    now: datetime,
    url: str | None = None,
    session: requests.Session | None = None,
) -> CaptureResult:
    """One capture run of the tax authority's text file."""
    run = Run(TAXAUTH_TXT, now)
    checks = OperationalChecks(stores, settings, run)
    return checks.added_to(_capture_taxauth_txt(stores, settings, run, checks, url, session))


def _capture_taxauth_txt(
    stores: Stores,
    settings: Settings,
    run: Run,
    checks: OperationalChecks,
    url: str | None,
    session: requests.Session | None,
) -> CaptureResult:
    url = url or settings.taxauth_url
    expected = run.today_lima
    try:
        exchange = fetch(
            url, max_body_bytes=settings.max_body_bytes, proxy=settings.proxy, session=session
        )
    except FetchFailure as failure:
        checks.clock(failure.exchange)
        return record_failure(
            stores,
            run,
            failure.alert_type,
            failure.message,
            failure.exchange,
            f"GET {url}",
            [expected],
        )
    checks.clock(exchange)
    faults.crash_point("after_fetch")
    try:
        rate = taxauth_txt.parse_taxauth_txt(exchange.body, expected)
    except (SourceFormatError, InvariantError) as error:
        return record_failure(
            stores,
            run,
            error.alert_type,
            str(error),
            exchange,
            exchange.identidad_consulta,
            [expected],
        )
    return record_rates(stores, settings, run, exchange, [rate])


# -- operational checks -------------------------------------------------------------------


class OperationalChecks:
    """The machine's health around one run: disk space before the write, clock at the fetch."""

    def __init__(self, stores: Stores, settings: Settings, run: Run) -> None:
        self.stores = stores
        self.settings = settings
        self.run = run
        self.alerts: list[Alert] = []
        low = health.check_disk(stores.alerts, settings.home, settings.min_free_bytes, run.now)
        self._keep(low)

    def clock(self, exchange: HttpExchange | None) -> None:
        if exchange is None:
            return
        self._keep(
            health.check_clock(
                self.stores.alerts,
                self.run.spec.fuente,
                exchange.headers,
                datetime.now(UTC),  # the machine's real clock, never FXEV_NOW
                self.settings.clock_tolerance_s,
            )
        )

    def _keep(self, alert: Alert | None) -> None:
        if alert is not None:
            self.alerts.append(alert)

    def added_to(self, result: CaptureResult) -> CaptureResult:
        if not self.alerts:
            return result
        return dataclasses.replace(result, alertas=(*result.alertas, *self.alerts))


# -- recording ----------------------------------------------------------------------------


def store_evidence(
    stores: Stores,
    tx: WriteTransaction,
    run: Run,
    body: bytes,
    exchange: Answer | None,
    identidad_consulta: str,
    content_type: str | None = None,
) -> Evidence:
    """Insert the evidence row of ``body``, whose bytes must already be in the blob store."""
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
            truncated=exchange.truncated if exchange else False,
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
) -> CaptureResult:
    """Record a failed run: its evidence (zero bytes if nothing arrived), one event per date."""
    body = exchange.body if exchange else b""
    spec = run.spec
    stores.blobs.put(body)
    faults.crash_point("after_blob_write")
    with stores.registry.write(run.revision_kind, run.now) as tx:
        evidence = store_evidence(stores, tx, run, body, exchange, identidad_consulta)
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
        tx.add(_execution(tx, run, "fallo", {"tipo": alert_type, "mensaje": message}))
        tx.summary = {"fuente": spec.fuente, "outcome": "fallo", "tipo": alert_type}
    alert = stores.alerts.raise_alert(
        alert_type,
        run.now,
        fuente=spec.fuente,
        detalle={
            "mensaje": message,
            "revision": tx.revision,
            "ejecucion_id": run.ejecucion_id,
            "evidencia_id": evidence.id,
            "fecha_esperada": [d.isoformat() for d in expected_dates],
        },
    )
    outcomes = tuple(DateOutcome(d.isoformat(), spec.serie, "fallo", None) for d in expected_dates)
    return CaptureResult(tx.revision, "fallo", None, outcomes, (alert,))


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
    missing). Only a capture resolves the source's failure alerts (DECISIONS 7: "the next
    capture of that source").
    """
    recorded: list[Recorded] = []
    stores.blobs.put(exchange.body)
    faults.crash_point("after_blob_write")
    with stores.registry.write(run.revision_kind, run.now) as tx:
        evidence = store_evidence(
            stores, tx, run, exchange.body, exchange, exchange.identidad_consulta
        )
        for rate in rates:
            recorded.append(
                record_rate(stores.registry, tx, run, evidence, rate, settings.plausibility_pct)
            )
        declared = add_manifest_entries(stores.registry, tx, run, evidence, declared_no_data)
        pairs = cross_check(stores.registry, tx, run.spec.serie, recorded, declared)
        # A run that only declares dates without data still records something new.
        outcome = worst_outcome([r.outcome.outcome for r in recorded]) if recorded else "nueva"
        detalle = {
            "fechas": len(recorded),
            "nd_fuente": [d.isoformat() for d in declared],
            **(execution_detail or {}),
        }
        tx.add(_execution(tx, run, outcome, detalle))
        tx.summary = {"fuente": run.spec.fuente, "outcome": outcome, "fechas": len(recorded)}
    alerts: list[Alert] = []
    if run.kind == "capture":
        alerts += stores.alerts.resolve_source_failures(run.spec.fuente, run.now)
    alerts += raise_discrepancies(stores.alerts, pairs, tx.revision, run.now)
    for item in recorded:
        if item.implausible:
            alerts.append(
                stores.alerts.raise_alert(
                    "plausibilidad_baja",
                    run.now,
                    fuente=run.spec.fuente,
                    fecha_serie=item.outcome.fecha_serie,
                    detalle={
                        "observacion_id": item.outcome.observacion_id,
                        "revision": tx.revision,
                        "motivos": item.implausible,
                    },
                )
            )
    single = recorded[0].outcome.observacion_id if len(recorded) == 1 and not declared else None
    return CaptureResult(
        tx.revision, outcome, single, tuple(r.outcome for r in recorded), tuple(alerts)
    )


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
                estado="nd_fuente",
                ejecucion_id=run.ejecucion_id,
                evidencia_id=evidence.id,
            )
        )
    return new


def cross_check(
    registry: Registry,
    tx: WriteTransaction,
    serie: str,
    outcomes: Sequence[Recorded | DateOutcome],
    declared: Sequence[date] = (),
) -> list[Pair]:
    """Cotejos for every date of ``serie`` whose valid observation this write changed."""
    changed = [
        date.fromisoformat(item.fecha_serie)
        for item in (o.outcome if isinstance(o, Recorded) else o for o in outcomes)
        if item.outcome in ("nueva", "correccion")
    ]
    if serie == "publicado":
        return write_cotejos(registry, tx, publicado_dates=changed, declared_dates=declared)
    return write_cotejos(registry, tx, cierre_dates=changed, declared_dates=declared)


def raise_discrepancies(
    alerts: AlertStore, pairs: Sequence[Pair], revision: int, now: datetime
) -> list[Alert]:
    """One ``discrepancia`` alert per publication date found to disagree with its close."""
    raised = []
    for pair in pairs:
        if not pair.discrepante:
            continue
        publication, close = pair.publicado, pair.cierre
        raised.append(
            alerts.raise_alert(
                "discrepancia",
                now,
                fuente=publication.fuente,
                fecha_serie=publication.fecha_serie,
                detalle={
                    "revision": revision,
                    "publicado": {
                        "observacion_id": publication.id,
                        "fecha_serie": publication.fecha_serie,
                        "compra": publication.compra,
                        "venta": publication.venta,
                    },
                    "cierre": {
                        "observacion_id": close.id,
                        "fecha_serie": close.fecha_serie,
                        "compra": close.compra,
                        "venta": close.venta,
                    },
                },
            )
        )
    return raised


def record_rate(
    registry: Registry,
    tx: WriteTransaction,
    run: Run,
    evidence: Evidence,
    rate: ParsedRate,
    threshold_pct: Decimal,
) -> Recorded:
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
        return Recorded(DateOutcome(fecha, spec.serie, "identica", current.id), [])

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
    previous = registry.previous_valid_observation(spec.moneda, spec.serie, fecha)
    reasons = plausibility_reasons(
        rate.fecha_serie, rate.compra, rate.venta, previous, run.today_lima, threshold_pct
    )
    if reasons:
        add_event(
            tx,
            run,
            "plausibilidad_baja",
            evidence,
            observacion_id=observation.id,
            fecha_serie=fecha,
            detalle={"motivos": reasons},
        )
    outcome = "correccion" if is_correction else "nueva"
    return Recorded(DateOutcome(fecha, spec.serie, outcome, observation.id), reasons)


def _execution(tx: WriteTransaction, run: Run, outcome: str, detalle: dict[str, Any]) -> Execution:
    return Execution(
        id=run.ejecucion_id,
        revision=tx.revision,
        kind=run.kind,
        fuente=run.spec.fuente,
        started_at=run.stamp,
        outcome=outcome,
        detalle=detalle,
    )
