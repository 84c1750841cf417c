"""The request ledger: what was sent, to whom, recorded durably before it leaves (DECISIONS 5).

Each worker process appends JSON lines to its own file, opened ``O_DSYNC``:
``FXEV_HOME/ledger/<host>-<pid>-<start>.jsonl``. With ``O_DSYNC`` a write returns once its bytes
are on disk, so one system call is both the write and its sync. The file is written ahead with
zeros, a megabyte at a time, and lines are written over them at the end of the last line: a
write that does not change the file's size or allocate blocks needs no journal commit, which
makes each sync about a third cheaper. So a running or killed worker's file ends in zero bytes
after its last line (readers stop at a line without its newline); a worker that stops cuts its
file at its last line.
Appending is a group commit: responses that finish while a write is under way wait together for
the next one, so one durable write covers every response of the batch; a response is released
only after the write that holds its line returned. The writes run on the ledger's own thread, off
the event loop: the loop hands it a batch (a queue put) and the thread hands the batch back
(``call_soon_threadsafe``), one wake-up each way per batch, with nothing else shared. A worker
killed mid-write leaves at most one torn last line, for a response that never left; readers skip
lines that do not parse.

Before each batch the file is checked to still be the one at its path (moved away or deleted:
a new one is opened, as after log rotation). When the folder or file cannot be opened or
written, every response of the batch fails with :class:`LedgerUnavailable` and the gateway
answers 503 instead; the next batch tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

LEDGER_DIR = "ledger"
SUFFIX = ".jsonl"
ZEROED_AHEAD = 1 << 20  # bytes of zeros written past the last line, a megabyte at a time


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


Batch = list[tuple[bytes, "asyncio.Future[None]"]]


class Ledger:
    """One worker's append-only ledger file with group commit."""

    def __init__(self, folder: Path, name: str | None = None) -> None:
        self.folder = folder
        self.path = folder / (name or worker_file_name())
        self._fd: int | None = None
        self._identity: tuple[int, int] = (0, 0)  # st_dev, st_ino of the open file
        self._end = 0  # where the next line goes: just after the last one
        self._zeroed = 0  # the file's size: zeros from _end to here
        self._pending: Batch = []
        self._writing = False  # a batch is with the writer thread
        self._batches: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, Batch] | None] = (
            queue.SimpleQueue()
        )
        self._writer: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the worker's, asked for once

    # -- durable writes (the writer thread) ----------------------------------------------------

    def _file(self) -> int:
        """The open file descriptor of ``self.path``, reopened if the file was moved away (one
        ``stat`` of the path, compared with the file opened)."""
        if self._fd is not None:
            try:
                st = os.stat(self.path)
                same = (st.st_dev, st.st_ino) == self._identity
            except FileNotFoundError:
                same = False
            if same:
                return self._fd
            self._close_file()  # moved away (rotated): cut at its last line, as on stop
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_DSYNC, 0o600)
        try:
            st = os.fstat(fd)
            self._end = end_of_lines(fd, st.st_size)
            if st.st_size > self._end:  # a torn line, or zeros: cleared, to be written over
                os.pwrite(fd, bytes(st.st_size - self._end), self._end)
            self._zeroed = st.st_size
            dir_fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)  # the new file's name is durable too
            finally:
                os.close(dir_fd)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)
        return fd

    def write_durably(self, data: bytes) -> None:
        """Write ``data`` after the last line, on disk when the write returns; raises
        :class:`LedgerUnavailable` on any OS error."""
        try:
            fd = self._file()
            if self._end + len(data) > self._zeroed:
                grow = max(ZEROED_AHEAD, self._end + len(data) - self._zeroed)
                write_all(fd, bytes(grow), self._zeroed)
                self._zeroed += grow
            write_all(fd, data, self._end)
            self._end += len(data)
        except OSError as error:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            raise LedgerUnavailable(f"ledger {self.path}: {error}") from error

    def _write_batches(self) -> None:
        """The writer thread: each batch written and synced, then handed back to its loop."""
        while (handed := self._batches.get()) is not None:
            loop, batch = handed
            failure: LedgerUnavailable | None = None
            try:
                self.write_durably(b"".join(line for line, _ in batch))
            except LedgerUnavailable as error:
                failure = error
            try:
                loop.call_soon_threadsafe(self._written, loop, batch, failure)
            except RuntimeError:  # that loop is closed: nobody waits for this batch any more
                self._writing = False

    # -- group commit (event loop) -------------------------------------------------------------

    async def append(self, entry: LedgerEntry) -> None:
        """Record ``entry``; returns once it is on disk. Raises :class:`LedgerUnavailable`."""
        loop = self._loop
        if loop is None or loop.is_closed():  # (a test may run several loops in turn)
            loop = self._loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((entry.line(), done))
        if not self._writing:
            self._hand_over(loop)
        await done

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give every pending line to the writer thread (started on first use)."""
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_batches, name="fxev-ledger", daemon=True
            )
            self._writer.start()
        batch, self._pending = self._pending, []
        self._writing = True
        self._batches.put((loop, batch))

    def _written(
        self, loop: asyncio.AbstractEventLoop, batch: Batch, failure: LedgerUnavailable | None
    ) -> None:
        """On the loop: release the batch's responses, and hand over what arrived meanwhile."""
        for _, done in batch:
            if not done.done():
                if failure is None:
                    done.set_result(None)
                else:
                    done.set_exception(failure)
        self._writing = False
        if self._pending:
            self._hand_over(loop)

    def close(self) -> None:
        """Stop the writer thread (after the batch it holds) and close the file."""
        if self._writer is not None:
            self._batches.put(None)
            self._writer.join()
            self._writer = None
        self._close_file()

    def _close_file(self) -> None:
        """Cut the file at its last line (readers skip the zeros if this fails) and close it."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None


def write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def end_of_lines(fd: int, size: int) -> int:
    """Where the file's last complete line ends (0 if it has none)."""
    if size == 0:
        return 0
    data = os.pread(fd, size, 0)
    return data.rfind(b"\n", 0, len(data.rstrip(b"\0"))) + 1


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
