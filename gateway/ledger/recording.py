"""The request ledger: what was sent, to whom, recorded durably before it leaves
(docs/decisions.md#ledger).

Each worker process records JSON lines in its own file,
``FXEV_HOME/ledger/<host>-<pid>-<start>.jsonl``, through a writer process of its own
(:mod:`gateway.ledger.writer`, which says how the file is written and why in a separate process).
Recording is a group commit: the responses that finish while a batch is being written wait together
for the next one, so one durable write covers every response of a batch, and a response is
released only when the writer has answered that the batch holding its line is on disk. The event
loop sends a batch down a pipe and learns of its answer from another (``add_reader``): no thread,
no lock shared with the writer.

A writer killed mid-write leaves at most one torn last line, for a response that never left;
readers skip lines that do not end in a newline (and so the zeros written ahead of the last line).
A worker killed after a batch reached the disk but before its responses left leaves whole lines
for answers whose connections dropped, which no client received in any other form: a record
written before its act, as every write-ahead record is (docs/operating/ledger.md#failed).
When the writer cannot write a batch, or has died (it is started again for the next batch), every
response of that batch fails with :class:`LedgerUnavailable` and the gateway answers 503 instead.

The ledger never claims an answer that did not leave (docs/operating/ledger.md#failed). A failed
batch's lines may be on disk all the same (the writer was killed after writing them, before
answering): the ledger keeps them and sends them with its next batch, which the writer writes only
after overwriting them with zeros (*voiding* them), and on a :meth:`Ledger.close` it voids those
of the batch still in flight. The 503 sent instead is recorded marked ``"supersedes": true``
(:meth:`Ledger.append`), and readers (:func:`gateway.ledger.reading.shown`) show it instead of
any earlier entry of the same ``x_request_id``, should one be left where the void could not
reach (a file rotated between).
A released batch the next frame does not follow at once is acknowledged to the writer, which
marks what may be shipped (:mod:`gateway.ledger.shipping`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson

from gateway.ledger.reading import SUFFIX
from gateway.ledger.writer import ACK, FRAME


class LedgerUnavailable(Exception):
    """The ledger could not be written; the response must not leave."""


# Appended to the line of a 503 sent because the ledger failed: it supersedes any earlier line of
# its ``x_request_id`` (the answer that did not leave).
SUPERSEDES = b',"supersedes":true}\n'
# The most bytes of failed batches' lines kept to be voided: beyond it (a writer that dies on every
# start, so that nothing it was sent reached the disk) the earliest are kept.
VOID_LIMIT = 8 << 20


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


def worker_file_name() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"{socket.gethostname()}-{os.getpid()}-{stamp}{SUFFIX}"


Batch = list[tuple[bytes, "asyncio.Future[None]"]]
PIPE_BYTES = 1 << 20  # asked of the kernel for the pipe to the writer: a batch rarely waits
STOP_TIMEOUT_S = 30.0  # how long a stopping ledger waits for its writer


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
        self._void = bytearray()  # lines of failed batches that may be on disk, to be voided
        self._voiding = 0  # how many bytes of _void the batch in flight voids
        self._closed = False
        self.batches = 0  # batches handed to the writer so far

    # -- the writer process --------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer now, on the running loop (else it starts with the first batch)."""
        self._ensure_writer(asyncio.get_running_loop())

    def _ensure_writer(self, loop: asyncio.AbstractEventLoop) -> subprocess.Popen[bytes]:
        if self._writer is not None and self._loop is loop:
            return self._writer
        self._stop_writer()
        writer = self._spawn()
        assert writer.stdout is not None
        loop.add_reader(writer.stdout.fileno(), self._on_replies)
        self._writer, self._loop = writer, loop
        return writer

    def _spawn(self) -> subprocess.Popen[bytes]:
        writer = subprocess.Popen(
            [sys.executable, "-m", "gateway.ledger.writer", str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert writer.stdin is not None and writer.stdout is not None
        with contextlib.suppress(OSError):  # a larger pipe where the kernel allows it
            fcntl.fcntl(writer.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.set_blocking(writer.stdin.fileno(), False)
        return writer

    def _send_before_stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Send what the pipe has not taken yet, waiting (at most ``timeout``) for the writer."""
        assert self._writer is not None and self._writer.stdin is not None
        fd = self._writer.stdin.fileno()
        deadline = time.monotonic() + timeout
        while self._unsent:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                return
            del self._unsent[: os.write(fd, self._unsent)]

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
            writer.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
        self._unsent.clear()
        self._replies.clear()

    # -- group commit (event loop) -------------------------------------------------------------

    def append(self, entry: LedgerEntry, supersedes: bool = False) -> asyncio.Future[None]:
        """Record ``entry``: a future done once it is on disk, or failed with
        :class:`LedgerUnavailable` (a plain function returning the batch's future: no
        coroutine per response). ``supersedes``: the entry of a 503 sent in place of an answer
        that did not leave (the ledger failed, or the edge's cache fill was refused), marked so
        that readers show it instead of any earlier entry of its ``x_request_id``."""
        loop = self._loop
        if loop is None or loop.is_closed():  # (a test may run several loops in turn)
            loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        if self._closed:
            done.set_exception(LedgerUnavailable("the ledger is closed"))
            return done
        line = entry.line()
        self._pending.append((line[:-2] + SUPERSEDES if supersedes else line, done))
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
        self._voiding = len(self._void)
        try:
            self._ensure_writer(loop)
        except OSError as error:  # nothing reached a writer
            self._writer_lost(f"cannot start the ledger writer: {error}", maybe_written=False)
            return
        self._unsent += FRAME.pack(self._voiding, len(data))
        self._unsent += self._void
        self._unsent += data
        self._send_unsent()

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
        except OSError as error:  # the writer is gone: it did not get the whole batch
            self._writer_lost(f"the ledger writer is gone: {error}", maybe_written=False)
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
            # Killed after taking the whole batch, it may have written its lines.
            whole = not self._unsent
            self._writer_lost(f"the ledger writer exited ({writer.poll()})", maybe_written=whole)
            return
        self._replies += data
        while (end := self._replies.find(b"\n")) >= 0:
            reply = bytes(self._replies[:end])
            del self._replies[: end + 1]
            if reply == b"+":
                self._release(None)
            else:  # "-": none of its lines written; "~": some may be on disk
                self._release(LedgerUnavailable(reply[1:].decode()), reply[:1] == b"~")

    def _writer_lost(self, reason: str, maybe_written: bool) -> None:
        """The writer died or cannot be reached: fail the batch it had; the next starts anew."""
        self._stop_writer()
        self._release(LedgerUnavailable(reason), maybe_written)

    def _release(self, failure: LedgerUnavailable | None, maybe_written: bool = False) -> None:
        """Release the batch in flight, or fail it; a failed batch whose lines may be on disk is
        voided by the next one (it carries ``_void``, which a written batch clears)."""
        batch, self._in_flight = self._in_flight, None
        if failure is None:
            del self._void[: self._voiding]
        elif maybe_written and batch and len(self._void) < VOID_LIMIT:
            self._void += b"".join(line for line, _ in batch)
        self._voiding = 0
        for _, done in batch or ():
            if not done.done():
                if failure is None:
                    done.set_result(None)
                else:
                    done.set_exception(failure)
        if self._pending and self._loop is not None and not self._loop.is_closed():
            self._schedule_hand_over(self._loop)
        elif failure is None and self._writer is not None:
            # Nothing follows to tell the writer this batch was released: say so, so that its
            # lines count as settled and can be shipped (docs/operating/ledger.md#shipping).
            self._unsent += FRAME.pack(ACK, 0)
            self._send_unsent()

    def close(self) -> None:
        """Stop the writer, once it has written what it was sent and voided the batch in flight
        (and any failed batch not voided yet). Responses still waiting (a server stopping
        mid-request) are failed: they never leave."""
        self._closed = True
        void = self._void + b"".join(line for line, _ in self._in_flight or ())
        if void:
            with contextlib.suppress(OSError):  # best effort: a writer that cannot start
                if self._writer is None:
                    self._writer = self._spawn()  # a last one, to void them
                self._unsent += FRAME.pack(len(void), 0) + void
                self._send_before_stop()
        self._stop_writer()
        closed = LedgerUnavailable("the ledger is closed")
        waiting = (self._in_flight or []) + self._pending
        self._in_flight, self._pending, self._scheduled = None, [], False
        self._void.clear()
        for _, done in waiting:
            if not done.done():
                done.set_exception(closed)
