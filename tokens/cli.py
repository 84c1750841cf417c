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
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from builder.core.canonical import iso_date
from builder.core.errors import NotFound
from tokens.redis_store import RedisTokenStore
from tokens.store import TOKENS_FILE, TokenStore, check_issue

if TYPE_CHECKING:
    from builder.core.settings import Settings


def real_now() -> datetime:
    """The real clock: token expiry and revocation ignore ``FXEV_NOW`` by design."""
    return datetime.now(UTC)


def parse_expires(raw: str) -> date:
    """``--expires YYYY-MM-DD``; anything else is an argparse error."""
    try:
        return iso_date(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {raw!r}") from None


def require_tokens(home: Path) -> None:
    """Refuse a home with no token store: one line naming the resolved path."""
    path = home / TOKENS_FILE
    if not path.exists():
        raise NotFound(f"no token store at {path.absolute()} (set FXEV_HOME to the right folder)")


def _emit(value: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")


def open_store(settings: Settings) -> TokenStore | RedisTokenStore:
    """Redis in fleet mode (``FXEV_REDIS_URL``), else the home's SQLite file."""
    if settings.redis_url:
        return RedisTokenStore.open(settings.redis_url)
    return TokenStore.open(settings.home)


def cmd_token_issue(args: argparse.Namespace, settings: Settings) -> int:
    now = real_now()
    check_issue(args.name, args.expires, now)  # a refused request creates no store
    with open_store(settings) as store:
        issued = store.issue(args.name, args.expires, now)
    _emit({"id": issued.id, "name": issued.name})
    sys.stdout.write(issued.token_text + "\n")
    sys.stdout.flush()
    print(
        "note: the token above is shown only once; the service keeps only its hash", file=sys.stderr
    )
    return 0


def cmd_token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        require_tokens(settings.home)
    with open_store(settings) as store:
        record = store.revoke(args.id, real_now())
    _emit(record.to_json())
    sys.stdout.flush()
    return 0


def cmd_token_list(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        require_tokens(settings.home)
    now = real_now()
    with open_store(settings) as store:
        records = store.list()
    _emit({"items": [{**record.to_json(), "state": record.state(now)} for record in records]})
    sys.stdout.flush()
    return 0


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
    issue.set_defaults(handler=cmd_token_issue)

    revoke = commands.add_parser("revoke", help="revoke a token; the next request is refused")
    revoke.add_argument("id", metavar="ID", help="the token's id (as token list shows it)")
    revoke.set_defaults(handler=cmd_token_revoke)

    listing = commands.add_parser("list", help="every token: id, name, expiry, state")
    listing.set_defaults(handler=cmd_token_list)
