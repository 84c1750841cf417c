"""Appending revision records to the packs that ``builder.tree.revlog`` reads.

A record is appended to the pack and fsynced, then its entry is appended to the index and
fsynced; a torn tail left by a killed build is cut off before the next append.
"""

from __future__ import annotations

import os
from pathlib import Path

from builder.core.errors import StorageError
from builder.disk.durable import fsync_dir
from builder.tree.revlog import ENTRY, PACK_SIZE, RevisionLog, TreeCorruptError


class RevisionLogWriter(RevisionLog):
    def append(self, revision: int, data: bytes) -> None:
        """Append the record of ``revision``; the revision before it must be there already."""
        pack, index, slot = self._paths(revision)
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._size(index) >= (slot + 1) * ENTRY:
            raise FileExistsError(f"revision {revision} is already in {index.name}")
        end = 0
        if slot:
            with open(index, "rb") as handle:
                handle.seek((slot - 1) * ENTRY)
                entry = handle.read(ENTRY)
            if len(entry) < ENTRY:
                raise TreeCorruptError(f"revision {revision - 1} is missing from {index}")
            offset, length = self.entry((revision - 1) // PACK_SIZE, revision - 1, entry)
            end = offset + length
        created = not pack.exists() or not index.exists()
        self._write_at(pack, end, data)
        self._write_at(index, slot * ENTRY, b"%015d %015d\n" % (end, len(data)))
        if created:
            fsync_dir(self.folder)

    @staticmethod
    def _write_at(path: Path, position: int, data: bytes) -> None:
        """Write ``data`` at ``position``, the end of what is kept; a longer (torn) tail is cut."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size < position:
                raise TreeCorruptError(f"{path} ends at {size} bytes, before {position}")
            if size > position:
                os.ftruncate(fd, position)
            if os.pwrite(fd, data, position) != len(data):
                raise StorageError(f"short write to {path.name} (is the disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)
