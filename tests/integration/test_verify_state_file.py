"""Where ``fxev verify --state`` keeps the checkpoint it verified (``verifier``), on a real disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.core.errors import PathError
from verifier.command import VerifyUsageError, usable_state
from verifier.logcheck import save_state

SIGNED = "fxev.local/x\n1\nAAAA\n\n— fxev.local/x AAAA\n"
NO_FILE_HERE = Path("/proc/self")  # a folder in which no file can be made, even by root


def test_the_state_is_saved_whole_in_a_folder_made_for_it(tmp_path: Path) -> None:
    state = tmp_path / "new" / "folder" / "seen"
    assert usable_state(state) == state
    save_state(state, SIGNED)
    assert state.read_text() == SIGNED
    assert [p.name for p in state.parent.iterdir()] == ["seen"]  # no temporary file left


def test_a_folder_that_takes_no_file_is_refused_before_any_check() -> None:
    with pytest.raises(VerifyUsageError, match=r"--state /proc/self/seen cannot be made in /proc"):
        usable_state(NO_FILE_HERE / "seen")


def test_a_state_that_cannot_be_kept_after_the_checks_is_one_error_naming_it(
    tmp_path: Path,
) -> None:
    """The folder went away, or stopped taking files, after the check before the run."""
    with pytest.raises(PathError, match=r"cannot keep the checkpoint in --state /proc/self/seen"):
        save_state(NO_FILE_HERE / "seen", SIGNED)
    plain = tmp_path / "plain"
    plain.write_text("a file\n")
    with pytest.raises(PathError, match="plain/seen"):
        save_state(plain / "seen", SIGNED)
    assert plain.read_text() == "a file\n"
