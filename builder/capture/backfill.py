"""``fxev backfill``: a source's own history for a date range, as one revision
(docs/operating/capture.md#backfill).

A backfill records what a source says about past dates exactly as a capture records what it
says today (the same recording: new, identical, correction; declared ``n.d.``; cotejos;
plausibility), in one revision of kind ``backfill`` whose execution is of kind ``backfill``.

- ``centralbank``: one request for the whole range, through the capture's own fetch and parser
  (:func:`builder.capture.centralbank.read_range`). The sources page
  (docs/sources.md#central-bank-url) knows no limit on the range the API answers, so the range is
  not split; an answer cut short shows up as missing dates below. With ``--from-file`` the
  answer to that same request, saved by an operator (the API's firewall may refuse this host),
  is read instead: its bytes are the evidence, with no HTTP status or headers, and its
  ``identidad_consulta`` is the request it answered, ``GET <url>``.
- ``taxauth_txt``: the tax authority's monthly history needs a reCAPTCHA token only a browser
  obtains (docs/sources.md#monthly-history), so it is never fetched: the operator saves the answer
  for one month and gives it with ``--from-file``. Its bytes are the evidence (no HTTP status or
  headers: we saw none), its ``identidad_consulta`` is ``POST <endpoint>?anio=Y&mes=M`` (``mes``
  from 0, as the endpoint counts), and its dates are ``fuente`` ``taxauth_txt``, so a value
  differing from the text file's for the same date is a correction. One saved answer covers one
  month: the range must lie in it, and its other dates stay in the evidence without being recorded.

Missing dates: a business day of the range (``builder.core.business_days``) that the answer neither
gives a value for nor declares ``n.d.`` (in this answer or an earlier run) is missing, unless it
may still be unpublished: a date after the last one with a value and on or after the newest
date the series should already carry (today for ``publicado``; for ``cierre`` the business day
before the last one, published on the next), or a date the answer marks ``n.d.`` with no value
after it, which is pending however late (DECISIONS 11: no manifest entry, no cotejo, no
alert). The data is recorded anyway, with the missing dates in the execution's ``detalle``
(``faltantes``), from which one ``backfill_incompleto`` alert per source (de-duplicated; its
``fechas`` keep every date listed since it opened) follows (``builder.capture.alerting``); an
operator resolves it with ``fxev alerts resolve``. No value is ever derived for a missing date.

An answer with nothing in it is a failure, never "no data": ``[]`` from the tax authority, an
answer listing no date, or one giving no value for any date of a range that should have some
(``fuente_no_disponible``); so is any answer the capture would refuse. A failure records its
evidence and one event per requested date. A backfill never resolves source-failure alerts: the
next capture does (docs/decisions.md#alerts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import requests

from builder.capture.centralbank import CENTRALBANK, read_range, requested_dates
from builder.capture.record import record_failure, record_rates
from builder.capture.run import Answer, CaptureResult, Run, SavedAnswer, SourceSpec, Stores
from builder.core.business_days import business_days_between, expected_series_date
from builder.core.canonical import iso_date
from builder.core.errors import NotFound, UsageError
from builder.core.settings import Settings
from builder.core.vocabulary import CAPTURED_SOURCES, FUENTE_NO_DISPONIBLE
from builder.sources import centralbank, taxauth_monthly
from builder.sources.common import (
    InvariantError,
    ParsedRate,
    SourceFormatError,
    content_type_of,
)

TAXAUTH_MONTHLY = SourceSpec(
    taxauth_monthly.FUENTE, taxauth_monthly.SERIE, taxauth_monthly.PARSER_VERSION
)


class BackfillError(UsageError, ValueError):
    """The backfill cannot run as asked; nothing was written. The message is one line."""


class SavedFileUnreadable(BackfillError, NotFound):
    """The saved answer named by ``--from-file`` cannot be read."""


def parse_date(raw: str, option: str) -> date:
    """A ``YYYY-MM-DD`` option value."""
    try:
        return iso_date(raw)
    except ValueError:
        raise BackfillError(f"{option} {raw!r} is not a date YYYY-MM-DD") from None


def check_request(
    source: str, start: date, end: date, today_lima: date, from_file: str | None
) -> None:
    """Refuse a request that cannot run, before anything is opened or written."""
    if source not in CAPTURED_SOURCES:
        known = ", ".join(CAPTURED_SOURCES)
        raise BackfillError(f"unknown source {source!r}: expected one of {known}")
    if start > end:
        raise BackfillError(f"--from {start} is after --to {end}")
    if end > today_lima:
        raise BackfillError(f"--to {end} is after today in Lima ({today_lima}): nothing to read")
    if source == centralbank.FUENTE:
        try:
            centralbank.query_url("https://check.invalid", start, end)
        except ValueError as error:
            raise BackfillError(str(error)) from None
        return
    if not from_file:
        raise BackfillError(
            "taxauth_txt's monthly history needs a browser token and is never fetched: "
            "give the answer saved from the browser with --from-file"
        )
    if (start.year, start.month) != (end.year, end.month):
        raise BackfillError(
            f"a saved answer covers one month: --from {start} and --to {end} must be in the "
            "same month (run one backfill per month)"
        )


def read_saved(path: Path, max_bytes: int) -> bytes:
    """The saved answer's bytes; ``BackfillError`` when they cannot be an answer at all."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SavedFileUnreadable(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise BackfillError(
            f"{path} holds {len(data)} bytes, more than FXEV_MAX_BODY_BYTES ({max_bytes})"
        )
    return data


def missing_dates(
    serie: str,
    start: date,
    end: date,
    valued: Collection[date],
    declared: Collection[date],
    today_lima: date,
) -> list[date]:
    """Business days of ``start``..``end`` with neither a value nor a declaration that can no
    longer be pending (see the module docstring), ascending."""
    last_valued = max(valued, default=None)
    newest_due = expected_series_date(serie, today_lima)

    def may_be_pending(day: date) -> bool:
        return (last_valued is None or day > last_valued) and day >= newest_due

    return [
        day
        for day in business_days_between(start, end)
        if day not in valued and day not in declared and not may_be_pending(day)
    ]


# -- the two sources ----------------------------------------------------------------------


def backfill_centralbank(
    stores: Stores,
    settings: Settings,
    now: datetime,
    start: date,
    end: date,
    base_url: str | None = None,
    session: requests.Session | None = None,
    saved: bytes | None = None,
    file_name: str | None = None,
) -> CaptureResult:
    """The central bank's SBS close from ``start`` to ``end``, fetched in one request; or, with
    ``saved``, read from the answer to that request an operator saved as ``file_name``."""
    run = Run(CENTRALBANK, now, kind="backfill")
    read = read_range(settings, run, start, end, base_url, session, saved)
    if read.answer is None or read.exchange is None:
        return read.record_failure(stores, run)
    declared = [day.fecha_serie for day in read.answer.declared_nd]
    pending = [day.fecha_serie for day in read.answer.pending]
    detail = {} if file_name is None else {"archivo": file_name}
    return record_history(
        stores, settings, run, read.exchange, read.answer.rates, declared, start, end, detail,
        pending=pending,
    )  # fmt: skip


def backfill_taxauth(
    stores: Stores,
    settings: Settings,
    now: datetime,
    start: date,
    end: date,
    saved: bytes,
    file_name: str,
    url: str | None = None,
) -> CaptureResult:
    """The tax authority's publications from ``start`` to ``end`` (one month), from the answer
    an operator saved; ``url`` names the endpoint that answered (default: the documented one)."""
    run = Run(TAXAUTH_MONTHLY, now, kind="backfill")
    identity = taxauth_monthly.query_identity(
        url or taxauth_monthly.ENDPOINT, start.year, start.month
    )
    answer = SavedAnswer(saved, identity, content_type_of(saved))
    expected = requested_dates(start, end)
    try:
        month = taxauth_monthly.parse_monthly(
            saved, year=start.year, month=start.month, today_lima=run.today_lima
        )
    except (SourceFormatError, InvariantError) as error:
        return record_failure(stores, run, error.alert_type, str(error), answer, identity, expected)
    if month.empty:
        message = (
            "the answer is [] (what a missing or refused token gets): a failure, not 'no data'"
        )
        return record_failure(
            stores, run, FUENTE_NO_DISPONIBLE, message, answer, identity, expected
        )
    rates = [rate for rate in month.rates if start <= rate.fecha_serie <= end]
    return record_history(
        stores, settings, run, answer, rates, (), start, end, {"archivo": file_name}
    )


# -- recording ----------------------------------------------------------------------------


def record_history(
    stores: Stores,
    settings: Settings,
    run: Run,
    answer: Answer,
    rates: Sequence[ParsedRate],
    declared: Sequence[date],
    start: date,
    end: date,
    detail: Mapping[str, Any],
    *,
    pending: Collection[date] = (),
) -> CaptureResult:
    """Record one answer's dates as one revision and alert on the dates it left missing. A date
    the answer marks ``n.d.`` with no value after it (``pending``) is pending however late it
    is, never missing (DECISIONS 11: no manifest entry, no cotejo, no alert); only an answer
    with no value at all is a failure."""
    serie = run.spec.serie
    valued = {rate.fecha_serie for rate in rates}
    due = [
        day
        for day in missing_dates(serie, start, end, valued, set(declared), run.today_lima)
        if not stores.registry.is_declared_no_data(serie, day.isoformat())
    ]
    if not rates:
        if due:
            message = (
                f"the answer gives no value for any date from {start} to {end}, though "
                f"{len(due)} business days of it are due"
            )
            return record_failure(
                stores, run, FUENTE_NO_DISPONIBLE, message, answer, answer.identidad_consulta,
                requested_dates(start, end),
            )  # fmt: skip
        return CaptureResult(None, "sin_cambios", None, (), ())
    missing = [day for day in due if day not in pending]
    span = {"desde": start.isoformat(), "hasta": end.isoformat()}
    detail = {**detail, **span, "faltantes": [day.isoformat() for day in missing]}
    # The execution's ``faltantes`` raise ``backfill_incompleto`` (builder.capture.alerting).
    return record_rates(stores, settings, run, answer, rates, declared, detail)
