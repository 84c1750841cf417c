"""``fxev build --rebuild``'s folder work: a fresh tree beside the site, then one atomic exchange.

The fresh tree is rendered into ``layout.rebuild_dir(site)``, a sibling of the site (same file
system), which starts with the site's own entries that are not the tree's (hidden files such as
a ``.gitignore``) and a hard link to the site's ``build.lock``: both folders share one lock, so a
build waiting on the old site's lock excludes every later build once the folders are exchanged.
``exchange`` swaps the two folders in one ``renameat2(RENAME_EXCHANGE)`` (Linux): a gateway that
reads the pointer per request sees the old tree or the new one, never neither. Where the kernel
cannot exchange, the old folder is renamed aside and the fresh one into place (a moment with no
site, answered 503). The old tree, left in the sibling, is removed last; a rebuild killed before
that leaves it there, and the next build or rebuild removes it first (:func:`sweep`). A site
that is a mount point cannot be rebuilt: its sibling is on another file system
(:func:`check_beside`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path

from builder.core.errors import PathError
from builder.disk.durable import fsync_dir
from builder.tree.layout import LOCK_FILE, rebuild_dir

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def check_beside(site: Path) -> None:
    """Refuse a rebuild of a site that is a mount point: its sibling, where the fresh tree is
    rendered, is on another file system, so the two folders could not share the lock's file
    or be exchanged."""
    if site.is_dir() and _device(site) != _device(site.parent):
        raise PathError(
            f"cannot rebuild {site}: it is a mount point, and a rebuild renders beside it, in "
            f"{site.parent}; mount the folder that holds the site instead"
        )


def _device(path: Path) -> int:
    return os.stat(path).st_dev


def sweep(site: Path) -> None:
    """Remove what a rebuild killed before it finished left beside ``site`` (call under the
    site's lock: no rebuild is running then)."""
    fresh = rebuild_dir(site)
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(_aside(fresh), ignore_errors=True)


def prepare(site: Path) -> Path:
    """An empty sibling of ``site`` to render into (any leftover removed), sharing its lock."""
    sweep(site)
    fresh = rebuild_dir(site)
    fresh.mkdir()
    os.link(site / LOCK_FILE, fresh / LOCK_FILE)  # held by the caller, so it exists
    for entry in os.scandir(site):
        if entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
            shutil.copy2(entry.path, fresh / entry.name)
    fsync_dir(fresh)
    return fresh


def _aside(fresh: Path) -> Path:
    """Where the old tree goes when the folders cannot be exchanged."""
    return fresh.with_name(fresh.name + ".old")


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically; False when the kernel or C library cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    done = renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), os.fspath(first), None, os.fspath(second))


def exchange(fresh: Path, site: Path) -> Path:
    """Put the tree in ``fresh`` at ``site``; return where the old tree now is."""
    if _exchange(fresh, site):
        aside = fresh
    else:
        aside = _aside(fresh)
        os.rename(site, aside)
        os.rename(fresh, site)
    fsync_dir(site.parent)
    return aside


def remove(old: Path) -> None:
    """Remove the old tree, which nothing reads any more."""
    shutil.rmtree(old, ignore_errors=True)
