"""Revision packs: append-only, and a torn tail left by a killed build is cut off."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.publish.revlog import RevisionLogWriter as RevisionLog
from builder.tree.revlog import PACK_SIZE, TreeCorruptError


def records(count: int) -> list[bytes]:
    return [f'{{"revision":{n}}}\n'.encode() + b"x" * n for n in range(1, count + 1)]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_records_read_back_as_written_across_packs(tmp_path: Path) -> None:
    log = RevisionLog(tmp_path)
    written = records(PACK_SIZE + 3)
    for number, data in enumerate(written, start=1):
        log.append(number, data)
    assert log.written() == PACK_SIZE + 3
    assert [RevisionLog(tmp_path).read(n) for n in range(1, PACK_SIZE + 4)] == written
    assert log.read(PACK_SIZE + 4) is None
    assert sorted(files(tmp_path)) == ["000000.idx", "000000.pack", "000001.idx", "000001.pack"]


def test_a_torn_tail_is_cut_off_by_the_next_append(tmp_path: Path) -> None:
    clean, torn = tmp_path / "clean", tmp_path / "torn"
    for folder in (clean, torn):
        log = RevisionLog(folder)
        for number, data in enumerate(records(3), start=1):
            log.append(number, data)
    # A build killed mid-revision 4: its record appended, its index entry half written.
    with (torn / "000000.pack").open("ab") as handle:
        handle.write(b'{"revision":4, torn')
    with (torn / "000000.idx").open("ab") as handle:
        handle.write(b"0000000")
    assert not RevisionLog(torn).has(4)
    assert RevisionLog(torn).read(4) is None

    fourth = records(4)[-1]
    RevisionLog(torn).append(4, fourth)
    RevisionLog(clean).append(4, fourth)
    assert files(torn) == files(clean)
    assert RevisionLog(torn).read(4) == fourth


def test_a_revision_is_appended_once_and_in_order(tmp_path: Path) -> None:
    log = RevisionLog(tmp_path)
    log.append(1, b"one")
    with pytest.raises(FileExistsError):
        log.append(1, b"again")
    with pytest.raises(TreeCorruptError, match=r"revision 2 is missing from .*000000\.idx"):
        log.append(3, b"three")


@pytest.mark.parametrize(
    "entry",
    [b"x" * 15 + b" 000000000000003\n", b"000000000000000-000000000000003\n", b"0" * 32],
)
def test_an_index_entry_that_is_not_an_offset_and_a_length_is_a_corrupt_tree(
    tmp_path: Path, entry: bytes
) -> None:
    """Formerly a ValueError from int(), which ended fxev build in a traceback."""
    log = RevisionLog(tmp_path)
    for number, data in enumerate(records(2), start=1):
        log.append(number, data)
    index = tmp_path / "000000.idx"
    index.write_bytes(entry + index.read_bytes()[32:])
    before = files(tmp_path)
    with pytest.raises(TreeCorruptError, match=r"000000\.idx: the entry of revision 1 is not"):
        RevisionLog(tmp_path).read(1)
    assert RevisionLog(tmp_path).read(2) == records(2)[1]
    index.write_bytes(index.read_bytes()[:32] + entry)  # the entry an append reads first
    with pytest.raises(TreeCorruptError, match=r"000000\.idx: the entry of revision 2 is not"):
        RevisionLog(tmp_path).append(3, b"three")
    assert files(tmp_path)["000000.pack"] == before["000000.pack"]


def test_a_pack_shorter_than_its_index_says_is_a_corrupt_tree(tmp_path: Path) -> None:
    """Formerly a RuntimeError, which ended fxev build in a traceback."""
    log = RevisionLog(tmp_path)
    for number, data in enumerate(records(2), start=1):
        log.append(number, data)
    pack = tmp_path / "000000.pack"
    pack.write_bytes(pack.read_bytes()[:-1])
    with pytest.raises(TreeCorruptError, match=r"000000\.pack ends at"):
        RevisionLog(tmp_path).append(3, b"three")
