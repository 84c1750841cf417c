"""One capture run of the tax authority's text file: fetch, check the clock, parse, record."""

from __future__ import annotations

from datetime import datetime

import requests

from builder.capture.fetch import FetchFailure, fetch_source
from builder.capture.record import record_failure, record_rates
from builder.capture.run import CaptureResult, OperationalChecks, Run, SourceSpec, Stores
from builder.core.settings import Settings
from builder.disk import faults
from builder.sources import taxauth_txt
from builder.sources.common import InvariantError, SourceFormatError

TAXAUTH_TXT = SourceSpec(taxauth_txt.FUENTE, taxauth_txt.SERIE, taxauth_txt.PARSER_VERSION)


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
        exchange = fetch_source(settings, url, session=session)
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
            truncated=failure.truncated,
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
