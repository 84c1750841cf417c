"""``fxev serve``: run the gateway (Sanic, N worker processes, each built by the factory)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builder.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from sanic import Sanic
    from sanic.worker.loader import AppLoader

    from gateway.app import create_app_from_env

    loader = AppLoader(factory=create_app_from_env)
    app = loader.load()
    app.prepare(
        host=args.host,
        port=args.port,
        workers=args.workers,
        motd=False,
        access_log=False,
        single_process=args.workers == 1,
    )
    Sanic.serve(primary=app, app_loader=loader)
    return 0


def add_serve_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = subparsers.add_parser("serve", help="run the HTTP gateway over the published tree")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=2, help="worker processes")
    serve.set_defaults(handler=cmd_serve)
