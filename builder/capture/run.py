"""A capture run's vocabulary: who the source is, which stores a write touches, what one run
recorded, and the machine checks around it.

A run fetches a source (``fetch``), records what it said or how it failed as one registry revision
(``record``), then raises or resolves alerts. ``taxauth`` and ``centralbank`` are the two
sources' runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from builder.capture.fetch import HttpExchange
from builder.core.business_days import today_in_lima
from builder.core.canonical import utc_timestamp
from builder.core.settings import Settings
from builder.core.vocabulary import CURRENCY
from builder.disk.blobs import BlobStore
from builder.ops import health
from builder.ops.alerts import Alert, AlertStore
from builder.ops.shared_alerts import check_reachable, share, share_or_warn
from builder.registry.store import Registry

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
    moneda: str = CURRENCY


@dataclasses.dataclass(frozen=True, slots=True)
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


@contextlib.contextmanager
def open_stores(settings: Settings, *, share_alerts: bool = False) -> Iterator[Stores]:
    """The home's stores for one command. In fleet mode, the alert state is published to Redis
    when the command leaves them, if it changed since it was last published, or always with
    ``share_alerts`` (the ``alerts`` commands, which first check that Redis answers, so that
    with Redis down they change nothing): docs/operating/fleet.md#alerts."""
    if share_alerts and settings.redis_url:
        check_reachable(settings.redis_url)
    stores = Stores.open(settings.home)
    try:
        yield stores
    except BaseException:
        if settings.redis_url:
            with contextlib.suppress(Exception):  # the command's own error is the one to tell
                share(stores.alerts, settings.redis_url)
        raise
    else:
        if settings.redis_url:
            share_or_warn(stores.alerts, settings.redis_url, strict=share_alerts)
    finally:
        stores.close()


@dataclasses.dataclass(frozen=True, slots=True)
class DateOutcome:
    fecha_serie: str
    serie: str | None  # None: an annotation about every series
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


def worst_outcome(outcomes: Sequence[str]) -> str:
    return min(outcomes, key=OUTCOME_SEVERITY.index)


def disk_checked(
    stores: Stores, settings: Settings, now: datetime, write: Callable[[], CaptureResult]
) -> CaptureResult:
    """A registry write other than a capture run (an import, an annotation, a backfill, a series
    switch) with the disk checked first, as a capture's is (:class:`OperationalChecks`): under
    ``FXEV_MIN_FREE_BYTES`` it raises ``disco``, which its result carries; the write still goes
    ahead."""
    low = health.check_disk(stores.alerts, settings.home, settings.min_free_bytes, now)
    result = write()
    return result if low is None else dataclasses.replace(result, alertas=(low, *result.alertas))


class OperationalChecks:
    """The machine's health around one run: disk space before the write, clock at the fetch.

    The clock is compared with the source's ``Date`` at the instant the response's headers
    arrived (``HttpExchange.received_at``), not after the body: a slow body is not a clock off
    (docs/operating/capture.md#deadline).
    """

    def __init__(self, stores: Stores, settings: Settings, run: Run) -> None:
        self.stores = stores
        self.settings = settings
        self.run = run
        self.alerts: list[Alert] = []
        low = health.check_disk(stores.alerts, settings.home, settings.min_free_bytes, run.now)
        self._keep(low)

    def clock(self, exchange: Answer | None) -> None:
        """The clock checked against the source's ``Date``; a saved answer has no headers."""
        if not isinstance(exchange, HttpExchange):
            return
        self._keep(
            health.check_clock(
                self.stores.alerts,
                self.run.spec.fuente,
                exchange.headers,
                # the machine's real clock when the headers arrived, never FXEV_NOW
                exchange.received_at or datetime.now(UTC),
                self.settings.clock_tolerance_s,
                now=self.run.now,
            )
        )

    def _keep(self, alert: Alert | None) -> None:
        if alert is not None:
            self.alerts.append(alert)

    def added_to(self, result: CaptureResult) -> CaptureResult:
        if not self.alerts:
            return result
        return dataclasses.replace(result, alertas=(*result.alertas, *self.alerts))
