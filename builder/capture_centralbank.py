"""One capture run of the central bank's SBS close (``fuente`` centralbank, series ``cierre``).

It asks for the last ``FXEV_CENTRALBANK_DAYS`` days up to today in Lima, sending a
``User-Agent`` (without one the API's firewall tends to answer an HTML page). The whole answer is
one piece of evidence and the run is one revision holding every date: observations (new,
identical re-captures, corrections), manifest entries for the dates the source declares without
data, and the cross-checks those touched. Dates still pending (``n.d.`` with nothing published
after them) record nothing; when every date is pending the run is ``sin_cambios`` and makes no
revision. A failure records one event per requested date.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import requests

from builder import faults
from builder.capture import (
    CaptureResult,
    OperationalChecks,
    Run,
    SourceSpec,
    Stores,
    record_failure,
    record_rates,
)
from builder.fetch import FetchFailure, fetch
from builder.settings import Settings
from builder.sources import centralbank
from builder.sources.common import InvariantError, SourceFormatError

CENTRALBANK = SourceSpec(centralbank.FUENTE, centralbank.SERIE, centralbank.PARSER_VERSION)
USER_AGENT = "fxev/1.0 (exchange-rate evidence service; +https://github.com/fxev)"


def requested_dates(start: date, end: date) -> list[date]:
    return [start + timedelta(days=n) for n in range((end - start).days + 1)]


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
    return checks.added_to(_capture(stores, settings, run, checks, base_url, session, start, end))


def _capture(
    stores: Stores,
    settings: Settings,
    run: Run,
    checks: OperationalChecks,
    base_url: str | None,
    session: requests.Session | None,
    start: date | None,
    end: date | None,
) -> CaptureResult:
    end = end or run.today_lima
    start = start or end - timedelta(days=settings.centralbank_days - 1)
    url = centralbank.query_url(base_url or settings.centralbank_url, start, end)
    expected = requested_dates(start, end)
    try:
        exchange = fetch(
            url,
            max_body_bytes=settings.max_body_bytes,
            proxy=settings.proxy,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            session=session,
        )
    except FetchFailure as failure:
        checks.clock(failure.exchange)
        return record_failure(
            stores, run, failure.alert_type, failure.message, failure.exchange, f"GET {url}",
            expected,
        )  # fmt: skip
    checks.clock(exchange)
    faults.crash_point("after_fetch")
    try:
        answer = centralbank.parse_response(
            exchange.body, start=start, end=end, today_lima=run.today_lima
        )
    except (SourceFormatError, InvariantError) as error:
        return record_failure(
            stores, run, error.alert_type, str(error), exchange, exchange.identidad_consulta,
            expected,
        )  # fmt: skip
    if not answer.days:
        message = f"the answer lists no date at all from {start} to {end}"
        return record_failure(
            stores, run, "fuente_no_disponible", message, exchange, exchange.identidad_consulta,
            expected,
        )  # fmt: skip
    if not answer.rates and not answer.declared_nd:
        return CaptureResult(None, "sin_cambios", None, (), ())
    declared = [day.fecha_serie for day in answer.declared_nd]
    return record_rates(stores, settings, run, exchange, answer.rates, declared)
