"""The transparency log as ``fxev build`` writes it (docs/transparency.md).

Every published revision is a leaf; tiles, bundles and the signed checkpoint are in the tree
before the pointer names the revision; two builds of one registry give the same bytes; and a
registry whose past was rewritten cannot be signed by the key that signed its history.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import orjson
import pytest

from builder.registry.chain import revision_hash
from builder.registry.records import DATA_TABLES
from builder.tlog import leaf, merkle, note, proof, tiles
from builder.tree import layout
from builder.tree.log import LogReader
from tests.builder.test_tree_owner import CSVS, env_for, fxev, seed
from tests.builder.treefiles import tree_files
from tests.support.modes import plain_file_mode

MORE = "fecha_serie,compra,venta\n2026-09-18,3.354,3.362\n"


def log_files(site: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree_files(site).items() if k.startswith("log/")}


def rendered(site: Path) -> list[str]:
    """What a build rendered into ``site``: revision records, objects, the log."""
    roots = (layout.REVISIONS, layout.OBJECTS, "log")
    return [name for name in tree_files(site) if name.split("/")[0] in roots]


def vkey(env: dict[str, str]) -> note.VerifierKey:
    done = fxev(env, "log", "key")
    assert done.returncode == 0, done.stderr
    return note.parse_verifier_key(done.stdout.strip())


def test_each_build_appends_leaves_and_signs_the_published_size(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS[:2])
    assert fxev(env, "build").returncode == 0
    seed(env, tmp_path, CSVS[2:])
    assert fxev(env, "build").returncode == 0
    site, home = tmp_path / "site_out", tmp_path / "var"
    key = vkey(env)
    assert key.name.startswith("fxev.local/") and len(key.name) == len("fxev.local/") + 16
    assert stat.S_IMODE(os.stat(home / "log.key").st_mode) == 0o600
    # The tree is for static hosts and mirrors that may run as another user: its files get the
    # mode a plain open() gives (formerly mkstemp's 0600, which such a host cannot read).
    modes = {stat.S_IMODE(p.stat().st_mode) for p in site.rglob("*") if p.is_file()}
    assert modes == {plain_file_mode()}, [oct(m) for m in modes]
    reader = LogReader(site)
    assert reader.key() == key.text + "\n"
    checkpoint = note.parse_checkpoint(note.open_note(reader.checkpoint(3) or "", key))
    assert (checkpoint.origin, checkpoint.size) == (key.name, 3)
    assert (site / "log/checkpoint").read_text() == reader.checkpoint(3)
    assert note.open_note(reader.checkpoint(2) or "", key)  # the size published before
    # The leaves: revision N is leaf N-1 and commits to the registry's chain hash.
    bundle = tiles.decode_bundle((site / "log/tile/entries/000.p/3").read_bytes())
    hashes = (site / "log/tile/0/000.p/3").read_bytes()
    assert hashes == b"".join(merkle.leaf_hash(x) for x in bundle)
    decoded = [leaf.decode(x) for x in bundle]
    assert [x.revision for x in decoded] == [1, 2, 3]
    assert all(x.chain.startswith("sha256:") and x.rows["observations"] for x in decoded)
    # What an incremental build wrote is what one build from scratch writes, plus the
    # checkpoints of the sizes published on the way and their partial tiles (C2SP tlog-tiles:
    # served while their tile is not full, so a static host of log/ serves every checkpoint's).
    fresh = fxev(env | {"FXEV_SITE": str(tmp_path / "fresh")}, "build")
    assert fresh.returncode == 0, fresh.stderr
    once = log_files(tmp_path / "fresh")
    incremental = log_files(site)
    assert {k: incremental[k] for k in once} == once
    assert sorted(set(incremental) - set(once)) == [
        "log/checkpoints/2",
        "log/tile/0/000.p/2",
        "log/tile/entries/000.p/2",
    ]
    assert reader.read_tile(tiles.Tile(0, 0, 2)) == hashes[:64]
    assert tiles.decode_bundle(reader.read_tile(tiles.Tile(-1, 0, 2))) == bundle[:2]
    with pytest.raises(FileNotFoundError):
        reader.read_tile(tiles.Tile(0, 0, 4))


def test_log_proof_verifies_offline_with_only_the_key(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    key = vkey(env)
    observation = sorted((tmp_path / "site_out" / layout.OBSERVATIONS).iterdir())[0].name
    done = fxev(env, "log", "proof", observation)
    assert done.returncode == 0, done.stderr
    parsed = proof.parse(done.stdout)
    assert parsed.extra is not None
    checkpoint = proof.verify(parsed, key, parsed.extra)
    assert checkpoint.size == 3
    assert leaf.decode(parsed.extra).revision == parsed.index + 1


ALTER_ROWS = "UPDATE observations SET compra = '9.999' WHERE revision_creada = ?"


def rewrite_revision(home: Path, revision: int, alter: str = ALTER_ROWS) -> None:
    """What an operator hiding a change would do: alter ``revision`` (by default its rows), then
    recompute every chained hash from there, so that ``fxev registry verify`` still passes."""
    conn = sqlite3.connect(home / "registry.sqlite")
    conn.row_factory = sqlite3.Row
    conn.execute(alter, (revision,))
    rows = conn.execute("SELECT * FROM revisions ORDER BY revision").fetchall()
    previous = rows[revision - 2]["hash"]
    for row in rows[revision - 1 :]:
        number = row["revision"]
        touched = {
            table.name: [
                dict(r)
                for r in conn.execute(
                    f"SELECT * FROM {table.name} WHERE {table.revision_column} = ? ORDER BY id",
                    (number,),
                )
            ]
            for table in DATA_TABLES
        }
        digest = revision_hash(
            previous, number, row["ts_commit"], row["kind"], row["summary"], touched
        )
        conn.execute(
            "UPDATE revisions SET prev_hash = ?, hash = ? WHERE revision = ?",
            (previous, digest, number),
        )
        previous = digest
    conn.commit()
    conn.close()


def test_a_rewritten_registry_cannot_be_signed(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "var", copy)  # the key and what it signed come along
    rewrite_revision(copy, 2)
    assert fxev(env | {"FXEV_HOME": str(copy)}, "registry", "verify").returncode == 0
    site = tmp_path / "rewritten"
    refused = fxev(env | {"FXEV_HOME": str(copy), "FXEV_SITE": str(site)}, "build")
    assert refused.returncode == 1, refused
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "history rewritten" in refused.stderr
    assert not (site / layout.POINTER).exists()
    # Refused before anything is rendered: a later build finds no revision a killed build
    # would have left, and cannot take the rewritten one for its own (it did, and published
    # the rewritten rows under the honest checkpoint, over tiles that did not lead to it).
    assert rendered(site) == []
    # Nor once more revisions are added: the old leaves are still not those it signed.
    seed(env | {"FXEV_HOME": str(copy)}, tmp_path, (MORE,))
    again = fxev(env | {"FXEV_HOME": str(copy), "FXEV_SITE": str(site)}, "build")
    assert again.returncode == 1 and "history rewritten" in again.stderr
    assert rendered(site) == []
    # The honest registry goes on: its next build extends what was signed, and it builds the
    # site the rewritten one was refused on from its own rows.
    seed(env, tmp_path, (MORE,))
    assert fxev(env, "build").returncode == 0
    honest = fxev(env | {"FXEV_SITE": str(site)}, "build")
    assert honest.returncode == 0, honest.stderr
    assert not [name for name, data in tree_files(site).items() if b"9.999" in data]
    assert log_files(site)["log/checkpoint"] == log_files(tmp_path / "site_out")["log/checkpoint"]


def test_a_rewritten_revision_whose_rows_no_build_reads_is_refused_on_its_own_site(
    tmp_path: Path,
) -> None:
    """The next build reuses the published log's leaves from its tiles and appends to them: the
    newest published revision must still be the one its leaf holds, whose chain hash commits to
    every revision before it. Here the rewrite changes no data row (only the newest revision's
    summary, chain rehashed), on the very site and home that signed it: refused as history
    rewritten, nothing published."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    site = tmp_path / "site_out"
    published = {name: (site / name).read_bytes() for name in (layout.POINTER, "log/checkpoint")}
    head = note.parse_checkpoint(
        note.open_note(published["log/checkpoint"].decode(), vkey(env))
    ).size
    hidden = "UPDATE revisions SET summary = json_set(summary, '$.hidden', 1) WHERE revision = ?"
    rewrite_revision(tmp_path / "var", head, hidden)
    assert fxev(env, "registry", "verify").returncode == 0
    seed(env, tmp_path, (MORE,))
    refused = fxev(env, "build")
    assert refused.returncode == 1, refused
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert f"revision {head}" in refused.stderr and "history rewritten" in refused.stderr
    assert {name: (site / name).read_bytes() for name in published} == published


@pytest.mark.parametrize("lost", [("log.key",), ("log.key", "log.signed")])
def test_a_home_whose_key_was_lost_does_not_sign_the_published_log_with_a_new_one(
    tmp_path: Path, lost: tuple[str, ...]
) -> None:
    """docs/transparency.md#key: consumers pin the verifier key. A home that lost `log.key`
    (restored from a backup without it) made a new key on its next build and signed the
    published log with it, replacing the tree's `log/key`: every pinned verifier then failed.
    The build refuses, one line, exit 1, the tree as it was; `--rebuild` (a fresh tree, a new
    log) is the deliberate way to a new key. Nor does `fxev log key` make and print a key the
    published log is not signed with (nor name the log after another `FXEV_LOG_ORIGIN`): an
    operator would announce a key under which nothing verifies."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    pinned = vkey(env)
    renamed = fxev(env | {"FXEV_LOG_ORIGIN": "example.org/another"}, "log", "key")
    assert renamed.returncode == 1 and renamed.stdout == "", renamed
    assert pinned.text in renamed.stderr and "example.org/another" in renamed.stderr
    for name in lost:
        (tmp_path / "var" / name).unlink()
    announced = fxev(env, "log", "key")
    assert announced.returncode == 1 and announced.stdout == "", announced
    assert len(announced.stderr.splitlines()) == 1, announced.stderr
    assert pinned.text in announced.stderr and "log.key" in announced.stderr
    assert not (tmp_path / "var" / "log.key").exists()  # none was made
    seed(env, tmp_path, (MORE,))
    before = tree_files(tmp_path / "site_out")
    refused = fxev(env, "build")
    assert refused.returncode == 1, refused
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "key" in refused.stderr and pinned.name in refused.stderr, refused.stderr
    assert tree_files(tmp_path / "site_out") == before  # refused before rendering anything
    assert fxev(env, "build").returncode == 1  # and again
    (tmp_path / "var" / "log.signed").unlink(missing_ok=True)  # what the old key signed
    rotated = fxev(env, "build", "--rebuild")
    assert rotated.returncode == 0, rotated.stderr
    assert vkey(env).key_id != pinned.key_id


def test_a_rebuild_gives_the_same_log_bytes(tmp_path: Path) -> None:
    """A rebuild writes the log afresh, and keeps what the key signed before: every checkpoint
    of the tree it replaces, and their partial tiles, which C2SP tlog-tiles has a log serve
    until their tile is full (a static host of log/ answered 404 for them after a rebuild)."""
    env = env_for(tmp_path)
    for csv in CSVS:
        seed(env, tmp_path, (csv,))
        assert fxev(env, "build").returncode == 0
    before = log_files(tmp_path / "site_out")
    assert {"log/checkpoints/1", "log/tile/0/000.p/1", "log/tile/entries/000.p/2"} <= set(before)
    assert fxev(env, "build", "--rebuild").returncode == 0
    assert log_files(tmp_path / "site_out") == before
    assert orjson.loads((tmp_path / "site_out" / layout.POINTER).read_bytes())["revision"] == 3
    # A tree of another key's log is not this log's past: nothing of it is kept.
    (tmp_path / "var" / "log.key").unlink()
    (tmp_path / "var" / "log.signed").unlink()
    assert fxev(env, "build", "--rebuild").returncode == 0
    assert sorted(k for k in log_files(tmp_path / "site_out") if "checkpoints/" in k) == [
        "log/checkpoints/3"
    ]


def test_a_row_changed_in_place_under_the_published_log_is_not_rendered(tmp_path: Path) -> None:
    """DECISIONS 13: "a rewritten registry cannot be signed". A row of a published revision
    changed in place (the chain not rehashed; `registry verify` finds the break) would be
    rendered, and signed over, by the next build that reads it: here a correction of its date.
    The build checks the revision of every row it reads against the log's leaf first: exit 1,
    one line, nothing published; again on the next run (nothing of the refused one is reused);
    the honest copy of the registry goes on."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    copy, site = tmp_path / "copy", tmp_path / "copy-site"
    shutil.copytree(tmp_path / "var", copy)
    shutil.copytree(tmp_path / "site_out", site, symlinks=True)
    tampered = env | {"FXEV_HOME": str(copy), "FXEV_SITE": str(site)}
    with sqlite3.connect(copy / "registry.sqlite") as conn:
        conn.execute("UPDATE observations SET compra = '3.111' WHERE fecha_serie = '2026-09-16'")
    correction = "fecha_serie,compra,venta\n2026-09-16,3.355,3.365\n"
    seed(tampered, tmp_path, (correction,))
    published = (site / layout.POINTER).read_bytes()
    for _ in range(2):
        refused = fxev(tampered, "build")
        assert refused.returncode == 1, refused
        assert len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "rows of revision 2" in refused.stderr and "history rewritten" in refused.stderr
        assert (site / layout.POINTER).read_bytes() == published
        assert b"3.111" not in b"".join(tree_files(site).values())
    seed(env, tmp_path, (correction,))
    assert fxev(env, "build").returncode == 0


@pytest.mark.parametrize("memory", ["gone", "emptied", "restored from an older backup"])
def test_a_rewritten_registry_is_not_signed_by_the_same_key_whatever_log_signed_holds(
    tmp_path: Path, memory: str
) -> None:
    """DECISIONS 13: "`fxev build` signs only a tree consistent with the last checkpoint it
    signed, and refuses otherwise". `log.signed` is the home's memory of it, not the only one.
    Moved away, emptied ("nothing signed yet"), or restored from a backup made before the last
    build, it remembers less than the key signed: a rewritten registry passed the check
    against it, and `--rebuild` over the published tree signed the rewritten log with the very
    key consumers pin. The checkpoint the tree publishes, signed by that key, holds the key to
    it whatever the home remembers; an honest home with such a record still builds, and a new
    log takes a new key."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS[:1])
    assert fxev(env, "build").returncode == 0
    older = (tmp_path / "var" / "log.signed").read_text()  # checkpoint 1: revision 2 not in it
    seed(env, tmp_path, CSVS[1:])
    assert fxev(env, "build").returncode == 0
    pinned = vkey(env)
    copy, site = tmp_path / "copy", tmp_path / "copy-site"
    shutil.copytree(tmp_path / "var", copy)
    shutil.copytree(tmp_path / "site_out", site, symlinks=True)
    rewrite_revision(copy, 2)
    remembered = {"gone": None, "emptied": "", "restored from an older backup": older}[memory]

    def forget(home: Path) -> None:
        if remembered is None:
            (home / "log.signed").unlink()
        else:
            (home / "log.signed").write_text(remembered)

    forget(copy)
    rewritten = env | {"FXEV_HOME": str(copy), "FXEV_SITE": str(site)}
    seed(rewritten, tmp_path, (MORE,))  # a revision to sign
    published = {name: (site / name).read_bytes() for name in (layout.POINTER, "log/checkpoint")}
    for args in (("build",), ("build", "--rebuild")):
        refused = fxev(rewritten, *args)
        assert refused.returncode == 1, (args, refused)
        assert len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "history rewritten" in refused.stderr, refused.stderr
        assert {name: (site / name).read_bytes() for name in published} == published, args
    forget(tmp_path / "var")  # the honest home, with the same record
    seed(env, tmp_path, (MORE,))
    built = fxev(env, "build")
    assert built.returncode == 0, built.stderr
    assert note.open_note((tmp_path / "site_out" / "log" / "checkpoint").read_text(), vkey(env))
    assert (tmp_path / "var" / "log.signed").read_text() == (
        tmp_path / "site_out" / "log" / "checkpoint"
    ).read_text()
    if memory == "gone":  # a new log, under a new key (both moved away, as the docs say)
        (copy / "log.key").unlink()
        rotated = fxev(rewritten, "build", "--rebuild")
        assert rotated.returncode == 0, rotated.stderr
        assert vkey(rewritten).key_id != pinned.key_id


def test_a_key_whose_record_is_lost_signs_nothing_for_a_new_site(tmp_path: Path) -> None:
    """DECISIONS 13: a rewritten registry cannot be signed. With `log.signed` gone and the build
    sent to a new, empty site, no record of what the key signed was left: a rewritten registry
    was signed, under the key consumers pin, at a size the key had signed with another root (a
    split view). A key's record is made with the key, so a missing one was lost: the build
    refuses, one line naming the file, and publishes nothing. Copying the published checkpoint
    into the record is the documented way on: the rewritten registry is then refused as
    rewritten, and the honest home builds the new site."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    assert fxev(env, "build").returncode == 0
    assert (tmp_path / "var" / "log.signed").read_text() == (
        tmp_path / "site_out" / "log" / "checkpoint"
    ).read_text()
    copy, new_site = tmp_path / "copy", tmp_path / "new-site"
    shutil.copytree(tmp_path / "var", copy)
    rewrite_revision(copy, 2)
    (copy / "log.signed").unlink()
    rewritten = env | {"FXEV_HOME": str(copy), "FXEV_SITE": str(new_site)}
    for args in (("build",), ("build", "--rebuild")):
        refused = fxev(rewritten, *args)
        assert refused.returncode == 1, (args, refused)
        assert len(refused.stderr.splitlines()) == 1, refused.stderr
        assert "log.signed" in refused.stderr and "missing" in refused.stderr, refused.stderr
        assert not (new_site / layout.POINTER).exists()
        assert rendered(new_site) == []
    shutil.copy(tmp_path / "site_out" / "log" / "checkpoint", copy / "log.signed")
    again = fxev(rewritten, "build")
    assert again.returncode == 1 and "history rewritten" in again.stderr, again
    assert rendered(new_site) == []
    (tmp_path / "var" / "log.signed").unlink()  # the honest home, its record lost too
    honest = env | {"FXEV_SITE": str(new_site)}
    assert fxev(honest, "build").returncode == 1
    shutil.copy(tmp_path / "site_out" / "log" / "checkpoint", tmp_path / "var" / "log.signed")
    built = fxev(honest, "build")
    assert built.returncode == 0, built.stderr
    assert (new_site / "log" / "checkpoint").read_bytes() == (
        tmp_path / "site_out" / "log" / "checkpoint"
    ).read_bytes()
    assert not [name for name, data in tree_files(new_site).items() if b"9.999" in data]


def test_a_new_key_starts_with_an_empty_record(tmp_path: Path) -> None:
    """The record is made before the key: `fxev log key` on a new home leaves both, the record
    empty (nothing signed yet), and the first build signs."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    printed = vkey(env)
    home = tmp_path / "var"
    assert (home / "log.signed").read_text() == ""
    assert stat.S_IMODE(os.stat(home / "log.signed").st_mode) == 0o600
    assert fxev(env, "build").returncode == 0
    assert vkey(env) == printed
    assert (home / "log.signed").read_text() == (tmp_path / "site_out/log/checkpoint").read_text()


def test_a_build_that_fails_before_it_signs_makes_no_key(tmp_path: Path) -> None:
    """DECISIONS 3: an error is one line and changes nothing. The log's check runs before the
    build renders, but a home without a key is not checked, and none is made for it: a build
    that then fails (here a blob gone from the home, which ended in a traceback) leaves no
    `log.key` or `log.signed` behind."""
    env = env_for(tmp_path)
    seed(env, tmp_path, CSVS)
    home = tmp_path / "var"
    blobs = [path for path in (home / "evidence").rglob("*") if path.is_file()]
    assert blobs
    for blob in blobs:
        blob.unlink()
    refused = fxev(env, "build")
    assert refused.returncode == 1, refused
    assert len(refused.stderr.splitlines()) == 1, refused.stderr  # was a traceback
    assert "is missing" in refused.stderr and "registry verify" in refused.stderr
    assert not (home / "log.key").exists() and not (home / "log.signed").exists()
