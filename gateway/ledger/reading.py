"""The request ledger as its readers see it: the worker files under ``FXEV_HOME/ledger``, their
complete lines, and which of them a reader shows (``fxev requests show``, the shipper).

The files are written by :mod:`gateway.ledger.recording`, which says why a line may be torn or
superseded; their place and name (:func:`ledger_folder`, :data:`SUFFIX`) are defined here, the
side that only reads, and the writer takes them from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

LEDGER_DIR = "ledger"
SUFFIX = ".jsonl"


def ledger_folder(home: Path) -> Path:
    return home / LEDGER_DIR


def read_entries(folder: Path) -> Iterator[dict[str, Any]]:
    """Every complete entry of every worker file; torn or foreign lines are skipped."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*" + SUFFIX)):
        with path.open("rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    continue  # the torn tail of a killed writer: that response never left
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(entry, dict) and "x_request_id" in entry:
                    yield entry


def shown(entries: Iterable[dict[str, Any]], wanted: str | None = None) -> list[dict[str, Any]]:
    """The entries a reader shows (those whose ``x_request_id`` or body ``request_id`` is
    ``wanted``, if given): an entry marked ``"supersedes": true`` (the 503 sent when the ledger
    failed, or when the edge's cache fill was refused) hides every other entry of its
    ``x_request_id``, which never left."""
    found, superseded = [], set()
    for entry in entries:
        if entry.get("supersedes") is True:
            superseded.add(entry.get("x_request_id"))
        if wanted is None or wanted in (entry.get("x_request_id"), entry.get("request_id")):
            found.append(entry)
    if not superseded:
        return found
    return [
        entry
        for entry in found
        if entry.get("supersedes") is True or entry.get("x_request_id") not in superseded
    ]


def find_entries(folder: Path, request_id: str) -> list[dict[str, Any]]:
    """The entries shown for ``request_id`` (an ``x_request_id`` or a body ``request_id``),
    oldest first."""
    found = shown(read_entries(folder), request_id.strip().lower())
    return sorted(found, key=lambda entry: entry.get("ts", ""))
