"""``python -m bench.serve``: the gateway as ``fxev serve`` runs it, with the ledger on or off.

``--no-ledger`` (``create_app(settings, ledger=False)``) exists only to measure what the ledger
costs; production has no way to turn it off.
"""

from __future__ import annotations

import argparse
import os

from sanic import Sanic

from builder.core.settings import load_settings
from gateway.app import create_app
from gateway.server.serving import serve_factory

LEDGER_SWITCH = "FXEV_BENCH_LEDGER"


def create_bench_app() -> Sanic:
    """The factory each worker calls; the switch travels in the environment to the workers."""
    return create_app(load_settings(os.environ), ledger=os.environ.get(LEDGER_SWITCH) != "off")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serve")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-ledger", action="store_true")
    args = parser.parse_args()
    os.environ[LEDGER_SWITCH] = "off" if args.no_ledger else "on"
    serve_factory(create_bench_app, "127.0.0.1", args.port, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
