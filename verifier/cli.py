"""``fxev verify``'s arguments, and ``python -m verifier``, the same command alone (the handler
is :func:`verifier.command.verify`, imported when the command runs).

The consumer's command reads two settings, ``FXEV_TOKEN`` and ``FXEV_LOG_VKEY``, and none of the
operator's: an operator's setting that is unset or malformed on a consumer's machine
(``FXEV_HOME``, ``FXEV_PLAUSIBILITY_PCT``...) never stops a verification. ``python -m verifier``
imports no write-side module at all; ``fxev verify`` is the same command inside the operator's
``fxev``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from builder.core.arguments import Deferred, OneLineParser
from builder.core.errors import reported

HANDLER = ("verifier.command", "verify")  # imported when the command runs
HELP = "check an observation (or a saved rates response) against its evidence, over HTTP"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "observacion_id", nargs="?", metavar="OBSERVACION_ID", help="the observation to check"
    )
    parser.add_argument("--response", metavar="FILE", help="a saved /v1/rates response")
    parser.add_argument("--url", metavar="BASE_URL", help="the API's base URL")
    parser.add_argument("--vkey", metavar="VKEY", help="the log's verifier key (FXEV_LOG_VKEY)")
    parser.add_argument("--state", metavar="FILE", help="the last checkpoint seen, kept here")
    parser.add_argument("--proof", metavar="FILE", help="offline: a tlog-proof (fxev log proof)")
    parser.add_argument("--record", metavar="FILE", help="with --proof: its observation's JSON")
    parser.add_argument("--rows", metavar="FILE", help="with --proof: its /v1/log/rows/N list")


def add_verify_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``fxev verify``: its handler takes the environment, not the operator's settings."""
    verifying = commands.add_parser("verify", help=HELP)
    add_arguments(verifying)
    verifying.set_defaults(handler=Deferred(*HANDLER), reads_settings=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m verifier", description=HELP)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return reported(lambda: Deferred(*HANDLER)(args, os.environ))
