"""The ledger on its own: group commit, reading back, torn lines, rotation, an unwritable folder."""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import os
import uuid
from pathlib import Path

import orjson
import pytest

from gateway.ledger import Ledger, LedgerEntry, LedgerUnavailable, find_entries, read_entries


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


def test_concurrent_appends_share_durable_writes_and_all_land(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path / "ledger", "w.jsonl")
    writes: list[int] = []  # the writes of lines, not of zeros ahead of them
    real_pwrite = os.pwrite

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        if any(data):
            writes.append(fd)
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)

    async def run() -> None:
        await asyncio.gather(*(ledger.append(entry(n)) for n in range(200)))

    asyncio.run(run())
    flags = fcntl.fcntl(ledger._fd, fcntl.F_GETFL)
    ledger.close()
    assert flags & os.O_DSYNC  # each write is on disk when it returns: the write is the sync
    lines = (tmp_path / "ledger" / "w.jsonl").read_bytes().splitlines()
    assert sorted(orjson.loads(line)["x_request_id"] for line in lines) == sorted(
        str(uuid.UUID(int=n)) for n in range(200)
    )
    assert 1 <= len(writes) < 200  # grouped: far fewer durable writes than entries


def test_find_entries_by_either_id_oldest_first(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    deterministic = str(uuid.uuid5(uuid.NAMESPACE_URL, "as-of"))
    first, second = Ledger(folder, "a.jsonl"), Ledger(folder, "b.jsonl")

    async def run() -> None:
        await second.append(entry(3, deterministic))
        await first.append(entry(1, deterministic))
        await first.append(entry(2, None))

    asyncio.run(run())
    found = find_entries(folder, deterministic.upper())
    assert [e["x_request_id"] for e in found] == [str(uuid.UUID(int=n)) for n in (1, 3)]
    assert [e["x_request_id"] for e in find_entries(folder, str(uuid.UUID(int=2)))] == [
        str(uuid.UUID(int=2))
    ]
    assert find_entries(folder, "nothing") == []


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    whole = entry(1).line()
    (folder / "killed.jsonl").write_bytes(whole + entry(2).line()[:40])
    (folder / "junk.jsonl").write_bytes(b"not json\n[1,2]\n")
    assert [e["x_request_id"] for e in read_entries(folder)] == [str(uuid.UUID(int=1))]


def test_a_moved_file_is_followed_by_a_new_one(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    ledger = Ledger(folder, "w.jsonl")
    asyncio.run(ledger.append(entry(1)))
    (folder / "w.jsonl").rename(tmp_path / "rotated.jsonl")
    asyncio.run(ledger.append(entry(2)))
    ledger.close()
    assert len((tmp_path / "rotated.jsonl").read_bytes().splitlines()) == 1
    assert len((folder / "w.jsonl").read_bytes().splitlines()) == 1


def test_an_unwritable_ledger_fails_every_waiting_response_then_recovers(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.write_bytes(b"a file where the folder should be")
    ledger = Ledger(folder, "w.jsonl")

    async def run() -> list[BaseException | None]:
        return await asyncio.gather(
            *(ledger.append(entry(n)) for n in range(5)), return_exceptions=True
        )

    results = asyncio.run(run())
    assert all(isinstance(result, LedgerUnavailable) for result in results)
    folder.unlink()
    asyncio.run(ledger.append(entry(9)))
    ledger.close()
    assert [e["x_request_id"] for e in read_entries(folder)] == [str(uuid.UUID(int=9))]


def test_entry_line_is_one_json_object_with_every_field_in_declaration_order() -> None:
    line = entry(7, "rid").line()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == dataclasses.asdict(entry(7, "rid"))
    assert list(orjson.loads(line)) == [f.name for f in dataclasses.fields(LedgerEntry)]


def test_lines_go_over_zeros_written_ahead_and_a_stopped_ledger_cuts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gateway.ledger.ZEROED_AHEAD", 1000)  # grows several times below
    folder = tmp_path / "ledger"
    ledger = Ledger(folder, "w.jsonl")
    lines = [entry(n).line() for n in range(12)]

    async def run() -> None:
        for n in range(12):
            await ledger.append(entry(n))

    asyncio.run(run())
    running = (folder / "w.jsonl").read_bytes()
    assert running.startswith(b"".join(lines))
    assert set(running[len(b"".join(lines)) :]) <= {0}  # zeros ahead, or nothing
    assert [e["x_request_id"] for e in read_entries(folder)] == [
        str(uuid.UUID(int=n)) for n in range(12)
    ]
    ledger.close()
    assert (folder / "w.jsonl").read_bytes() == b"".join(lines)


def test_a_reopened_file_goes_on_after_its_last_whole_line(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    folder.mkdir()
    killed = entry(1).line() + entry(2).line()[:30] + bytes(500)  # torn, then zeros ahead
    (folder / "w.jsonl").write_bytes(killed)
    ledger = Ledger(folder, "w.jsonl")
    asyncio.run(ledger.append(entry(3)))
    ledger.close()
    assert (folder / "w.jsonl").read_bytes() == entry(1).line() + entry(3).line()
