"""Registry writes a person makes: annotations and putting a series in production.

Each is one revision with the operator's name and a mandatory justification, and prints the
capture shape. Annotations are a parallel record: they never become or replace an observation.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import date, datetime
from decimal import Decimal

from builder.capture.run import CaptureResult, DateOutcome, Stores
from builder.core.canonical import canonical_rate, iso_date, utc_timestamp
from builder.core.errors import UsageError
from builder.core.vocabulary import CURRENCY, SERIES
from builder.registry.records import Annotation, Execution, SeriesSwitch
from builder.sources.common import MAX_PLAUSIBLE_RATE, MIN_PLAUSIBLE_RATE

SWITCHABLE = ("cierre",)  # publicado is served from the start
MAX_TEXT = 2000


class OperatorError(UsageError, ValueError):
    """The request cannot be recorded as given; nothing was written."""


@dataclasses.dataclass(frozen=True, slots=True)
class AnnotationRequest:
    fecha: date
    texto: str
    actor: str
    justificacion: str
    serie: str | None = None
    compra: str | None = None
    venta: str | None = None


def _required(name: str, value: str) -> str:
    value = value.strip()
    if not value:
        raise OperatorError(f"{name} must not be empty")
    if len(value) > MAX_TEXT:
        raise OperatorError(f"{name} is longer than {MAX_TEXT} characters")
    return value


def _value(name: str, raw: str) -> str:
    try:
        value = canonical_rate(raw.strip())
    except ValueError:
        raise OperatorError(f"{name} {raw!r} is not a decimal number") from None
    if not MIN_PLAUSIBLE_RATE < Decimal(value) < MAX_PLAUSIBLE_RATE:
        raise OperatorError(f"{name} {raw!r} cannot be a USD/PEN rate")
    return value


def parse_annotation(
    fecha: str,
    texto: str,
    actor: str,
    justificacion: str,
    serie: str | None = None,
    compra: str | None = None,
    venta: str | None = None,
) -> AnnotationRequest:
    """Check an annotation's fields (pure); values become canonical 3-decimal text."""
    try:
        day = iso_date(fecha.strip())
    except ValueError:
        raise OperatorError(f"--fecha {fecha!r} is not a date YYYY-MM-DD") from None
    if serie is not None and serie not in SERIES:
        raise OperatorError(f"--serie {serie!r}: expected one of {', '.join(SERIES)}")
    if (compra is None) != (venta is None):
        raise OperatorError("--compra and --venta go together")
    return AnnotationRequest(
        fecha=day,
        texto=_required("--texto", texto),
        actor=_required("--actor", actor),
        justificacion=_required("--justification", justificacion),
        serie=serie,
        compra=None if compra is None else _value("--compra", compra),
        venta=None if venta is None else _value("--venta", venta),
    )


def new_execution(revision: int, kind: str, now: datetime, detalle: dict[str, object]) -> Execution:
    return Execution(
        id=str(uuid.uuid4()),
        revision=revision,
        kind=kind,
        fuente=None,
        started_at=utc_timestamp(now),
        outcome="nueva",
        detalle=detalle,
    )


def annotate(stores: Stores, request: AnnotationRequest, now: datetime) -> CaptureResult:
    """Record one annotation as one revision."""
    with stores.registry.write("anotacion", now) as tx:
        annotation = tx.add(
            Annotation(
                id=str(uuid.uuid4()),
                revision=tx.revision,
                fecha=request.fecha.isoformat(),
                moneda=CURRENCY,
                serie=request.serie,
                texto=request.texto,
                compra=request.compra,
                venta=request.venta,
                actor=request.actor,
                justificacion=request.justificacion,
                ts=tx.ts_commit,
            )
        )
        tx.add(new_execution(tx.revision, "annotate", now, {"anotacion_id": annotation.id}))
        tx.summary = {"anotacion_id": annotation.id, "actor": request.actor}
    outcome = DateOutcome(annotation.fecha, request.serie, "nueva", None)  # None: every series
    return CaptureResult(tx.revision, "nueva", None, (outcome,), ())


def check_series_switch(serie: str, actor: str, justificacion: str) -> tuple[str, str]:
    """Check a ``series publish`` request (pure): the checked actor and justification."""
    if serie not in SWITCHABLE:
        raise OperatorError(f"only {', '.join(SWITCHABLE)} can be published; {serie!r} cannot")
    return _required("--actor", actor), _required("--justification", justificacion)


def publish_series(
    stores: Stores, serie: str, actor: str, justificacion: str, now: datetime
) -> CaptureResult:
    """Put ``serie`` in production from the next revision on; ``sin_cambios`` if it already is."""
    actor, justificacion = check_series_switch(serie, actor, justificacion)
    if stores.registry.series_in_production(CURRENCY, serie):
        return CaptureResult(None, "sin_cambios", None, (), ())
    with stores.registry.write("serie", now) as tx:
        switch = tx.add(
            SeriesSwitch(
                id=str(uuid.uuid4()),
                revision=tx.revision,
                moneda=CURRENCY,
                serie=serie,
                estado="produccion",
                actor=actor,
                justificacion=justificacion,
                ts=tx.ts_commit,
            )
        )
        tx.add(new_execution(tx.revision, "series", now, {"serie": serie, "switch_id": switch.id}))
        tx.summary = {"serie": serie, "estado": "produccion", "actor": actor}
    return CaptureResult(tx.revision, "nueva", None, (), ())
