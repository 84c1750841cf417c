"""The ledger on its own: the writer's file (zeros ahead, torn lines, rotation, errors), the group
commit over a real writer process, and reading entries back."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import os
import signal
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest

from gateway.ledger.reading import find_entries, read_entries, shown
from gateway.ledger.recording import Ledger, LedgerEntry, LedgerUnavailable
from gateway.ledger.writer import LedgerFile


def entry(n: int, request_id: str | None = None) -> LedgerEntry:
    return LedgerEntry(
        ts=f"2026-11-22T10:00:00.{n:06d}Z",
        x_request_id=str(uuid.UUID(int=n)),
        request_id=request_id,
        sha256="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        bytes=0,
        etag=None,
        token_id="0123456789abcdef",
        token_name="tests",
        method="GET",
        path="/v1/coverage",
        query="",
        status=200,
    )


def lines(*numbers: int) -> bytes:
    return b"".join(entry(n).line() for n in numbers)


def ids(*numbers: int) -> list[str]:
    return [str(uuid.UUID(int=n)) for n in numbers]


# -- the writer's file ---------------------------------------------------------------------------


def test_the_file_is_synchronous_and_lines_go_over_zeros_written_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gateway.ledger.writer.ZEROED_AHEAD", 1000)  # grows several times below
    folder = tmp_path / "ledger"
    file = LedgerFile(folder / "w.jsonl")
    for n in range(12):
        file.write(lines(n))
    assert fcntl.fcntl(file._fd, fcntl.F_GETFL) & os.O_DSYNC  # each write is its own sync
    running = (folder / "w.jsonl").read_bytes()
    assert running.startswith(lines(*range(12)))
    assert set(running[len(lines(*range(12))) :]) == {0}  # zeros ahead
    assert [e["x_request_id"] for e in read_entries(folder)] == ids(*range(12))
    file.close()
    assert (folder / "w.jsonl").read_bytes() == lines(*range(12))  # cut at its last line


def test_a_new_files_name_is_synced_before_its_first_line_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """O_DSYNC makes each write durable, but not the file's name: its folder is synced when the
    file is created, before the first line (and so the first response) can be released."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr("gateway.ledger.writer.os.fsync", fsync)
    file = LedgerFile(tmp_path / "ledger" / "w.jsonl")
    file.write(lines(1))
    assert synced == ["folder"]
    file.close()


def test_a_reopened_file_goes_on_after_its_last_whole_line(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_bytes(lines(1) + entry(2).line()[:30] + bytes(500))  # killed: torn, zeros ahead
    file = LedgerFile(path)
    file.write(lines(3))
    file.close()
    assert path.read_bytes() == lines(1, 3)


def test_a_moved_file_is_cut_and_followed_by_a_new_one(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    file = LedgerFile(folder / "w.jsonl")
    file.write(lines(1))
    (folder / "w.jsonl").rename(tmp_path / "rotated.jsonl")
    file.write(lines(2))
    file.close()
    assert (tmp_path / "rotated.jsonl").read_bytes() == lines(1)
    assert (folder / "w.jsonl").read_bytes() == lines(2)


def test_a_failed_write_raises_and_the_next_one_tries_again(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.write_bytes(b"a file where the folder should be")
    file = LedgerFile(folder / "w.jsonl")
    with pytest.raises(OSError):
        file.write(lines(1))
    folder.unlink()
    file.write(lines(2))
    file.close()
    assert (folder / "w.jsonl").read_bytes() == lines(2)


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    (folder / "killed.jsonl").write_bytes(lines(1) + entry(2).line()[:40])
    (folder / "junk.jsonl").write_bytes(b"not json\n[1,2]\n")
    assert [e["x_request_id"] for e in read_entries(folder)] == ids(1)


# -- group commit over the writer process --------------------------------------------------------


def test_concurrent_appends_share_batches_and_all_land(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger", "w.jsonl")

    async def run() -> None:
        await asyncio.gather(*(ledger.append(entry(n)) for n in range(200)))
        ledger.close()

    asyncio.run(run())
    assert sorted(e["x_request_id"] for e in read_entries(tmp_path / "ledger")) == sorted(
        ids(*range(200))
    )
    assert 1 <= ledger.batches < 200  # grouped: far fewer batches than entries
    assert (tmp_path / "ledger" / "w.jsonl").read_bytes().endswith(b"\n")  # cut when it stopped


def test_an_unwritable_ledger_fails_every_waiting_response_then_recovers(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.write_bytes(b"a file where the folder should be")
    ledger = Ledger(folder, "w.jsonl")

    async def run() -> list[BaseException | None]:
        failed = await asyncio.gather(
            *(ledger.append(entry(n)) for n in range(5)), return_exceptions=True
        )
        folder.unlink()
        await ledger.append(entry(9))
        ledger.close()
        return failed

    failed = asyncio.run(run())
    assert all(isinstance(result, LedgerUnavailable) for result in failed)
    assert "ledger" in str(failed[0])
    assert [e["x_request_id"] for e in read_entries(folder)] == ids(9)


def test_a_killed_writer_fails_its_batch_and_the_next_batch_starts_another(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ledger"
    ledger = Ledger(folder, "w.jsonl")

    async def run() -> BaseException | None:
        await ledger.append(entry(1))
        assert ledger._writer is not None
        first_writer = ledger._writer
        os.kill(first_writer.pid, signal.SIGKILL)
        first_writer.wait()
        try:
            await ledger.append(entry(2))
        except LedgerUnavailable as error:
            failure: BaseException | None = error
        else:
            failure = None
        await ledger.append(entry(3))
        assert ledger._writer is not first_writer
        ledger.close()
        return failure

    failure = asyncio.run(run())
    assert isinstance(failure, LedgerUnavailable)
    assert [e["x_request_id"] for e in read_entries(folder)] == ids(1, 3)


def test_find_entries_by_either_id_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    deterministic = str(uuid.uuid5(uuid.NAMESPACE_URL, "as-of"))
    first, second = Ledger(folder, "a.jsonl"), Ledger(folder, "b.jsonl")

    async def run() -> None:
        await second.append(entry(3, deterministic))
        await first.append(entry(1, deterministic))
        await first.append(entry(2, None))
        first.close()
        second.close()

    asyncio.run(run())
    found = find_entries(folder, deterministic.upper())
    assert [e["x_request_id"] for e in found] == ids(1, 3)
    assert [e["x_request_id"] for e in find_entries(folder, str(uuid.UUID(int=2)))] == ids(2)
    assert find_entries(folder, "nothing") == []


def test_entry_line_is_one_json_object_with_every_field_in_declaration_order() -> None:
    line = entry(7, "rid").line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == dataclasses.asdict(entry(7, "rid"))
    assert list(orjson.loads(line)) == [f.name for f in dataclasses.fields(LedgerEntry)]


def test_responses_still_waiting_when_the_ledger_closes_fail(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger", "w.jsonl")

    async def run() -> list[BaseException | None]:
        await ledger.append(entry(1))
        waiting = [ledger.append(entry(n)) for n in (2, 3)]  # not yet handed over
        ledger.close()
        return await asyncio.gather(*waiting, return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(result, LedgerUnavailable) for result in results)
    assert [e["x_request_id"] for e in read_entries(tmp_path / "ledger")] == ids(1)


def test_the_writer_outlives_a_ctrl_c_to_the_process_group(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger", "w.jsonl")

    async def run() -> None:
        await ledger.append(entry(1))
        assert ledger._writer is not None
        os.kill(ledger._writer.pid, signal.SIGINT)
        os.kill(ledger._writer.pid, signal.SIGTERM)
        await asyncio.sleep(0.2)
        assert ledger._writer.poll() is None  # it stops only when its input ends
        await ledger.append(entry(2))
        ledger.close()

    asyncio.run(run())
    assert [e["x_request_id"] for e in read_entries(tmp_path / "ledger")] == ids(1, 2)


# -- failed batches: voided, superseded (docs/operating/ledger.md#failed) -------------------------


def test_void_zeros_only_the_last_lines_that_are_among_the_failed(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    file = LedgerFile(path)
    file.write(lines(1, 2))
    file.write(lines(3, 4))
    file.void(lines(3, 4, 5) + lines(1))  # 1 is not at the end: kept, as 2 after it
    file.write(lines(6))
    file.void(lines(3))  # no longer there: nothing to do
    file.close()
    assert path.read_bytes() == lines(1, 2, 6)


def test_void_clears_the_complete_lines_of_a_batch_cut_by_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    batch = lines(2, 3, 4)
    torn = batch[: len(lines(2, 3)) + 20]  # the writer was killed in the middle of line 4
    path.write_bytes(lines(1) + torn + bytes(300))
    file = LedgerFile(path)
    file.void(batch)
    file.write(lines(5))
    file.close()
    assert path.read_bytes() == lines(1, 5)


def reached_the_disk(ledger: Ledger, data: bytes) -> None:
    """Write ``data`` after the last line of the ledger's file, as its writer would have."""
    with ledger.path.open("r+b") as handle:
        content = handle.read()
        handle.seek(content.rstrip(b"\0").rfind(b"\n") + 1)
        handle.write(data)


def test_a_batch_written_by_a_writer_killed_before_it_answered_is_voided_by_the_next(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ledger"
    ledger = Ledger(folder, "w.jsonl")
    superseding = dataclasses.replace(entry(2), status=503, sha256="0" * 64)

    async def run() -> BaseException | None:
        await ledger.append(entry(1))
        assert ledger._writer is not None
        os.kill(ledger._writer.pid, signal.SIGSTOP)
        second = ledger.append(entry(2))
        await asyncio.sleep(0.1)  # handed over: in the pipe, not read
        reached_the_disk(ledger, entry(2).line())  # as if written, then the writer killed
        os.kill(ledger._writer.pid, signal.SIGKILL)
        try:
            await second
        except LedgerUnavailable as error:
            failure: BaseException | None = error
        else:
            failure = None
        assert ids(1, 2) == [e["x_request_id"] for e in read_entries(folder)]
        await asyncio.gather(ledger.append(superseding, supersedes=True), ledger.append(entry(3)))
        ledger.close()
        return failure

    assert isinstance(asyncio.run(run()), LedgerUnavailable)
    on_disk = list(read_entries(folder))
    assert [(e["x_request_id"], e["status"]) for e in on_disk] == [
        (ids(1)[0], 200),
        (ids(2)[0], 503),
        (ids(3)[0], 200),
    ]  # the 200 of request 2 is gone: voided before anything else was written
    assert on_disk[1]["supersedes"] is True
    assert "supersedes" not in on_disk[0]


def test_a_closing_ledger_voids_the_batch_still_in_flight(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    ledger = Ledger(folder, "w.jsonl")

    async def run() -> list[BaseException | None]:
        await ledger.append(entry(1))
        waiting = ledger.append(entry(2))
        await asyncio.sleep(0)  # handed over to the writer, its answer not yet read
        assert ledger._in_flight
        ledger.close()  # the writer writes it, then voids it: it never leaves
        return await asyncio.gather(waiting, ledger.append(entry(3)), return_exceptions=True)

    assert all(isinstance(result, LedgerUnavailable) for result in asyncio.run(run()))
    assert (folder / "w.jsonl").read_bytes() == lines(1)


# A writer that takes each batch and answers ``~`` (its lines written part way, some perhaps on
# disk), as gateway.ledger.writer does when a write fails after the file was grown.
PARTLY_WRITING = """
import os, struct
def read(size):
    data = b""
    while len(data) < size:
        part = os.read(0, size - len(data))
        if not part:
            raise SystemExit(0)
        data += part
    return data
while True:
    void_size, batch_size = struct.unpack(">II", read(8))
    if void_size == 0xFFFFFFFF:
        continue
    read(void_size)
    read(batch_size)
    try:
        os.write(1, b"~ledger: the write failed part way\\n")
    except BrokenPipeError:
        pass
"""


class PartlyWritingLedger(Ledger):
    def _spawn(self) -> subprocess.Popen[bytes]:
        writer = subprocess.Popen(
            [sys.executable, "-c", PARTLY_WRITING],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert writer.stdin is not None
        os.set_blocking(writer.stdin.fileno(), False)
        return writer


def test_a_batch_written_part_way_fails_and_is_kept_to_be_voided(tmp_path: Path) -> None:
    """The writer's ``~``: the batch's responses never leave (503), and its lines, which may be
    on disk, go with the next frame to be voided (docs/operating/ledger.md#failed)."""
    ledger = PartlyWritingLedger(tmp_path / "ledger", "w.jsonl")

    async def run() -> None:
        try:
            with pytest.raises(LedgerUnavailable, match="part way"):
                await ledger.append(entry(1))
            assert bytes(ledger._void) == lines(1)
        finally:
            ledger.close()  # closes the writer's input and waits for it to exit

    asyncio.run(run())


def test_a_batch_that_could_not_be_written_at_all_is_not_kept_to_be_voided(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ledger"
    folder.write_bytes(b"a file where the folder should be")
    ledger = Ledger(folder, "w.jsonl")

    async def run() -> None:
        for n in range(3):
            with pytest.raises(LedgerUnavailable):
                await ledger.append(entry(n))
        assert ledger._void == b""  # "-": none of its lines reached the disk
        ledger.close()

    asyncio.run(run())


def test_a_superseding_entry_hides_the_earlier_entries_of_its_request(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    as_of = str(uuid.uuid5(uuid.NAMESPACE_URL, "as-of"))
    superseding = dataclasses.replace(entry(2), status=503)
    (folder / "rotated.jsonl").write_bytes(entry(1, as_of).line() + entry(2, as_of).line())
    (folder / "w.jsonl").write_bytes(superseding.line()[:-2] + b',"supersedes":true}\n')
    assert [e["x_request_id"] for e in find_entries(folder, as_of)] == ids(1)
    (shown_2,) = find_entries(folder, ids(2)[0])
    assert (shown_2["status"], shown_2["supersedes"]) == (503, True)
    assert [e["status"] for e in shown(read_entries(folder))] == [200, 503]
