"""``fxev``: the operator's command line.

Every command prints, as its last line on stdout, one JSON object; errors go to stderr as one
line with a non-zero exit, and change nothing. The commands only parse arguments and call into
the packages; every error they can meet is a ``builder.core.errors.FxevError``, reported by
:func:`main`'s one handler. A command that reads a store refuses a home that lacks it
(``require``), and so never creates an empty home; writing commands may create one, but only
once their input is checked (the file read and parsed, the names valid): a command that fails
on its input changes nothing and creates no home. A usage error is one line too
(:class:`builder.core.arguments.OneLineParser`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import orjson

from builder.capture.alerting import sync_alerts
from builder.capture.backfill import (
    backfill_centralbank,
    backfill_taxauth,
    check_request,
    parse_date,
    read_saved,
)
from builder.capture.centralbank import capture_centralbank
from builder.capture.importer import read_import, record_import
from builder.capture.operator import (
    annotate,
    check_series_switch,
    parse_annotation,
    publish_series,
)
from builder.capture.run import disk_checked, open_stores
from builder.capture.taxauth import capture_taxauth_txt
from builder.core import clock
from builder.core.arguments import OneLineParser, source_url
from builder.core.business_days import today_in_lima
from builder.core.errors import NotFound, UsageError, reported
from builder.core.settings import Settings, load_settings
from builder.core.vocabulary import CAPTURED_SOURCES, CENTRALBANK, TAXAUTH_TXT
from builder.publish.build import Builder, check_site_owner
from builder.publish.logcli import add_log_commands, log_signer
from builder.publish.warc import export_warc
from builder.publish.writer import TreeWriter
from builder.registry.store import REGISTRY_FILE
from builder.registry.verify import verify_registry
from builder.store.commands import run_mirror, run_publish
from builder.tree.layout import POINTER
from tokens.cli import add_token_commands
from verifier.cli import add_verify_command

COMMAND_GROUP = "fxev.commands"
DESCRIPTION = "fxev: the operator's command line (capture, build, tokens, serving, evidence)"


def emit(value: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(value).decode() + "\n")
    sys.stdout.flush()


def require(path: Path, what: str, setting: str = "FXEV_HOME") -> None:
    """Refuse a command whose store is missing: one line naming the resolved path."""
    if not path.exists():
        raise NotFound(f"no {what} at {path.absolute()} (set {setting} to the right folder)")


def require_registry(settings: Settings) -> None:
    require(settings.home / REGISTRY_FILE, "registry")


CAPTURES = {TAXAUTH_TXT: capture_taxauth_txt, CENTRALBANK: capture_centralbank}


def cmd_capture(args: argparse.Namespace, settings: Settings) -> int:
    with open_stores(settings) as stores:
        result = CAPTURES[args.source](stores, settings, clock.now(settings), args.url)
    emit(result.to_json())
    return 0


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    now = clock.now(settings)
    checked = read_import(Path(args.file), args.actor, args.justification, now)
    with open_stores(settings) as stores:
        result = disk_checked(stores, settings, now, lambda: record_import(stores, checked, now))
    emit(result.to_json())
    return 0


def cmd_annotate(args: argparse.Namespace, settings: Settings) -> int:
    request = parse_annotation(
        args.fecha, args.texto, args.actor, args.justification, args.serie,
        args.compra, args.venta,
    )  # fmt: skip
    now = clock.now(settings)
    with open_stores(settings) as stores:
        result = disk_checked(stores, settings, now, lambda: annotate(stores, request, now))
    emit(result.to_json())
    return 0


def cmd_series_publish(args: argparse.Namespace, settings: Settings) -> int:
    check_series_switch(args.serie, args.actor, args.justification)
    now = clock.now(settings)
    with open_stores(settings) as stores:
        write = partial(publish_series, stores, args.serie, args.actor, args.justification, now)
        result = disk_checked(stores, settings, now, write)
    emit(result.to_json())
    return 0


def cmd_tick(args: argparse.Namespace, settings: Settings) -> int:
    """Capture every enabled source, then build; a site of another registry refused first."""
    site, registry = TreeWriter(settings.site), settings.home / REGISTRY_FILE
    if not registry.exists():  # refused before the stores open: a refusal makes no home
        check_site_owner(site, None, registry)
    with open_stores(settings) as stores:
        builder = Builder(stores.registry, stores.blobs, site, log_signer(settings))
        builder.check_owner()
        captures = {
            source: CAPTURES[source](stores, settings, clock.now(settings), None).to_json()
            for source in settings.sources
        }
        built = builder.build()
    emit({"captures": captures, "build": built.to_json()})
    return 0


def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    now = clock.now(settings)
    start = parse_date(args.start, "--from")
    end = parse_date(args.end, "--to")
    check_request(args.source, start, end, today_in_lima(now), args.from_file)
    saved = None
    if args.from_file is not None:
        saved = read_saved(Path(args.from_file), settings.max_body_bytes)
    with open_stores(settings) as stores:
        if args.source == CENTRALBANK:
            write = partial(backfill_centralbank, stores, settings, now, start, end, args.url)
        else:
            assert saved is not None  # check_request: taxauth_txt needs --from-file
            name = Path(args.from_file).name
            write = partial(
                backfill_taxauth, stores, settings, now, start, end, saved, name, args.url
            )
        result = disk_checked(stores, settings, now, write)
    emit(result.to_json())
    return 0


def cmd_build(args: argparse.Namespace, settings: Settings) -> int:
    require_registry(settings)
    with open_stores(settings) as stores:
        tree = TreeWriter(settings.site)
        builder = Builder(stores.registry, stores.blobs, tree, log_signer(settings))
        result = builder.build(rebuild=args.rebuild)
    emit(result.to_json())
    return 0


def cmd_alerts_list(args: argparse.Namespace, settings: Settings) -> int:
    require_registry(settings)  # alerts follow the registry: none, no alerts to show
    with open_stores(settings, share_alerts=True) as stores:
        sync_alerts(stores.registry, stores.alerts)  # docs/operating/alerts.md#follow-the-registry
        alerts = stores.alerts.list(open_only=not args.all)
    emit({"items": [alert.to_json() for alert in alerts]})
    return 0


def _alert_transition(name: str) -> Callable[[argparse.Namespace, Settings], int]:
    def run(args: argparse.Namespace, settings: Settings) -> int:
        require_registry(settings)
        with open_stores(settings, share_alerts=True) as stores:
            sync_alerts(stores.registry, stores.alerts)
            move = stores.alerts.acknowledge if name == "ack" else stores.alerts.resolve
            alert = move(args.id, args.actor, clock.now(settings))
        emit(alert.to_json())
        return 0

    return run


def cmd_registry_verify(args: argparse.Namespace, settings: Settings) -> int:
    require_registry(settings)
    with open_stores(settings) as stores:
        head = stores.registry.head()
        findings = verify_registry(stores.registry, stores.blobs)
    blobs_bad = [f for f in findings if not f.startswith("chain break")]
    chain_bad = [f for f in findings if f.startswith("chain break")]
    print(f"evidence blobs: {'FAIL' if blobs_bad else 'ok'}")
    for finding in blobs_bad:
        print(f"  {finding}")
    print(f"revision chain (1..{head.revision if head else 0}): {'FAIL' if chain_bad else 'ok'}")
    for finding in chain_bad:
        print(f"  {finding}")
    emit({"ok": not findings, "findings": findings})
    return 1 if findings else 0


def cmd_export_warc(args: argparse.Namespace, settings: Settings) -> int:
    target = Path(args.file)
    if not args.file.strip() or target.is_dir() or (target.exists() and not target.is_file()):
        raise UsageError(f"export warc writes a regular file; {args.file!r} is not one")
    require_registry(settings)
    with open_stores(settings) as stores:
        summary = export_warc(stores.registry, stores.blobs, Path(args.file))
    emit(summary.to_json())
    return 0


def cmd_publish(args: argparse.Namespace, settings: Settings) -> int:
    """Upload what the last build published to the store (docs/operating/fleet.md)."""
    require_registry(settings)
    require(settings.site / POINTER, "published tree", "FXEV_SITE")
    emit(run_publish(settings, repair=args.repair).to_json())
    return 0


def cmd_mirror(args: argparse.Namespace, settings: Settings) -> int:
    """Pull the store into FXEV_SITE; with --follow, keep polling until interrupted."""
    with contextlib.suppress(KeyboardInterrupt):
        run_mirror(settings, args.follow, emit)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="fxev", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    capture = commands.add_parser("capture", help="one capture run of one source")
    capture.add_argument(
        "--source",
        choices=sorted(CAPTURES),
        default=TAXAUTH_TXT,
        help="which source to capture (default: taxauth_txt, the tax authority's text file)",
    )
    capture.add_argument(
        "--url",
        type=source_url,
        help="instead of the configured one: the text file's URL, or the central bank API's base",
    )
    capture.set_defaults(handler=cmd_capture)

    importing = commands.add_parser("import", help="import a CSV as importado observations")
    importing.add_argument("file", help="CSV: fecha_serie,compra,venta[,moneda,serie]")
    importing.add_argument("--actor", required=True, help="who imports (recorded)")
    importing.add_argument("--justification", required=True, help="where the values came from")
    importing.set_defaults(handler=cmd_import)

    annotating = commands.add_parser("annotate", help="record one human annotation")
    annotating.add_argument("--fecha", required=True, help="YYYY-MM-DD")
    annotating.add_argument("--texto", required=True, help="the annotation's text")
    annotating.add_argument("--actor", required=True, help="who annotates (recorded)")
    annotating.add_argument("--justification", required=True, help="why (recorded)")
    annotating.add_argument("--serie", help="publicado or cierre; absent: every series")
    annotating.add_argument("--compra", help="a value, with --venta")
    annotating.add_argument("--venta", help="a value, with --compra")
    annotating.set_defaults(handler=cmd_annotate)

    series = commands.add_parser("series", help="series switches").add_subparsers(
        dest="series_command", required=True
    )
    publishing = series.add_parser("publish", help="put a series in production (cierre)")
    publishing.add_argument("serie", help="the series to put in production: cierre")
    publishing.add_argument("--actor", required=True, help="who switches it (recorded)")
    publishing.add_argument("--justification", required=True, help="why (recorded)")
    publishing.set_defaults(handler=cmd_series_publish)

    tick = commands.add_parser("tick", help="capture every enabled source, then build")
    tick.set_defaults(handler=cmd_tick)

    backfill = commands.add_parser(
        "backfill", help="a source's own history for a date range, as one revision"
    )
    backfill.add_argument(
        "--source", required=True, choices=CAPTURED_SOURCES, help="whose history to fetch"
    )
    backfill.add_argument(
        "--from", dest="start", required=True, metavar="YYYY-MM-DD", help="first date"
    )
    backfill.add_argument("--to", dest="end", required=True, metavar="YYYY-MM-DD", help="last date")
    backfill.add_argument(
        "--url",
        type=source_url,
        help="centralbank: the API's base instead of the configured one; taxauth_txt: the "
        "endpoint that answered the saved file (default: the documented one)",
    )
    backfill.add_argument(
        "--from-file",
        metavar="SAVED",
        help="taxauth_txt (required): the monthly history answer saved from the browser",
    )
    backfill.set_defaults(handler=cmd_backfill)

    build = commands.add_parser("build", help="render every unpublished revision, then publish")
    build.add_argument(
        "--rebuild",
        action="store_true",
        help="render a fresh tree of this registry and swap it in atomically (needed when the"
        " site holds a tree of another registry)",
    )
    build.set_defaults(handler=cmd_build)

    alerts = commands.add_parser("alerts", help="alert lifecycle").add_subparsers(
        dest="alerts_command", required=True
    )
    listing = alerts.add_parser("list", help="open alerts (abierta, reconocida)")
    listing.add_argument("--all", action="store_true", help="include resolved alerts")
    listing.set_defaults(handler=cmd_alerts_list)
    for name, text in (("ack", "abierta -> reconocida"), ("resolve", "-> resuelta")):
        move = alerts.add_parser(name, help=text)
        move.add_argument("id", help="the alert's id (as alerts list shows it)")
        move.add_argument("--actor", required=True, help="who does it (recorded)")
        move.set_defaults(handler=_alert_transition(name))

    registry = commands.add_parser("registry", help="the registry").add_subparsers(
        dest="registry_command", required=True
    )
    verify = registry.add_parser("verify", help="walk the hash chain and every evidence blob")
    verify.set_defaults(handler=cmd_registry_verify)

    add_verify_command(commands)

    export = commands.add_parser("export", help="export the registry").add_subparsers(
        dest="export_command", required=True
    )
    warc = export.add_parser("warc", help="every evidence record as WARC 1.1")
    warc.add_argument("file", help="the WARC file to write (gzipped per record if it ends .gz)")
    warc.set_defaults(handler=cmd_export_warc)

    publishing_store = commands.add_parser(
        "publish", help="upload what the last build published to the store (FXEV_STORE_URL)"
    )
    publishing_store.add_argument(
        "--repair",
        action="store_true",
        help="check every key of the tree in the store; write those it lacks or holds damaged",
    )
    publishing_store.set_defaults(handler=cmd_publish)

    mirroring = commands.add_parser(
        "mirror", help="pull the store into FXEV_SITE, verified, the pointer moved last"
    )
    mirroring.add_argument(
        "--follow",
        action="store_true",
        help="keep polling the store's pointer every FXEV_MIRROR_INTERVAL_S seconds (a store"
        " that is down is one line on stderr, then the next poll)",
    )
    mirroring.set_defaults(handler=cmd_mirror)

    add_token_commands(commands)
    add_log_commands(commands)
    add_contributed_commands(commands)
    return parser


def add_contributed_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Subcommands other packages contribute through the ``fxev.commands`` entry points (the
    gateway's ``serve`` and ``requests``), so the write side never imports the gateway."""
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        entry.load()(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. An :class:`FxevError` (``builder.core.errors``), a full disk among them,
    is one line on stderr and the error's exit code; anything else is a bug and a traceback."""
    args = build_parser().parse_args(argv)
    if not getattr(args, "reads_settings", True):  # the consumer's `verify`: two settings only
        return reported(lambda: args.handler(args, os.environ))
    return reported(lambda: args.handler(args, load_settings(os.environ)))
