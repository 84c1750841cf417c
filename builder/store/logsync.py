"""The transparency log in the store: what ``fxev publish`` uploads and ``fxev mirror`` pulls.

The store holds the site's ``log/`` files under the same keys. Between two published sizes B and
H, what changed is the tiles completed since B, each level's partial tile at H (C2SP
``tlog-tiles``: full tiles never change, a partial tile gets a new name as it grows), the rows
lists of revisions B + 1 .. H that have one, the checkpoint of H and the key: all written once,
so they go up with the other immutable keys, before the pointer. A mirror fetches the same keys,
checks that the tiles lead to the checkpoint's root for H and that every tile and entry bundle
it fetched is part of that tree before it places anything, and replaces its ``log/checkpoint``
once its pointer names H. A store published before the log existed has no checkpoint: the
mirror then skips the log.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from builder.core.errors import IntegrityError
from builder.disk.durable import replace_durably, write_once
from builder.publish.log import prune_partials
from builder.tlog import merkle, note, tiles
from builder.tree.layout import LOG
from builder.tree.log import CHECKPOINT, CHECKPOINTS, KEY, ROWS, LogReader

Fetch = Callable[[str], bytes | None]
TILES = "tile/"  # tiles and entry bundles, under log/


def changed_tiles(base: int, head: int) -> list[tiles.Tile]:
    """The tiles (entry bundles too) a log growing from ``base`` to ``head`` leaves changed."""
    found = []
    for level in (-1, *range(tiles.levels(head))):
        shift = tiles.HEIGHT * max(level, 0)
        old, new = base >> shift, head >> shift
        if old == new:
            continue
        found += [tiles.Tile(level, n) for n in range(old // tiles.WIDTH, new // tiles.WIDTH)]
        if new % tiles.WIDTH:
            found.append(tiles.Tile(level, new // tiles.WIDTH, new % tiles.WIDTH))
    return found


def log_base(site: Path, base: int) -> int:
    """``base`` when the site's log covers it, else 0 (a tree rendered before the log)."""
    return base if base and (site / LOG / CHECKPOINTS / str(base)).exists() else 0


def log_keys(site: Path, base: int, head: int) -> list[str]:
    """The keys of the site's log files that revisions ``base + 1 .. head`` added (none when the
    site has no log for ``head``)."""
    if not (site / LOG / CHECKPOINTS / str(head)).exists():
        return []
    start = log_base(site, base)
    names = [tile.path for tile in changed_tiles(start, head)]
    names += [
        f"{ROWS}/{n}" for n in range(start + 1, head + 1) if (site / LOG / ROWS / str(n)).exists()
    ]
    return [f"{LOG}/{name}" for name in [*names, f"{CHECKPOINTS}/{head}", KEY]]


def unpinned_hashes(site: Path, added: list[str]) -> dict[str, str]:
    """The SHA-256 of each log file in ``added`` (keys from :func:`log_keys`) that no Merkle root
    pins, by its name under ``log/``: the checkpoint, the key, rows lists. A publication records
    them, and a mirror checks them (the tiles it checks against the checkpoint's root)."""
    found = {}
    for key in added:
        name = key.removeprefix(f"{LOG}/")
        if not name.startswith(TILES):
            found[name] = hashlib.sha256((site / key).read_bytes()).hexdigest()
    return found


def pull_log(
    site: Path, held: int, head: int, fetch: Fetch, staging: Path, recorded: dict[str, str]
) -> bool:
    """Fetch and place what the log gained from ``held`` to ``head``; False when the store has
    no log. Nothing is placed unless: every file ``recorded`` names (by the publications since
    ``held``) has its SHA-256 there; the key is the one the site already holds, if any; the
    checkpoint carries the key's signature; the tiles lead to the checkpoint's root; and every
    fetched tile and entry bundle is part of that tree (:func:`tiles.check_tile`)."""
    signed = fetch(f"{LOG}/{CHECKPOINTS}/{head}")
    if signed is None:
        if f"{CHECKPOINTS}/{head}" in recorded:
            raise IntegrityError(f"the store's log lacks {CHECKPOINTS}/{head}")
        return False
    start = log_base(site, held)
    changed = changed_tiles(start, head)
    got: dict[str, bytes] = {}
    for tile in changed:
        data = fetch(f"{LOG}/{tile.path}")
        if data is None:
            raise IntegrityError(f"the store's log lacks {tile.path}")
        got[tile.path] = data
    rows: dict[str, bytes | None] = {}  # a revision without a rows list has none: None
    for number in range(start + 1, head + 1):
        rows[f"{ROWS}/{number}"] = data = fetch(f"{LOG}/{ROWS}/{number}")
        if data is not None:
            got[f"{ROWS}/{number}"] = data
    key = fetch(f"{LOG}/{KEY}")
    check_recorded({f"{CHECKPOINTS}/{head}": signed, KEY: key, **rows}, recorded)
    if key is not None:
        check_key(site, signed, key)

    local = LogReader(site)

    def read(tile: tiles.Tile) -> bytes:
        return got.get(tile.path) or local.read_tile(tile)

    reader = tiles.tile_reader(head, read)
    try:
        checkpoint = note.parse_checkpoint(signed.decode().split("\n\n")[0] + "\n")
        root = merkle.tree_hash(head, reader)
    except (ValueError, UnicodeDecodeError, FileNotFoundError) as error:
        raise IntegrityError(f"the store's log of {head} cannot be read: {error}") from None
    if checkpoint.size != head or checkpoint.root != root:
        raise IntegrityError(f"the store's log tiles do not lead to its checkpoint of {head}")
    # The root reads only some of them: each other leads to one above it, so top down, and
    # the entry bundles last, the first that fails is the one changed.
    for tile in sorted(changed, key=lambda tile: -tile.level):
        try:
            tiles.check_tile(tile, got[tile.path], reader)
        except (ValueError, FileNotFoundError) as error:
            raise IntegrityError(
                f"the store's log is not the one its checkpoint of {head} signs: {error}"
            ) from None
    for name, data in got.items():
        write_once(site / LOG / name, data, staging=staging)
    replace_durably(site / LOG / CHECKPOINTS / str(head), signed, staging=staging)
    if key is not None:
        replace_durably(site / LOG / KEY, key, staging=staging)
    return True


def check_recorded(fetched: dict[str, bytes | None], recorded: dict[str, str]) -> None:
    """Refuse a fetched log file whose SHA-256 is not the one its publication recorded (tiles
    are not recorded: the checkpoint's root pins them)."""
    for name, sha256 in recorded.items():
        if name not in fetched:
            continue  # a rows list of a revision this mirror already holds
        data = fetched[name]
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(
                f"the store's log/{name} does not match the SHA-256 {sha256} recorded for it"
            )


def check_key(site: Path, signed: bytes, key: bytes) -> None:
    """Refuse a verifier key other than the site's own, or a checkpoint it did not sign."""
    held = site / LOG / KEY
    if held.exists() and held.read_bytes() != key:
        raise IntegrityError("the store's log key is not the one this site holds")
    try:
        note.open_note(signed.decode(), note.parse_verifier_key(key.decode().strip()))
    except (note.NoteError, ValueError, UnicodeDecodeError) as error:
        raise IntegrityError(f"the store's log checkpoint does not verify: {error}") from None


def finish_log(site: Path, held: int, head: int, staging: Path) -> None:
    """Once the pointer names ``head``: ``log/checkpoint`` becomes its checkpoint, and the
    partial tiles a wider one holds are pruned, as ``fxev build`` does."""
    path = site / LOG / CHECKPOINTS / str(head)
    if path.exists():
        replace_durably(site / LOG / CHECKPOINT, path.read_bytes(), staging=staging)
        prune_partials(site / LOG, held, head)
