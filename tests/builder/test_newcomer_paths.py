"""What a newcomer meets first: commands run in the wrong folder, a taken port, the help.

- Run outside the repository (a temporary cwd, ``FXEV_HOME`` unset), a command that reads a store
  refuses a home that lacks it: one line on stderr naming the resolved path, exit 1, and no
  ``./var`` created (``docs/operating/cli.md``).
- ``make run`` on a taken port (``python -m builder.demo --serve --port P``, as ``make run
  PORT=P`` runs it) is one line and exit 1 before the token store changes.
- Every option and positional of every command has a help line; ``fxev --help`` shows no
  reStructuredText markup; ``token issue``'s "shown once" notice is a plain note, not an error.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from builder import demo
from builder.cli import build_parser

TIMEOUT = 120


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FXEV_")}
    return env | extra


def fxev(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=cwd,
        env=clean_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


REFUSING = {
    "build": (("build",), "var/registry.sqlite"),
    "build --rebuild": (("build", "--rebuild"), "var/registry.sqlite"),
    "registry verify": (("registry", "verify"), "var/registry.sqlite"),
    "export warc": (("export", "warc", "out.warc"), "var/registry.sqlite"),
    "token list": (("token", "list"), "var/tokens.sqlite"),
    "token revoke": (("token", "revoke", "tok_x"), "var/tokens.sqlite"),
    "serve": (("serve", "--port", "1"), "var/tokens.sqlite"),
    "requests show": (("requests", "show", "some-id"), "var/ledger"),
}


@pytest.mark.parametrize("name", sorted(REFUSING))
def test_a_command_refuses_a_home_without_its_store_and_creates_none(
    tmp_path: Path, name: str
) -> None:
    args, missing = REFUSING[name]
    done = fxev(tmp_path, *args)
    assert done.returncode == 1, done
    assert done.stdout == "", done.stdout
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert str(tmp_path / missing) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no ./var, no out.warc


def test_serve_refuses_a_site_never_built(tmp_path: Path) -> None:
    assert fxev(tmp_path, "token", "issue", "someone").returncode == 0  # a writing command
    done = fxev(tmp_path, "serve", "--port", "1")
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [done.stderr.rstrip("\n")]
    assert str(tmp_path / "site_out" / "PUBLISHED") in done.stderr
    assert not (tmp_path / "site_out").exists()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_make_run_on_a_taken_port_stops_before_any_token_changes(
    tmp_path: Path, taken_port: int
) -> None:
    env = clean_env(FXEV_HOME=str(tmp_path / "var"), FXEV_SITE=str(tmp_path / "site_out"))
    assert fxev(tmp_path, "token", "issue", "demo", env=env).returncode == 0
    before = fxev(tmp_path, "token", "list", env=env).stdout

    done = subprocess.run(
        [sys.executable, "-m", "builder.demo", "--serve", "--port", str(taken_port)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert f"port {taken_port}" in done.stderr and "Traceback" not in done.stderr
    assert fxev(tmp_path, "token", "list", env=env).stdout == before
    assert not (tmp_path / "var" / "registry.sqlite").exists()  # nothing was seeded either


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from parsers(child)


@pytest.mark.parametrize("make", [build_parser, demo.build_parser], ids=["fxev", "demo"])
def test_every_option_and_positional_has_a_help_line(make: object) -> None:
    missing = []
    for parser in parsers(make()):  # type: ignore[operator]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [
                    f"{parser.prog} {c.dest}" for c in action._choices_actions if not c.help
                ]
            elif not (action.help or "").strip():
                missing.append(f"{parser.prog} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


def test_fxev_help_shows_no_markup() -> None:
    text = build_parser().format_help()
    assert "``" not in text
    assert "fxev: the operator's command line" in text


def test_token_issue_notice_is_a_plain_note(tmp_path: Path) -> None:
    done = fxev(tmp_path, "token", "issue", "someone")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("fxev_") and " " not in lines[-1]
    assert orjson.loads(lines[-2])["name"] == "someone"
    assert done.stderr.startswith("note: ")
    assert "fxev:" not in done.stderr and "error" not in done.stderr.lower()
