"""What wrk, the gateway benchmark's load generator, is asked and what it answers (pure).

``wrk_command`` is the bounded command line of one run; ``parse_wrk_output`` reads the text
``wrk --latency`` prints (requests and duration, latency percentiles, socket errors, non-2xx/3xx
answers) into a :class:`WrkResult`; ``best`` keeps the least disturbed of repeated measurements,
and ``spread`` prints repeated figures as their best and their range.
``bench.wrk`` runs the command; ``bench.gateway_load`` measures with it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TOTAL = re.compile(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", re.MULTILINE)
_PERCENTILE = re.compile(r"^\s*(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)\s*$", re.MULTILINE)
_SOCKET_ERRORS = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")


class WrkError(RuntimeError):
    """wrk did not run, or printed something this parser does not understand."""


@dataclasses.dataclass(frozen=True, slots=True)
class WrkResult:
    requests: int
    seconds: float
    latency_s: dict[int, float]  # percentile -> seconds (50, 75, 90, 99)
    socket_errors: int
    non_2xx_3xx: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def p99_s(self) -> float:
        return self.latency_s[99]


def parse_wrk_output(text: str) -> WrkResult:
    """The figures of one ``wrk --latency`` run."""
    total = _TOTAL.search(text)
    if total is None:
        raise WrkError(f"no request count in wrk's output: {text.strip()[-300:]!r}")
    latency = {
        int(pct): float(value) * _UNITS_S[unit] for pct, value, unit in _PERCENTILE.findall(text)
    }
    if 99 not in latency:
        raise WrkError("no latency distribution in wrk's output (was --latency given?)")
    errors = _SOCKET_ERRORS.search(text)
    non_2xx = _NON_2XX.search(text)
    return WrkResult(
        requests=int(total.group(1)),
        seconds=float(total.group(2)) * _UNITS_S[total.group(3)],
        latency_s=latency,
        socket_errors=sum(int(n) for n in errors.groups()) if errors else 0,
        non_2xx_3xx=int(non_2xx.group(1)) if non_2xx else 0,
    )


def wrk_command(
    url: str, seconds: int, connections: int, threads: int, headers: dict[str, str]
) -> list[str]:
    command = [
        "wrk",
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "5s",
        "--latency",
    ]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    return [*command, url]


@dataclasses.dataclass(frozen=True, slots=True)
class Measurement:
    throughput: WrkResult
    cpu_us_per_request: float
    latency: WrkResult


def best(measurements: list[Measurement]) -> Measurement:
    """On a shared machine, the least disturbed run: the highest rate (with its CPU per
    request) and the lowest p99."""
    fastest = max(measurements, key=lambda m: m.throughput.rps)
    calmest = min(measurements, key=lambda m: m.latency.p99_s)
    return Measurement(fastest.throughput, fastest.cpu_us_per_request, calmest.latency)


def spread(
    values: Sequence[float], fmt: str = ",.0f", best: Callable[[Sequence[float]], float] = max
) -> str:
    """Repeated figures of one measurement: the best (``best``: ``max`` for a rate, ``min`` for
    a latency) and, when there are several, the lowest and highest in brackets, so a reader sees
    how far one run may fall from another: ``9,357 (8,758-9,357)``."""
    if not values:
        raise ValueError("no figures to report")
    text = format(best(values), fmt)
    if len(values) == 1:
        return text
    return f"{text} ({format(min(values), fmt)}-{format(max(values), fmt)})"
