"""``python -m bench.edge_load`` (``make bench-edge``): the shipped edge under load.

1. A demo home is built (``demo``) and one gateway started on it (``bench.serve``, 2
   workers, the ledger on, limits raised so nothing is refused).
2. nginx with ``fxev edge config``'s text (``tests.support.edge``) is put in front of it twice,
   asking the gateway's auth lane first (``edge``, as ``make fleet`` runs it) and without a lane
   (``edge, no lane``: every auth step through Sanic), and the exact bytes of three answers are
   written to files a plain nginx serves: the as-of
   ``/v1/rates`` page of a year, an evidence file, and ``/v1/rates/latest``.
3. wrk, bounded in time, at 32 and at 64 connections (and 4 for p99), against: nginx serving the
   files, the gateway alone, and the edge (cached answers after a warm-up, each request checked
   by the gateway's auth step; ``latest`` passed through). The three run back to back for each
   figure, so load from elsewhere on a shared machine falls on all three alike.
4. Beside them, a plain nginx that passes every request to the same gateway with nothing else
   configured (``plain proxy``: no cache, no auth step, no header rules): the least any proxy
   hop costs on this machine, the floor under ``latest`` through the edge.

Printed, never asserted: requests per second of the edge against nginx's files (goal 0.6 for
the cached answers) and against the gateway alone (goal 0.8 for ``latest``); the gateway alone
against nginx; the plain proxy against the gateway alone (the floor under ``latest``'s goal);
p99 beside nginx's. Every figure is measured in ``FXEV_BENCH_REPEATS`` rounds
and printed as the best round's, with the range over the rounds beside it.

Environment: ``FXEV_BENCH_WRK_SECONDS`` (5), ``FXEV_BENCH_EDGE_CONNECTIONS`` (``32,64``),
``FXEV_BENCH_WRK_THREADS`` (2), ``FXEV_BENCH_P99_CONNECTIONS`` (4), ``FXEV_BENCH_WORKERS`` (2),
``FXEV_BENCH_REPEATS`` (2), ``FXEV_BENCH_DIR``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from pathlib import Path

from bench.gateway_load import (
    bearer,
    bench_env,
    build_demo_home,
    env_int,
    fetch,
    progress,
    scenarios,
)
from bench.servers import free_port, gateway, nginx, nginx_proxy
from bench.wrk import run_wrk
from builder.disk.durable import read_or_create_secret
from gateway.edge import steps
from gateway.edge.config import EdgePlan, edge_config
from tests.support.edge import start_edge
from tests.support.wrk import WrkResult, spread

NGINX, GATEWAY, EDGE, SANIC_STEP = "nginx files", "gateway", "edge", "edge, no lane"
PROXY = "plain proxy"
GOALS = {("year page", NGINX): 0.6, ("evidence", NGINX): 0.6, ("latest", GATEWAY): 0.8}


@dataclasses.dataclass(frozen=True, slots=True)
class EdgePlanRun:
    seconds: int
    connections: tuple[int, ...]
    threads: int
    p99_connections: int
    workers: int
    repeats: int


def run(plan: EdgePlanRun, base_dir: Path | None) -> str:
    results: dict[tuple[str, str, int], list[WrkResult]] = {}
    with tempfile.TemporaryDirectory(prefix="fxev-bench-edge-", dir=base_dir) as temp:
        folder = Path(temp)
        env = bench_env(folder)
        lane = f"127.0.0.1:{free_port()}"
        env["FXEV_EDGE_LANE"] = lane  # the gateway's auth lane, which the edge asks first
        progress(f"building a demo home in {folder}")
        build_demo_home(env)
        wanted = scenarios(folder / "site")
        files = folder / "nginx-root"
        files.mkdir()
        with contextlib.ExitStack() as stack:
            base, _ = stack.enter_context(gateway(env, plan.workers, True, folder / "gateway.log"))
            for s in wanted:
                (files / s.file).write_bytes(fetch(base + s.path, bearer(env)))
            fronts = {}
            for label, lanes, name in ((EDGE, (lane,), "edge"), (SANIC_STEP, (), "edge-no-lane")):
                port = free_port()
                text = edge_text(env, base, folder / name, port, lanes)
                front = start_edge(
                    text, folder / name, f"http://127.0.0.1:{port}", "/v1/health/live"
                )
                stack.callback(front.stop)
                fronts[label] = front
            static, _ = stack.enter_context(nginx(files, folder / "nginx", plan.workers))
            upstream = base.removeprefix("http://")
            proxy = folder / "plain-proxy"
            plain, _ = stack.enter_context(
                nginx_proxy(upstream, proxy, plan.workers, "/v1/health/live")
            )
            for s in wanted:
                urls = {
                    NGINX: static + "/" + s.file,
                    GATEWAY: base + s.path,
                    EDGE: fronts[EDGE].url(s.path),
                    SANIC_STEP: fronts[SANIC_STEP].url(s.path),
                    PROXY: plain + s.path,
                }
                measure_endpoint(s.name, urls, bearer(env), plan, results)
    return report(plan, [s.name for s in wanted], results)


def edge_text(
    env: dict[str, str], gateway_base: str, folder: Path, port: int, lanes: tuple[str, ...]
) -> str:
    """What ``fxev edge config`` prints for one gateway (and its ``lanes``) and an edge on
    ``port``."""
    home = Path(env["FXEV_HOME"])
    return edge_config(
        EdgePlan(
            listen=f"127.0.0.1:{port}",
            upstreams=(gateway_base.removeprefix("http://"),),
            cache_dir=folder / "edge-cache",
            credential=read_or_create_secret(home / steps.SECRET_FILE).hex(),
            lanes=lanes,
        )
    )


def measure_endpoint(
    name: str,
    urls: dict[str, str],
    headers: dict[str, str],
    plan: EdgePlanRun,
    results: dict[tuple[str, str, int], list[WrkResult]],
) -> None:
    """Each connection count, the servers back to back (so a burst of load from elsewhere on a
    shared machine hits them alike), ``plan.repeats`` rounds; every run kept, in round order."""
    for url in urls.values():
        run_wrk(url, 1, plan.p99_connections, 1, headers)  # warm-up: memos, the edge's cache
    for connections in (*plan.connections, plan.p99_connections):
        few = connections <= plan.p99_connections
        for _ in range(plan.repeats):
            for label, url in urls.items():
                found = run_wrk(url, plan.seconds, connections, 1 if few else plan.threads, headers)
                if found.non_2xx_3xx or found.socket_errors:
                    progress(f"  warning: {url}: {found.non_2xx_3xx} non-2xx/3xx,"
                             f" {found.socket_errors} socket errors")  # fmt: skip
                results.setdefault((label, name, connections), []).append(found)
                progress(
                    f"{label:<12} {name:<9} c={connections:<3} {found.rps:>9,.0f} rps"
                    f" p99 {found.p99_s * 1000:.2f} ms"
                )


RATIOS = ((EDGE, NGINX), (EDGE, GATEWAY), (GATEWAY, NGINX), (SANIC_STEP, NGINX), (PROXY, GATEWAY))


def report(
    plan: EdgePlanRun, names: list[str], results: dict[tuple[str, str, int], list[WrkResult]]
) -> str:
    """Requests per second and ratios as the best run and, over several rounds, the range in
    brackets (a ratio's range from the rounds' own pairs of runs, made back to back); p99 the
    calmest run's, with its range."""
    rounds = "1 round" if plan.repeats == 1 else f"best of {plan.repeats} rounds (min-max)"
    lines = [
        f"edge load: wrk {plan.seconds} s per run, {rounds}; one gateway of"
        f" {plan.workers} workers (ledger on) behind the edge; nginx serves the same bytes"
    ]
    servers = (NGINX, GATEWAY, EDGE, SANIC_STEP, PROXY)
    for connections in plan.connections:
        rps = {
            (label, name): [r.rps for r in results[(label, name, connections)]]
            for label in servers
            for name in names
        }
        cells = {key: spread(values) for key, values in rps.items()}
        widths = [max(len(label), *(len(cells[(label, n)]) for n in names)) for label in servers]
        lines.append(f"\nrequests per second at {connections} connections:")
        lines.append(f"  {'endpoint':<10}" + "".join(
            f"  {label:>{w}}" for label, w in zip(servers, widths, strict=True)
        ))  # fmt: skip
        for name in names:
            lines.append(f"  {name:<10}" + "".join(
                f"  {cells[(label, name)]:>{w}}" for label, w in zip(servers, widths, strict=True)
            ))  # fmt: skip
        each = "" if plan.repeats == 1 else " (each round's own, min-max)"
        lines.append(f"ratios at {connections} connections, best against best{each}:")
        heads = [f"{a}/{b}".replace("nginx files", "nginx") for a, b in RATIOS]
        lines.append(f"  {'endpoint':<10}" + "".join(f"  {h:>19}" for h in heads))
        for name in names:
            row = "".join(f"  {ratio_spread(rps[(a, name)], rps[(b, name)]):>19}"
                          for a, b in RATIOS)  # fmt: skip
            goal = next((f"  (goal {v:g} of {k[1]})" for k, v in GOALS.items() if k[0] == name), "")
            lines.append(f"  {name:<10}{row}{goal}")
    p = plan.p99_connections
    lines.append(f"\np99 at {p} connections (ms), the calmest run:")
    for name in names:
        cells_p99 = "  ".join(
            f"{label} "
            + spread([r.p99_s * 1000 for r in results[(label, name, p)]], ".2f", best=min)
            for label in servers
        )
        lines.append(f"  {name:<10} {cells_p99}")
    return "\n".join(lines)


def ratio_spread(values: list[float], bases: list[float]) -> str:
    """The best run's ratio (``max(values) / max(bases)``), with the range of each round's."""
    best_ratio = f"{max(values) / max(bases):.2f}"
    if len(values) == 1:
        return best_ratio
    each = [value / base for value, base in zip(values, bases, strict=True)]
    return f"{best_ratio} ({min(each):.2f}-{max(each):.2f})"


def connection_counts(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def main() -> int:
    plan = EdgePlanRun(
        seconds=env_int("FXEV_BENCH_WRK_SECONDS", 5),
        connections=connection_counts(os.environ.get("FXEV_BENCH_EDGE_CONNECTIONS", "32,64")),
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
