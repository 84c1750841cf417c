"""File modes as this process would create them."""

from __future__ import annotations

import os


def plain_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0666 less the umask (read without
    changing it: ``os.umask`` only sets, so it is set back at once)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
