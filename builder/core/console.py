"""What the write side's, the token and the verifier's commands print the same way: a result as
one JSON line on stdout (``emit``), and a missing store refused in one line naming the path it
looked at (``require``). (The gateway's ``requests`` and ``ledger`` commands write their JSON
line as bytes: a ledger's entries hold its tokens' names, written in UTF-8 whatever the
locale.)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from builder.core.errors import NotFound


def emit(value: dict[str, Any]) -> None:
    """``value`` as one JSON line on stdout, flushed: a script reading the command's output
    gets it now, not when the command ends."""
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
    sys.stdout.flush()


def require(path: Path, what: str, setting: str = "FXEV_HOME") -> None:
    """Refuse a command whose store is missing: one line naming the resolved path."""
    if not path.exists():
        raise NotFound(f"no {what} at {path.absolute()} (set {setting} to the right folder)")
