"""``fxev token issue|revoke|list``: the operator's side of the token store.

``token issue`` is the one command whose last stdout line is not JSON: it prints
``{"id", "name"}``, then the token alone, shown once (a plain note on stderr says so;
docs/operating/cli.md#token-issue). ``revoke`` prints the revoked record; ``list`` prints
``{"items": [...]}`` with no secret and no hash, each token's ``expires`` included. ``revoke``
and ``list`` refuse a home with no token store (``require_tokens``) rather than create an empty
one; ``issue`` creates it, once the name and expiry are checked (``check_issue``). With
``FXEV_REDIS_URL`` set, all three use Redis instead (:mod:`tokens.redis_store`;
docs/operating/fleet.md#redis); Redis unreachable is one line and exit 2, as for any
command (``builder.core.errors.from_environment``). A refused operation raises
:class:`~tokens.store.TokenError` (a ``builder.core.errors.UsageError``) for the main CLI to
report. Token times use the real clock, never ``FXEV_NOW``.

This module declares the arguments; the handlers are in :mod:`tokens.commands`, imported when
one runs.
"""

from __future__ import annotations

import argparse
from datetime import date

from builder.core.arguments import Deferred
from builder.core.canonical import iso_date

COMMANDS = "tokens.commands"


def parse_expires(raw: str) -> date:
    """``--expires YYYY-MM-DD``; anything else is an argparse error, and so is the last date a
    date can hold, whose end (the next Lima midnight) cannot be named."""
    try:
        day = iso_date(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {raw!r}") from None
    if day == date.max:
        raise argparse.ArgumentTypeError(f"expected a date before {date.max.isoformat()}")
    return day


def add_token_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``token issue|revoke|list`` to the ``fxev`` parser's subcommands."""
    token = subparsers.add_parser("token", help="bearer tokens for consumers")
    commands = token.add_subparsers(dest="token_command", required=True)

    issue = commands.add_parser("issue", help="a new token for a consumer, shown once")
    issue.add_argument("name", metavar="NAME", help="the consumer (may hold several tokens)")
    issue.add_argument(
        "--expires",
        type=parse_expires,
        metavar="YYYY-MM-DD",
        help="last day the token works, through the end of that day in Lima",
    )
    issue.set_defaults(handler=Deferred(COMMANDS, "cmd_token_issue"))

    revoke = commands.add_parser("revoke", help="revoke a token; the next request is refused")
    revoke.add_argument("id", metavar="ID", help="the token's id (as token list shows it)")
    revoke.set_defaults(handler=Deferred(COMMANDS, "cmd_token_revoke"))

    listing = commands.add_parser("list", help="every token: id, name, expiry, state")
    listing.set_defaults(handler=Deferred(COMMANDS, "cmd_token_list"))
