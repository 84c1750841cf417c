"""Sending an answer: stored bytes as they are (:class:`BytesResponse`), with the headers every
response carries (``X-Request-Id``, cache headers), the ETag handling of immutable answers, and
the spec's error body for any exception.

What the ledger needs later is left on ``request.ctx``: the body's ``request_id`` and, when
already known, the SHA-256 of the bytes sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sanic import Request
from sanic import exceptions as sanic_exceptions
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.core import vocabulary
from gateway.errors import ApiError, Internal, InvalidParams, MethodNotAllowed, NotFound
from gateway.response import BytesResponse
from gateway.stamps import fresh_request_id

JSON = "application/json"
NO_STORE = {"Cache-Control": vocabulary.NO_STORE}
IMMUTABLE = {
    "Cache-Control": vocabulary.IMMUTABLE,
    "CDN-Cache-Control": vocabulary.CDN_IMMUTABLE,
}
# A route's handler: the request (and its path parameters) in, the response out.
Handler = Callable[..., Awaitable[HTTPResponse]]


def x_request_id(request: Request) -> str:
    """The fresh UUID4 of this HTTP request (``X-Request-Id``), made on first use."""
    value = getattr(request.ctx, "x_request_id", None)
    if value is None:
        value = request.ctx.x_request_id = fresh_request_id()
    return value


FRESH = "fresh"


def send(
    request: Request,
    body: bytes,
    *,
    status: int = 200,
    content_type: str = JSON,
    headers: dict[str, str] | None = None,
    body_request_id: str | None = FRESH,
    body_sha256: str | None = None,
) -> HTTPResponse:
    """A response; ``body_request_id`` is the body's ``request_id`` for the ledger (FRESH: the
    ``X-Request-Id``; None: the body has none). ``body_sha256``: the hex SHA-256 of ``body`` when
    already known (a memoised body, evidence checked at load), so the ledger need not hash it."""
    merged = {"X-Request-Id": x_request_id(request), **NO_STORE, **(headers or {})}
    if body_request_id == FRESH:
        body_request_id = x_request_id(request)
    request.ctx.body_request_id = body_request_id
    request.ctx.known_digest = None if body_sha256 is None else (body, body_sha256)
    return BytesResponse(body, status=status, headers=merged, content_type=content_type)


def etag_matches(request: Request, etag: str) -> bool:
    header = request.headers.get("if-none-match")
    if header is None:
        return False
    candidates = [c.strip().removeprefix("W/") for c in header.split(",")]
    return "*" in candidates or etag in candidates


def send_immutable(
    request: Request,
    body: bytes,
    etag: str,
    headers: dict[str, str],
    content_type: str = JSON,
    body_request_id: str | None = None,
) -> HTTPResponse:
    """An immutable answer (as-of body, evidence): ETag, long caching, 304 on If-None-Match.
    The ETag is the quoted SHA-256 of ``body``, so the ledger reuses it."""
    merged = {**IMMUTABLE, "ETag": etag, **headers}
    status = 304 if etag_matches(request, etag) else 200
    return send(
        request,
        b"" if status == 304 else body,
        status=status,
        content_type=content_type,
        headers=merged,
        body_request_id=body_request_id,
        body_sha256=None if status == 304 else etag.strip('"'),
    )


def as_api_error(exception: Exception) -> ApiError:
    if isinstance(exception, ApiError):
        return exception
    if isinstance(exception, sanic_exceptions.NotFound):
        return NotFound("No such path.")
    if isinstance(exception, sanic_exceptions.MethodNotAllowed):
        return MethodNotAllowed("Only GET and HEAD are allowed.")
    if isinstance(exception, sanic_exceptions.BadRequest):
        return InvalidParams("The request is malformed.")
    return Internal()


def error_response(request: Request, exception: Exception) -> HTTPResponse:
    """The spec's error body for ``exception``; anything unexpected is ``INTERNAL``, logged."""
    error = as_api_error(exception)
    if type(error) is Internal:
        error_logger.exception("unexpected error on %s %s", request.method, request.path)
    body = error.body(x_request_id(request))
    body_request_id = None if error.status == 422 else FRESH
    return send(
        request,
        body,
        status=error.status,
        headers=dict(error.headers),
        body_request_id=body_request_id,
    )
