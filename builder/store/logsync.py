"""The transparency log in the store: what ``fxev publish`` uploads and ``fxev mirror`` pulls.

The store holds the site's ``log/`` files under the same keys. Between two published sizes B and
H, what changed is the tiles completed since B, each level's partial tile at H (C2SP
``tlog-tiles``: full tiles never change, a partial tile gets a new name as it grows), the rows
lists of revisions B + 1 .. H that have one, the checkpoint of H and the key: all written once,
so they go up with the other immutable keys, before the pointer. A mirror fetches the same keys,
checks that the tiles lead to the checkpoint's root for H before it places anything, and
replaces its ``log/checkpoint`` once its pointer names H. A store published before the log
existed has no checkpoint: the mirror then skips the log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from builder.core.errors import IntegrityError
from builder.disk.durable import replace_durably, write_once
from builder.publish.log import prune_partials
from builder.tlog import merkle, note, tiles
from builder.tree.layout import LOG
from builder.tree.log import CHECKPOINT, CHECKPOINTS, KEY, ROWS, LogReader

Fetch = Callable[[str], bytes | None]


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


def pull_log(site: Path, held: int, head: int, fetch: Fetch, staging: Path) -> bool:
    """Fetch and place what the log gained from ``held`` to ``head``, checked against the
    checkpoint's root; False when the store has no log."""
    signed = fetch(f"{LOG}/{CHECKPOINTS}/{head}")
    if signed is None:
        return False
    start = log_base(site, held)
    got: dict[str, bytes] = {}
    for tile in changed_tiles(start, head):
        data = fetch(f"{LOG}/{tile.path}")
        if data is None:
            raise IntegrityError(f"the store's log lacks {tile.path}")
        got[tile.path] = data
    for number in range(start + 1, head + 1):
        data = fetch(f"{LOG}/{ROWS}/{number}")
        if data is not None:
            got[f"{ROWS}/{number}"] = data
    key = fetch(f"{LOG}/{KEY}")

    local = LogReader(site)

    def read(tile: tiles.Tile) -> bytes:
        return got.get(tile.path) or local.read_tile(tile)

    try:
        checkpoint = note.parse_checkpoint(signed.decode().split("\n\n")[0] + "\n")
        root = merkle.tree_hash(head, tiles.tile_reader(head, read))
    except (ValueError, UnicodeDecodeError, FileNotFoundError) as error:
        raise IntegrityError(f"the store's log of {head} cannot be read: {error}") from None
    if checkpoint.size != head or checkpoint.root != root:
        raise IntegrityError(f"the store's log tiles do not lead to its checkpoint of {head}")
    for name, data in got.items():
        write_once(site / LOG / name, data, staging=staging)
    replace_durably(site / LOG / CHECKPOINTS / str(head), signed, staging=staging)
    if key is not None:
        replace_durably(site / LOG / KEY, key, staging=staging)
    return True


def finish_log(site: Path, held: int, head: int, staging: Path) -> None:
    """Once the pointer names ``head``: ``log/checkpoint`` becomes its checkpoint, and the
    partial tiles a wider one holds are pruned, as ``fxev build`` does."""
    path = site / LOG / CHECKPOINTS / str(head)
    if path.exists():
        replace_durably(site / LOG / CHECKPOINT, path.read_bytes(), staging=staging)
        prune_partials(site / LOG, held, head)
