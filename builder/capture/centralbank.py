"""One capture run of the central bank's SBS close (``fuente`` centralbank, series ``cierre``).

It asks for the last ``FXEV_CENTRALBANK_DAYS`` days up to today in Lima, sending a
``User-Agent`` (without one the API's firewall tends to answer an HTML page). The whole answer is
one piece of evidence and the run is one revision holding every date: observations (new,
identical re-captures, corrections), manifest entries for the dates the source declares without
data, and the cross-checks those touched. Dates still pending (``n.d.`` with nothing published
after them) record nothing; when every date is pending the run is ``sin_cambios`` and makes no
revision, yet it is a successful capture, so it resolves the source's failure alerts. A close
dated tomorrow in Lima, after the requested range, is recorded and marked ``plausibilidad_baja``
like any source's; one dated later fails the run as ``invariante_fallida``
(``builder.sources.centralbank``). A failure records one event per requested date.

:func:`read_range` (fetch and parse one range, or say how it failed) is shared with the backfill
(``builder.capture.backfill``), which reads a longer range the same way and records it as one
revision of kind ``backfill``.
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta

import requests

from builder.capture.alerting import resolved_without_revision
from builder.capture.fetch import FetchFailure, fetch_source
from builder.capture.record import record_failure, record_rates
from builder.capture.run import (
    Answer,
    CaptureResult,
    OperationalChecks,
    Run,
    SavedAnswer,
    SourceSpec,
    Stores,
)
from builder.core.settings import Settings
from builder.core.vocabulary import FUENTE_NO_DISPONIBLE
from builder.disk import faults
from builder.sources import centralbank
from builder.sources.centralbank import CentralBankAnswer
from builder.sources.common import InvariantError, SourceFormatError, content_type_of

CENTRALBANK = SourceSpec(centralbank.FUENTE, centralbank.SERIE, centralbank.PARSER_VERSION)
USER_AGENT = "fxev/1.0 (exchange-rate evidence service; +https://github.com/fxev)"
ASKED_WITH = {"User-Agent": USER_AGENT, "Accept": "application/json"}


def requested_dates(start: date, end: date) -> list[date]:
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


@dataclasses.dataclass(frozen=True, slots=True)
class RangeRead:
    """What one request for ``start``..``end`` gave: an answer, or a failure to record."""

    start: date
    end: date
    url: str
    exchange: Answer | None
    answer: CentralBankAnswer | None = None
    alert_type: str | None = None
    message: str = ""
    truncated: bool = False  # the failure's bytes are a part of an answer cut short

    @property
    def expected(self) -> list[date]:
        return requested_dates(self.start, self.end)

    def record_failure(self, stores: Stores, run: Run) -> CaptureResult:
        """Record this failed read: its evidence and one event per requested date."""
        assert self.alert_type is not None
        identity = self.exchange.identidad_consulta if self.exchange else f"GET {self.url}"
        return record_failure(
            stores,
            run,
            self.alert_type,
            self.message,
            self.exchange,
            identity,
            self.expected,
            truncated=self.truncated,
        )


def read_range(
    settings: Settings,
    run: Run,
    start: date,
    end: date,
    base_url: str | None = None,
    session: requests.Session | None = None,
    saved: bytes | None = None,
) -> RangeRead:
    """Fetch and parse the SBS close from ``start`` to ``end`` in one request; or, given
    ``saved``, parse the answer to that request an operator saved (``fxev backfill
    --from-file``): its bytes are the evidence, with no HTTP status or headers, and its
    ``identidad_consulta`` the request it answered.

    Never raises for the source's behaviour: an unreachable source, a body that is not the
    answer, a value that cannot be a rate and an answer listing no date at all come back as a
    ``RangeRead`` with ``alert_type`` set. ``ValueError`` for a range the API cannot express.
    """
    url = centralbank.query_url(base_url or settings.centralbank_url, start, end)
    exchange: Answer
    if saved is not None:
        exchange = SavedAnswer(saved, f"GET {url}", content_type_of(saved))
    else:
        try:
            exchange = fetch_source(settings, url, headers=ASKED_WITH, session=session)
        except FetchFailure as failure:
            return RangeRead(
                start, end, url, failure.exchange,
                alert_type=failure.alert_type, message=failure.message,
                truncated=failure.truncated,
            )  # fmt: skip
        faults.crash_point("after_fetch")
    try:
        answer = centralbank.parse_response(
            exchange.body, start=start, end=end, today_lima=run.today_lima
        )
    except (SourceFormatError, InvariantError) as error:
        return RangeRead(start, end, url, exchange, alert_type=error.alert_type, message=str(error))
    if not answer.days:
        message = f"the answer lists no date at all from {start} to {end}"
        return RangeRead(
            start, end, url, exchange, alert_type=FUENTE_NO_DISPONIBLE, message=message
        )
    return RangeRead(start, end, url, exchange, answer)


def capture_centralbank(
    stores: Stores,
    settings: Settings,
    now: datetime,
    base_url: str | None = None,
    session: requests.Session | None = None,
    start: date | None = None,
    end: date | None = None,
) -> CaptureResult:
    """One run over ``start``..``end`` (default: the configured days back to today in Lima)."""
    run = Run(CENTRALBANK, now)
    checks = OperationalChecks(stores, settings, run)
    end = end or run.today_lima
    start = start or end - timedelta(days=settings.centralbank_days - 1)
    read = read_range(settings, run, start, end, base_url, session)
    checks.clock(read.exchange)
    return checks.added_to(_record(stores, settings, run, read))


def _record(stores: Stores, settings: Settings, run: Run, read: RangeRead) -> CaptureResult:
    if read.answer is None or read.exchange is None:
        return read.record_failure(stores, run)
    answer = read.answer
    if not answer.rates and not answer.declared_nd:
        resolved = resolved_without_revision(stores, run.spec.fuente, run.now)
        return CaptureResult(None, "sin_cambios", None, (), resolved)
    declared = [day.fecha_serie for day in answer.declared_nd]
    return record_rates(stores, settings, run, read.exchange, answer.rates, declared)
