"""Shipping the request ledger to the object store, and finding entries there
(docs/operating/ledger.md#shipping).

``fxev ledger ship`` (:func:`ship`), and in fleet mode the gateway's main process every
``FXEV_LEDGER_SHIP_INTERVAL_S`` seconds and at shutdown (:class:`Shipper`), upload the lines of
each worker file that no void can reach any more: up to the offset its writer marked settled
(``<file>.settled``, :mod:`gateway.ledger.writer`), or every complete line once the file's
worker is gone (only the worker sends voids). Each run uploads what lies between the offset
shipped before (``ledger/.shipped/<file>.json``) and that limit as one immutable object,
``ledger/<host>/<file>/<offset>-<end>.jsonl`` (offsets on 12 digits; zeroed bytes dropped), then
moves the offset: a run cut short uploads the same key with the same bytes again. ``<host>`` is
this machine's name and an id made once in the home, so two homes on one machine never share a
folder. A lock keeps two runs (the command and the gateway) from shipping the same lines twice.

``fxev requests show`` reads the shipped objects beside the local files (:func:`find_everywhere`),
applying the same ``supersedes`` rule to all of them together.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import secrets
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from builder.core.errors import Conflict
from builder.core.settings import SettingsError
from builder.disk.durable import replace_durably
from gateway.ledger.reading import SUFFIX, ledger_folder, read_entries, shown
from gateway.ledger.writer import SETTLED_SUFFIX

if TYPE_CHECKING:
    from builder.core.settings import Settings
    from builder.objstore.s3 import ObjectStore

KEYS = "ledger/"  # the store's folder of shipped ledgers
STATE_DIR = ".shipped"  # in the ledger folder: the host's id, each file's offset shipped, the lock
INTERVAL_VARIABLE = "FXEV_LEDGER_SHIP_INTERVAL_S"  # internal: the tests' shorter or longer one
INTERVAL_S = 30.0
SHORTEST_INTERVAL_S = 0.1  # a shorter one is a busy loop of store requests


def object_store(settings: Settings) -> ObjectStore:
    from builder.objstore.s3 import ObjectStore

    return ObjectStore(settings.store_url, settings.s3_endpoint)


# -- which lines may be shipped ----------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def worker_gone(path: Path) -> bool:
    """Whether the worker that writes ``path`` (``<host>-<pid>-<start>.jsonl``) is gone: no void
    can reach its file any more. A file named for another machine is taken as gone."""
    parts = path.name.removesuffix(SUFFIX).rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    if parts[0] != socket.gethostname():
        return True
    return not _alive(int(parts[1]))


def _settled_mark(path: Path) -> tuple[int, int, bool] | None:
    """(inode, settled offset, stopped) from the writer's ``<file>.settled``, if readable."""
    try:
        fields = path.with_name(path.name + SETTLED_SUFFIX).read_bytes().split()
        inode, offset, _, stopped = (int(field) for field in fields)
    except (OSError, ValueError):
        return None
    return inode, offset, stopped == 1


def complete_end(data: bytes, settled: bool) -> int:
    """Where the complete lines of ``data`` end: after its last newline before the zeros written
    ahead; in a file still written (``settled`` false), before its first zero byte, since a
    reader may see a write land out of order."""
    end = len(data.rstrip(b"\0")) if settled else data.find(b"\0")
    return data.rfind(b"\n", 0, len(data) if end < 0 else end) + 1


def shippable(path: Path, data: bytes, inode: int) -> int:
    """How many bytes of the file (``data``, its whole content) no void can reach any more."""
    mark = _settled_mark(path)
    if mark is not None and mark[0] == inode and mark[2]:
        return complete_end(data, settled=True)  # its writer stopped
    if worker_gone(path):  # its writer may still add lines, but voids come only from the worker
        return complete_end(data, settled=False)
    if mark is None or mark[0] != inode:
        return 0
    return min(mark[1], complete_end(data, settled=True))


def entry_lines(data: bytes) -> list[bytes]:
    """The ledger lines in ``data``: zeroed bytes dropped, anything not an entry skipped."""
    lines = []
    for raw in data.splitlines(keepends=True):
        line = raw.lstrip(b"\0")
        if not line.endswith(b"\n"):
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "x_request_id" in entry:
            lines.append(line)
    return lines


# -- shipping --------------------------------------------------------------------------------


def host_name(state: Path) -> str:
    """This home's folder in the store: the machine's name and an id made once in the home."""
    id_path = state / "host-id"
    try:
        home_id = id_path.read_text().strip()
    except FileNotFoundError:
        home_id = secrets.token_hex(4)
        replace_durably(id_path, home_id.encode() + b"\n")
    machine = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "host"
    return f"{machine}-{home_id}"


@contextlib.contextmanager
def _locked(state: Path) -> Iterator[None]:
    with (state / "lock").open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


def ship(folder: Path, store: ObjectStore) -> int:
    """Upload what each worker file of ``folder`` holds settled and not shipped yet; the number
    of lines shipped."""
    state = folder / STATE_DIR
    state.mkdir(exist_ok=True)
    shipped = 0
    with _locked(state):
        host = host_name(state)
        for path in sorted(folder.glob("*" + SUFFIX)):
            shipped += ship_file(path, state, f"{KEYS}{host}/", store)
    return shipped


def ship_file(path: Path, state: Path, under: str, store: ObjectStore) -> int:
    state_path = state / (path.name + ".json")
    try:
        with path.open("rb") as handle:
            inode = os.fstat(handle.fileno()).st_ino
            data = handle.read()
    except FileNotFoundError:
        return 0  # rotated away meanwhile
    try:
        done = orjson.loads(state_path.read_bytes())
    except FileNotFoundError:
        done = {"inode": inode, "offset": 0}
    if done["inode"] != inode:  # replaced (rotated): its shipped keys would be reused
        if done["offset"] > 0:
            raise Conflict(
                f"{path} was replaced (rotated?) since it was last shipped; move its"
                f" state {state_path} away to ship it under the same keys anew"
            )
        done = {"inode": inode, "offset": 0}
    start, end = done["offset"], shippable(path, data, inode)
    if end <= start:
        return 0
    lines = entry_lines(data[start:end])
    if lines:
        key = f"{under}{path.name.removesuffix(SUFFIX)}/{start:012d}-{end:012d}{SUFFIX}"
        store.put_new(key, b"".join(lines))
    replace_durably(state_path, orjson.dumps({"inode": inode, "offset": end}))
    return len(lines)


# -- reading ---------------------------------------------------------------------------------


def shipped_entries(store: ObjectStore) -> Iterator[dict[str, Any]]:
    from builder.objstore.s3 import parallel

    keys = [key for key in store.list_keys(KEYS) if key.endswith(SUFFIX)]
    for data in parallel(store.get, keys):
        for line in entry_lines(data or b""):
            yield orjson.loads(line)


def find_everywhere(
    folder: Path | None, store: ObjectStore | None, request_id: str
) -> list[dict[str, Any]]:
    """The entries shown for ``request_id`` from the local files and the shipped objects (an
    entry in both counted once), oldest first."""
    seen: set[bytes] = set()
    entries = []
    local = read_entries(folder) if folder is not None else iter(())
    remote = shipped_entries(store) if store is not None else iter(())
    for source in (local, remote):
        for entry in source:
            key = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    found = shown(entries, request_id.strip().lower())
    return sorted(found, key=lambda entry: entry.get("ts", ""))


# -- the gateway's main process ---------------------------------------------------------------


def ship_interval(raw: str) -> float:
    """The shipping interval a ``FXEV_LEDGER_SHIP_INTERVAL_S`` of ``raw`` asks for (empty: the
    default); a ``SettingsError`` for anything but a number of seconds from 0.1 to the longest
    a thread can wait (the tests set it shorter to ship sooner, or longer never to ship until
    the stop)."""
    if not raw.strip():
        return INTERVAL_S
    try:
        interval = float(raw)
    except ValueError:
        interval = math.nan
    if not SHORTEST_INTERVAL_S <= interval <= threading.TIMEOUT_MAX:  # nan compares False
        raise SettingsError(
            f"{INTERVAL_VARIABLE} must be a number of seconds from {SHORTEST_INTERVAL_S} to"
            f" {threading.TIMEOUT_MAX:.0f}, got {raw[:40]!r}"
        )
    return interval


class Shipper:
    """Ships the home's ledger every ``interval`` seconds on a thread, and once more at stop."""

    def __init__(self, folder: Path, store: ObjectStore, interval: float) -> None:
        self.folder, self.store, self.interval = folder, store, interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Shipper:
        interval = ship_interval(os.environ.get(INTERVAL_VARIABLE, ""))
        return cls(ledger_folder(settings.home), object_store(settings), interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ledger-shipper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            self.ship_once()

    def ship_once(self) -> None:
        from sanic.log import error_logger, logger

        if not self.folder.is_dir():
            return  # nothing recorded yet
        try:
            shipped = ship(self.folder, self.store)
        except Exception as error:  # the store down, a replaced file: the next run tries again
            error_logger.error("ledger not shipped: %s", error)
            return
        if shipped:
            logger.info("ledger: %d lines shipped", shipped)

    def stop(self) -> None:
        """Stop the thread, then ship what the stopped workers left."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        self.ship_once()
        self.store.close()
