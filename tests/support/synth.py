"""Synthetic registries, written through the registry's own write path.

Each revision is one capture run of the tax authority's text file, recorded exactly as a real run
would be (``capture.record_rates`` / ``capture.record_failure``) from a fabricated HTTP exchange
whose body is the documented one-line file ``DD/MM/YYYY|compra|venta|\\r\\n``. Days follow each
other from ``start``; each day is captured about ``captures_per_date`` times (a new observation,
then identical re-captures), a ``correction_rate`` share of days is corrected once by a later
capture of the same day (a ``recorrection_rate`` share of those a second time), a
``failure_rate`` share of runs fails (``fuente_no_disponible``), an ``outage_rate`` share of days
has every run fail, and a ``skip_rate`` share of days is never captured.
The rates are a seeded random walk around 3.x with 3 decimals, so one seed gives one history (the
ids are UUID4s, as in production, so two registries of one seed differ in their ids only).

**Bulk mode (benchmark only).** ``Synth(..., durable=False)`` runs the very same write functions,
but without fsync: SQLite at ``synchronous=OFF`` and evidence blobs written without fsync. A
crash of the generator can then lose or tear its registry, which is acceptable for a throw-away
benchmark registry and nothing else; the default (``durable=True``) is the production path.

``Synth`` keeps its state between calls, so a caller can interleave writes and builds::

    with Synth(home, seed=1) as synth:
        synth.advance(500)   # 500 revisions
        ...                  # build
        synth.step()         # one more revision
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import deque
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from types import TracebackType
from zoneinfo import ZoneInfo

from builder.capture.fetch import HttpExchange
from builder.capture.record import record_failure, record_rates
from builder.capture.run import Run, Stores
from builder.capture.taxauth import TAXAUTH_TXT
from builder.core.settings import Settings, load_settings
from builder.disk.blobs import BlobStore
from builder.sources.common import ParsedRate

LIMA = ZoneInfo("America/Lima")
FIRST_CAPTURE_HOUR = 9
CAPTURE_EVERY = timedelta(minutes=50)
OUTAGE_BODY = b"<html><body><h1>503 Service Unavailable</h1></body></html>\r\n"


@dataclasses.dataclass(frozen=True, slots=True)
class SynthStats:
    """What a ``Synth`` has written so far (cumulative), and the time it took."""

    revisions: int
    dates: int
    new: int
    identical: int
    corrections: int
    failures: int
    implausible: int
    last_date: date | None
    seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class _PlannedRun:
    now: datetime
    fecha: date
    values: tuple[int, int] | None  # (compra, venta) in thousandths; None: the run fails


def raw_value(thousandths: int) -> str:
    """A value as the text file writes it: up to 3 decimals, trailing zeros dropped (``3.36``)."""
    whole, frac = divmod(thousandths, 1000)
    digits = f"{frac:03d}".rstrip("0") or "0"
    return f"{whole}.{digits}"


def txt_body(fecha: date, compra: int, venta: int) -> bytes:
    return f"{fecha:%d/%m/%Y}|{raw_value(compra)}|{raw_value(venta)}|\r\n".encode("ascii")


def bulk_mode(stores: Stores) -> Stores:
    """Benchmark only: the same stores, writing without fsync (see the module docstring)."""
    stores.registry.conn.execute("PRAGMA synchronous=OFF")
    stores.alerts.conn.execute("PRAGMA synchronous=OFF")
    return dataclasses.replace(stores, blobs=BlobStore(stores.blobs.root, fsync=False))


class Synth:
    """A seeded writer of synthetic capture runs into the registry under ``home``."""

    def __init__(
        self,
        home: Path,
        seed: int = 0,
        start: date = date(1996, 1, 1),
        *,
        captures_per_date: int = 9,
        correction_rate: float = 0.01,
        failure_rate: float = 0.01,
        outage_rate: float = 0.0,
        skip_rate: float = 0.0,
        recorrection_rate: float = 0.0,
        settings: Settings | None = None,
        durable: bool = True,
    ) -> None:
        if captures_per_date < 2:
            raise ValueError("captures_per_date must be at least 2 (a capture and a re-capture)")
        self.settings = settings or load_settings({"FXEV_HOME": str(home)})
        self.stores = Stores.open(home)
        if not durable:
            self.stores = bulk_mode(self.stores)
        self.rng = random.Random(seed)
        self.captures_per_date = captures_per_date
        self.correction_rate = correction_rate
        self.failure_rate = failure_rate
        self.outage_rate = outage_rate
        self.skip_rate = skip_rate
        self.recorrection_rate = recorrection_rate
        self.next_date = start
        self.compra = 3400  # thousandths
        self.spread = 6
        self.queue: deque[_PlannedRun] = deque()
        self.counts = {"nueva": 0, "identica": 0, "correccion": 0, "fallo": 0}
        self.implausible = 0
        self.dates = 0
        self.last_date: date | None = None
        self.seconds = 0.0
        self.url = self.settings.taxauth_url
        head = self.stores.registry.head()
        self.revisions = 0 if head is None else head.revision

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        self.stores.close()

    def __enter__(self) -> Synth:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------

    def advance(self, revisions: int) -> SynthStats:
        """Write ``revisions`` more revisions, one capture run each."""
        for _ in range(revisions):
            self.step()
        return self.stats()

    def step(self) -> int:
        """Write one capture run (one revision); return its revision number."""
        began = time.perf_counter()
        if not self.queue:
            self._plan_next_date()
        planned = self.queue.popleft()
        run = Run(TAXAUTH_TXT, planned.now)
        stamp = format_datetime(planned.now.astimezone(UTC), usegmt=True)
        if planned.values is None:
            exchange = HttpExchange(
                "GET",
                self.url,
                503,
                "Service Unavailable",
                (("Content-Type", "text/html"), ("Date", stamp)),
                OUTAGE_BODY,
            )
            result = record_failure(
                self.stores,
                run,
                "fuente_no_disponible",
                "HTTP 503 Service Unavailable",
                exchange,
                exchange.identidad_consulta,
                [planned.fecha],
            )
        else:
            compra, venta = planned.values
            body = txt_body(planned.fecha, compra, venta)
            exchange = HttpExchange(
                "GET",
                self.url,
                200,
                "OK",
                (("Content-Type", "text/plain"), ("Date", stamp)),
                body,
            )
            rate = ParsedRate(
                fecha_serie=planned.fecha,
                compra_cruda=raw_value(compra),
                venta_cruda=raw_value(venta),
                fragmento=body.decode("ascii").strip(),
            )
            result = record_rates(self.stores, self.settings, run, exchange, [rate])
            self.implausible += sum(1 for a in result.alertas if a.tipo == "plausibilidad_baja")
        self.counts[result.outcome] += 1
        if result.revision is None:
            raise RuntimeError("a synthetic capture run wrote no revision")
        self.revisions = result.revision
        self.seconds += time.perf_counter() - began
        return result.revision

    def stats(self) -> SynthStats:
        return SynthStats(
            revisions=self.revisions,
            dates=self.dates,
            new=self.counts["nueva"],
            identical=self.counts["identica"],
            corrections=self.counts["correccion"],
            failures=self.counts["fallo"],
            implausible=self.implausible,
            last_date=self.last_date,
            seconds=self.seconds,
        )

    # -- the plan of one day --------------------------------------------------------------------

    def _plan_next_date(self) -> None:
        rng = self.rng
        while rng.random() < self.skip_rate:  # a day nobody captured: a ``sin_dato`` gap
            self.next_date += timedelta(days=1)
        fecha = self.next_date
        self.next_date += timedelta(days=1)
        self.dates += 1
        self.last_date = fecha

        # A random walk in thousandths, kept within 3.000..3.999.
        self.compra += round(rng.gauss(0, 6))
        self.compra = min(max(self.compra, 3000), 3990)
        self.spread = min(max(self.spread + rng.choice((-1, 0, 0, 1)), 2), 12)
        values = (self.compra, self.compra + self.spread)

        runs = self.captures_per_date + rng.choice((-1, 0, 1))
        # From which run on each value holds: the first value, then its corrections, if any.
        changes = [(0, values)]
        if runs > 1 and rng.random() < self.correction_rate:
            changes.append((rng.randrange(1, runs), self._corrected(values)))
            if runs - changes[-1][0] > 1 and rng.random() < self.recorrection_rate:
                changes.append(
                    (rng.randrange(changes[-1][0] + 1, runs), self._corrected(changes[-1][1]))
                )
        outage = rng.random() < self.outage_rate
        first = datetime(fecha.year, fecha.month, fecha.day, FIRST_CAPTURE_HOUR, tzinfo=LIMA)
        for index in range(runs):
            fails = outage or rng.random() < self.failure_rate
            value = [v for since, v in changes if since <= index][-1]
            self.queue.append(
                _PlannedRun(first + index * CAPTURE_EVERY, fecha, None if fails else value)
            )

    def _corrected(self, values: tuple[int, int]) -> tuple[int, int]:
        delta = self.rng.choice((-3, -2, -1, 1, 2, 3))
        return values[0] + delta, values[1] + delta


def generate(
    home: Path,
    revisions: int,
    seed: int = 0,
    start: date = date(1996, 1, 1),
    **options: float,
) -> SynthStats:
    """Write ``revisions`` synthetic revisions into the registry under ``home``.

    ``options`` are ``Synth``'s: ``captures_per_date``, ``correction_rate``, ``failure_rate``,
    ``outage_rate``, ``skip_rate``, ``recorrection_rate``.
    """
    with Synth(home, seed, start, **options) as synth:  # type: ignore[arg-type]
        return synth.advance(revisions)
