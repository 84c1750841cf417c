"""``python -m bench.bare``: the floor under the gateway, a bare Sanic serving bytes from memory.

The files of one folder are read once per worker, each with its SHA-256 computed at start-up,
and sent as they are (``sanic.response.raw``) with an ETag, as nginx sends them: no token, no
rate limit, no ledger, no parsing. The gap between it and nginx is Sanic's own cost per request;
the gap between it and the gateway is what the gateway does per request.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

from sanic import Request, Sanic
from sanic.response import HTTPResponse, raw

from gateway.server.serving import serve_factory

ROOT_SWITCH = "FXEV_BENCH_BARE_ROOT"


def create_bare_app() -> Sanic:
    app = Sanic("fxev_bench_bare")
    app.config.AUTO_EXTEND = False
    root = Path(os.environ[ROOT_SWITCH])
    bodies = {
        path.name: (path.read_bytes(), '"' + hashlib.sha256(path.read_bytes()).hexdigest() + '"')
        for path in root.iterdir()
        if path.is_file()
    }

    async def serve(request: Request, name: str) -> HTTPResponse:
        body, etag = bodies[name]
        return raw(body, headers={"ETag": etag}, content_type="application/json")

    app.add_route(serve, "/<name:str>", methods=["GET"])
    return app


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bare")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    os.environ[ROOT_SWITCH] = args.root
    serve_factory(create_bare_app, "127.0.0.1", args.port, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
