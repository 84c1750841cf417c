"""``python -m gateway.ledger.writer FILE``: the process that writes one worker's ledger file.

Each gateway worker starts one (:class:`gateway.ledger.recording.Ledger`) and sends it batches of
ledger lines over a pipe; the writer puts each batch on disk and answers, in order, one line per
batch: ``+`` once the batch is durable; ``-`` and the reason when none of its lines was written (the
file could not be opened or grown); ``~`` and the reason when writing its lines failed part way, so
some may be on disk. A writer in a process of its own shares no interpreter lock with the worker: a
thread would take the lock back from the event loop several times per batch (after waking, after
each system call), each time a pair of context switches, which cost more than the writes themselves.

A frame is two lengths, then the lines to *void*, then the batch. The lines to void are those of
the worker's batches that failed with their lines possibly on disk (its writer was killed before
answering, or answered ``~``): their responses never left (docs/operating/ledger.md#failed). Such
lines are the last of the file, since nothing is written after them before they are voided: the
writer overwrites them with zeros (:meth:`LedgerFile.void`, no new disk space needed), and only
then writes the batch; when voiding fails the batch is not written.

The file (:class:`LedgerFile`) is opened ``O_DSYNC``, so a write returns once its bytes are on
disk: one system call is both the write and its sync. It is written ahead with zeros, a megabyte at
a time, and lines are written over them at the end of the last line: a write that neither changes
the file's size nor allocates blocks needs no journal commit, which makes each sync about a third
cheaper. So a running (or killed) worker's file ends in zero bytes after its last line, which
readers skip (a line without its newline); a writer that stops cuts its file at its last line.

Before each batch the file is checked to still be the one at its path: moved away or deleted (log
rotation), it is cut and closed and a new one is opened. A file that exists when opened goes on
after its last whole line. An error (the folder cannot be made, a full disk) fails that batch only;
the next one tries again.

What may be shipped (docs/operating/ledger.md#shipping) is told in a small file beside the
ledger, ``<file>.settled`` (:data:`SETTLED_SUFFIX`): the file's inode, the offset up to which its
lines are *settled* (no void can reach them any more), the writer's PID, and whether the writer
has stopped. A frame that carries a batch, or an acknowledgement frame (:data:`ACK` in place of
the void's length, answered by nothing), tells the writer that the worker released or failed
every batch before it; once the frame's void is done, every line before the end is settled. A
writer whose input ended marks its file stopped: nothing it holds can be voided any more.

The writer ignores SIGINT and SIGTERM (a Ctrl-C reaches the whole process group): it stops when its
input ends, that is when its worker closes the pipe or dies, after writing what it was sent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import sys
from pathlib import Path

ZEROED_AHEAD = 1 << 20  # bytes of zeros written past the last line, a megabyte at a time
# Each frame: the lengths of the lines to void and of the batch, then those bytes.
FRAME = struct.Struct(">II")
OK = b"+\n"
# In place of the void's length: the worker released every batch it sent; no batch, no answer.
ACK = 0xFFFFFFFF
SETTLED_SUFFIX = ".settled"
SETTLED_FORMAT = b"%d %d %d %d\n"  # inode, settled offset, writer PID, stopped (0 or 1)
SETTLED_SIZE = 64  # the marker is written over itself, padded with spaces to this size


class PartlyWritten(OSError):
    """Writing a batch's lines failed part way: some of them may be on disk."""


class LedgerFile:
    """One worker's ledger file: durable writes after the last line, over zeros written ahead."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folder = path.parent
        self._fd: int | None = None
        self._identity: tuple[int, int] = (0, 0)  # st_dev, st_ino of the open file
        self._end = 0  # where the next line goes: just after the last one
        self._zeroed = 0  # the file's size: zeros from _end to here
        self._marker: int | None = None  # the ``.settled`` file's descriptor

    def _file(self) -> int:
        """The open file descriptor of ``self.path``, reopened if the file was moved away (one
        ``stat`` of the path, compared with the file opened)."""
        if self._fd is not None:
            try:
                st = os.stat(self.path)
                same = (st.st_dev, st.st_ino) == self._identity
            except OSError:
                same = False
            if same:
                return self._fd
            self.close()  # moved away (rotated): cut at its last line, as on stop
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_DSYNC, 0o600)
        try:
            st = os.fstat(fd)
            end = end_of_lines(fd, st.st_size)
            if st.st_size > end:  # a torn line, or zeros: cleared, to be written over
                write_all(fd, bytes(st.st_size - end), end)
            dir_fd = os.open(self.folder, os.O_RDONLY)
            try:
                os.fsync(dir_fd)  # the new file's name is durable too
            finally:
                os.close(dir_fd)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._identity = fd, (st.st_dev, st.st_ino)
        self._end, self._zeroed = end, st.st_size
        return fd

    def write(self, data: bytes) -> None:
        """Write ``data`` after the last line, on disk when this returns; raises ``OSError``
        (the file is then closed, and reopened by the next write)."""
        try:
            fd = self._file()
            if self._end + len(data) > self._zeroed:
                grow = max(ZEROED_AHEAD, self._end + len(data) - self._zeroed)
                write_all(fd, bytes(grow), self._zeroed)
                self._zeroed += grow
            try:
                write_all(fd, data, self._end)
            except OSError as error:
                raise PartlyWritten(error.errno, error.strerror) from error
            self._end += len(data)
        except OSError:
            self._drop()
            raise

    def void(self, lines: bytes) -> None:
        """Zeros over the file's last lines that are among ``lines`` (whole lines: those of
        batches the worker failed), on disk when this returns; raises ``OSError``."""
        try:
            fd = self._file()
            wanted = {line + b"\n" for line in lines.split(b"\n") if line}
            start = max(0, self._end - len(lines) - 1)  # one byte more: the newline before
            tail = os.pread(fd, self._end - start, start)
            cut = len(tail)
            while cut > 0:
                begin = tail.rfind(b"\n", 0, cut - 1) + 1
                if (begin == 0 and start > 0) or tail[begin:cut] not in wanted:
                    break  # a line that is not one of them (or longer than all of them)
                cut = begin
            if start + cut < self._end:
                write_all(fd, bytes(self._end - start - cut), start + cut)
                self._end = start + cut
        except OSError:
            self._drop()
            raise

    def settle(self, stopped: bool = False) -> None:
        """Mark every line before the end as settled (best effort, not synced: a marker lost
        ships later, never too much)."""
        if self._fd is None and not stopped:
            return
        try:
            if self._marker is None:
                marker_path = self.path.with_name(self.path.name + SETTLED_SUFFIX)
                self._marker = os.open(marker_path, os.O_RDWR | os.O_CREAT, 0o600)
            inode = self._identity[1] if self._fd is not None else _inode(self.path)
            text = SETTLED_FORMAT % (inode, self._end, os.getpid(), int(stopped))
            os.pwrite(self._marker, text.ljust(SETTLED_SIZE - 1) + b"\n", 0)
        except OSError:
            return

    def _drop(self) -> None:
        """Close the file after an error; the next write opens it again."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Cut the file at its last line (readers skip the zeros if this fails) and close it."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        os.close(self._fd)
        self._fd = None

    def stop(self) -> None:
        """The input ended: close the file, and mark it stopped (nothing in it can be voided)."""
        self.close()
        if self._identity != (0, 0):
            self.settle(stopped=True)
        if self._marker is not None:
            os.close(self._marker)
            self._marker = None


def _inode(path: Path) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return 0


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


def reply_for(file: LedgerFile, void: bytes, batch: bytes) -> bytes:
    """Void ``void``, then write one batch; the line that answers it."""
    try:
        if void:
            file.void(void)
        file.settle()  # every earlier batch was released, or is voided now
        if batch:
            file.write(batch)
    except OSError as error:
        kind = b"~" if isinstance(error, PartlyWritten) else b"-"
        reason = f"ledger {file.path}: {error}".replace("\n", " ")
        return kind + reason.encode("utf-8", "replace") + b"\n"
    return OK


def read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``, or None at the end of the input (a cut frame included)."""
    parts, missing = [], size
    while missing:
        part = os.read(fd, min(missing, 1 << 20))
        if not part:
            return None
        parts.append(part)
        missing -= len(part)
    return b"".join(parts)


def serve(file: LedgerFile, batches: int, replies: int) -> None:
    """Answer every batch read from ``batches`` on ``replies`` until the input ends."""
    answering = True
    try:
        while (header := read_exactly(batches, FRAME.size)) is not None:
            void_size, batch_size = FRAME.unpack(header)
            if void_size == ACK:
                file.settle()
                continue
            void = read_exactly(batches, void_size)
            batch = read_exactly(batches, batch_size)
            if void is None or batch is None:
                break  # the worker died mid-frame: that batch's responses never left
            reply = reply_for(file, void, batch)
            if answering:
                try:
                    os.write(replies, reply)
                except BrokenPipeError:  # the worker reads no more answers (closing, or gone)
                    answering = False  # but what it sent is written (or voided) all the same
    finally:
        file.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m gateway.ledger.writer FILE", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    serve(LedgerFile(Path(args[0])), sys.stdin.fileno(), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
