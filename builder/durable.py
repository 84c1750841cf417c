"""Durable file writes: a new name, fsync, atomic rename, fsync of the folder. Never in place."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_once(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` at ``path`` durably; an existing file is left as it is.

    ``fsync=False`` exists for the benchmark's synthetic registries only (see ``bench.synth``).
    """
    if path.exists():
        return
    replace_durably(path, data, fsync=fsync)


def replace_durably(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write ``data`` under a new name, fsync it, rename it over ``path``, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        fsync_dir(path.parent)
