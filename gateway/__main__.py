"""``python -m gateway serve ...``: the ``serve`` command alone, until ``fxev`` wires it."""

from __future__ import annotations

import argparse
import os
import sys

from builder.core.settings import SettingsError, load_settings
from gateway.cli import add_serve_command


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway")
    add_serve_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args()
    try:
        settings = load_settings(os.environ)
    except SettingsError as error:
        print(f"fxev: {error}", file=sys.stderr)
        return 1
    return args.handler(args, settings)


if __name__ == "__main__":
    raise SystemExit(main())
