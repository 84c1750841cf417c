"""What a newcomer meets first: commands run in the wrong folder, a taken port, the help.

- Run outside the repository (a temporary cwd, ``FXEV_HOME`` unset), a command that reads a store
  refuses a home that lacks it: one line on stderr naming the resolved path, exit 1, and no
  ``./var`` created (``docs/operating/cli.md``).
- ``make run`` on a taken port (``python -m demo --serve --port P``, as ``make run
  PORT=P`` runs it) is one line and exit 1 before the token store changes.
- Every option and positional of every command has a help line; ``fxev --help`` shows no
  reStructuredText markup; ``token issue``'s "shown once" notice is a plain note, not an error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

import demo
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
    "alerts list": (("alerts", "list"), "var/registry.sqlite"),
    "alerts ack": (("alerts", "ack", "some-id", "--actor", "a"), "var/registry.sqlite"),
    "alerts resolve": (("alerts", "resolve", "some-id", "--actor", "a"), "var/registry.sqlite"),
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


REFUSED_WRITES = {
    "import of a missing file": (
        ("import", "missing.csv", "--actor", "a", "--justification", "j"), "cannot read"
    ),
    "import of a bad header": (
        ("import", "bad.csv", "--actor", "a", "--justification", "j"), "line 1: header must be"
    ),
    "import of a bad value": (
        ("import", "value.csv", "--actor", "a", "--justification", "j"), "line 2: "
    ),
    "import without a justification": (
        ("import", "good.csv", "--actor", "a", "--justification", " "), "non-empty"
    ),
    "series publish of publicado": (
        ("series", "publish", "publicado", "--actor", "a", "--justification", "j"),
        "only cierre can be published",
    ),
    "series publish without an actor": (
        ("series", "publish", "cierre", "--actor", " ", "--justification", "j"), "--actor"
    ),
    "annotate with a bad date": (
        ("annotate", "--fecha", "x", "--texto", "t", "--actor", "a", "--justification", "j"),
        "--fecha 'x'",
    ),
    "token issue with an empty name": (("token", "issue", " "), "non-empty consumer name"),
    "token issue expired": (("token", "issue", "acme", "--expires", "2001-01-01"), "already over"),
    "backfill with a bad range": (
        ("backfill", "--source", "centralbank", "--from", "2026-09-08", "--to", "2026-09-01"),
        "--from",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFUSED_WRITES))
def test_a_write_command_refused_on_its_input_creates_no_home(tmp_path: Path, name: str) -> None:
    """docs/operating/cli.md: a writing command checks its input before it opens a store."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "bad.csv").write_text("fecha,valor\n2026-09-18,3.35\n")
    (inputs / "value.csv").write_text("fecha_serie,compra,venta\n2026-09-18,3.35e0,3.36\n")
    (inputs / "good.csv").write_text("fecha_serie,compra,venta\n2026-09-18,3.354,3.362\n")
    args, message = REFUSED_WRITES[name]
    done = fxev(inputs, *args)
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert sorted(p.name for p in inputs.iterdir()) == ["bad.csv", "good.csv", "value.csv"]


def test_serve_refuses_a_site_never_built(tmp_path: Path) -> None:
    assert fxev(tmp_path, "token", "issue", "someone").returncode == 0  # a writing command
    done = fxev(tmp_path, "serve", "--port", "1")
    assert done.returncode == 1, done
    assert done.stderr.splitlines() == [done.stderr.rstrip("\n")]
    assert str(tmp_path / "site_out" / "PUBLISHED") in done.stderr
    assert not (tmp_path / "site_out").exists()


def test_make_run_on_a_taken_port_stops_before_any_token_changes(
    tmp_path: Path, taken_port: int
) -> None:
    """The refusal names a port to use instead, one free now: not merely the next one, which
    is taken here too (when it can be)."""
    env = clean_env(FXEV_HOME=str(tmp_path / "var"), FXEV_SITE=str(tmp_path / "site_out"))
    assert fxev(tmp_path, "token", "issue", "demo", env=env).returncode == 0
    before = fxev(tmp_path, "token", "list", env=env).stdout

    with contextlib.ExitStack() as stack:
        neighbour = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):
            neighbour.bind(("127.0.0.1", taken_port + 1))
            neighbour.listen()
        done = subprocess.run(
            [sys.executable, "-m", "demo", "--serve", "--port", str(taken_port)],
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
        suggested = int(done.stderr.rsplit("make run PORT=", 1)[1])
        assert suggested > taken_port + 1, done.stderr
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", suggested))  # free, as the message says
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
