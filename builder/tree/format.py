"""The tree's inner objects: month chunks of item prefixes and the nodes above them.

A series is a two-level tree (years -> months -> chunk) of content-addressed objects; a node
holds its children's hashes and item counts, so a page of any range is found without reading
the items before it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools

import orjson


@dataclasses.dataclass(frozen=True, slots=True)
class Chunk:
    """The items of one month: dates ascending, their observation ids, item prefixes."""

    fechas: tuple[str, ...]
    ids: tuple[str, ...]
    prefixes: tuple[bytes, ...]

    def encode(self) -> bytes:
        offsets = [0]
        for prefix in self.prefixes:
            offsets.append(offsets[-1] + len(prefix))
        header = orjson.dumps({"fechas": self.fechas, "ids": self.ids, "offsets": offsets})
        return header + b"\n" + b"".join(self.prefixes)

    @classmethod
    def decode(cls, data: bytes) -> Chunk:
        newline = data.index(b"\n")
        header = orjson.loads(data[:newline])
        base = newline + 1
        offsets = [base + offset for offset in header["offsets"]]
        prefixes = tuple([data[a:b] for a, b in itertools.pairwise(offsets)])
        return cls(tuple(header["fechas"]), tuple(header["ids"]), prefixes)

    def replaced(self, updates: dict[str, tuple[str, bytes] | None]) -> Chunk:
        """This chunk with some dates set to (id, prefix), or removed where the value is None."""
        entries = {f: (i, p) for f, i, p in zip(self.fechas, self.ids, self.prefixes, strict=True)}
        for fecha, value in updates.items():
            if value is None:
                entries.pop(fecha, None)
            else:
                entries[fecha] = value
        ordered = sorted(entries.items())
        return Chunk(
            tuple(f for f, _ in ordered),
            tuple(v[0] for _, v in ordered),
            tuple(v[1] for _, v in ordered),
        )

    def span(self, start: str, end: str) -> tuple[int, int]:
        """Index range of dates within [start, end]."""
        return bisect.bisect_left(self.fechas, start), bisect.bisect_right(self.fechas, end)


EMPTY_CHUNK = Chunk((), (), ())


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """An inner node: sorted keys (years or months), child hashes and item counts."""

    keys: tuple[str, ...]
    hashes: tuple[str, ...]
    counts: tuple[int, ...]

    def encode(self) -> bytes:
        return orjson.dumps({"k": self.keys, "h": self.hashes, "n": self.counts})

    @classmethod
    def decode(cls, data: bytes) -> Node:
        value = orjson.loads(data)
        return cls(tuple(value["k"]), tuple(value["h"]), tuple(value["n"]))

    @property
    def total(self) -> int:
        return sum(self.counts)

    def child(self, key: str) -> tuple[str, int] | None:
        index = bisect.bisect_left(self.keys, key)
        if index < len(self.keys) and self.keys[index] == key:
            return self.hashes[index], self.counts[index]
        return None

    def replaced(self, key: str, child: tuple[str, int] | None) -> Node:
        entries = {k: (h, n) for k, h, n in zip(self.keys, self.hashes, self.counts, strict=True)}
        if child is None or child[1] == 0:
            entries.pop(key, None)
        else:
            entries[key] = child
        ordered = sorted(entries.items())
        return Node(
            tuple(k for k, _ in ordered),
            tuple(v[0] for _, v in ordered),
            tuple(v[1] for _, v in ordered),
        )


EMPTY_NODE = Node((), (), ())
