"""``make run``: seed an empty home with real data and a few local captures, then build.

1. Import the tax authority's real 2021-2026 history (``builder/data/seed``, derived from the
   recorded fixture; its justification names the origin) as ``importado`` observations. Three of its
   values are odd but what the source published (docs/sources.md): each is marked
   ``plausibilidad_baja`` with an alert, which the demo's operator resolves as reviewed.
2. Capture, from a local HTTP server on 127.0.0.1, files in the documented shape so that evidence,
   a direct observation superseding an import, a correction and an alert can be seen; then the
   central bank's real recorded answer of 1-8 September 2026 (five SBS closes), which the
   imported publications of 2-8 September are cross-checked against. Their
   ``identidad_consulta`` names the local URL they really came from, never the source's.
3. Build the static tree.
4. With ``--serve``: revoke the previous demo token, issue a new one, print it with a ready-to-paste
   ``curl`` line, and serve the gateway on 127.0.0.1, port ``--port`` (default 8000; ``make run
   PORT=8001``). The port is checked first: a taken one is one line on stderr and exit 1, before
   anything is written, a token above all.

An error of the write side (a site holding a tree of another registry, say) is one line on
stderr and exit 1, like ``fxev``'s.

Running it twice duplicates nothing: the import is idempotent and the captures run only on a
home that has no direct observation yet.
"""

from __future__ import annotations

import argparse
import http.server
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path

from builder.capture.alerting import sync_alerts
from builder.capture.centralbank import capture_centralbank
from builder.capture.importer import import_csv
from builder.capture.run import Stores
from builder.capture.taxauth import capture_taxauth_txt
from builder.core.arguments import OneLineParser, port_number
from builder.core.console import emit
from builder.core.errors import reported
from builder.core.settings import Settings, load_settings
from builder.core.vocabulary import IMPORTADO, PLAUSIBILIDAD_BAJA
from builder.disk.durable import replace_durably
from builder.ops.ports import free_port_after, refuse_unusable_port
from builder.publish.build import Builder
from builder.publish.logcli import log_signer
from builder.publish.writer import TreeWriter
from tokens.store import TokenError, TokenStore

SEED = "sunat_usd_pen_2021-01-01_2026-09-21.csv"
CENTRALBANK_SEED = "bcrp_PD04639PD-PD04640PD_2026-09-01_2026-09-08.json"
CENTRALBANK_RANGE = (date(2026, 9, 1), date(2026, 9, 8))
JUSTIFICATION = (
    "Historia real del tipo de cambio publicado por SUNAT, 2021-01-01 a 2026-09-21, tomada de "
    "ivanjoz/public-business-data (data/tipo-cambio-sunat-usd-pen.json, commit 85fb25e), espejo "
    "de api.apis.net.pe de la publicación de SUNAT; ver builder/data/seed/ORIGIN.md."
)
# The seed's odd values, marked plausibilidad_baja by its import and reviewed: the tax
# authority published them (docs/sources.md#which-days).
REVIEWED = frozenset(
    (PLAUSIBILIDAD_BAJA, IMPORTADO, fecha) for fecha in ("2021-05-13", "2021-07-31", "2026-06-10")
)
# The last real publication of the seed, then a demonstration correction of it, then a failure.
DEMO_FILES = (
    (200, b"21/09/2026|3.354|3.362|\r\n"),
    (200, b"21/09/2026|3.354|3.362|\r\n"),
    (200, b"21/09/2026|3.356|3.364|\r\n"),
    (503, b"<html><body>Service Unavailable</body></html>"),
)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextmanager
def local_source() -> Iterator[tuple[str, list[tuple[int, bytes, str]]]]:
    """A one-file HTTP server on 127.0.0.1 whose next answer the caller sets."""
    answer: list[tuple[int, bytes, str]] = [(200, b"", "text/plain")]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body, content_type = answer[0]
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", answer
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def resolve_reviewed(stores: Stores, now: datetime) -> None:
    """Resolve the open ``plausibilidad_baja`` alerts of the seed's :data:`REVIEWED` dates, as
    its operator would: each value is what the source published (docs/sources.md). On every
    run, so that one stopped between the import and this still ends with them resolved; the
    alerts are brought up to the registry first (docs/operating/alerts.md#follow-the-registry)."""
    sync_alerts(stores.registry, stores.alerts)
    for alert in stores.alerts.list(open_only=True):
        if (alert.tipo, alert.fuente, alert.fecha_serie) in REVIEWED:
            stores.alerts.resolve(alert.id, "fxev-demo", now)
            say(f"alert {alert.tipo} of {alert.fecha_serie}: resolved, as the source published it")


def seed(settings: Settings, clock: Callable[[], datetime]) -> None:
    """The demo's writes, each at ``clock()``: with ``FXEV_NOW`` unset, the real instant of each
    one, so every revision has its own ``ts_commit`` (``/v1/revisions?at=`` reaches each)."""
    stores = Stores.open(settings.home)
    try:
        with resources.as_file(resources.files("builder").joinpath("data", "seed", SEED)) as path:
            result = import_csv(
                stores, Path(path), "fxev-demo", JUSTIFICATION, clock(), settings.plausibility_pct
            )
        say(f"import of the real history: {result.outcome} (revision {result.revision})")
        resolve_reviewed(stores, clock())
        has_direct = stores.registry.conn.execute(
            "SELECT 1 FROM observations WHERE fuente = 'taxauth_txt' LIMIT 1"
        ).fetchone()
        if has_direct:
            say("local captures: already done, skipped")
            return
        with local_source() as (base, answer):
            url = base + "/a/txt/tipoCambio.txt"
            for status, body in DEMO_FILES:
                answer[0] = (status, body, "text/plain; charset=ISO-8859-1")
                result = capture_taxauth_txt(stores, settings, clock(), url=url)
                alert = f", alert {result.alertas[0].tipo}" if result.alertas else ""
                say(f"capture of {url} ({status}): {result.outcome}{alert}")
            recorded = resources.files("builder").joinpath("data", "seed", CENTRALBANK_SEED)
            answer[0] = (200, recorded.read_bytes(), "text/html; charset=UTF-8")
            start, end = CENTRALBANK_RANGE
            result = capture_centralbank(
                stores, settings, clock(), base + "/api", start=start, end=end
            )
            checks = stores.registry.conn.execute("SELECT count(*) FROM cotejos").fetchone()[0]
            say(
                f"capture of the central bank's answer: {result.outcome}, {checks} cotejos"
                " (each cross-check is recorded on both observations it compares)"
            )
    finally:
        stores.close()


DEMO_TOKEN_ID = "demo_token_id"
HOST, PORT = "127.0.0.1", 8000


def check_port(host: str, port: int) -> None:
    """Refuse a port another process listens on (bound the way the gateway binds it)."""

    def advice() -> str:
        free = free_port_after(host, port)
        return f"pick another: make run PORT={free if free is not None else 'N'}"

    refuse_unusable_port(host, port, advice)


def rotate_demo_token(settings: Settings) -> str:
    """Revoke the previous demo token (if still active) and issue a new one."""
    id_file = settings.home / DEMO_TOKEN_ID
    real_now = datetime.now(UTC)
    with TokenStore.open(settings.home) as store:
        if id_file.exists():
            previous = id_file.read_text().strip()
            try:
                store.revoke(previous, real_now)
                say(f"previous demo token {previous} revoked")
            except TokenError:
                pass
        issued = store.issue("demo", None, real_now)
    replace_durably(id_file, issued.id.encode())
    return issued.token_text


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m demo",
        description="make run's demo: seed FXEV_HOME, build FXEV_SITE, optionally serve it",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="then rotate the demo token and serve the gateway on 127.0.0.1",
    )
    parser.add_argument(
        "--port", type=port_number, default=PORT, help=f"the port to serve on (default {PORT})"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return reported(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    settings = load_settings(os.environ)
    if args.serve:
        check_port(HOST, args.port)  # before anything is written, a token above all
    fixed = settings.now
    seed(settings, (lambda: fixed) if fixed is not None else (lambda: datetime.now(UTC)))
    stores = Stores.open(settings.home)
    try:
        tree = TreeWriter(settings.site)
        result = Builder(stores.registry, stores.blobs, tree, log_signer(settings)).build()
    finally:
        stores.close()
    say(f"build: published revision {result.published_revision}")
    emit(result.to_json())
    if not args.serve:
        return 0
    check_port(HOST, args.port)  # again: the seed and build took a while
    token = rotate_demo_token(settings)
    base = f"http://{HOST}:{args.port}"
    print(f"\nDemo token (shown once): {token}\n")
    print(
        f"curl -H 'Authorization: Bearer {token}' "
        f"'{base}/v1/rates/latest?currency=USD&series=publicado'\n",
        flush=True,
    )
    print(f"Explorer: {base}/ (sign in with the token above)\n", flush=True)
    command = [sys.executable, "-m", "gateway", "serve", "--host", HOST, "--port", str(args.port)]
    os.execv(sys.executable, command)
    return 0
