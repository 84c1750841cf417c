"""The request ledger: what was sent, to whom, recorded durably before it leaves (DECISIONS 5).

Each worker process appends JSON lines to its own file, opened ``O_APPEND``:
``FXEV_HOME/ledger/<host>-<pid>-<start>.jsonl``. Appending is a group commit: responses that finish
while a write and fsync are under way wait together for the next one, so one fsync (on a thread,
off the event loop) covers every response of the batch; a response is released only after the fsync
that holds its line returned. A worker killed mid-write leaves at most one torn last line, for a
response that never left; readers skip lines that do not parse.

Before each batch the file is checked to still be the one at its path (moved away or deleted:
a new one is opened, as after log rotation). When the folder or file cannot be opened, written
or synced, every response of the batch fails with :class:`LedgerUnavailable` and the gateway
answers 503 instead; the next batch tries again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

LEDGER_DIR = "ledger"
SUFFIX = ".jsonl"


class LedgerUnavailable(Exception):
    """The ledger could not be written; the response must not leave."""


@dataclasses.dataclass(frozen=True, slots=True)
class LedgerEntry:
    ts: str  # real clock, UTC, microseconds
    x_request_id: str
    request_id: str | None  # the body's request_id (as-of: the deterministic one), else None
    sha256: str  # of the body bytes sent; those of b"" for HEAD and 304
    bytes: int  # how many body bytes were sent
    etag: str | None
    token_id: str
    token_name: str
    method: str
    path: str
    query: str
    status: int

    def line(self) -> bytes:
        # orjson writes a dataclass's fields in declaration order, as ``asdict`` would, for a
        # tenth of the cost (``asdict`` deep-copies every field).
        return orjson.dumps(self) + b"\n"


def ledger_folder(home: Path) -> Path:
    return home / LEDGER_DIR


def worker_file_name() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"{socket.gethostname()}-{os.getpid()}-{stamp}{SUFFIX}"


class Ledger:
    """One worker's append-only ledger file with group commit."""

    def __init__(self, folder: Path, name: str | None = None) -> None:
        self.folder = folder
        self.path = folder / (name or worker_file_name())
        self._fd: int | None = None
        self._pending: list[tuple[bytes, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    # -- durable writes (run on a thread) ------------------------------------------------------

    def _file(self) -> int:
        """The open file descriptor of ``self.path``, reopened if the file was moved away."""
        if self._fd is not None:
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return self._fd
            os.close(self._fd)
            self._fd = None
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the new file's name is durable too
        finally:
            os.close(dir_fd)
        self._fd = fd
        return fd

    def write_durably(self, data: bytes) -> None:
        """Append ``data`` and fsync; raises :class:`LedgerUnavailable` on any OS error."""
        try:
            fd = self._file()
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as error:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            raise LedgerUnavailable(f"ledger {self.path}: {error}") from error

    # -- group commit (event loop) -------------------------------------------------------------

    async def append(self, entry: LedgerEntry) -> None:
        """Record ``entry``; returns once it is on disk. Raises :class:`LedgerUnavailable`."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((entry.line(), done))
        if self._flusher is None:
            self._flusher = loop.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await loop.run_in_executor(
                        None, self.write_durably, b"".join(line for line, _ in batch)
                    )
                except LedgerUnavailable as error:
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(error)
                else:
                    for _, done in batch:
                        if not done.done():
                            done.set_result(None)
        finally:
            self._flusher = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# -- reading (``fxev requests show``) ----------------------------------------------------------


def read_entries(folder: Path) -> Iterator[dict[str, Any]]:
    """Every complete entry of every worker file; torn or foreign lines are skipped."""
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*" + SUFFIX)):
        with path.open("rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    continue  # the torn tail of a killed worker: that response never left
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(entry, dict) and "x_request_id" in entry:
                    yield entry


def find_entries(folder: Path, request_id: str) -> list[dict[str, Any]]:
    """Entries whose ``x_request_id`` or body ``request_id`` is ``request_id``, oldest first."""
    wanted = request_id.strip().lower()
    found = [
        entry
        for entry in read_entries(folder)
        if wanted in (entry.get("x_request_id"), entry.get("request_id"))
    ]
    return sorted(found, key=lambda entry: entry.get("ts", ""))
