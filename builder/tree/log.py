"""Reading the transparency log in a tree (``log/``): what the gateway serves, what proofs use.

Tiles and entry bundles sit at their C2SP ``tlog-tiles`` paths under ``log/`` and never change
once written; ``log/checkpoints/<N>`` is the signed checkpoint of tree size ``N``, written before
the pointer names revision ``N``, so the checkpoint served with a published revision is always
its own (``log/checkpoint``, the newest, is for plain static hosting). Reads are size-checked;
a missing file is None or ``FileNotFoundError``, never a guess.
"""

from __future__ import annotations

import os
from pathlib import Path

from builder.tlog import merkle, tiles
from builder.tree.layout import LOG

CHECKPOINT = "checkpoint"
CHECKPOINTS = "checkpoints"
ROWS = "rows"
KEY = "key"


class LogReader:
    def __init__(self, site: Path) -> None:
        self.root = site / LOG

    def tile_path(self, tile: tiles.Tile) -> Path:
        return self.root / tile.path

    def read_tile(self, tile: tiles.Tile) -> bytes:
        """A tile's bytes (``FileNotFoundError`` when it is not there). A partial tile is the
        first ``width`` hashes (or entries) of any wider version of it, so one the tree lacks
        (pruned once its full tile was published, ``builder.publish.log.prune_partials``, or of
        a size a mirror did not pull) is cut from that."""
        try:
            return self.tile_path(tile).read_bytes()
        except FileNotFoundError:
            if tile.width == tiles.WIDTH:
                raise
        wider = self._wider(tile)
        if wider is None:
            raise FileNotFoundError(self.tile_path(tile))
        data = self.tile_path(wider).read_bytes()
        if tile.level >= 0:
            return data[: tile.width * merkle.HASH_SIZE]
        return tiles.encode_bundle(tiles.decode_bundle(data)[: tile.width])

    def _wider(self, tile: tiles.Tile) -> tiles.Tile | None:
        full = tiles.Tile(tile.level, tile.index)
        if self.tile_path(full).exists():
            return full
        folder = self.tile_path(full).parent / (self.tile_path(full).name + ".p")
        try:
            widths = sorted(int(n) for n in os.listdir(folder) if n.isdigit())
        except FileNotFoundError:
            return None
        found = [w for w in widths if w > tile.width]
        return tiles.Tile(tile.level, tile.index, found[0]) if found else None

    def checkpoint(self, size: int) -> str | None:
        """The signed checkpoint of tree size ``size``, or None."""
        try:
            return (self.root / CHECKPOINTS / str(size)).read_text()
        except FileNotFoundError:
            return None

    def rows(self, revision: int) -> bytes | None:
        try:
            return (self.root / ROWS / str(revision)).read_bytes()
        except FileNotFoundError:
            return None

    def key(self) -> str | None:
        try:
            return (self.root / KEY).read_text()
        except FileNotFoundError:
            return None

    def leaf(self, index: int, size: int) -> bytes:
        """Leaf ``index`` of a tree of ``size``, from its entry bundle."""
        n = index // tiles.WIDTH
        width = tiles.WIDTH if (n + 1) * tiles.WIDTH <= size else size % tiles.WIDTH
        tile = tiles.Tile(-1, n, width)
        return tiles.decode_bundle(self.read_tile(tile))[index % tiles.WIDTH]

    def hash_reader(self, size: int) -> merkle.HashReader:
        return tiles.tile_reader(size, self.read_tile)

    def edge(self, size: int) -> tiles.Edge:
        return tiles.load_edge(size, self.read_tile)
