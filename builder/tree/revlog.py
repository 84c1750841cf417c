"""Revision records in append-only packs: ``revisions/<K>.pack`` and its index ``<K>.idx``.

Pack K holds the records of revisions ``K * PACK_SIZE + 1`` to ``(K + 1) * PACK_SIZE``, back to
back; its index holds one fixed-width entry per revision, ``<offset> <length>\\n``. A record is
appended to the pack and fsynced, then its entry is appended to the index and fsynced: a
revision exists when its index entry is complete. These two files are the tree's only files that
change after they are created, and only at their end: bytes before the end are never rewritten,
and a pack never changes once it holds ``PACK_SIZE`` revisions.

A build killed between the two appends leaves a record with no entry, or a torn entry; the next
append (under the site lock) cuts such a tail off before writing, so a resumed build leaves the
same bytes as a build that was never killed. Appending is the writer's
(``builder.publish.revlog``); this module only reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from builder.core.errors import IntegrityError

PACK_SIZE = 1024
ENTRY = 32  # bytes: "%015d %015d\n"


class TreeCorruptError(IntegrityError, RuntimeError):
    """The tree's bytes do not match the hashes recorded for them, or are not a tree's."""


def read_file(path: str) -> bytes:
    """A whole file's bytes, with less overhead than ``Path.read_bytes`` (readers call it a lot)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size)
        while len(data) < size:
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


class RevisionLog:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        # Index bytes read so far, by pack: complete entries never change, so a reader keeps
        # them and re-reads an index only for a revision beyond what it holds.
        self._indexes: dict[int, bytes] = {}
        self._prefix = str(folder) + os.sep  # paths by string: a reader builds many

    def _paths(self, revision: int) -> tuple[Path, Path, int]:
        if revision < 1:
            raise ValueError(f"revision {revision} is below 1")
        pack, slot = divmod(revision - 1, PACK_SIZE)
        return self.folder / f"{pack:06d}.pack", self.folder / f"{pack:06d}.idx", slot

    @staticmethod
    def _size(path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    def written(self) -> int:
        """How many revisions have a complete record (they are numbered from 1, without gaps)."""
        try:
            packs = [int(n[:-4]) for n in os.listdir(self.folder) if n.endswith(".idx")]
        except FileNotFoundError:
            return 0
        if not packs:
            return 0
        last = max(packs)
        return last * PACK_SIZE + self._size(self.folder / f"{last:06d}.idx") // ENTRY

    def has(self, revision: int) -> bool:
        _, index, slot = self._paths(revision)
        return self._size(index) >= (slot + 1) * ENTRY

    def location(self, revision: int) -> tuple[str, int, int] | None:
        """(pack, offset, length) of the record of ``revision``, or None when it is not there."""
        if revision < 1:
            raise ValueError(f"revision {revision} is below 1")
        number, slot = divmod(revision - 1, PACK_SIZE)
        entries = self._indexes.get(number, b"")
        if len(entries) < (slot + 1) * ENTRY:
            try:
                entries = read_file(f"{self._prefix}{number:06d}.idx")
            except FileNotFoundError:
                return None
            self._indexes[number] = entries
            if len(entries) < (slot + 1) * ENTRY:
                return None
        entry = entries[slot * ENTRY : (slot + 1) * ENTRY]
        return f"{self._prefix}{number:06d}.pack", *self.entry(number, revision, entry)

    def entry(self, number: int, revision: int, entry: bytes) -> tuple[int, int]:
        """(offset, length) that index ``number``'s ``entry`` of ``revision`` holds."""
        if entry[15:16] != b" " or entry[31:] != b"\n" or not (entry[:15] + entry[16:31]).isdigit():
            raise TreeCorruptError(
                f"{self._prefix}{number:06d}.idx: the entry of revision {revision} is not an"
                " offset and a length"
            )
        return int(entry[:15]), int(entry[16:31])

    def read(self, revision: int) -> bytes | None:
        """The record of ``revision``, or None when it was not written (completely)."""
        found = self.location(revision)
        if found is None:
            return None
        pack, offset, length = found
        try:
            fd = os.open(pack, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            data = os.pread(fd, length, offset)
        finally:
            os.close(fd)
        return data if len(data) == length else None
