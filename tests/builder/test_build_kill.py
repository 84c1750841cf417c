"""A build killed anywhere never moves or breaks the published revision; the next one finishes.

A synthetic registry of 150 revisions is built and published; 150 more are then written. Real
``python -m builder build`` processes are killed with SIGKILL: at the crash point after their first
rendered revision (``FXEV_FAULT_KILL_AT=build_after_revision``) and at seeded random instants.
After each kill ``PUBLISHED`` still names revision 150 and ``TreeReader`` answers at 150 exactly as
before (or, when the kill landed after the pointer switch, names the whole head). A normal build
then publishes the head, and its answers at every revision are the bytes a one-shot build of the
same registry gives. A tree whose bytes were altered is refused on read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from builder.capture.run import Stores
from builder.core.wire import splice_item
from builder.publish import sitelock
from builder.publish.build import Builder
from builder.publish.log import LogSigner
from builder.publish.writer import TreeWriter
from builder.registry.store import REGISTRY_FILE
from builder.tree.layout import POINTER
from builder.tree.reader import TreeCorruptError, TreeReader
from tests.builder.treefiles import tree_files
from tests.support.synth import Synth

SERIE = "publicado"
FIRST, HEAD = 150, 300
TIMEOUT = 60
OPTIONS: dict[str, Any] = {
    "captures_per_date": 6,
    "correction_rate": 0.25,
    "failure_rate": 0.05,
    "outage_rate": 0.03,
    "skip_rate": 0.03,
}


@dataclasses.dataclass(frozen=True)
class World:
    home: Path
    published_site: Path  # built and published at FIRST; copied, never changed, by the tests
    before: dict[str, Any]  # its answers at FIRST
    pointer: bytes
    fresh_site: Path  # a one-shot build of the whole registry (HEAD)


def build_in_process(home: Path, site: Path) -> None:
    stores = Stores.open(home)
    try:
        # With the transparency log, as the killed ``fxev build`` processes write it.
        Builder(stores.registry, stores.blobs, TreeWriter(site), LogSigner(home)).build()
    finally:
        stores.close()


def answers(site: Path, revision: int) -> dict[str, Any]:
    """What a reader sees at ``revision``: every item's bytes, latest, coverage, details."""
    tree = TreeReader(site)
    published = tree.published_revision()
    assert published is not None
    spliced = tree.supersessions(tree.root(published).supersessions)
    page = tree.rates(SERIE, "1900-01-01", "2999-12-31", revision, 0, 10**6)
    latest = tree.latest(SERIE, revision)
    return {
        "total": page.total,
        "items": [
            (i.observacion_id, i.fecha_serie, splice_item(i.prefix, spliced.get(i.observacion_id)))
            for i in page.items
        ],
        "latest": None if latest is None else (latest.observacion_id, latest.prefix),
        "coverage": tree.coverage(revision),
        "record": tree.record_bytes(revision),
        "details": {i.observacion_id: tree.detail(i.observacion_id, revision) for i in page.items},
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    folder = tmp_path_factory.mktemp("kill")
    home, published, fresh = folder / "home", folder / "published", folder / "fresh"
    with Synth(home, seed=11, **OPTIONS) as writer:
        writer.advance(FIRST)
        build_in_process(home, published)
        writer.advance(HEAD - FIRST)
    build_in_process(home, fresh)
    assert TreeReader(published).published_revision() == FIRST
    assert TreeReader(fresh).published_revision() == HEAD
    return World(
        home=home,
        published_site=published,
        before=answers(published, FIRST),
        pointer=(published / POINTER).read_bytes(),
        fresh_site=fresh,
    )


def copy_site(world: World, target: Path) -> Path:
    shutil.copytree(world.published_site, target, symlinks=True)
    return target


def build_env(world: World, site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(world.home), "FXEV_SITE": str(site), **extra})
    return env


def run_build(world: World, site: Path, **extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "builder", "build"],
        env=build_env(world, site, **extra),
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


def finish(world: World, site: Path) -> dict[str, Any]:
    proc = run_build(world, site)
    assert proc.returncode == 0, proc.stderr.decode()
    return orjson.loads(proc.stdout.splitlines()[-1])


def assert_published_intact(world: World, site: Path) -> None:
    assert (site / POINTER).read_bytes() == world.pointer
    assert TreeReader(site).published_revision() == FIRST
    assert answers(site, FIRST) == world.before


def assert_pointer_matches_its_root(site: Path) -> None:
    pointer = orjson.loads((site / POINTER).read_bytes())
    root = TreeReader(site).record_bytes(pointer["revision"])
    assert pointer["root_sha256"] == hashlib.sha256(root).hexdigest()


def assert_same_as_one_shot(world: World, site: Path) -> None:
    assert TreeReader(site).published_revision() == HEAD
    for revision in range(1, HEAD + 1):
        assert answers(site, revision) == answers(world.fresh_site, revision), revision


def correction_tags(home: Path, after: int, upto: int) -> list[str]:
    """``USD/<serie>/<year>`` of every observation corrected by revisions in (after, upto]."""
    conn = sqlite3.connect(f"{(home / REGISTRY_FILE).as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT DISTINCT 'USD/' || old.serie || '/' || substr(old.fecha_serie, 1, 4)"
            " FROM observations new JOIN observations old ON new.supersedes = old.id"
            " WHERE new.revision_creada > ? AND new.revision_creada <= ?",
            (after, upto),
        ).fetchall()
    finally:
        conn.close()
    return sorted(row[0] for row in rows)


def assert_same_files_except_publish_log(world: World, site: Path) -> None:
    """Every file but ``invalidations/`` and the log's ``checkpoints/`` (one per publish) and a
    kill's orphan temps."""
    assert sitelock.sweep_leftovers(site) == []  # the finishing build swept them
    resumed, fresh = tree_files(site), tree_files(world.fresh_site)
    log = "invalidations/"
    assert sorted(k for k in resumed if k.startswith(log)) == [
        f"{log}{FIRST}.json",
        f"{log}{HEAD}.json",
    ]
    assert sorted(k for k in fresh if k.startswith(log)) == [f"{log}{HEAD}.json"]
    signed = "log/checkpoints/"
    assert sorted(k for k in resumed if k.startswith(signed)) == [
        f"{signed}{FIRST}",
        f"{signed}{HEAD}",
    ]
    resumed = {k: v for k, v in resumed.items() if not k.startswith((log, f"{signed}{FIRST}"))}
    fresh = {k: v for k, v in fresh.items() if not k.startswith(log)}
    assert sorted(resumed) == sorted(fresh)
    assert [k for k in fresh if resumed[k] != fresh[k]] == []


# -- killed at the crash point -------------------------------------------------------------------


def test_build_killed_after_its_first_revision_keeps_the_published_revision_and_resumes(
    world: World, tmp_path: Path
) -> None:
    site = copy_site(world, tmp_path / "site")
    proc = run_build(world, site, FXEV_FAULT_KILL_AT="build_after_revision")
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert_published_intact(world, site)
    assert TreeReader(site).has_root(FIRST + 1)
    assert not TreeReader(site).has_root(FIRST + 2)

    result = finish(world, site)
    assert result["published_revision"] == HEAD
    assert result["first_built"] == FIRST + 2  # the killed build's revision is not redone
    assert result["built_revisions"] == HEAD - FIRST - 1
    # The Cache-Tags of the revision the killed build rendered are recomputed, not lost.
    assert result["invalidated_tags"] == correction_tags(world.home, FIRST, HEAD)
    assert result["invalidated_tags"]
    assert_same_as_one_shot(world, site)


def test_resumed_tree_has_the_same_files_as_a_one_shot_build_except_the_publish_log(
    world: World, tmp_path: Path
) -> None:
    site = copy_site(world, tmp_path / "site")
    proc = run_build(world, site, FXEV_FAULT_KILL_AT="build_after_revision")
    assert proc.returncode == -signal.SIGKILL
    finish(world, site)
    assert_same_files_except_publish_log(world, site)


def test_a_build_killed_just_after_the_pointer_moved_is_finished_by_the_next(
    world: World, tmp_path: Path
) -> None:
    """Killed between the pointer's switch and the log's finish: the next build, with nothing
    new to render, still makes ``log/checkpoint`` the published size's and prunes what the
    killed build would have, so the log is what a build never killed leaves."""
    site = copy_site(world, tmp_path / "site")
    proc = run_build(world, site, FXEV_FAULT_KILL_AT="build_after_pointer")
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert TreeReader(site).published_revision() == HEAD
    stale = (site / "log/checkpoint").read_text()
    assert stale == (site / f"log/checkpoints/{FIRST}").read_text()

    result = finish(world, site)
    assert (result["published_revision"], result["built_revisions"]) == (HEAD, 0)
    assert (site / "log/checkpoint").read_text() == (site / f"log/checkpoints/{HEAD}").read_text()
    never_killed = copy_site(world, tmp_path / "never-killed")
    finish(world, never_killed)
    assert log_files(site) == log_files(never_killed)


def log_files(site: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree_files(site).items() if k.startswith("log/")}


# -- killed at random instants ---------------------------------------------------------------------


def test_builds_killed_at_random_instants_never_move_or_break_the_published_revision(
    world: World, tmp_path: Path
) -> None:
    site = copy_site(world, tmp_path / "site")
    rng = random.Random(12)
    killed_running = 0
    for _ in range(10):
        process = subprocess.Popen(
            [sys.executable, "-m", "builder", "build"],
            env=build_env(world, site),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, 0.6))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed_running += 1
        process.wait(timeout=TIMEOUT)
        assert process.returncode in (0, -signal.SIGKILL)
        if TreeReader(site).published_revision() == HEAD:  # it switched the pointer before dying
            assert_pointer_matches_its_root(site)
            break
        assert_published_intact(world, site)
    assert killed_running >= 1

    result = finish(world, site)
    assert result["published_revision"] == HEAD
    assert_same_as_one_shot(world, site)
    assert_same_files_except_publish_log(world, site)


# -- tampering -----------------------------------------------------------------------------------


def test_a_flipped_byte_in_an_object_file_is_refused_when_read(
    world: World, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(world.fresh_site, site, symlinks=True)
    tree = TreeReader(site)
    top = tree.series_top(SERIE, HEAD)
    assert top is not None
    months = tree.node(top.hashes[0])
    month, chunk_hash = months.keys[0], months.hashes[0]
    path = tree.object_path(chunk_hash)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))

    reader = TreeReader(site)
    with pytest.raises(TreeCorruptError, match=chunk_hash):
        reader.rates(SERIE, f"{month}-01", f"{month}-31", HEAD, 0, 10)
    with pytest.raises(TreeCorruptError):
        reader.rates(SERIE, "1900-01-01", "2999-12-31", HEAD, 0, 10**6)


def test_a_flipped_byte_in_evidence_bytes_is_refused_when_read(
    world: World, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(world.fresh_site, site, symlinks=True)
    tree = TreeReader(site)
    item = tree.latest(SERIE, HEAD)
    assert item is not None
    detail = orjson.loads(tree.detail(item.observacion_id, HEAD) + b"}")
    meta = tree.evidence_meta(detail["observacion"]["evidencia_id"], HEAD)
    assert meta is not None
    path = tree.object_path(meta.sha256)
    data = bytearray(path.read_bytes())
    data[0] ^= 0x20
    path.write_bytes(bytes(data))
    with pytest.raises(TreeCorruptError):
        TreeReader(site).evidence_bytes(meta.sha256)


def alter_record(site: Path, revision: int, old: bytes, new: bytes) -> None:
    """Replace ``old`` with ``new`` (same length) inside the stored record of ``revision``."""
    found = TreeReader(site).log.location(revision)
    assert found is not None
    name, offset, length = found
    pack = Path(name)
    data = pack.read_bytes()
    record = data[offset : offset + length]
    assert len(old) == len(new) and old in record
    altered = record.replace(old, new, 1)
    pack.write_bytes(data[:offset] + altered + data[offset + length :])


def test_an_altered_observation_detail_is_refused_when_read(world: World, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(world.fresh_site, site, symlinks=True)
    tree = TreeReader(site)
    item = tree.latest(SERIE, HEAD)
    assert item is not None
    written, _ = tree.detail_versions(item.observacion_id)[-1]
    detail = tree.detail(item.observacion_id, HEAD)
    assert detail is not None
    compra = orjson.loads(detail + b"}")["observacion"]["compra"]
    alter_record(site, written, f'"compra":"{compra}"'.encode(), b'"compra":"9.999"')
    with pytest.raises(TreeCorruptError, match=f"revision record {written} does not match"):
        TreeReader(site).detail(item.observacion_id, HEAD)


def test_a_flipped_byte_in_the_published_record_is_refused(world: World, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(world.fresh_site, site, symlinks=True)
    ts_commit = TreeReader(site).root(HEAD).ts_commit
    forged = ts_commit[:-2] + ("1" if ts_commit[-2] != "1" else "2") + ts_commit[-1]
    alter_record(site, HEAD, ts_commit.encode(), forged.encode())
    reader = TreeReader(site)
    with pytest.raises(TreeCorruptError, match=f"revision record {HEAD} does not match"):
        reader.root(HEAD)
    with pytest.raises(TreeCorruptError):
        reader.rates(SERIE, "1900-01-01", "2999-12-31", HEAD, 0, 10)


def test_an_altered_earlier_record_is_refused_at_its_revision_and_below_only(
    world: World, tmp_path: Path
) -> None:
    """Record 10 is verified through the links of later records, not by the pointer; a
    reader at a later revision does not need it."""
    site = tmp_path / "site"
    shutil.copytree(world.fresh_site, site, symlinks=True)
    whole = ("1900-01-01", "2999-12-31", HEAD, 0, 10**6)
    before = TreeReader(world.fresh_site).rates(SERIE, *whole)
    ts_commit = TreeReader(site).root(10).ts_commit
    forged = ts_commit.replace(ts_commit[:4], str(int(ts_commit[:4]) + 1), 1)
    alter_record(site, 10, ts_commit.encode(), forged.encode())
    with pytest.raises(TreeCorruptError, match="revision record 10 does not match"):
        TreeReader(site).root(10)
    with pytest.raises(TreeCorruptError, match="revision record 10 does not match"):
        TreeReader(site).rates(SERIE, "1900-01-01", "2999-12-31", 10, 0, 10)
    assert TreeReader(site).root(11).revision == 11
    assert TreeReader(site).rates(SERIE, *whole) == before
