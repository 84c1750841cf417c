"""``python -m gateway serve ...``: the gateway's server alone, for process managers and tests.

Unlike ``fxev serve`` it starts on a site not built yet (a fleet host before its first mirror)
and answers 503 until the published pointer appears; it still refuses a home without tokens.
"""

from __future__ import annotations

import os

from builder.core.arguments import OneLineParser
from builder.core.errors import reported
from builder.core.settings import load_settings
from gateway.cli import add_serve_command


def main() -> int:
    parser = OneLineParser(prog="python -m gateway")
    add_serve_command(parser.add_subparsers(dest="command", required=True), require_published=False)
    args = parser.parse_args()
    return reported(lambda: args.handler(args, load_settings(os.environ)))


if __name__ == "__main__":
    raise SystemExit(main())
