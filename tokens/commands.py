"""The handlers of ``fxev token issue|revoke|list`` (their arguments: :mod:`tokens.cli`)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.console import emit, require
from tokens.redis_store import RedisTokenStore
from tokens.store import TOKENS_FILE, TokenStore, check_issue

if TYPE_CHECKING:
    from builder.core.settings import Settings


def real_now() -> datetime:
    """The real clock: token expiry and revocation ignore ``FXEV_NOW`` by design."""
    return datetime.now(UTC)


def require_tokens(home: Path) -> None:
    """Refuse a home with no token store: one line naming the resolved path."""
    require(home / TOKENS_FILE, "token store")


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
    emit({"id": issued.id, "name": issued.name})
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
    emit(record.to_json())
    return 0


def cmd_token_list(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.redis_url:
        require_tokens(settings.home)
    now = real_now()
    with open_store(settings) as store:
        records = store.list()
    emit({"items": [{**record.to_json(), "state": record.state(now)} for record in records]})
    return 0
