"""``python -m bench.fleet_gateway`` (``make bench-fleet``): one gateway in fleet mode against the
same gateway on one host, in one run.

1. A demo home is built into a temporary folder (``demo``) and a ``redis-server`` started
   as ``make fleet`` starts it (:func:`builder.fleet.processes.redis_service`: AOF on,
   ``appendfsync always``).
2. Two gateways over that home, 2 workers each, the ledger on: **one host** (tokens, limits and the
   page secret in ``FXEV_HOME``'s files) and **fleet** (``FXEV_REDIS_URL`` set: one ``EVALSHA`` per
   request checks the token and counts it). Each request has a token of its own per run.
3. For each repeat, each request (the as-of ``/v1/rates`` page of a year, ``/v1/rates/latest``)
   and each mode in turn (interleaved, so a busy neighbour hurts both alike), wrk runs bounded in
   time with many connections; the gateway's CPU time (and Redis's, apart) is read from
   ``/proc``.
4. The Redis client: the gate's round trip from this process, 64 in flight, on the gateway's
   pipelined connection (``gateway.fleet.pipe``) against redis-py's asyncio client with and
   without hiredis.

Printed, not asserted: best and spread (min to max) of requests per second and CPU per request,
and fleet's best as a share of one host's (goal: 0.8 or more).

Environment: ``FXEV_BENCH_WRK_SECONDS`` (5), ``FXEV_BENCH_WRK_CONNECTIONS`` (64),
``FXEV_BENCH_WRK_THREADS`` (2), ``FXEV_BENCH_WORKERS`` (2), ``FXEV_BENCH_REPEATS`` (3 here),
``FXEV_BENCH_DIR``. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import redis.asyncio
from redis._parsers import _AsyncHiredisParser, _AsyncRESP2Parser

from bench.gateway_load import (
    Scenario,
    bearer,
    bench_env,
    build_demo_home,
    env_int,
    progress,
    scenarios,
)
from bench.servers import cpu_seconds, descendants, gateway
from bench.wrk import run_wrk
from builder.fleet.processes import free_ports, redis_service
from gateway.fleet.gate import ADMIT, RedisGate
from gateway.fleet.pipe import PipelinedScript
from gateway.limits.rule import Limits, epoch_us
from tests.support.wrk import spread
from tokens.redis_store import RedisTokenStore
from tokens.store import token_hash

MODES = ("one host", "fleet")
GOAL = 0.8
CLIENT_SECONDS = 2.0
CONCURRENCY = 64


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    rps: float
    cpu_us: float  # the gateway's processes, per request
    redis_cpu_us: float  # redis-server's, per request


def sample(
    url: str, headers: dict[str, str], pids: list[int], redis_pid: int, plan: dict[str, int]
) -> Sample:
    before, redis_before = cpu_seconds(pids), cpu_seconds([redis_pid])
    result = run_wrk(url, plan["seconds"], plan["connections"], plan["threads"], headers)
    used, redis_used = cpu_seconds(pids) - before, cpu_seconds([redis_pid]) - redis_before
    if result.non_2xx_3xx or result.socket_errors:
        progress(f"  warning: {result.non_2xx_3xx} non-2xx/3xx, {result.socket_errors} errors")
    per = 1e6 / result.requests if result.requests else 0.0
    return Sample(result.rps, used * per, redis_used * per)


def fleet_bearer(url: str) -> dict[str, str]:
    with RedisTokenStore.open(url) as store:
        token = store.issue("bench", None, datetime.now(UTC)).token_text
    return {"Authorization": f"Bearer {token}"}


async def _rate(call: Callable[[], Awaitable[Any]], seconds: float) -> tuple[float, float]:
    """(calls per second, client CPU us per call) of ``CONCURRENCY`` coroutines calling."""
    loop = asyncio.get_running_loop()
    end, count = loop.time() + seconds, 0

    async def caller() -> None:
        nonlocal count
        while loop.time() < end:
            await call()
            count += 1

    cpu, start = time.process_time(), time.monotonic()
    await asyncio.gather(*(caller() for _ in range(CONCURRENCY)))
    elapsed, used = time.monotonic() - start, time.process_time() - cpu
    return count / elapsed, used / count * 1e6 if count else 0.0


async def _client_rates(url: str, seconds: float) -> dict[str, tuple[float, float]]:
    token = fleet_bearer(url)["Authorization"].removeprefix("Bearer ")
    limits = Limits(per_min=10**9, per_day=10**12)
    sync = redis.Redis.from_url(url)
    pipe = PipelinedScript(url, ADMIT, 5.0)
    gate = RedisGate(sync, limits, pipe)
    rates = {
        "pipe (gateway/fleet/pipe)": await _rate(lambda: gate.admit_async(token, now()), seconds)
    }
    pipe.close()
    token_id = token.split("_")[1]
    for name, parser in (("redis.asyncio + hiredis", _AsyncHiredisParser),
                         ("redis.asyncio, pure Python", _AsyncRESP2Parser)):  # fmt: skip
        client = redis.asyncio.Redis.from_url(url, parser_class=parser)
        script = client.register_script(ADMIT)

        async def call(script: Any = script) -> Any:
            keys, args = gate._call(token_id, token_hash(token), now())
            return await script(keys=keys, args=args)

        rates[name] = await _rate(call, seconds)
        await client.aclose()
    sync.close()
    return rates


def now() -> int:
    return epoch_us(datetime.now(UTC))


def client_rates(url: str, seconds: float) -> dict[str, tuple[float, float]]:
    """The gate's round trip from one process, ``CONCURRENCY`` requests in flight: the pipe
    the gateway uses against redis-py's asyncio client, with and without hiredis."""
    return asyncio.run(_client_rates(url, seconds))


def report(samples: dict[tuple[str, str], list[Sample]], names: list[str], title: str) -> str:
    lines = [title, ""]
    header = f"{'request':<10} {'mode':<9} {'rps best (min-max)':>24} {'CPU us/req best':>26}"
    lines += [header + "  Redis CPU us/req", "-" * (len(header) + 18)]
    for name in names:
        for mode in MODES:
            found = samples[(name, mode)]
            rps = spread([s.rps for s in found], ",.0f")
            cpu = spread([s.cpu_us for s in found], ".1f", min)
            redis_cpu = f"{min(s.redis_cpu_us for s in found):.1f}" if mode == "fleet" else "-"
            lines.append(f"{name:<10} {mode:<9} {rps:>24} {cpu:>26}  {redis_cpu}")
        one, fleet = samples[(name, MODES[0])], samples[(name, MODES[1])]
        share = max(s.rps for s in fleet) / max(s.rps for s in one)
        lines.append(f"{'':<10} fleet / one host, best rps: {share:.2f} (goal {GOAL:g})")
    return "\n".join(lines)


Server = tuple[tuple[str, int], Callable[[], dict[str, str]]]  # ((base, pid), a new token)


def interleaved(servers: dict[str, Server], wanted: list[Scenario], redis_pid: int,
                plan: dict[str, int]) -> dict[tuple[str, str], list[Sample]]:  # fmt: skip
    """Each repeat, each request, each mode in turn: a warm-up, then one sample."""
    samples: dict[tuple[str, str], list[Sample]] = {}
    for repeat in range(plan["repeats"]):
        for scenario in wanted:
            for mode, ((base, pid), token) in servers.items():
                url, headers = base + scenario.path, token()
                run_wrk(url, 1, 4, 1, headers)  # memos, caches, connections
                found = sample(url, headers, descendants(pid), redis_pid, plan)
                samples.setdefault((scenario.name, mode), []).append(found)
                progress(
                    f"#{repeat + 1} {scenario.name:<9} {mode:<8} {found.rps:>8,.0f} rps"
                    f" {found.cpu_us:6.1f} us CPU/req"
                )
    return samples


def run(plan: dict[str, int], base_dir: Path | None) -> str:
    with tempfile.TemporaryDirectory(prefix="fxev-bench-fleet-", dir=base_dir) as temp:
        folder = Path(temp)
        env = bench_env(folder)
        progress(f"building a demo home in {folder}")
        build_demo_home(env)
        wanted = [s for s in scenarios(folder / "site") if s.name in ("year page", "latest")]
        port = free_ports(1)[0]
        server = redis_service(folder / "redis", port)
        server.start()
        assert server.process is not None
        url = f"redis://127.0.0.1:{port}/0"
        fleet_env = env | {"FXEV_REDIS_URL": url}
        workers = plan["workers"]
        try:
            with (
                gateway(env, workers, True, folder / "one-host.log") as one,
                gateway(fleet_env, workers, True, folder / "fleet.log") as fleet,
            ):
                servers: dict[str, Server] = {
                    MODES[0]: (one, lambda: bearer(env)),
                    MODES[1]: (fleet, lambda: fleet_bearer(url)),
                }
                samples = interleaved(servers, wanted, server.process.pid, plan)
            rates = client_rates(url, CLIENT_SECONDS)
        finally:
            server.stop()
    title = (
        f"fleet gateway against one host: {workers} workers each, ledger on,"
        f" wrk {plan['seconds']} s, {plan['connections']} connections,"
        f" {plan['repeats']} runs each, interleaved"
    )
    text = report(samples, [s.name for s in wanted], title)
    lines = [f"\nthe gate's round trip from one process, {CONCURRENCY} in flight:"]
    lines += [f"  {name:<28} {rate:>8,.0f}/s {cpu:6.1f} us CPU/call" for name, (rate, cpu) in
              rates.items()]  # fmt: skip
    return text + "\n" + "\n".join(lines)


def main() -> int:
    base = os.environ.get("FXEV_BENCH_DIR")
    plan = {
        "seconds": env_int("FXEV_BENCH_WRK_SECONDS", 5),
        "connections": env_int("FXEV_BENCH_WRK_CONNECTIONS", 64),
        "threads": env_int("FXEV_BENCH_WRK_THREADS", 2),
        "workers": env_int("FXEV_BENCH_WORKERS", 2),
        "repeats": env_int("FXEV_BENCH_REPEATS", 3),
    }
    text = run(plan, Path(base) if base else None)
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
