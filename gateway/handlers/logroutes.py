"""The transparency log's public routes: ``/v1/log/checkpoint``, ``/v1/log/tile/...``,
``/v1/log/rows/{revision}`` and ``/v1/log/key`` (docs/transparency.md).

They need no token and are not rate limited (like ``/v1/health/live``): a log is meant to be
fetched by anyone, and these are the one part of fxev a plain CDN may cache for everyone. Tiles,
entry bundles and rows lists never change once written (``public, max-age=31536000,
immutable``); the checkpoint is the published revision's own (``log/checkpoints/<N>``, written
before the pointer named N), cached 5 seconds. A tile path is parsed to its one canonical C2SP
spelling and must lie inside the published tree, so nothing but the log's files can be named.
"""

from __future__ import annotations

import hashlib

from sanic import Request
from sanic.response import HTTPResponse

from builder.core import vocabulary
from builder.tlog import tiles
from builder.tree.log import LogReader
from gateway.api import params
from gateway.errors import NotFound
from gateway.handlers.reading import published, query, tree
from gateway.http.sending import send, send_immutable

TEXT = "text/plain; charset=utf-8"
OCTETS = "application/octet-stream"
PUBLIC_IMMUTABLE = {
    "Cache-Control": vocabulary.PUBLIC_IMMUTABLE,
    "CDN-Cache-Control": vocabulary.CDN_IMMUTABLE,
}
CHECKPOINT_CACHE = {"Cache-Control": vocabulary.LOG_CHECKPOINT_CACHE}
KEY_CACHE = {"Cache-Control": vocabulary.LOG_KEY_CACHE}


def _log(request: Request) -> LogReader:
    return LogReader(tree(request).site)


async def log_checkpoint(request: Request) -> HTTPResponse:
    pub = published(request)
    params.no_params(query(request))
    signed = _log(request).checkpoint(pub.revision)
    if signed is None:
        raise NotFound("The published revision has no log checkpoint.")
    return send(
        request, signed.encode(), content_type=TEXT, headers=CHECKPOINT_CACHE, body_request_id=None
    )


async def log_key(request: Request) -> HTTPResponse:
    published(request)
    params.no_params(query(request))
    key = _log(request).key()
    if key is None:
        raise NotFound("The published tree has no log key.")
    return send(request, key.encode(), content_type=TEXT, headers=KEY_CACHE, body_request_id=None)


def _immutable(request: Request, data: bytes, content_type: str) -> HTTPResponse:
    etag = '"' + hashlib.sha256(data).hexdigest() + '"'
    return send_immutable(request, data, etag, PUBLIC_IMMUTABLE, content_type)


async def log_tile(request: Request, tile: str) -> HTTPResponse:
    path = tile
    pub = published(request)
    params.no_params(query(request))
    params.path_text(path)  # a NUL or bytes not UTF-8: 400, as on every route; then the spelling
    try:
        named = tiles.parse_path("tile/" + path)
    except ValueError:
        raise NotFound(f"No log tile {path}.") from None
    count = pub.revision >> (tiles.HEIGHT * max(named.level, 0))
    if named.index * tiles.WIDTH + named.width > count:
        raise NotFound(f"No log tile {path} in a log of {pub.revision} leaves.")
    try:
        data = _log(request).read_tile(named)
    except FileNotFoundError:
        raise NotFound(f"No log tile {path}.") from None
    return _immutable(request, data, OCTETS)


async def log_rows(request: Request, revision: str) -> HTTPResponse:
    pub = published(request)
    params.no_params(query(request))
    params.path_text(revision)
    number = int(revision) if revision.isdigit() and len(revision) < 12 else 0
    data = _log(request).rows(number) if 0 < number <= pub.revision else None
    if data is None or str(number) != revision:
        raise NotFound(f"No rows list of revision {revision} in the log.")
    return _immutable(request, data, "application/json")
