"""The request ledger: what was sent, to whom, recorded durably before it leaves
(docs/decisions.md#ledger).

Each worker process records JSON lines in its own file,
``FXEV_HOME/ledger/<host>-<pid>-<start>.jsonl``, through a writer process of its own
(:mod:`gateway.ledger_writer`, which says how the file is written and why in a separate process).
Recording is a group commit: the responses that finish while a batch is being written wait together
for the next one, so one durable write covers every response of a batch, and a response is
released only when the writer has answered that the batch holding its line is on disk. The event
loop sends a batch down a pipe and learns of its answer from another (``add_reader``): no thread,
no lock shared with the writer.

A worker killed mid-write leaves at most one torn last line, for a response that never left;
readers skip lines that do not end in a newline (and so the zeros written ahead of the last line).
When the writer cannot write a batch, or has died (it is started again for the next batch), every
response of that batch fails with :class:`LedgerUnavailable` and the gateway answers 503 instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from gateway.ledger_writer import FRAME

LEDGER_DIR = "ledger"
SUFFIX = ".jsonl"


class LedgerUnavailable(Exception):
    """The ledger could not be written; the response must not leave."""


# Not frozen: a frozen dataclass sets each field through ``object.__setattr__``, which doubles the
# cost of a record made for every response. Nothing keeps or changes an entry once made.
@dataclasses.dataclass(slots=True)
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
        return orjson.dumps(self, option=orjson.OPT_APPEND_NEWLINE)


def ledger_folder(home: Path) -> Path:
    return home / LEDGER_DIR


def worker_file_name() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"{socket.gethostname()}-{os.getpid()}-{stamp}{SUFFIX}"


Batch = list[tuple[bytes, "asyncio.Future[None]"]]
PIPE_BYTES = 1 << 20  # asked of the kernel for the pipe to the writer: a batch rarely waits


class Ledger:
    """One worker's ledger: group commit over its writer process."""

    def __init__(self, folder: Path, name: str | None = None) -> None:
        self.folder = folder
        self.path = folder / (name or worker_file_name())
        self._pending: Batch = []
        self._in_flight: Batch | None = None  # the batch the writer is writing
        self._scheduled = False  # a hand-over waits for the end of this loop turn
        self._writer: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsent = bytearray()  # what the pipe to the writer has not taken yet
        self._replies = bytearray()
        self.batches = 0  # batches handed to the writer so far

    # -- the writer process --------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer now, on the running loop (else it starts with the first batch)."""
        self._ensure_writer(asyncio.get_running_loop())

    def _ensure_writer(self, loop: asyncio.AbstractEventLoop) -> subprocess.Popen[bytes]:
        if self._writer is not None and self._loop is loop:
            return self._writer
        self._stop_writer()
        writer = subprocess.Popen(
            [sys.executable, "-m", "gateway.ledger_writer", str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert writer.stdin is not None and writer.stdout is not None
        with contextlib.suppress(OSError):  # a larger pipe where the kernel allows it
            fcntl.fcntl(writer.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.set_blocking(writer.stdin.fileno(), False)
        loop.add_reader(writer.stdout.fileno(), self._on_replies)
        self._writer, self._loop = writer, loop
        return writer

    def _stop_writer(self) -> None:
        """Close the pipe to the writer (it writes what it has, cuts its file, exits); wait."""
        writer, self._writer = self._writer, None
        if writer is None:
            return
        assert writer.stdin is not None and writer.stdout is not None
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.remove_reader(writer.stdout.fileno())
            loop.remove_writer(writer.stdin.fileno())
        writer.stdin.close()
        writer.stdout.close()
        try:
            writer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
        self._unsent.clear()
        self._replies.clear()

    # -- group commit (event loop) -------------------------------------------------------------

    def append(self, entry: LedgerEntry) -> asyncio.Future[None]:
        """Record ``entry``: a future done once it is on disk, or failed with
        :class:`LedgerUnavailable` (a plain function returning the batch's future: no
        coroutine per response)."""
        loop = self._loop
        if loop is None or loop.is_closed():  # (a test may run several loops in turn)
            loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((entry.line(), done))
        if self._in_flight is None:
            self._schedule_hand_over(loop)
        return done

    def _schedule_hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the pending lines over once this turn of the loop is done, so that every
        response finished in this turn joins the batch (a batch costs one durable write)."""
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._hand_over, loop)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send every pending line to the writer as one batch (unless one is with it)."""
        self._scheduled = False
        if self._in_flight is not None or not self._pending:
            return
        batch, self._pending = self._pending, []
        self._in_flight = batch
        self.batches += 1
        data = b"".join(line for line, _ in batch)
        try:
            self._ensure_writer(loop)
            self._unsent += FRAME.pack(len(data)) + data
            self._send_unsent()
        except OSError as error:
            self._writer_lost(f"cannot reach the ledger writer: {error}")

    def _send_unsent(self) -> None:
        """Write what the pipe takes now; the loop calls again when it takes more."""
        writer = self._writer
        if writer is None or self._loop is None:
            return
        assert writer.stdin is not None
        fd = writer.stdin.fileno()
        try:
            sent = os.write(fd, self._unsent)
        except BlockingIOError:
            sent = 0
        except OSError as error:  # the writer is gone
            self._writer_lost(f"the ledger writer is gone: {error}")
            return
        del self._unsent[:sent]
        if self._unsent:
            self._loop.add_writer(fd, self._send_unsent)
        else:
            self._loop.remove_writer(fd)

    def _on_replies(self) -> None:
        """The writer answered: release the batch it wrote (or fail it)."""
        writer = self._writer
        if writer is None:
            return
        assert writer.stdout is not None
        try:
            data = os.read(writer.stdout.fileno(), 4096)
        except OSError:
            data = b""
        if not data:
            self._writer_lost(f"the ledger writer exited ({writer.poll()})")
            return
        self._replies += data
        while (end := self._replies.find(b"\n")) >= 0:
            reply = bytes(self._replies[:end])
            del self._replies[: end + 1]
            failure = None if reply == b"+" else LedgerUnavailable(reply[1:].decode())
            self._release(failure)

    def _writer_lost(self, reason: str) -> None:
        """The writer died or cannot be reached: fail the batch it had; the next starts anew."""
        self._stop_writer()
        self._release(LedgerUnavailable(reason))

    def _release(self, failure: LedgerUnavailable | None) -> None:
        batch, self._in_flight = self._in_flight, None
        for _, done in batch or ():
            if not done.done():
                if failure is None:
                    done.set_result(None)
                else:
                    done.set_exception(failure)
        if self._pending and self._loop is not None and not self._loop.is_closed():
            self._schedule_hand_over(self._loop)

    def close(self) -> None:
        """Stop the writer, once it has written what it was sent. Responses still waiting (a
        server stopping mid-request) are failed: they never leave."""
        self._stop_writer()
        closed = LedgerUnavailable("the ledger is closed")
        waiting = (self._in_flight or []) + self._pending
        self._in_flight, self._pending, self._scheduled = None, [], False
        for _, done in waiting:
            if not done.done():
                done.set_exception(closed)


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
