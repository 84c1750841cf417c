"""Every error ``fxev`` can meet is one line on stderr, ``fxev: ...``, and a non-zero exit.

One representative failure per kind of ``builder.core.errors`` runs ``python -m builder`` as a
real subprocess: a bad import file, a bad date, a bad setting, a missing file, an unknown id, a
state conflict, a corrupt tree, a corrupt registry, an unwritable export, a bad verify request.
A full disk too: a subprocess under ``RLIMIT_FSIZE`` (its writes past the limit fail with
``EFBIG``, ``SIGXFSZ`` ignored), and in process SQLite's real "database or disk is full" (a
``max_page_count``) and an ``ENOSPC`` from ``fsync``; after each, the registry is intact.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from builder import cli
from builder.registry import store
from tests.support.cli import Fxev, Ran, verified_head

TIMEOUT = 60
NOW = "2026-09-20T13:05:00-05:00"
CSV = "fecha_serie,compra,venta\n2026-09-18,3.354,3.362\n"


def assert_one_line(ran: Ran, code: int = 1) -> str:
    """The failure shape: ``code``, nothing on stdout, one ``fxev: `` line, no traceback."""
    assert ran.code == code, ran
    assert ran.stdout == "", ran
    assert "Traceback" not in ran.stderr, ran.stderr
    assert len(ran.stderr.splitlines()) == 1, ran.stderr
    assert ran.stderr.startswith("fxev: ") and ran.stderr.endswith("\n"), ran.stderr
    return ran.stderr.removeprefix("fxev: ").rstrip("\n")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def env(tmp_path: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    env.update({"FXEV_HOME": str(home), "FXEV_SITE": str(tmp_path / "site"), "FXEV_NOW": NOW})
    return env


@pytest.fixture
def fxev(env: dict[str, str]) -> Fxev:
    def run(*args: str, extra: dict[str, str] | None = None, fsize: int | None = None) -> Ran:
        def limit_file_size() -> None:  # in the child, before exec
            assert fsize is not None
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        proc = subprocess.run(
            [sys.executable, "-m", "builder", *args],
            env=env | (extra or {}),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            preexec_fn=None if fsize is None else limit_file_size,
        )
        return Ran(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


@pytest.fixture
def imported(fxev: Fxev, tmp_path: Path) -> int:
    """A registry holding one import (revision 1); the revision number."""
    path = tmp_path / "seed.csv"
    path.write_text(CSV)
    ran = fxev("import", str(path), "--actor", "ana", "--justification", "seed")
    assert ran.code == 0, ran.stderr
    return int(ran.last["revision"])


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """An import of 2000 dates (about 46 KB): more than fits in the registry's free pages."""
    rows = [
        f"{year}-{month:02d}-{day:02d},3.354,3.362"
        for year in range(2015, 2026)
        for month in range(1, 13)
        for day in range(1, 29)
    ][:2000]
    path = tmp_path / "big.csv"
    path.write_text("fecha_serie,compra,venta\n" + "\n".join(rows) + "\n")
    assert path.stat().st_size > 45_000
    return path


def registry_verify(fxev: Fxev) -> int:
    """The head revision ``fxev registry verify`` finds whole."""
    ran = fxev("registry", "verify")
    assert ran.code == 0, ran
    return verified_head(ran.stdout)


# -- usage: the operator's input ----------------------------------------------------------


def test_a_bad_import_file(fxev: Fxev, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("fecha,valor\n2026-09-18,3.35\n")
    message = assert_one_line(fxev("import", str(path), "--actor", "a", "--justification", "j"))
    assert message.startswith("line 1: header must be")


def test_an_import_file_the_csv_reader_cannot_split(fxev: Fxev, tmp_path: Path) -> None:
    """A cell over the CSV reader's limit was a traceback (`_csv.Error`); it is one line."""
    path = tmp_path / "huge.csv"
    path.write_text('fecha_serie,compra,venta\n2026-09-18,3.35,"' + "9" * 140_000 + '"\n')
    message = assert_one_line(fxev("import", str(path), "--actor", "a", "--justification", "j"))
    assert message.startswith("line 2: "), message


def test_a_bad_date_argument(fxev: Fxev) -> None:
    ran = fxev("backfill", "--source", "centralbank", "--from", "2026-13-01", "--to", "2026-09-01")
    assert assert_one_line(ran) == "--from '2026-13-01' is not a date YYYY-MM-DD"


def test_a_bad_setting(fxev: Fxev) -> None:
    ran = fxev("build", extra={"FXEV_RATE_LIMIT_PER_MIN": "abc"})
    assert assert_one_line(ran) == "FXEV_RATE_LIMIT_PER_MIN must be an integer, got 'abc'"


def test_a_missing_file(fxev: Fxev, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.csv"
    ran = fxev("import", str(missing), "--actor", "a", "--justification", "j")
    assert assert_one_line(ran) == f"cannot read {missing}: No such file or directory"


def test_an_unknown_id(fxev: Fxev, imported: int) -> None:
    # A home with a registry (without one, the alerts commands refuse the home: newcomer paths).
    ran = fxev("alerts", "ack", "00000000-0000-4000-8000-000000000000", "--actor", "ana")
    assert assert_one_line(ran) == "no alert with id 00000000-0000-4000-8000-000000000000"


def test_a_state_conflict(fxev: Fxev) -> None:
    issued = fxev("token", "issue", "consumer")
    assert issued.code == 0, issued.stderr
    token_id = json.loads(issued.stdout.splitlines()[0])["id"]
    assert fxev("token", "revoke", token_id).code == 0
    message = assert_one_line(fxev("token", "revoke", token_id))
    assert message.startswith(f"token {token_id} was already revoked at ")


def test_a_bad_verify_request_is_exit_2(fxev: Fxev) -> None:
    ran = fxev("verify", "not-a-uuid", "--url", "http://127.0.0.1:9", extra={"FXEV_TOKEN": "t"})
    assert assert_one_line(ran, code=2) == "verify: 'not-a-uuid' is not an observation id (a UUID)"
    ran = fxev("verify", "--url", "http://127.0.0.1:9", extra={"FXEV_TOKEN": "t"})
    assert assert_one_line(ran, code=2).startswith("verify needs an OBSERVACION_ID or --response")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("capture", "--source", "nope"),
            "fxev capture: error: argument --source: invalid choice: 'nope' "
            "(choose from 'centralbank', 'taxauth_txt')",
        ),
        (
            ("import", "f.csv", "--actor", "a"),
            "fxev import: error: the following arguments are required: --justification",
        ),
        (
            ("alerts", "ack", "some-id"),
            "fxev alerts ack: error: the following arguments are required: --actor",
        ),
        (
            ("token", "issue", "acme", "--expires", "2026-02-30"),
            "fxev token issue: error: argument --expires: expected a date YYYY-MM-DD, "
            "got '2026-02-30'",
        ),
        (("serve", "--port", "x"), "fxev serve: error: argument --port: expected a port 1-65535"),
        (("frobnicate",), "fxev: error: argument command: invalid choice: 'frobnicate'"),
        (("build", "--fast"), "fxev: error: unrecognized arguments: --fast"),
    ],
    ids=["bad-choice", "missing-option", "nested-missing-option", "bad-type", "gateway-command",
         "unknown-command", "unknown-option"],
)  # fmt: skip
def test_a_usage_error_is_one_line_exit_2_and_no_home(
    fxev: Fxev, home: Path, args: tuple[str, ...], message: str
) -> None:
    """argparse prints its usage block before the error; fxev prints the error alone, for every
    subcommand, those of the token store and the gateway included."""
    ran = fxev(*args)
    assert (ran.code, ran.stdout) == (2, "")
    assert ran.stderr.startswith(message) and len(ran.stderr.splitlines()) == 1, ran.stderr
    assert not home.exists()


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("gateway", ("serve", "--workers", "x"),
         "python -m gateway serve: error: argument --workers: expected a whole number of at"),
        ("demo", ("--port", "x"),
         "python -m demo: error: argument --port: expected a port 1-65535, got 'x'"),
        ("builder.fleet", ("--nonsense",),
         "python -m builder.fleet: error: unrecognized arguments: --nonsense"),
        ("builder.fleet", ("--ports", "8001,x"),
         "python -m builder.fleet: error: argument --ports: expected a port 0-65535, got 'x'"),
    ],
    ids=["gateway", "demo", "fleet", "fleet's ports"],
)  # fmt: skip
def test_the_other_command_lines_print_usage_errors_on_one_line(
    tmp_path: Path, module: str, args: tuple[str, ...], message: str
) -> None:
    """``python -m gateway`` (process managers), ``make run``'s demo and ``make fleet`` parse
    their arguments as ``fxev`` does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    ran = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr.startswith(message) and len(ran.stderr.splitlines()) == 1, ran.stderr
    assert list(tmp_path.iterdir()) == []


def test_help_still_prints_the_usage(fxev: Fxev) -> None:
    ran = fxev("capture", "--help")
    assert ran.code == 0 and ran.stdout.startswith("usage: fxev capture [-h]"), ran


# -- integrity: stored bytes that disagree with their hashes -------------------------------


def test_a_corrupt_tree(fxev: Fxev, imported: int, tmp_path: Path) -> None:
    assert fxev("build").code == 0
    pointer = tmp_path / "site" / "PUBLISHED"
    published = json.loads(pointer.read_text())
    pointer.write_text(json.dumps({**published, "root_sha256": "0" * 64}))
    message = assert_one_line(fxev("build"))
    assert message == f"revision record {imported} does not match its recorded sha256:{'0' * 64}"


def test_a_corrupt_registry(fxev: Fxev, home: Path) -> None:
    home.mkdir()
    (home / "registry.sqlite").write_bytes(b"this is not a database. " * 64)
    message = assert_one_line(fxev("registry", "verify"))
    path = home / "registry.sqlite"
    assert message == f"{path} is not a usable database: file is not a database"


# -- storage: a file that cannot be written, a full disk ------------------------------------


def test_an_export_onto_a_folder(fxev: Fxev, imported: int, tmp_path: Path) -> None:
    (tmp_path / "folder.warc").mkdir()
    message = assert_one_line(fxev("export", "warc", str(tmp_path / "folder.warc")))
    assert message.startswith("export warc writes a regular file;")


def test_a_full_disk_in_a_subprocess_leaves_the_registry_intact(
    fxev: Fxev, imported: int, big: Path
) -> None:
    # 2000 lines (about 46 KB): the import's evidence blob is its first write past 40 KB, after
    # SQLite's 32 KB shared-memory file; the revision never begins.
    ran = fxev("import", str(big), "--actor", "a", "--justification", "j", fsize=40_000)

    assert assert_one_line(ran) == "cannot write: File too large"
    assert registry_verify(fxev) == imported
    assert fxev("import", str(big), "--actor", "a", "--justification", "j").code == 0


def test_a_full_database_in_process_leaves_the_registry_intact(
    fxev: Fxev,
    imported: int,
    env: dict[str, str],
    big: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    connect = store.connect

    def full(path: Path) -> sqlite3.Connection:  # the database may not grow by one page
        conn = connect(path)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(store, "connect", full)

    code = cli.main(["import", str(big), "--actor", "a", "--justification", "j"])

    captured = capsys.readouterr()
    ran = Ran(code, captured.out, captured.err)
    assert assert_one_line(ran) == "cannot write the database: database or disk is full"
    monkeypatch.undo()
    assert registry_verify(fxev) == imported


def test_enospc_in_process_leaves_the_registry_intact(
    fxev: Fxev,
    imported: int,
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    path = tmp_path / "more.csv"
    path.write_text(CSV.replace("2026-09-18", "2026-09-17"))

    code = cli.main(["import", str(path), "--actor", "a", "--justification", "j"])

    captured = capsys.readouterr()
    ran = Ran(code, captured.out, captured.err)
    assert assert_one_line(ran) == "cannot write: No space left on device"
    monkeypatch.undo()
    assert registry_verify(fxev) == imported
