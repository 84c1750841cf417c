"""``fxev``: the operator's command line.

Every command prints, as its last line on stdout, one JSON object; errors go to stderr as one
line with a non-zero exit, and change nothing. This module parses the arguments; each command's
handler (:mod:`builder.commands`, or the package that contributes the command) is imported only
when it runs (:class:`builder.core.arguments.Deferred`). Every error a command can meet is a
``builder.core.errors.FxevError``, reported by :func:`main`'s one handler. A command that fails
on its input changes nothing and creates no home. A usage error is one line too
(:class:`builder.core.arguments.OneLineParser`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from importlib.metadata import entry_points

from builder.core.arguments import Deferred, OneLineParser, source_url
from builder.core.errors import reported
from builder.core.settings import load_settings
from builder.core.vocabulary import CAPTURED_SOURCES, TAXAUTH_TXT

COMMAND_GROUP = "fxev.commands"
COMMANDS = "builder.commands"  # where the handlers are, imported when one runs
LOG_COMMANDS = "builder.publish.logcli"
DESCRIPTION = "fxev: the operator's command line (capture, build, tokens, serving, evidence)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="fxev", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    capture = commands.add_parser("capture", help="one capture run of one source")
    capture.add_argument(
        "--source",
        choices=sorted(CAPTURED_SOURCES),
        default=TAXAUTH_TXT,
        help="which source to capture (default: taxauth_txt, the tax authority's text file)",
    )
    capture.add_argument(
        "--url",
        type=source_url,
        help="instead of the configured one: the text file's URL, or the central bank API's base",
    )
    capture.set_defaults(handler=Deferred(COMMANDS, "cmd_capture"))

    importing = commands.add_parser("import", help="import a CSV as importado observations")
    importing.add_argument("file", help="CSV: fecha_serie,compra,venta[,moneda,serie]")
    importing.add_argument("--actor", required=True, help="who imports (recorded)")
    importing.add_argument("--justification", required=True, help="where the values came from")
    importing.set_defaults(handler=Deferred(COMMANDS, "cmd_import"))

    annotating = commands.add_parser("annotate", help="record one human annotation")
    annotating.add_argument("--fecha", required=True, help="YYYY-MM-DD")
    annotating.add_argument("--texto", required=True, help="the annotation's text")
    annotating.add_argument("--actor", required=True, help="who annotates (recorded)")
    annotating.add_argument("--justification", required=True, help="why (recorded)")
    annotating.add_argument("--serie", help="publicado or cierre; absent: every series")
    annotating.add_argument("--compra", help="a value, with --venta")
    annotating.add_argument("--venta", help="a value, with --compra")
    annotating.set_defaults(handler=Deferred(COMMANDS, "cmd_annotate"))

    series = commands.add_parser("series", help="series switches").add_subparsers(
        dest="series_command", required=True
    )
    publishing = series.add_parser("publish", help="put a series in production (cierre)")
    publishing.add_argument("serie", help="the series to put in production: cierre")
    publishing.add_argument("--actor", required=True, help="who switches it (recorded)")
    publishing.add_argument("--justification", required=True, help="why (recorded)")
    publishing.set_defaults(handler=Deferred(COMMANDS, "cmd_series_publish"))

    tick = commands.add_parser("tick", help="capture every enabled source, then build")
    tick.set_defaults(handler=Deferred(COMMANDS, "cmd_tick"))

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
        help="taxauth_txt (required): the monthly history answer saved from the browser; "
        "centralbank: the API's answer for the range, saved, read instead of fetching it",
    )
    backfill.set_defaults(handler=Deferred(COMMANDS, "cmd_backfill"))

    build = commands.add_parser("build", help="render every unpublished revision, then publish")
    build.add_argument(
        "--rebuild",
        action="store_true",
        help="render a fresh tree of this registry and swap it in atomically (needed when the"
        " site holds a tree of another registry)",
    )
    build.set_defaults(handler=Deferred(COMMANDS, "cmd_build"))

    alerts = commands.add_parser("alerts", help="alert lifecycle").add_subparsers(
        dest="alerts_command", required=True
    )
    listing = alerts.add_parser("list", help="open alerts (abierta, reconocida)")
    listing.add_argument("--all", action="store_true", help="include resolved alerts")
    listing.set_defaults(handler=Deferred(COMMANDS, "cmd_alerts_list"))
    for name, text in (("ack", "abierta -> reconocida"), ("resolve", "-> resuelta")):
        move = alerts.add_parser(name, help=text)
        move.add_argument("id", help="the alert's id (as alerts list shows it)")
        move.add_argument("--actor", required=True, help="who does it (recorded)")
        move.set_defaults(handler=Deferred(COMMANDS, f"cmd_alerts_{name}"))

    registry = commands.add_parser("registry", help="the registry").add_subparsers(
        dest="registry_command", required=True
    )
    verify = registry.add_parser("verify", help="walk the hash chain and every evidence blob")
    verify.set_defaults(handler=Deferred(COMMANDS, "cmd_registry_verify"))

    export = commands.add_parser("export", help="export the registry").add_subparsers(
        dest="export_command", required=True
    )
    warc = export.add_parser("warc", help="every evidence record as WARC 1.1")
    warc.add_argument("file", help="the WARC file to write (gzipped per record if it ends .gz)")
    warc.set_defaults(handler=Deferred(COMMANDS, "cmd_export_warc"))

    publishing_store = commands.add_parser(
        "publish", help="upload what the last build published to the store (FXEV_STORE_URL)"
    )
    publishing_store.add_argument(
        "--repair",
        action="store_true",
        help="check every key of the tree in the store; write those it lacks or holds damaged",
    )
    publishing_store.set_defaults(handler=Deferred(COMMANDS, "cmd_publish"))

    mirroring = commands.add_parser(
        "mirror", help="pull the store into FXEV_SITE, verified, the pointer moved last"
    )
    mirroring.add_argument(
        "--follow",
        action="store_true",
        help="keep polling the store's pointer every FXEV_MIRROR_INTERVAL_S seconds (a store"
        " that is down is one line on stderr, then the next poll)",
    )
    mirroring.set_defaults(handler=Deferred(COMMANDS, "cmd_mirror"))

    add_log_commands(commands)
    add_contributed_commands(commands)
    return parser


def add_log_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    log = commands.add_parser("log", help="the transparency log").add_subparsers(
        dest="log_command", required=True
    )
    key = log.add_parser("key", help="print the log's verifier key (creates the key once)")
    key.set_defaults(handler=Deferred(LOG_COMMANDS, "cmd_log_key"))
    proof = log.add_parser(
        "proof", help="print a tlog-proof of an observation's revision, checkable offline"
    )
    proof.add_argument("observacion_id", metavar="OBSERVACION_ID", help="the observation")
    proof.set_defaults(handler=Deferred(LOG_COMMANDS, "cmd_log_proof"))


def add_contributed_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Subcommands other packages contribute through the ``fxev.commands`` entry points (the
    tokens' ``token``, the consumer's ``verify``, the gateway's ``serve``, ``requests``,
    ``ledger`` and ``edge``), so the write side imports none of those packages."""
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        entry.load()(commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. An :class:`FxevError` (``builder.core.errors``), a full disk among them,
    is one line on stderr and the error's exit code; anything else is a bug and a traceback."""
    args = build_parser().parse_args(argv)
    if not getattr(args, "reads_settings", True):  # the consumer's `verify`: two settings only
        return reported(lambda: args.handler(args, os.environ))
    return reported(lambda: args.handler(args, load_settings(os.environ)))
