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
    from gateway.app import create_app_from_env
    from gateway.serving import serve_factory

    serve_factory(create_app_from_env, args.host, args.port, args.workers)
    return 0


def add_serve_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = subparsers.add_parser("serve", help="run the HTTP gateway over the published tree")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=2, help="worker processes")
    serve.set_defaults(handler=cmd_serve)


def cmd_requests_show(args: argparse.Namespace, settings: Settings) -> int:
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
    show.add_argument("id")
    show.set_defaults(handler=cmd_requests_show)
