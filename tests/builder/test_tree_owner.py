"""A tree belongs to one registry (``docs/operating/tree.md#owner``).

The published pointer and every revision record carry the registry's id (the hash of its first
revision). ``fxev build`` over a site of another registry (the old ``make clean`` removed the home
and kept ``site_out``) refuses in one line naming both ids and leaves the tree as it was;
``fxev build --rebuild`` renders a fresh tree, swaps it in atomically, and a reader that was
serving the old tree serves the new one from its next pointer read. ``make clean`` removes the
demo's home and tree together.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from builder.capture.run import Stores
from builder.core.errors import Conflict, PathError
from builder.publish import swap
from builder.publish.build import Builder
from builder.publish.writer import TreeWriter
from builder.registry.store import Registry
from builder.tree import layout
from builder.tree.reader import TreeReader
from builder.tree.revision import RevisionRecord, RevisionRoot
from tests.builder.treefiles import tree_files

ROOT = Path(__file__).resolve().parents[2]
NOW = "2026-09-21T15:00:00-05:00"
TIMEOUT = 120
CSVS = (
    "fecha_serie,compra,venta\n2026-09-14,3.350,3.358\n2026-09-15,3.351,3.359\n",
    "fecha_serie,compra,venta\n2026-09-16,3.352,3.360\n",
    "fecha_serie,compra,venta\n2026-09-17,3.353,3.361\n",
)


def env_for(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    return env | {
        "FXEV_HOME": str(base / "var"),
        "FXEV_SITE": str(base / "site_out"),
        "FXEV_NOW": NOW,
    }


def fxev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def seed(env: dict[str, str], base: Path, csvs: tuple[str, ...]) -> None:
    for number, text in enumerate(csvs):
        path = base / f"import-{number}.csv"
        path.write_text(text)
        done = fxev(env, "import", str(path), "--actor", "t", "--justification", "test")
        assert done.returncode == 0, done.stderr


def registry_id(home: Path) -> str:
    registry = Registry.open(home)
    try:
        found = registry.registry_id()
    finally:
        registry.close()
    assert found is not None and found.startswith("sha256:")
    return found


def test_every_record_and_the_pointer_name_the_registry(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    owner = registry_id(tmp_path / "var")
    site = tmp_path / "site_out"
    pointer = orjson.loads((site / layout.POINTER).read_bytes())
    assert pointer["registry_id"] == owner
    assert list(pointer)[:3] == ["revision", "ts_commit", "root_sha256"]  # the format as it was
    reader = TreeReader(site)
    assert [reader.record(n).registry_id for n in (1, 2, 3)] == [owner] * 3


def test_a_build_over_a_tree_of_another_registry_refuses_and_rebuild_swaps_it_in(
    tmp_path: Path,
) -> None:
    env = env_for(tmp_path)
    site = tmp_path / "site_out"
    site.mkdir()
    (site / ".gitignore").write_text("*\n!.gitignore\n")
    seed(env, tmp_path, CSVS)
    assert orjson.loads(fxev(env, "build").stdout.splitlines()[-1])["published_revision"] == 3
    old_owner = registry_id(tmp_path / "var")
    serving = TreeReader(site)  # a gateway's reader, serving the old tree
    assert serving.pointer() is not None and serving.root(3).revision == 3

    shutil.rmtree(tmp_path / "var")  # what `make clean` used to do: the home only
    seed(env, tmp_path, CSVS[:1])
    new_owner = registry_id(tmp_path / "var")
    assert new_owner != old_owner
    (site / layout.LOCK_FILE).unlink()  # a tree copied without its lock's file
    before = tree_files(site)

    refused = fxev(env, "build")
    assert refused.returncode == 1, refused
    assert refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert old_owner in refused.stderr and new_owner in refused.stderr
    assert "--rebuild" in refused.stderr
    assert tree_files(site) == before  # the pointer did not move back, no lock file made

    rebuilt = fxev(env, "build", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert orjson.loads(rebuilt.stdout.splitlines()[-1])["published_revision"] == 1
    pointer = orjson.loads((site / layout.POINTER).read_bytes())
    assert (pointer["revision"], pointer["registry_id"]) == (1, new_owner)
    assert not TreeWriter(site).has_root(2)  # nothing of the old tree is left in it
    assert (site / ".gitignore").read_text() == "*\n!.gitignore\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []

    # The fresh tree is what a build of the new registry on an empty site gives.
    fresh_env = env | {"FXEV_SITE": str(tmp_path / "fresh")}
    assert fxev(fresh_env, "build").returncode == 0
    rebuilt_files = {k: v for k, v in tree_files(site).items() if k != ".gitignore"}
    assert rebuilt_files == tree_files(tmp_path / "fresh")

    # The reader that served the old tree serves the new one from its next pointer read.
    assert (held := serving.pointer()) is not None and held.fields() == pointer
    assert serving.root(1) == TreeReader(tmp_path / "fresh").root(1)
    with pytest.raises(Exception, match="not published"):
        serving.root(3)

    again = fxev(env, "build")  # the site is the registry's now
    assert again.returncode == 0, again.stderr


def build_in_process(home: Path, site: Path, *, rebuild: bool = False) -> int | None:
    stores = Stores.open(home)
    try:
        builder = Builder(stores.registry, stores.blobs, TreeWriter(site))
        return builder.build(rebuild=rebuild).published_revision
    finally:
        stores.close()


def test_a_tree_built_before_registry_ids_is_refused_until_rebuilt(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS[:1])
    home, site = tmp_path / "var", tmp_path / "site_out"
    assert build_in_process(home, site) == 1
    pointer = orjson.loads((site / layout.POINTER).read_bytes())
    del pointer["registry_id"]
    (site / layout.POINTER).write_bytes(orjson.dumps(pointer))
    with pytest.raises(Conflict, match=r"none \(built before registry ids\)"):
        build_in_process(home, site)
    assert build_in_process(home, site, rebuild=True) == 1
    assert orjson.loads((site / layout.POINTER).read_bytes())["registry_id"] == registry_id(home)


def test_records_a_killed_build_left_of_another_registry_are_refused(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS[:1])
    home, site = tmp_path / "var", tmp_path / "site_out"
    assert build_in_process(home, site) == 1
    (site / layout.POINTER).unlink()  # as if killed before its first pointer switch
    shutil.rmtree(home)
    seed(env, tmp_path, CSVS[:1])
    with pytest.raises(Conflict, match="holds a tree of registry"):
        build_in_process(home, site)


def test_a_record_keeps_its_registry_id_and_reads_older_records_without_one() -> None:
    root = RevisionRoot(1, "2026-09-21T20:00:00.000000Z", ("publicado",), {}, None, None, None)
    record = RevisionRecord(root, {}, {}, {}, "sha256:" + "a" * 64)
    assert RevisionRecord.decode(record.encode()) == record
    older = RevisionRecord(root, {}, {}, {})
    assert b"registry_id" not in older.encode()
    assert RevisionRecord.decode(older.encode()).registry_id is None


def test_make_clean_removes_the_demo_home_and_tree_together(tmp_path: Path) -> None:
    for path in ("var/registry.sqlite", "site_out/PUBLISHED", "site_out/revisions/000000.pack"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"x")
    (tmp_path / "site_out" / ".gitignore").write_text("*\n!.gitignore\n")
    (tmp_path / ".venv").mkdir()
    done = subprocess.run(
        ["make", "-f", str(ROOT / "Makefile"), "clean"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site_out"]
    assert [p.name for p in (tmp_path / "site_out").iterdir()] == [".gitignore"]


def seeded_and_built(tmp_path: Path) -> tuple[Path, Path]:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    return tmp_path / "var", tmp_path / "site_out"


def test_a_rebuild_that_fails_leaves_no_half_tree_beside_the_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild that runs out of disk fails in one line; its half-rendered tree is removed,
    not left to fill the disk for the builds after it."""
    home, site = seeded_and_built(tmp_path)
    before = tree_files(site)

    def full_disk(self: Builder) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Builder, "_build_locked", full_disk)
    with pytest.raises(OSError, match="No space left"):
        build_in_process(home, site, rebuild=True)
    assert not layout.rebuild_dir(site.resolve()).exists()
    assert tree_files(site) == before


def test_a_build_removes_what_a_killed_rebuild_left_beside_the_site(tmp_path: Path) -> None:
    home, site = seeded_and_built(tmp_path)
    leftover = layout.rebuild_dir(site.resolve())
    leftover.mkdir()
    (leftover / "half-a-tree").write_bytes(b"x" * 1000)
    assert build_in_process(home, site) == 3
    assert not leftover.exists()


def test_a_rebuild_of_a_site_that_is_a_mount_point_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fresh tree is rendered beside the site: with the site a mount point, the two
    folders would be on two file systems (formerly: EXDEV with a traceback, and an empty
    sibling left behind)."""
    home, site = seeded_and_built(tmp_path)
    resolved = site.resolve()
    monkeypatch.setattr(swap, "_device", lambda path: 1 if path == resolved else 2)
    with pytest.raises(PathError, match="is a mount point"):
        build_in_process(home, site, rebuild=True)
    assert not layout.rebuild_dir(resolved).exists()
