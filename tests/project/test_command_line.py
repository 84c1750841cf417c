"""``fxev``'s parser names each handler by module and function (``builder.core.arguments.Deferred``)
and loads none of them: ``fxev --help``, a usage error and the choice of a command cost no store,
HTTP client, signer or server. A handler named wrongly would only fail when its command runs, so
every one is resolved here."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from builder.cli import build_parser
from builder.core.arguments import Deferred
from builder.core.vocabulary import CAPTURED_SOURCES

# What the heavy commands load; the parser must load none of it.
HEAVY = (
    "sanic", "requests", "urllib3", "cryptography", "redis", "boto3", "botocore", "jinja2",
    "holidays", "warcio", "builder.registry", "builder.capture", "builder.publish",
    "builder.store", "builder.render", "gateway.app", "gateway.edge.config", "tokens.store",
    "verifier.command",
)  # fmt: skip


def handlers(parser: argparse.ArgumentParser, path: str = "fxev") -> Iterator[tuple[str, object]]:
    """Every command's ``handler`` default, by its full name (``fxev token issue``)."""
    handler = parser.get_default("handler")
    if handler is not None:
        yield path, handler
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from handlers(sub, f"{path} {name}")


def test_every_command_has_a_handler_that_resolves() -> None:
    found = dict(handlers(build_parser()))
    assert len(found) >= 24, sorted(found)
    named = ("fxev capture", "fxev alerts ack", "fxev alerts resolve", "fxev log proof",
             "fxev token issue", "fxev verify", "fxev edge config", "fxev serve")  # fmt: skip
    assert set(named) <= set(found), sorted(found)
    for command, handler in found.items():
        target = handler.load() if isinstance(handler, Deferred) else handler
        assert callable(target), f"{command}: {handler!r} names nothing callable"
    deferred = [name for name, handler in found.items() if isinstance(handler, Deferred)]
    assert len(deferred) >= 20, deferred


def test_the_parser_and_its_help_load_no_heavy_module() -> None:
    probe = (
        "import contextlib, io, sys\n"
        "from builder.cli import build_parser\n"
        "parser = build_parser()\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    parser.parse_args(['--help'])\n"
        "parser.parse_args(['token', 'issue', 'someone'])\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r}"
        f" or any(m.startswith(h + '.') for h in {HEAVY!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_the_sources_capture_offers_are_those_it_can_capture() -> None:
    """``fxev capture --source`` takes its choices from the vocabulary; the handler dispatches
    on its own table: a source in one and not the other would be a KeyError, not one line."""
    from builder.commands import CAPTURES

    commands = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    (source,) = [a for a in commands.choices["capture"]._actions if a.dest == "source"]
    assert sorted(CAPTURES) == sorted(CAPTURED_SOURCES) == list(source.choices or ())
