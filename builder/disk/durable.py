"""Durable file writes: a new name, fsync, atomic rename, fsync of the folder. Never in place."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from builder.disk import faults


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_once(path: Path, data: bytes, *, fsync: bool = True, staging: Path | None = None) -> None:
    """Write ``data`` at ``path`` durably; an existing file is left as it is.

    ``fsync=False`` exists for the benchmark's synthetic registries only (see
    ``tests.support.synth``).
    """
    if path.exists():
        return
    replace_durably(path, data, fsync=fsync, staging=staging)


def create_once(path: Path, data: bytes) -> None:
    """Create the secret ``path`` holding ``data``, mode 0600, unless it exists: written under a
    new name, fsynced, linked to ``path`` (a process that linked first wins, and every caller
    then reads its bytes), the folder fsynced. Never replaced: a secret other processes may
    hold already (the page-token secret, the edge's credential, the log's key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-secret-")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process created it first
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    fsync_dir(path.parent)


def read_or_create_secret(path: Path) -> bytes:
    """The installation's secret in ``path`` (32 random bytes, hex, one line): the page-token
    secret, the edge's credential. The first caller creates it (:func:`create_once`)."""
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    create_once(path, (secrets.token_hex(32) + "\n").encode("ascii"))
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def replace_durably(
    path: Path,
    data: bytes,
    *,
    fsync: bool = True,
    staging: Path | None = None,
    sync_folder: bool = True,
) -> None:
    """Write ``data`` at ``path`` as :func:`replacing` does."""
    with replacing(path, fsync=fsync, staging=staging, sync_folder=sync_folder) as handle:
        handle.write(data)


@contextlib.contextmanager
def replacing(
    path: Path,
    *,
    fsync: bool = True,
    staging: Path | None = None,
    sync_folder: bool = True,
) -> Iterator[BinaryIO]:
    """A file to write that replaces ``path`` when the block ends: written under a new name,
    fsynced, renamed over ``path``, the folder fsynced. An error in the block leaves ``path`` as
    it was, and no new name behind.

    The new name is a ``.tmp-*`` file in ``staging`` (same file system) or else beside ``path``;
    a process killed before the rename leaves it there. ``sync_folder=False``: the caller fsyncs
    the folder itself, once for many files. The file gets the mode ``open()`` gives.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if staging is not None:
        staging.mkdir(parents=True, exist_ok=True)
    fd, tmp = new_file(staging or path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        if staging is not None:
            faults.crash_point("build_staged_write")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync and sync_folder:
        fsync_dir(path.parent)


def new_file(folder: Path) -> tuple[int, str]:
    """A new ``.tmp-*`` file in ``folder``, open for writing, with the mode a plain ``open()``
    gives (0666 less the process's umask, applied by the kernel): the tree is served by static
    hosts and mirrors that may run as another user. Secrets get ``mkstemp``'s 0600 instead
    (:func:`create_once`)."""
    for _ in range(100):
        name = os.path.join(folder, f".tmp-{secrets.token_hex(8)}")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no new temporary name in {folder}")


def mark_durably(path: Path) -> None:
    """Create the empty file ``path``, a marker whose name says it all, and fsync its folder."""
    if path.exists():
        return
    if not path.parent.exists():
        path.parent.mkdir(parents=True)
        fsync_dir(path.parent.parent)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    fsync_dir(path.parent)


def link_durably(path: Path, target: str) -> None:
    """Create the symbolic link ``path`` -> ``target`` (atomic) and fsync its folder.

    A short link is a record that takes no disk block (its target is kept in the inode).
    """
    if os.path.lexists(path):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
    fsync_dir(path.parent)
