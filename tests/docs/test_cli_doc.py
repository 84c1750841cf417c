"""``docs/operating/cli.md`` has a section for every ``fxev`` subcommand, with its real usage.

Each leaf command of the parser (``fxev capture``, ``fxev alerts ack``, ...) has a heading
``### `fxev ...` `` followed by a ``text`` block holding exactly its ``--help`` usage line(s);
the page names no command the parser lacks.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operating" / "cli.md"


def leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield parser
    for group in groups:
        for child in group.choices.values():
            yield from leaves(child)


def documented() -> dict[str, str]:
    """command -> the usage block under its heading."""
    sections = re.findall(
        r"^### `(fxev [a-z ]+)`.*?\n\n```text\n(.*?)```", PAGE.read_text(), re.MULTILINE | re.DOTALL
    )
    return {command: usage for command, usage in sections}


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """command -> its usage, formatted 80 columns wide as a terminal shows it."""
    monkeypatch.setenv("COLUMNS", "80")
    return {parser.prog: parser.format_usage() for parser in leaves(build_parser())}


def test_the_page_documents_exactly_the_commands_of_the_parser(commands: dict[str, str]) -> None:
    assert sorted(documented()) == sorted(commands)


def test_each_documented_usage_is_the_parsers(commands: dict[str, str]) -> None:
    for command, usage in documented().items():
        assert usage == commands[command], command
