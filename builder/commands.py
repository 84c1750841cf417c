"""The operator's commands as ``fxev`` runs them (:mod:`builder.cli` parses the arguments and
names each handler here): parsed arguments and settings in, one JSON line out, the exit code back.

A command that reads a store refuses a home that lacks it (``require``), and so never creates an
empty home; writing commands may create one, but only once their input is checked.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

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
from builder.core.business_days import today_in_lima
from builder.core.console import emit, require
from builder.core.errors import UsageError
from builder.core.settings import Settings
from builder.core.vocabulary import CENTRALBANK, TAXAUTH_TXT
from builder.publish.build import Builder
from builder.publish.logcli import log_signer
from builder.publish.warc import export_warc
from builder.publish.writer import TreeWriter, check_site_owner
from builder.registry.store import REGISTRY_FILE
from builder.registry.verify import verify_registry
from builder.store.commands import run_mirror, run_publish
from builder.tree.layout import POINTER


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
        pct = settings.plausibility_pct
        result = disk_checked(
            stores, settings, now, lambda: record_import(stores, checked, now, pct)
        )
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
    """Capture every enabled source, then build; a site the build would refuse (of another
    registry, or whose log another key signs) refused first."""
    site, registry = TreeWriter(settings.site), settings.home / REGISTRY_FILE
    if not registry.exists():  # refused before the stores open: a refusal makes no home
        check_site_owner(site, None, registry)
    with open_stores(settings) as stores:
        builder = Builder(stores.registry, stores.blobs, site, log_signer(settings))
        builder.check_owner()
        builder.check_key()
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
            name = None if args.from_file is None else Path(args.from_file).name
            write = partial(
                backfill_centralbank, stores, settings, now, start, end, args.url,
                saved=saved, file_name=name,
            )  # fmt: skip
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
    if not target.absolute().parent.is_dir():  # made by nobody but the operator
        folder = str(target.parent)
        raise UsageError(f"export warc: {folder!r} is not a folder to write {args.file!r} in")
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


cmd_alerts_ack = _alert_transition("ack")
cmd_alerts_resolve = _alert_transition("resolve")
