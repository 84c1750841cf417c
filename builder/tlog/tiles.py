"""C2SP ``tlog-tiles``: tile paths, entry bundles, appending leaves, reading hashes from tiles.

A tile at level ``L``, index ``N`` holds up to 256 hashes of level ``8 * L`` of the tree (level 0:
leaf hashes; level 1: the roots of the full level-0 tiles, ...). Full tiles are 256 hashes wide;
the rightmost tile of a level is *partial* (``.p/<W>``) and is written again, under a new name,
each time it grows. Entry bundles hold the leaves themselves, 256 a bundle, each prefixed with
its length as a big-endian ``uint16``. Paths: ``tile/<L>/<N>[.p/<W>]`` and
``tile/entries/<N>[.p/<W>]``, ``N`` written in groups of three digits, all but the last
prefixed with ``x`` (``1234067`` -> ``x001/x234/067``). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from builder.tlog.merkle import EMPTY_ROOT, HASH_SIZE, HashReader, fold, leaf_hash, perfect_root

HEIGHT = 8
WIDTH = 1 << HEIGHT
MAX_ENTRY = 0xFFFF
ENTRIES = "entries"
_GROUP = re.compile(r"^x\d{3}$")
_LAST = re.compile(r"^\d{3}$")
_WIDTH = re.compile(r"^[1-9]\d{0,2}$")


@dataclasses.dataclass(frozen=True, slots=True)
class Tile:
    """A hash tile (``level`` >= 0) or an entry bundle (``level`` -1), ``width`` of 1..256."""

    level: int
    index: int
    width: int = WIDTH

    @property
    def path(self) -> str:
        level = ENTRIES if self.level < 0 else str(self.level)
        partial = "" if self.width == WIDTH else f".p/{self.width}"
        return f"tile/{level}/{encode_index(self.index)}{partial}"


def encode_index(n: int) -> str:
    text = f"{n % 1000:03d}"
    while n >= 1000:
        n //= 1000
        text = f"x{n % 1000:03d}/{text}"
    return text


def parse_path(path: str) -> Tile:
    """The tile a path (after ``tile/``'s parent, e.g. ``tile/0/x001/234``) names, in its one
    canonical spelling, or ``ValueError``."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "tile":
        raise ValueError(f"not a tile path: {path!r}")
    level_text, rest = parts[1], parts[2:]
    if level_text == ENTRIES:
        level = -1
    elif re.fullmatch(r"[0-9]|[1-5][0-9]|6[0-3]", level_text):
        level = int(level_text)
    else:
        raise ValueError(f"bad tile level in {path!r}")
    width = WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        if not _WIDTH.match(rest[-1]) or int(rest[-1]) >= WIDTH:
            raise ValueError(f"bad partial width in {path!r}")
        width = int(rest[-1])
        rest = [*rest[:-2], rest[-2][:-2]]
    if not _LAST.match(rest[-1]) or not all(_GROUP.match(part) for part in rest[:-1]):
        raise ValueError(f"bad tile index in {path!r}")
    index = 0
    for part in rest:
        index = index * 1000 + int(part.lstrip("x"))
    tile = Tile(level, index, width)
    if tile.path != path:  # x000 groups and other non-canonical spellings
        raise ValueError(f"not the canonical tile path: {path!r}")
    return tile


def tiles_of(size: int, level: int) -> list[Tile]:
    """Every tile of ``level`` (-1: entry bundles) a tree of ``size`` leaves has."""
    count = size >> (HEIGHT * max(level, 0))
    tiles = [Tile(level, n) for n in range(count // WIDTH)]
    if count % WIDTH:
        tiles.append(Tile(level, count // WIDTH, count % WIDTH))
    return tiles


def edge_tile(size: int, level: int) -> Tile | None:
    """The rightmost partial tile of ``level`` at ``size``, or None when the level has none."""
    count = size >> (HEIGHT * max(level, 0))
    return Tile(level, count // WIDTH, count % WIDTH) if count % WIDTH else None


def levels(size: int) -> int:
    """How many hash levels a tree of ``size`` has tiles at."""
    count = 0
    while size >> (HEIGHT * count):
        count += 1
    return count


def unfinished(size: int, grown: int) -> list[Tile]:
    """The partial tiles (entry bundle first) of a tree of ``size`` that are still partial in
    the tree it grew to, of ``grown`` leaves: C2SP ``tlog-tiles`` has a log serve the partial
    tiles of every size it signed a checkpoint for until their full tile is available."""
    found = []
    for level in (-1, *range(levels(size))):
        count = size >> (HEIGHT * max(level, 0))
        index, width = divmod(count, WIDTH)
        if width and (grown >> (HEIGHT * max(level, 0))) < (index + 1) * WIDTH:
            found.append(Tile(level, index, width))
    return found


# -- entry bundles -----------------------------------------------------------------------------


def encode_bundle(entries: Sequence[bytes]) -> bytes:
    out = bytearray()
    for entry in entries:
        if len(entry) > MAX_ENTRY:
            raise ValueError(f"an entry of {len(entry)} bytes is over {MAX_ENTRY}")
        out += len(entry).to_bytes(2, "big") + entry
    return bytes(out)


def decode_bundle(data: bytes) -> list[bytes]:
    entries, at = [], 0
    while at < len(data):
        if at + 2 > len(data):
            raise ValueError("entry bundle cut inside a length")
        length = int.from_bytes(data[at : at + 2], "big")
        if at + 2 + length > len(data):
            raise ValueError("entry bundle cut inside an entry")
        entries.append(data[at + 2 : at + 2 + length])
        at += 2 + length
    return entries


def split_hashes(data: bytes) -> list[bytes]:
    if len(data) % HASH_SIZE:
        raise ValueError("a tile's length is not a multiple of 32")
    return [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


# -- appending -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Edge:
    """The right edge of a tree: per level, the hashes of its partial tile (all that appending
    needs), and the leaves of the partial entry bundle."""

    size: int
    hashes: tuple[tuple[bytes, ...], ...]
    entries: tuple[bytes, ...]

    @classmethod
    def empty(cls) -> Edge:
        return cls(0, (), ())

    def root(self) -> bytes:
        """The tree's root, from the perfect subtrees in each level's partial tile."""
        parts: list[bytes] = []
        for level_hashes in reversed(self.hashes):
            at = 0
            remaining = len(level_hashes)
            while remaining:
                span = 1 << (remaining.bit_length() - 1)
                parts.append(perfect_root(level_hashes[at : at + span]))
                at, remaining = at + span, remaining - span
        return fold(parts) if parts else EMPTY_ROOT


def append(
    edge: Edge, leaves: Sequence[bytes], hashes: Sequence[bytes]
) -> tuple[Edge, dict[Tile, bytes]]:
    """Append ``leaves`` (with their leaf ``hashes``): the new edge and every file to write,
    ``{Tile: bytes}`` (full tiles completed now, and the new partial tile of each level)."""
    files: dict[Tile, bytes] = {}
    size = edge.size + len(leaves)
    combined = list(edge.entries) + list(leaves)
    first = edge.size // WIDTH
    for offset in range(0, len(combined), WIDTH):
        chunk = combined[offset : offset + WIDTH]
        files[Tile(-1, first + offset // WIDTH, len(chunk))] = encode_bundle(chunk)
    new_entries = tuple(combined[len(combined) - len(combined) % WIDTH :])
    incoming = list(hashes)
    new_hashes: list[tuple[bytes, ...]] = []
    level = 0
    while incoming or level < len(edge.hashes):
        old = edge.hashes[level] if level < len(edge.hashes) else ()
        start = (edge.size >> (HEIGHT * level)) // WIDTH
        row = list(old) + incoming
        incoming = []
        for offset in range(0, len(row), WIDTH):
            chunk = row[offset : offset + WIDTH]
            if len(chunk) > len(old) or offset:  # changed by this append
                files[Tile(level, start + offset // WIDTH, len(chunk))] = b"".join(chunk)
            if len(chunk) == WIDTH:
                incoming.append(perfect_root(chunk))
        new_hashes.append(tuple(row[len(row) - len(row) % WIDTH :]))
        level += 1
    while new_hashes and not new_hashes[-1]:
        new_hashes.pop()
    return Edge(size, tuple(new_hashes), new_entries), files


def tile_reader(size: int, read_tile: Callable[[Tile], bytes]) -> HashReader:
    """A ``merkle.HashReader`` for a tree of ``size`` whose tiles ``read_tile`` returns (each read
    once per reader): hash level ``8 L + r`` comes from ``2**r`` hashes of a level-L tile."""
    cache: dict[Tile, list[bytes]] = {}

    def read(level: int, index: int) -> bytes:
        tile_level, rest = divmod(level, HEIGHT)
        first = index << rest
        n, at = divmod(first, WIDTH)
        count = size >> (HEIGHT * tile_level)
        full = (n + 1) * WIDTH <= count
        tile = Tile(tile_level, n, WIDTH if full else count % WIDTH)
        if at + (1 << rest) > tile.width:
            raise ValueError(f"hash ({level}, {index}) is not in a tree of {size}")
        if tile not in cache:
            data = read_tile(tile)
            if len(data) != tile.width * HASH_SIZE:
                raise ValueError(f"{tile.path}: {len(data)} bytes, not {tile.width * HASH_SIZE}")
            cache[tile] = split_hashes(data)
        return perfect_root(cache[tile][at : at + (1 << rest)])

    return read


def check_tile(tile: Tile, data: bytes, read: HashReader) -> None:
    """Raises ``ValueError`` unless ``data``, read as ``tile``, is part of the tree ``read`` reads
    (a :func:`tile_reader` of a tree whose root was checked): an entry bundle's entries hash to
    the level-0 hashes, a full tile's hashes to the hash its parent tile holds for it. A partial
    tile needs no check: the root itself is made of its hashes, and a full tile's parent is
    pinned in turn by its own, up to the partial tile of the top level."""
    if tile.level < 0:
        try:
            entries = decode_bundle(data)
        except ValueError as error:
            raise ValueError(f"{tile.path}: {error}") from None
        if len(entries) != tile.width:
            raise ValueError(f"{tile.path}: {len(entries)} entries, not {tile.width}")
        first = tile.index * WIDTH
        for at, entry in enumerate(entries):
            if leaf_hash(entry) != read(0, first + at):
                raise ValueError(f"{tile.path}: entry {first + at} is not the tree's leaf")
    elif tile.width == WIDTH:
        if len(data) != WIDTH * HASH_SIZE:
            raise ValueError(f"{tile.path}: {len(data)} bytes, not {WIDTH * HASH_SIZE}")
        if perfect_root(split_hashes(data)) != read(HEIGHT * (tile.level + 1), tile.index):
            raise ValueError(f"{tile.path}: its hashes are not the tree's")


def load_edge(size: int, read_tile: Callable[[Tile], bytes]) -> Edge:
    """The right edge of a tree of ``size`` from its partial tiles and bundle."""
    hashes = []
    for level in range(levels(size)):
        tile = edge_tile(size, level)
        hashes.append(tuple(split_hashes(read_tile(tile))) if tile else ())
    while hashes and not hashes[-1]:
        hashes.pop()
    bundle = edge_tile(size, -1)
    entries = tuple(decode_bundle(read_tile(bundle))) if bundle else ()
    if bundle and len(entries) != bundle.width:
        raise ValueError(f"{bundle.path}: {len(entries)} entries, not {bundle.width}")
    return Edge(size, tuple(hashes), entries)
