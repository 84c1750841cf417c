"""``python -m bench.gateway_load`` (``make bench-gateway``): the gateway under load, beside nginx.

1. A demo home is built into a temporary folder by the project's own code (``demo``: the
   real 2021-2026 history plus local captures), and a token is issued for the run.
2. The gateway (``bench.serve``: 2 workers, limits raised so nothing is refused) answers three
   requests: the as-of ``/v1/rates`` page of a full year, ``/v1/rates/latest`` and the largest
   evidence file. Those exact response bodies are written to files that nginx (2 workers) serves.
3. For each server (the gateway with the ledger on, nginx, the gateway with the ledger off, and
   ``bench.bare``, a bare Sanic sending the same bytes from memory: the floor under the gateway) and
   each request, wrk runs bounded in time: a short warm-up, a throughput run with many connections
   (group commit batches by concurrency) where the servers' CPU time is read from ``/proc``, and a
   latency run with 4 connections for p99.

Printed, not asserted: requests per second and CPU per request as ratios to nginx's, p99 beside
nginx's, and the ledger's cost (on against off).

Environment: ``FXEV_BENCH_WRK_SECONDS`` (5), ``FXEV_BENCH_WRK_CONNECTIONS`` (64),
``FXEV_BENCH_WRK_THREADS`` (2), ``FXEV_BENCH_P99_CONNECTIONS`` (4), ``FXEV_BENCH_WORKERS`` (2),
``FXEV_BENCH_REPEATS`` (2: the best of that many runs per figure, printed with their range),
``FXEV_BENCH_DIR`` (where the temporary home goes). Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.servers import bare_sanic, cpu_seconds, descendants, gateway, nginx
from bench.wrk import run_wrk
from builder.tree.reader import TreeReader
from gateway.limits.ring import MAPPED_SLOTS
from tests.support.wrk import Measurement, best, spread
from tokens.store import TokenStore

ROOT = Path(__file__).resolve().parents[1]
YEAR = 2025
# Goals with the durable ledger on and 2 workers: a share of nginx's requests per second.
TARGETS = {"year page": 0.4, "latest": 0.3}
# Raised so nothing is refused: as far as the limiter keeps its ring in memory (each gateway run
# and answer gets a token of its own, so no run comes near it), and no practical daily bound.
PER_MIN_RAISED = str(MAPPED_SLOTS)
PER_DAY_RAISED = "1000000000"
NGINX, LEDGER_ON, LEDGER_OFF, BARE = "nginx", "gateway", "gateway, no ledger", "bare Sanic"


@dataclasses.dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    path: str  # path and query of the gateway's request
    file: str  # the file nginx serves the same bytes from


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    seconds: int
    connections: int
    threads: int
    p99_connections: int
    workers: int
    repeats: int


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


# -- the home -----------------------------------------------------------------------------------


def bench_env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env |= {
        "FXEV_HOME": str(folder / "home"),
        "FXEV_SITE": str(folder / "site"),
        "FXEV_RATE_LIMIT_PER_MIN": PER_MIN_RAISED,
        "FXEV_RATE_LIMIT_PER_DAY": PER_DAY_RAISED,
        "PYTHONPATH": str(ROOT),
    }
    return env


def build_demo_home(env: dict[str, str]) -> None:
    """Seed and build the demo home."""
    subprocess.run(
        [sys.executable, "-m", "demo"],
        env=env,
        cwd=ROOT,
        check=True,
        timeout=600,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def bearer(env: dict[str, str]) -> dict[str, str]:
    """The header of a new token of the demo home."""
    with TokenStore.open(Path(env["FXEV_HOME"])) as store:
        token = store.issue("bench", None, datetime.now(UTC)).token_text
    return {"Authorization": f"Bearer {token}"}


def scenarios(site: Path) -> list[Scenario]:
    tree = TreeReader(site)
    revision = tree.published_revision()
    if revision is None:
        raise RuntimeError("the demo home published no revision")
    ids = [link.name.removesuffix(".json") for link in (site / "evidence").glob("*.json")]
    metas = [tree.evidence_meta(evidence_id, revision) for evidence_id in ids]
    largest = max((m for m in metas if m is not None), key=lambda meta: meta.size)
    year = (
        f"/v1/rates?currency=USD&series=publicado&from={YEAR}-01-01&to={YEAR}-12-31"
        f"&as_of_revision={revision}"
    )
    return [
        Scenario("year page", year, "year.json"),
        Scenario("latest", "/v1/rates/latest?currency=USD&series=publicado", "latest.json"),
        Scenario("evidence", f"/v1/evidence/{largest.id}", "evidence.bin"),
    ]


def fetch(url: str, headers: dict[str, str]) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as resp:
        return resp.read()


# -- measuring ----------------------------------------------------------------------------------


def measure_once(url: str, headers: dict[str, str], pids: list[int], plan: Plan) -> Measurement:
    before = cpu_seconds(pids)
    throughput = run_wrk(url, plan.seconds, plan.connections, plan.threads, headers)
    used = cpu_seconds(pids) - before
    latency = run_wrk(url, plan.seconds, plan.p99_connections, 1, headers)
    for result in (throughput, latency):
        if result.non_2xx_3xx or result.socket_errors:
            progress(
                f"  warning: {url}: {result.non_2xx_3xx} non-2xx/3xx answers,"
                f" {result.socket_errors} socket errors"
            )
    per_request = used / throughput.requests * 1e6 if throughput.requests else 0.0
    return Measurement(throughput, per_request, latency)


def measure(url: str, headers: dict[str, str], server_pid: int, plan: Plan) -> list[Measurement]:
    """``plan.repeats`` measurements of ``url``, after a warm-up."""
    run_wrk(url, 1, plan.p99_connections, 1, headers)  # warm-up: memos, caches, connections
    pids = descendants(server_pid)
    return [measure_once(url, headers, pids, plan) for _ in range(plan.repeats)]


def measure_all(
    label: str,
    base: str,
    pid: int,
    paths: dict[str, str],
    headers: dict[str, str],
    plan: Plan,
    results: dict[tuple[str, str], list[Measurement]],
) -> None:
    for name, path in paths.items():
        runs = results[(label, name)] = measure(base + path, headers, pid, plan)
        found = best(runs)
        progress(
            f"{label:<18} {name:<9} {found.throughput.rps:>9,.0f} rps"
            f" {found.cpu_us_per_request:>7.1f} us CPU/req"
            f" p99@{plan.p99_connections} {found.latency.p99_s * 1000:.2f} ms"
        )


# -- report -------------------------------------------------------------------------------------


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}" if base else "-"


def report(
    plan: Plan,
    sizes: dict[str, int],
    runs: dict[tuple[str, str], list[Measurement]],
) -> str:
    """A row per server and request: the best run's figures (``best``), requests per second and
    p99 with their range over the runs in brackets."""
    results = {key: best(found) for key, found in runs.items()}
    header = [
        "endpoint",
        "bytes",
        "server",
        f"rps (c={plan.connections})",
        "/nginx",
        "goal",
        "CPU us/req",
        "/nginx",
        f"p99 c={plan.p99_connections} (ms)",
    ]
    table = [header]
    for name, size in sizes.items():
        base = results[(NGINX, name)]
        for label in (NGINX, LEDGER_ON, LEDGER_OFF, BARE):
            found = results.get((label, name))
            if found is None:
                continue
            table.append(
                [
                    name if label == NGINX else "",
                    f"{size:,}" if label == NGINX else "",
                    label,
                    spread([m.throughput.rps for m in runs[(label, name)]]),
                    ratio(found.throughput.rps, base.throughput.rps),
                    f"{TARGETS[name]:g}" if label == LEDGER_ON and name in TARGETS else "",
                    f"{found.cpu_us_per_request:.1f}",
                    ratio(found.cpu_us_per_request, base.cpu_us_per_request),
                    spread([m.latency.p99_s * 1000 for m in runs[(label, name)]], ".2f", min),
                ]
            )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for number, row in enumerate(table):
        cells = [
            cell.ljust(w) if i in (0, 2) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(" | ".join(cells))
        if number == 0:
            lines.append("-+-".join("-" * w for w in widths))
    lines.append("")
    lines.append("ledger cost (on against off):")
    for name in sizes:
        on, off = results.get((LEDGER_ON, name)), results.get((LEDGER_OFF, name))
        if on is None or off is None:
            continue
        lines.append(
            f"  {name:<9} rps {on.throughput.rps:,.0f} vs {off.throughput.rps:,.0f}"
            f" ({on.throughput.rps / off.throughput.rps:.2f}x),"
            f" CPU {on.cpu_us_per_request - off.cpu_us_per_request:+.1f} us/req,"
            f" p99 {on.latency.p99_s * 1000:.2f} vs {off.latency.p99_s * 1000:.2f} ms"
        )
    return "\n".join(lines)


# -- the run ------------------------------------------------------------------------------------


def run(plan: Plan, base_dir: Path | None) -> str:
    results: dict[tuple[str, str], list[Measurement]] = {}
    with tempfile.TemporaryDirectory(prefix="fxev-bench-gateway-", dir=base_dir) as temp:
        folder = Path(temp)
        env = bench_env(folder)
        progress(f"building a demo home in {folder}")
        build_demo_home(env)
        wanted = scenarios(folder / "site")
        files = folder / "nginx-root"
        files.mkdir()
        sizes: dict[str, int] = {}

        def gateway_run(label: str, ledger: bool, first: Callable[[str], None] | None) -> None:
            log = folder / f"gateway-{'on' if ledger else 'off'}.log"
            with gateway(env, plan.workers, ledger, log) as (base, pid):
                if first is not None:
                    first(base)
                for scenario in wanted:  # a token each, its minute's count its own
                    paths = {scenario.name: scenario.path}
                    measure_all(label, base, pid, paths, bearer(env), plan, results)

        def copy_bodies(base: str) -> None:
            auth = bearer(env)
            for scenario in wanted:
                body = fetch(base + scenario.path, auth)
                (files / scenario.file).write_bytes(body)
                sizes[scenario.name] = len(body)

        gateway_run(LEDGER_ON, True, copy_bodies)
        with nginx(files, folder / "nginx", plan.workers) as (base, pid):
            paths = {s.name: "/" + s.file for s in wanted}
            measure_all(NGINX, base, pid, paths, {}, plan, results)
        gateway_run(LEDGER_OFF, False, None)
        log = folder / "bare.log"
        with bare_sanic(env, plan.workers, files, wanted[0].file, log) as (base, pid):
            paths = {s.name: "/" + s.file for s in wanted}
            measure_all(BARE, base, pid, paths, {}, plan, results)
    title = (
        f"gateway load: {plan.workers} workers each, wrk {plan.seconds} s per run,"
        f" {plan.connections} connections for rps and CPU, {plan.p99_connections} for p99,"
        f" best of {plan.repeats} runs (min-max in brackets);"
        f" 'gateway' has the durable ledger and the rate limiter on"
    )
    return title + "\n" + report(plan, sizes, results)


def main() -> int:
    plan = Plan(
        seconds=env_int("FXEV_BENCH_WRK_SECONDS", 5),
        connections=env_int("FXEV_BENCH_WRK_CONNECTIONS", 64),
        threads=env_int("FXEV_BENCH_WRK_THREADS", 2),
        p99_connections=env_int("FXEV_BENCH_P99_CONNECTIONS", 4),
        workers=env_int("FXEV_BENCH_WORKERS", 2),
        repeats=env_int("FXEV_BENCH_REPEATS", 2),
    )
    base = os.environ.get("FXEV_BENCH_DIR")
    print(run(plan, Path(base) if base else None), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
