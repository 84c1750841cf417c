"""One build at a time per site, and the sweep of what a killed build left behind.

``fxev build`` holds an exclusive ``flock`` on ``FXEV_SITE/build.lock`` for its whole run: a second
build started meanwhile waits for the first to finish, then finds the work done. The lock is
released by the kernel when its holder exits, killed or not, so a dead build never blocks the next.

Every file the builder writes is first written under ``FXEV_SITE/staging/.tmp-*``, then renamed
into place; a build killed between the two leaves its temporary file there. Under the lock no
other build is writing, so whatever ``staging/`` holds is a leftover and is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from builder.tree.layout import LOCK_FILE, staging_dir

TEMP_PREFIX = ".tmp-"


@contextlib.contextmanager
def exclusive(site: Path) -> Iterator[None]:
    """Hold the site's build lock for the block, waiting for any other holder first."""
    site.mkdir(parents=True, exist_ok=True)
    fd = os.open(site / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def sweep_leftovers(site: Path) -> list[str]:
    """Remove the temporary files of killed builds; return their names. Call under the lock."""
    try:
        names = sorted(n for n in os.listdir(staging_dir(site)) if n.startswith(TEMP_PREFIX))
    except FileNotFoundError:
        return []
    for name in names:
        (staging_dir(site) / name).unlink(missing_ok=True)
    return names
