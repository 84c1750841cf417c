"""``fxev serve`` runs the gateway (Sanic, N worker processes, each built by the factory);
``fxev requests show ID`` reads what its ledger recorded (and, in fleet mode, what was shipped);
``fxev ledger ship`` ships it (:mod:`gateway.ledger.shipping`); ``fxev edge config`` prints the
edge's nginx configuration (:mod:`gateway.edge.config`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from builder.core.arguments import count_of_at_least_one, port_number
from gateway.edge.defaults import CACHE_FOLDER, DEFAULT_LISTEN, DEFAULT_UPSTREAM
from gateway.ledger.reading import find_entries, ledger_folder

if TYPE_CHECKING:
    from builder.core.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from builder.core.errors import NotFound
    from builder.ops.ports import refuse_unusable_port
    from builder.tree.layout import POINTER
    from gateway.app import check_stores, create_app_from_env
    from gateway.server.serving import serve_factory
    from tokens.commands import require_tokens

    # A home without its token store, or (for `fxev serve`) a site never built: one line, never
    # an empty home. `python -m gateway serve` starts before the first build (a fleet host before
    # its first mirror) and answers 503 until a pointer appears. In fleet mode the tokens are in
    # Redis (docs/operating/fleet.md#redis).
    if not settings.redis_url:
        require_tokens(settings.home)
    if args.require_published and not (settings.site / POINTER).exists():
        where = (settings.site / POINTER).absolute()
        raise NotFound(f"no published tree at {where} (run fxev build, or set FXEV_SITE)")
    shipper = None
    if settings.store_url is not None:  # fleet mode: the main process ships the ledger
        from gateway.ledger.shipping import Shipper

        shipper = Shipper.from_settings(settings)  # its interval checked before anything starts
    refuse_unusable_port(args.host, args.port, "pick another with --port")
    check_stores(settings)  # after the port: a refused start changes nothing
    serve_factory(create_app_from_env, args.host, args.port, args.workers, shipper=shipper)
    return 0


def add_serve_command(
    subparsers: argparse._SubParsersAction,  # type: ignore[type-arg]
    *,
    require_published: bool = True,
) -> None:
    serve = subparsers.add_parser("serve", help="run the HTTP gateway over the published tree")
    serve.set_defaults(require_published=require_published)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    serve.add_argument(
        "--port", type=port_number, default=8000, help="port to listen on (%(default)s)"
    )
    serve.add_argument(
        "--workers", type=count_of_at_least_one, default=2, help="worker processes (%(default)s)"
    )
    serve.set_defaults(handler=cmd_serve)


def cmd_requests_show(args: argparse.Namespace, settings: Settings) -> int:
    from contextlib import closing

    from builder.core.errors import NotFound
    from gateway.ledger.shipping import KEYS as SHIPPED
    from gateway.ledger.shipping import find_everywhere, object_store

    folder = ledger_folder(settings.home)
    if settings.store_url is None:
        if not folder.is_dir():  # no ledger here: never an empty home
            where = folder.absolute()
            raise NotFound(f"no request ledger at {where} (set FXEV_HOME to the right folder)")
        entries = find_entries(folder, args.id)
    else:  # fleet mode: the local files, if any, and what every host shipped
        with closing(object_store(settings)) as store:
            if not folder.is_dir() and not store.list_keys(SHIPPED):
                raise NotFound(
                    f"no request ledger at {folder.absolute()}, nor any shipped under"
                    f" {store.where(SHIPPED)}"
                )
            entries = find_everywhere(folder if folder.is_dir() else None, store, args.id)
    if not entries:
        print(f"fxev: no ledger entry has the request id {args.id}", file=sys.stderr)
    sys.stdout.buffer.write(orjson.dumps({"entries": entries}) + b"\n")
    sys.stdout.flush()
    return 0 if entries else 1


def add_requests_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    requests = subparsers.add_parser(
        "requests", help="find a request in the ledger by its id"
    ).add_subparsers(dest="requests_command", required=True)
    show = requests.add_parser(
        "show", help="ledger entries whose X-Request-Id or body request_id is ID, oldest first"
    )
    show.add_argument("id", help="the request id (X-Request-Id, or the body's request_id)")
    show.set_defaults(handler=cmd_requests_show)


def cmd_ledger_ship(args: argparse.Namespace, settings: Settings) -> int:
    from contextlib import closing

    from builder.core.errors import NotFound
    from gateway.ledger.shipping import object_store, ship

    folder = ledger_folder(settings.home)
    if not folder.is_dir():  # never an empty home
        raise NotFound(
            f"no request ledger at {folder.absolute()} (set FXEV_HOME to the right folder)"
        )
    with closing(object_store(settings)) as store:
        shipped = ship(folder, store)
    sys.stdout.buffer.write(orjson.dumps({"shipped": shipped}) + b"\n")
    sys.stdout.flush()
    return 0


def add_ledger_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ledger = subparsers.add_parser(
        "ledger", help="ship the request ledger to the store"
    ).add_subparsers(dest="ledger_command", required=True)
    shipping = ledger.add_parser(
        "ship", help="upload the ledger lines settled so far, not shipped yet, to FXEV_STORE_URL"
    )
    shipping.set_defaults(handler=cmd_ledger_ship)


def cmd_edge_config(args: argparse.Namespace, settings: Settings) -> int:
    from builder.core.errors import UsageError
    from builder.disk.durable import read_or_create_secret
    from gateway.edge import steps
    from gateway.edge.config import EdgePlan, check_plan, edge_config

    cache_dir = args.cache_dir or settings.home / CACHE_FOLDER
    plan = EdgePlan(
        listen=args.listen,
        upstreams=tuple(args.upstream or [DEFAULT_UPSTREAM]),
        cache_dir=Path(cache_dir).absolute(),
        credential="",
        lanes=tuple(args.lane or ()),
    )
    try:
        check_plan(plan)  # before the credential is made: a refusal changes nothing
    except ValueError as error:
        raise UsageError(f"edge config: {error}") from error
    if settings.redis_url:  # fleet mode: the credential every gateway reads from Redis
        from gateway.fleet.gate import EDGE_SECRET_KEY, RedisGate, connect
        from gateway.limits.rule import Limits

        gate = RedisGate(connect(settings.redis_url), Limits(1, 1))
        try:
            credential = gate.page_secret(EDGE_SECRET_KEY).hex()
        finally:
            gate.close()
    else:
        from tokens.commands import require_tokens

        require_tokens(settings.home)  # the gateways' home: never an empty one
        credential = read_or_create_secret(settings.home / steps.SECRET_FILE).hex()
    sys.stdout.write(edge_config(dataclasses.replace(plan, credential=credential)))
    sys.stdout.flush()
    return 0


def address(text: str) -> str:
    """An argparse type: ``HOST:PORT``, or a usage error (exit 2, naming the command)."""
    from gateway.edge.config import check_address

    try:
        return check_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_edge_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    commands = subparsers.add_parser("edge", help="the shipped edge (nginx)").add_subparsers(
        dest="edge_command", required=True
    )
    config = commands.add_parser(
        "config", help="print the edge's nginx configuration (it holds the edge's credential)"
    )
    config.add_argument(
        "--listen",
        type=address,
        default=DEFAULT_LISTEN,
        help=f"HOST:PORT the edge listens on ({DEFAULT_LISTEN})",
    )
    config.add_argument(
        "--upstream",
        action="append",
        type=address,
        metavar="HOST:PORT",
        help=f"a gateway; repeat for each ({DEFAULT_UPSTREAM} when none is given)",
    )
    config.add_argument(
        "--lane",
        action="append",
        type=address,
        metavar="HOST:PORT",
        help="a gateway's auth lane (its FXEV_EDGE_LANE); repeat for each (none by default:"
        " every auth step goes to the gateways' Sanic route)",
    )
    config.add_argument(
        "--cache-dir", type=Path, help=f"the cache's folder (FXEV_HOME/{CACHE_FOLDER} by default)"
    )
    config.set_defaults(handler=cmd_edge_config)
