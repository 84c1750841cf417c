"""A site's entries as bytes, to compare two trees: files by content, links by target."""

from __future__ import annotations

import os
from pathlib import Path


def tree_files(site: Path) -> dict[str, bytes]:
    """Every file (its bytes) and symbolic link (``-> target``) under ``site``, by path."""
    entries = {}
    for path in sorted(site.rglob("*")):
        name = str(path.relative_to(site))
        if path.is_symlink():
            entries[name] = b"-> " + os.readlink(path).encode()
        elif path.is_file() and not path.name.startswith(".tmp-"):
            entries[name] = path.read_bytes()
    return entries
