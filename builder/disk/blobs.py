"""Evidence bytes, content-addressed by SHA-256 and deduplicated.

A blob is written under a temporary name, fsynced, renamed into place and its folder fsynced
*before* the registry row that points to it commits, so a crash can leave an orphan blob but
never a row without its bytes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from builder.disk.durable import replace_durably


def address(sha256: str) -> str:
    """Where the bytes hashing to ``sha256`` sit under a store's root: ``sha256/<ab>/<hex>``.
    The evidence store and the tree's ``objects/`` (``builder.tree.layout``) both use it."""
    return f"sha256/{sha256[:2]}/{sha256}"


class BlobStore:
    def __init__(self, root: Path, *, fsync: bool = True, staging: Path | None = None) -> None:
        self.root = root
        self.fsync = fsync  # False only in the benchmark's synthetic registries
        self.staging = staging  # where temporary files go before their rename (None: beside)

    def path(self, sha256: str) -> Path:
        return self.root / address(sha256)

    def put(self, data: bytes) -> str:
        """Store ``data`` durably; return its bare hex SHA-256. A stored copy that holds other
        bytes (damaged on disk) is replaced by ``data``, which hash to its name: the bytes just
        received are never lost to a bad copy of them."""
        sha256 = hashlib.sha256(data).hexdigest()
        path = self.path(sha256)
        if not _holds(path, data):
            replace_durably(path, data, fsync=self.fsync, staging=self.staging)
        return sha256

    def sha256_of_stored(self, data: bytes) -> str:
        """The hash of ``data``, checking that it was stored first (rows never outrun bytes)."""
        sha256 = hashlib.sha256(data).hexdigest()
        if not self.path(sha256).is_file():
            raise FileNotFoundError(f"evidence sha256:{sha256} must be stored before its row")
        return sha256

    def read(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def problem(self, sha256: str) -> str | None:
        """Why the blob for ``sha256`` is not intact, or None when it is."""
        path = self.path(sha256)
        if not path.is_file():
            return f"evidence blob sha256:{sha256} is missing ({path})"
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != sha256:
            return f"evidence blob sha256:{sha256} holds bytes hashing to sha256:{actual} ({path})"
        return None


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` holds exactly ``data`` (a missing file holds nothing)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except FileNotFoundError:
        return False
