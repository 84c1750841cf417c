"""``builder.disk.durable.replacing``: the one path by which the builder replaces a file (the
tree's files, the log's memory, the WARC export). The new bytes appear whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.disk.durable import replace_durably, replacing
from tests.support.modes import plain_file_mode


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith(".tmp-"))


def test_the_block_s_bytes_replace_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "file.bin"
    replace_durably(target, b"old")
    with replacing(target) as handle:
        handle.write(b"new ")
        assert target.read_bytes() == b"old"  # nothing shows before the block ends
        handle.write(b"bytes")
    assert target.read_bytes() == b"new bytes"
    assert leftovers(target.parent) == []
    assert target.stat().st_mode & 0o777 == plain_file_mode()


def test_an_error_in_the_block_leaves_the_file_and_no_temporary_name(tmp_path: Path) -> None:
    target = tmp_path / "file.bin"
    replace_durably(target, b"kept")
    with pytest.raises(ValueError, match="stopped mid-write"), replacing(target) as handle:
        handle.write(b"half")
        raise ValueError("stopped mid-write")
    assert target.read_bytes() == b"kept"
    assert leftovers(tmp_path) == []


def test_an_error_before_any_file_existed_leaves_none(tmp_path: Path) -> None:
    target = tmp_path / "never.bin"
    with pytest.raises(KeyboardInterrupt), replacing(target):
        raise KeyboardInterrupt
    assert not target.exists() and leftovers(tmp_path) == []
