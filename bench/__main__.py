"""``python -m bench`` (``make bench``): build-side figures on synthetic registries, printed.

For each size (revisions; ``FXEV_BENCH_SIZES``, default ``1000,10000,100000``):

1. generate a registry in process through the registry's own write path
   (``tests.support.synth``) in its bulk mode (no fsync; a benchmark registry is thrown away),
   its time reported apart;
2. full build: a real ``python -m builder build`` process (progress polled from the tree);
3. incremental builds: one new revision at a time, then ``Builder.build()`` timed in process with
   a fresh ``TreeReader`` (an empty object cache, as a new ``fxev build`` process has), the
   transparency log appended and its checkpoint signed as ``fxev build`` does; median and p99;
4. tree size per revision: apparent bytes and disk usage (``du``) of the site / revisions, and the
   growth per revision measured over the incremental builds;
5. queries through ``TreeReader``: a 5-year range of ``publicado`` at random published revisions,
   first page (limit 366) and the whole walk, each item spliced with ``superseded_por`` as the
   gateway does; cold (a new ``TreeReader``) and warm (the same query again on the same
   ``TreeReader``);
6. the log checks ``fxev verify --vkey`` makes for one observation (``bench.logbench``).

Environment: ``FXEV_BENCH_SIZES``, ``FXEV_BENCH_SEED`` (0), ``FXEV_BENCH_INCREMENTAL`` (samples,
50), ``FXEV_BENCH_QUERIES`` (50), ``FXEV_BENCH_BUDGET_S`` (seconds allowed to generating and to
the full build of one size, each; 7200), ``FXEV_BENCH_DIR`` (where temporary trees go),
``FXEV_BENCH_KEEP`` (set: keep each size's registry and tree, and print where),
``FXEV_BENCH_FULL_BUILD_DIR`` (set, e.g. ``/dev/shm``: run the full build there, then copy the tree
into ``FXEV_BENCH_DIR`` for every later phase; on a tmpfs the full build pays no fsync, so its time
is CPU time only and is labelled so; for a 100k run on a loaded disk).
Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from bench.figures import Figures, report
from bench.logbench import log_verify
from builder.capture.run import Stores
from builder.core import business_days
from builder.core.wire import splice_item
from builder.publish.build import Builder
from builder.publish.log import LogSigner
from builder.publish.writer import TreeWriter
from builder.tree.reader import TreeReader
from tests.support.synth import Synth

SERIE = "publicado"
PAGE = 366
PROGRESS_EVERY_S = 15.0


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def tree_bytes(site: Path) -> tuple[int, int]:
    """(apparent bytes, disk usage in bytes as ``du`` counts it) of ``site``: every file, link
    and folder (a folder takes blocks too: ``du`` counts them, so must we)."""
    apparent = disk = 0
    for folder, _, names in os.walk(site):
        for path in (folder, *(os.path.join(folder, name) for name in names)):
            info = os.lstat(path)
            apparent += info.st_size
            disk += info.st_blocks * 512
    return apparent, disk


# -- phases -------------------------------------------------------------------------------------


def generate(synth: Synth, size: int, budget_s: float, figures: Figures) -> None:
    began = time.monotonic()
    last = began
    while synth.revisions < size:
        synth.step()
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY_S:
            last = now
            progress(f"size {size}: generated {synth.revisions}/{size} ({now - began:.0f} s)")
        if now - began > budget_s:
            figures.generation_note = f"stopped by the budget at {synth.revisions}"
            progress(f"size {size}: generation {figures.generation_note}")
            break
    figures.revisions = synth.revisions
    figures.generate_s = synth.stats().seconds


def full_build(home: Path, site: Path, budget_s: float, figures: Figures) -> bool:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(home), "FXEV_SITE": str(site)})
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "builder", "build"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    while True:
        try:
            out, err = process.communicate(timeout=PROGRESS_EVERY_S)
            break
        except subprocess.TimeoutExpired:
            elapsed = time.perf_counter() - began
            done = TreeReader(site).log.written()
            progress(f"full build: {done}/{figures.revisions} revisions ({elapsed:.0f} s)")
            if elapsed > budget_s:
                process.kill()
                process.communicate()
                figures.full_build_note = f"killed by the budget after {elapsed:.0f} s"
                progress(f"full build {figures.full_build_note}")
                return False
    if process.returncode != 0:
        figures.full_build_note = f"failed: {err.decode(errors='replace').strip()[-300:]}"
        progress(f"full build {figures.full_build_note}")
        return False
    figures.full_build_s = time.perf_counter() - began
    progress(f"full build: {out.decode().strip().splitlines()[-1][:200]}")
    return True


def incremental(synth: Synth, stores: Stores, site: Path, samples: int, figures: Figures) -> None:
    # Load the holiday calendar first (~0.5 s of imports, once per process): a cost of starting
    # a process, which the first timed build would otherwise carry as a p99 outlier.
    business_days.business_days_between(date(2000, 1, 1), date(2000, 1, 7))
    before = tree_bytes(site)
    start_head = synth.revisions
    for index in range(samples):
        synth.step()
        began = time.perf_counter()
        signer = LogSigner(stores.registry.path.parent)  # FXEV_HOME, where log.key is
        result = Builder(stores.registry, stores.blobs, TreeWriter(site), signer).build()
        figures.incremental_ms.append((time.perf_counter() - began) * 1000)
        if result.built != (synth.revisions,):
            raise RuntimeError(f"incremental build rendered {result.built}, not one revision")
        if (index + 1) % 10 == 0:
            progress(f"incremental: {index + 1}/{samples}")
    after = tree_bytes(site)
    added = synth.revisions - start_head
    figures.growth_apparent = (after[0] - before[0]) / added
    figures.growth_du = (after[1] - before[1]) / added
    figures.revisions = synth.revisions
    figures.apparent_per_rev = after[0] / synth.revisions
    figures.du_per_rev = after[1] / synth.revisions


def walk(tree: TreeReader, start: str, end: str, revision: int, spliced: dict[str, str]) -> int:
    """Every page of the range, each item spliced; return the number of items."""
    offset = 0
    count = 0
    while True:
        page = tree.rates(SERIE, start, end, revision, offset, PAGE)
        body = b",".join(splice_item(i.prefix, spliced.get(i.observacion_id)) for i in page.items)
        count += len(page.items)
        offset += PAGE
        if offset >= page.total or not body:
            return count


def first_page(
    tree: TreeReader, start: str, end: str, revision: int, spliced: dict[str, str]
) -> int:
    page = tree.rates(SERIE, start, end, revision, 0, PAGE)
    body = b",".join(splice_item(i.prefix, spliced.get(i.observacion_id)) for i in page.items)
    return len(body)


def queries(site: Path, samples: int, rng: random.Random, figures: Figures) -> None:
    reader = TreeReader(site)
    published = reader.published_revision()
    if published is None:
        return
    spliced = reader.supersessions(reader.root(published).supersessions)
    for _ in range(samples):
        revision = rng.randint(1, published)
        newest = reader.latest(SERIE, revision)
        first = reader.rates(SERIE, "0000-01-01", "9999-12-31", revision, 0, 1).items
        if newest is None or not first:
            continue
        low = date.fromisoformat(first[0].fecha_serie)
        high = date.fromisoformat(newest.fecha_serie)
        last_start = max(low.toordinal(), high.toordinal() - 5 * 365)
        begin = date.fromordinal(rng.randint(low.toordinal(), last_start))
        end = date(begin.year + 5, begin.month, 1).toordinal() + begin.day - 2
        start_text, end_text = begin.isoformat(), date.fromordinal(end).isoformat()

        for cold in (True, False):
            tree = TreeReader(site) if cold else reader
            if not cold:  # warm: the same query once more on a tree that has answered it
                first_page(tree, start_text, end_text, revision, spliced)
            began, began_cpu = time.perf_counter(), time.process_time()
            first_page(tree, start_text, end_text, revision, spliced)
            elapsed = (time.perf_counter() - began) * 1000
            (figures.first_cold_ms if cold else figures.first_warm_ms).append(elapsed)
            if cold:  # CPU time: what the page costs when the machine is not shared
                figures.first_cold_cpu_ms.append((time.process_time() - began_cpu) * 1000)

            tree = TreeReader(site) if cold else reader
            if not cold:
                walk(tree, start_text, end_text, revision, spliced)
            began = time.perf_counter()
            items = walk(tree, start_text, end_text, revision, spliced)
            elapsed = (time.perf_counter() - began) * 1000
            (figures.walk_cold_ms if cold else figures.walk_warm_ms).append(elapsed)
            if cold:
                figures.walk_items.append(items)


def run_size(size: int, seed: int, base: Path | None) -> Figures:
    keep = bool(os.environ.get("FXEV_BENCH_KEEP"))
    folder = Path(tempfile.mkdtemp(prefix=f"fxev-bench-{size}-", dir=base))
    try:
        return measure_size(size, seed, folder)
    finally:
        if keep:
            progress(f"size {size}: registry and tree kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def measure_size(size: int, seed: int, folder: Path) -> Figures:
    figures = Figures(size)
    budget = float(env_int("FXEV_BENCH_BUDGET_S", 7200))
    home, site = folder / "home", folder / "site"
    progress(f"size {size}: generating into {home}")
    with Synth(home, seed=seed, durable=False) as synth:  # bulk mode: no fsync
        generate(synth, size, budget, figures)
        stats = synth.stats()
        progress(
            f"size {size}: {stats.revisions} revisions, {stats.dates} dates, "
            f"{stats.new} new, {stats.identical} identical, {stats.corrections} corrections,"
            f" {stats.failures} failures, {stats.implausible} implausible;"
            f" {stats.seconds:.1f} s"
        )
        elsewhere = os.environ.get("FXEV_BENCH_FULL_BUILD_DIR")
        if elsewhere:
            staged = Path(tempfile.mkdtemp(prefix=f"fxev-bench-{size}-site-", dir=elsewhere))
            built = full_build(home, staged, budget, figures)
            if built:
                subprocess.run(["cp", "-a", str(staged), str(site)], check=True)
                # The copy's writeback, done before anything is timed: with ext4's ordered data,
                # the first fsync of a timed build would otherwise wait for the copy's blocks.
                os.sync()
            shutil.rmtree(staged, ignore_errors=True)
            figures.full_build_note = f"full build timed in {elsewhere}, then copied"
        else:
            built = full_build(home, site, budget, figures)
        if not built:
            return figures
        progress(f"size {size}: full build {figures.full_build_s:.1f} s")
        stores = Stores.open(home)
        try:
            incremental(synth, stores, site, env_int("FXEV_BENCH_INCREMENTAL", 50), figures)
        finally:
            stores.close()
    queries(site, env_int("FXEV_BENCH_QUERIES", 50), random.Random(seed), figures)
    figures.log_verify_ms = log_verify(site, env_int("FXEV_BENCH_QUERIES", 50), random.Random(seed))
    return figures


def main() -> int:
    sizes = [
        int(part)
        for part in (os.environ.get("FXEV_BENCH_SIZES") or "1000,10000,100000").split(",")
        if part.strip()
    ]
    seed = env_int("FXEV_BENCH_SEED", 0)
    base = os.environ.get("FXEV_BENCH_DIR")
    results = []
    for size in sizes:
        results.append(run_size(size, seed, Path(base) if base else None))
        progress("so far:\n" + report(results))
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
