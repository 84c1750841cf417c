"""Stores and paths a command cannot use, from the outside: DECISIONS 3, "Every CLI error, a
full disk included, is one line on stderr, never a traceback", and "One line naming the
resolved path". Each case was a traceback (or, for ``fxev serve``, a worker's traceback and a
SIGKILL to the whole process group) before: a home under a plain file, a published pointer that
is not one, a store file that is not a database.

Every check runs the installed ``fxev`` with its own temporary ``FXEV_HOME``/``FXEV_SITE``, and
checks that the refused command changed nothing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.builder.test_cli_details import (
    GOOD_CSV,
    NOW,
    assert_one_line_error,
    head_revision,
    tree,
)
from tests.support.cli import FXEV, Ran, clean_env, run
from tests.support.ports import free_port


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def env(tmp_path: Path, home: Path) -> dict[str, str]:
    return clean_env(FXEV_HOME=str(home), FXEV_SITE=str(tmp_path / "site"), FXEV_NOW=NOW)


def fxev(tmp_path: Path, env: dict[str, str], *args: str) -> Ran:
    return run([FXEV, *args], tmp_path, env)


@pytest.fixture
def seeded(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """A home holding one import, built, with a token store."""
    (tmp_path / "seed.csv").write_text(GOOD_CSV, encoding="utf-8")
    for args in (
        ("import", "seed.csv", "--actor", "ana", "--justification", "seed"),
        ("build",),
        ("token", "issue", "seed"),
    ):
        done = fxev(tmp_path, env, *args)
        assert done.code == 0, done
    return env


J = ("--justification", "j")
UNDER_A_FILE = {
    "import": ("import", "seed.csv", "--actor", "ana", *J),
    "annotate": ("annotate", "--fecha", "2026-09-17", "--texto", "t", "--actor", "a", *J),
    "token issue": ("token", "issue", "ana"),
    "series publish": ("series", "publish", "cierre", "--actor", "a", *J),
}


@pytest.mark.parametrize("name", sorted(UNDER_A_FILE))
def test_a_home_under_a_plain_file_is_one_line_naming_it(tmp_path: Path, name: str) -> None:
    """A home whose parent is a regular file cannot be created: one line naming the path.
    (Formerly: NotADirectoryError with a traceback.)"""
    plain = tmp_path / "plain"
    plain.write_text("not a folder\n")
    (tmp_path / "seed.csv").write_text(GOOD_CSV, encoding="utf-8")
    env = clean_env(FXEV_HOME=str(plain / "home"), FXEV_SITE=str(tmp_path / "s"), FXEV_NOW=NOW)
    message = assert_one_line_error(fxev(tmp_path, env, *UNDER_A_FILE[name]))
    assert str(plain) in message, message
    assert plain.read_text() == "not a folder\n"


def bad_pointers(real: dict[str, Any]) -> dict[str, bytes]:
    """A ``PUBLISHED`` that is not a pointer, each way: the last three are JSON objects naming
    this registry, which a build read as far as ``int(pointer["revision"])``."""
    return {
        "not JSON": b"abc",
        "not an object": b"[]",
        "empty object": b"{}",
        "revision not a number": orjson.dumps(real | {"revision": "x"}),
        "revision 0": orjson.dumps(real | {"revision": 0}),
        "root not a SHA-256": orjson.dumps(real | {"root_sha256": "zz"}),
    }


@pytest.mark.parametrize("bad", sorted(bad_pointers({})))
@pytest.mark.parametrize(
    "args", [("build",), ("log", "proof", "00000000-0000-4000-8000-000000000000")]
)
def test_a_published_pointer_that_is_not_one_is_one_line_naming_it(
    tmp_path: Path, seeded: dict[str, str], home: Path, args: tuple[str, ...], bad: str
) -> None:
    """A `PUBLISHED` file that is not a pointer is a corrupt tree: one line naming it, exit 1,
    nothing written. (Formerly: orjson.JSONDecodeError with a traceback for garbage, and
    ValueError or KeyError with a traceback for a JSON object without a revision number.)"""
    pointer = tmp_path / "site" / "PUBLISHED"
    data = bad_pointers(orjson.loads(pointer.read_bytes()))[bad]
    pointer.write_bytes(data)
    before, revision = tree(tmp_path / "site"), head_revision(home)
    message = assert_one_line_error(fxev(tmp_path, seeded, *args))
    assert str(pointer) in message and "not a published pointer" in message, message
    assert pointer.read_bytes() == data
    assert tree(tmp_path / "site") == before and head_revision(home) == revision


CORRUPT_STORES = {
    "registry.sqlite": ("build",),
    "alerts.sqlite": ("alerts", "list"),
    "tokens.sqlite": ("token", "list"),
}


@pytest.mark.parametrize("store", sorted(CORRUPT_STORES))
def test_a_store_that_is_not_a_database_is_named(
    tmp_path: Path, seeded: dict[str, str], home: Path, store: str
) -> None:
    """DECISIONS 3, "One line naming the resolved path": which of the home's databases is
    damaged. (Formerly: "the database is corrupt: file is not a database", naming none.)"""
    (home / store).write_bytes(b"garbage, not SQLite\n" * 10)
    message = assert_one_line_error(fxev(tmp_path, seeded, *CORRUPT_STORES[store]))
    assert str(home / store) in message and "not a usable database" in message, message
    assert (home / store).read_bytes() == b"garbage, not SQLite\n" * 10


def damage_tokens(home: Path) -> Path:
    (home / "tokens.sqlite").write_bytes(b"garbage, not SQLite\n" * 10)
    return home / "tokens.sqlite"


def damage_secret(home: Path) -> Path:
    (home / "page_token.secret").unlink(missing_ok=True)
    (home / "page_token.secret").mkdir()
    return home / "page_token.secret"


@pytest.mark.parametrize("damage", [damage_tokens, damage_secret], ids=["tokens", "secret"])
def test_fxev_serve_with_a_damaged_home_is_one_line_before_any_worker(
    tmp_path: Path, seeded: dict[str, str], home: Path, damage: Callable[[Path], Path]
) -> None:
    """`fxev serve` opens what its workers open once before starting them: a token store that
    is not a database, a folder where the page-token secret is due, is one line naming it, exit
    1. (Formerly: each worker's traceback, then Sanic's SIGKILL to the whole process group, the
    caller's shell or cron included.) Run in a session of its own, so the old behaviour could
    not kill this test's process."""
    damaged = damage(home)
    done = subprocess.run(
        [FXEV, "serve", "--port", str(free_port()), "--workers", "1"],
        cwd=tmp_path, env=seeded, capture_output=True, timeout=60, check=False,
        start_new_session=True,
    )  # fmt: skip
    ran = Ran(done.returncode, done.stdout.decode(), done.stderr.decode())
    message = assert_one_line_error(ran)
    assert str(damaged) in message, message
