"""``fxev serve`` runs the gateway (Sanic, N worker processes, each built by the factory);
``fxev requests show ID`` reads what its ledger recorded."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import orjson

from gateway.ledger import find_entries, ledger_folder

if TYPE_CHECKING:
    from builder.core.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from builder.core.errors import NotFound
    from builder.tree.layout import POINTER
    from gateway.app import create_app_from_env
    from gateway.serving import serve_factory
    from tokens.cli import require_tokens

    # A home without its token store, or (for `fxev serve`) a site never built: one line, never
    # an empty home. `python -m gateway serve` starts before the first build (a fleet host before
    # its first mirror) and answers 503 until a pointer appears.
    require_tokens(settings.home)
    if args.require_published and not (settings.site / POINTER).exists():
        where = (settings.site / POINTER).absolute()
        raise NotFound(f"no published tree at {where} (run fxev build, or set FXEV_SITE)")
    serve_factory(create_app_from_env, args.host, args.port, args.workers)
    return 0


def add_serve_command(
    subparsers: argparse._SubParsersAction,  # type: ignore[type-arg]
    *,
    require_published: bool = True,
) -> None:
    serve = subparsers.add_parser("serve", help="run the HTTP gateway over the published tree")
    serve.set_defaults(require_published=require_published)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on")
    serve.add_argument("--workers", type=int, default=2, help="worker processes")
    serve.set_defaults(handler=cmd_serve)


def cmd_requests_show(args: argparse.Namespace, settings: Settings) -> int:
    from builder.core.errors import NotFound

    if not ledger_folder(settings.home).is_dir():  # no ledger here: never an empty home
        where = ledger_folder(settings.home).absolute()
        raise NotFound(f"no request ledger at {where} (set FXEV_HOME to the right folder)")
    entries = find_entries(ledger_folder(settings.home), args.id)
    if not entries:
        print(f"fxev: no ledger entry has the request id {args.id}", file=sys.stderr)
    sys.stdout.buffer.write(orjson.dumps({"entries": entries}) + b"\n")
    sys.stdout.flush()
    return 0 if entries else 1


def add_requests_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    requests = subparsers.add_parser("requests", help="the request ledger").add_subparsers(
        dest="requests_command", required=True
    )
    show = requests.add_parser(
        "show", help="ledger entries whose X-Request-Id or body request_id is ID, oldest first"
    )
    show.add_argument("id", help="the request id (X-Request-Id, or the body's request_id)")
    show.set_defaults(handler=cmd_requests_show)
