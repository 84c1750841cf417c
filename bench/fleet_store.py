"""``python -m bench.fleet_store``: ``fxev publish`` and ``fxev mirror`` of ONE new revision on a
large tree, against a real S3 endpoint (SeaweedFS, ``weed mini`` as the fleet tests run it).

1. generate a registry of ``FXEV_BENCH_FLEET_SIZE`` revisions (default 10,000) in
   ``tests.support.synth``'s bulk mode, and build it (``Builder.build``, explorer included);
2. publish the whole tree, and mirror it into an empty gateway site (timed: a first publish and
   a first mirror move the whole tree);
3. ``FXEV_BENCH_FLEET_SAMPLES`` times (default 5): one more revision, ``fxev build``, then
   ``fxev publish`` and ``fxev mirror`` as the operator runs them, each a new process (wall
   time, start-up included), and the same work in process (``publish``, ``mirror``);
4. a publish and a mirror with nothing new.

The goal: one new revision published and mirrored in under a second each. Progress goes to
stderr, the figures to stdout. ``FXEV_BENCH_DIR``: where the temporary trees go;
``FXEV_BENCH_KEEP``: keep them.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

from builder.capture.run import Stores
from builder.objstore.s3 import ObjectStore
from builder.publish.build import Builder
from builder.publish.writer import TreeWriter
from builder.store.mirror import mirror
from builder.store.publish import publish
from tests.fleet.seaweed import BUCKET, CREDENTIALS, seaweedfs
from tests.support.synth import Synth

GOAL_S = 1.0


def progress(message: str) -> None:
    print(f"[fleet bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def build(home: Path, site: Path) -> dict[str, Any]:
    stores = Stores.open(home)
    try:
        return Builder(stores.registry, stores.blobs, TreeWriter(site)).build().to_json()
    finally:
        stores.close()


def timed(function: Any, *args: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - began, result


def fxev(env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    """``fxev ARGS`` as a new process: (wall seconds, its last line)."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "builder", *args], env=env, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"fxev {' '.join(args)}: {done.stderr.decode().strip()}")
    return elapsed, orjson.loads(done.stdout.splitlines()[-1])


def line(label: str, values: list[float], note: str = "") -> str:
    worst = max(values)
    verdict = "" if not note else f"  {note}"
    return (
        f"{label:<44} median {statistics.median(values):7.3f} s   max {worst:7.3f} s"
        f"   {'ok' if worst < GOAL_S else 'OVER'} (< {GOAL_S:.0f} s){verdict}"
    )


def run(folder: Path) -> str:
    size = env_int("FXEV_BENCH_FLEET_SIZE", 10_000)
    samples = env_int("FXEV_BENCH_FLEET_SAMPLES", 5)
    home, site, gateway = folder / "home", folder / "site", folder / "gateway"
    lines = [f"fleet store: one new revision on a tree of {size:,} revisions, SeaweedFS"]
    progress(f"generating {size} revisions into {home}")
    with Synth(home, seed=0, durable=False) as synth:
        synth.advance(size)
    seconds, _ = timed(build, home, site)
    progress(f"full build: {seconds:.1f} s")
    with seaweedfs(folder / "seaweedfs") as endpoint:
        os.environ.update(CREDENTIALS)
        env = {**os.environ, "FXEV_STORE_URL": f"s3://{BUCKET}/bench", "FXEV_S3_ENDPOINT": endpoint}
        operator = {**env, "FXEV_HOME": str(home), "FXEV_SITE": str(site)}
        gateways = {**env, "FXEV_HOME": str(folder / "gateway-home"), "FXEV_SITE": str(gateway)}
        with closing(ObjectStore(env["FXEV_STORE_URL"], endpoint)) as store:
            seconds, result = timed(publish, site, store)
            lines.append(f"first publish (the whole tree): {seconds:.1f} s, {result.to_json()}")
            progress(lines[-1])
            seconds, result = timed(mirror, gateway, store)
            lines.append(f"first mirror (the whole tree): {seconds:.1f} s, {result.to_json()}")
            progress(lines[-1])
            figures: dict[str, list[float]] = {k: [] for k in ("pc", "mc", "pp", "mp")}
            moved: list[str] = []
            with Synth(home, seed=1, durable=False, start=synth.next_date) as more:
                for sample in range(samples):
                    for in_process in (False, True):
                        more.step()
                        build(home, site)
                        if in_process:
                            seconds, published = timed(publish, site, store)
                            figures["pp"].append(seconds)
                            seconds, mirrored = timed(mirror, gateway, store)
                            figures["mp"].append(seconds)
                            published, mirrored = published.to_json(), mirrored.to_json()
                        else:
                            seconds, published = fxev(operator, "publish")
                            figures["pc"].append(seconds)
                            seconds, mirrored = fxev(gateways, "mirror")
                            figures["mc"].append(seconds)
                        moved.append(f"{published['uploaded']} up / {mirrored['fetched']} down")
                    progress(f"sample {sample + 1}/{samples}: {moved[-2]}, {moved[-1]}")
            lines += [
                line("fxev publish, one new revision (process)", figures["pc"]),
                line("fxev mirror, one new revision (process)", figures["mc"]),
                line("publish(), one new revision (in process)", figures["pp"]),
                line("mirror(), one new revision (in process)", figures["mp"]),
                f"keys moved per revision (uploaded / fetched): {', '.join(sorted(set(moved)))}",
            ]
            idle_publish, result = fxev(operator, "publish")
            idle_mirror, fetched = fxev(gateways, "mirror")
            lines.append(
                f"nothing new: fxev publish {idle_publish:.3f} s ({result}),"
                f" fxev mirror {idle_mirror:.3f} s ({fetched})"
            )
    return "\n".join(lines)


def main() -> int:
    base = os.environ.get("FXEV_BENCH_DIR")
    folder = Path(tempfile.mkdtemp(prefix="fxev-bench-fleet-", dir=base))
    try:
        print(run(folder))
    finally:
        if os.environ.get("FXEV_BENCH_KEEP"):
            progress(f"kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
