"""Sending an answer: stored bytes as they are (:class:`BytesResponse`), with the headers every
response carries (``X-Request-Id``, cache headers, ``Repr-Digest`` of a body, CORS), the ETag
handling of immutable answers, and the spec's error body for any exception.

What the ledger needs later is left on ``request.ctx``: the body's ``request_id`` and the SHA-256
of the bytes sent (``known_digest``), computed once here for ``Repr-Digest`` and reused by the
ledger (``gateway.handlers.ledgering.sent_digest``).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable, Callable

from sanic import Request
from sanic import exceptions as sanic_exceptions
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.core import vocabulary
from gateway.errors import (
    ApiError,
    Internal,
    InvalidParams,
    MethodNotAllowed,
    NotFound,
    NotReady,
    RequestTimeout,
)
from gateway.http.head import BODY_MAX, HEAD_MAX
from gateway.http.response import BytesResponse
from gateway.http.stamps import fresh_request_id

JSON = "application/json"
NO_STORE = {"Cache-Control": vocabulary.NO_STORE}
IMMUTABLE = {
    "Cache-Control": vocabulary.IMMUTABLE,
    "CDN-Cache-Control": vocabulary.CDN_IMMUTABLE,
}
# The white space RFC 9110 allows around a list's members (OWS): spaces and tabs, no other.
OWS = " \t"
# A route's handler: the request (and its path parameters) in, the response out.
Handler = Callable[..., Awaitable[HTTPResponse]]
# docs/decisions.md#cors: what a listed origin's scripts may read, and what a preflight allows.
CORS_EXPOSE = (
    "X-Request-Id, ETag, Repr-Digest, Retry-After, X-Sha256, X-Capturado-En, X-Identidad-Consulta"
)
PREFLIGHT = {
    "Access-Control-Allow-Methods": "GET, HEAD",
    "Access-Control-Allow-Headers": "Authorization, If-None-Match",
    "Access-Control-Max-Age": "600",
}
# How a refusal of the HTTP layer (Sanic's, before any route) is told in an INVALID_PARAMS body.
MALFORMED = "The request is malformed."
NOT_ALLOWED = "Only GET and HEAD are allowed."
TOO_LARGE = (
    f"The request exceeds the gateway's size limits ({HEAD_MAX >> 10} KB for its line and"
    f" headers, {BODY_MAX >> 20} MB for its body)."
)


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
    already known (a memoised body, evidence checked at load), so it is not hashed again.

    A body that is sent (not to HEAD) carries ``Repr-Digest`` (docs/decisions.md#http-basics),
    the SHA-256 the ledger records for it; so does a 200 whose body is empty (the zero bytes of a
    failed capture's evidence), not a bodiless redirect."""
    merged = {"X-Request-Id": x_request_id(request), **NO_STORE, **(headers or {})}
    if body_request_id == FRESH:
        body_request_id = x_request_id(request)
    request.ctx.body_request_id = body_request_id
    if (body or status == 200) and request.method != "HEAD":
        if body_sha256 is None:
            body_sha256 = hashlib.sha256(body).hexdigest()
        merged["Repr-Digest"] = repr_digest(body_sha256)
        request.ctx.known_digest = (body, body_sha256)
    else:
        request.ctx.known_digest = None
    if request.app.ctx.cors_origins is not None:
        merged |= cors_headers(request)
    return BytesResponse(body, status=status, headers=merged, content_type=content_type)


def repr_digest(sha256_hex: str) -> str:
    """RFC 9530's ``Repr-Digest`` of a body whose SHA-256 is ``sha256_hex``: the same hash, in
    base64 between colons."""
    return "sha-256=:" + base64.b64encode(bytes.fromhex(sha256_hex)).decode("ascii") + ":"


def allowed_origin(request: Request) -> str | None:
    """The request's ``Origin`` when FXEV_CORS_ORIGINS lists it (any, for ``*``)."""
    return listed(request.app.ctx.cors_origins, request.headers.get("origin"))


def listed(origins: frozenset[str] | None, origin: str | None) -> str | None:
    """``origin`` (its spaces and tabs around trimmed, as RFC 9110 reads a field's value) when
    ``origins`` lists it (any, for ``*``); None when it is not, or no origin is configured."""
    origin = None if origin is None else origin.strip(OWS)
    if origins is None or not origin:
        return None
    return origin if "*" in origins or origin in origins else None


def cors_state(origins: frozenset[str] | None, origin: str | None) -> str:
    """Which CORS headers a ``/v1`` answer to ``origin`` carries (:func:`cors_headers`): ``-``
    none (no origin configured), ``v`` only ``Vary: Origin``, ``a`` the origin allowed. The edge
    keys its cache on it (:mod:`gateway.edge.steps`), so a cached answer never carries the headers
    of another configuration than the one that admitted the request."""
    if origins is None:
        return "-"
    return "v" if listed(origins, origin) is None else "a"


def cors_headers(request: Request) -> dict[str, str]:
    """docs/decisions.md#cors, on every ``/v1`` answer once origins are configured: ``Vary:
    Origin`` (the answer depends on it), and for a listed origin the origin itself and the
    headers its scripts may read."""
    if not request.path.startswith("/v1/"):
        return {}
    origin = allowed_origin(request)
    if origin is None:
        return {"Vary": "Origin"}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": CORS_EXPOSE,
        "Vary": "Origin",
    }


def is_preflight(request: Request) -> bool:
    """A CORS preflight from a listed origin: ``OPTIONS`` under ``/v1`` with
    ``Access-Control-Request-Method``."""
    return (
        request.method == "OPTIONS"
        and request.path.startswith("/v1/")
        and "access-control-request-method" in request.headers
        and allowed_origin(request) is not None
    )


def preflight(request: Request) -> HTTPResponse:
    """204 with what a listed origin may do: no token, no limit, no ledger."""
    return send(request, b"", status=204, headers=PREFLIGHT, body_request_id=None)


def etag_matches(request: Request, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (RFC 9110 13.1.2, weak comparison). A list
    over several field lines is one list (RFC 9110 5.3). It is read as nginx 1.22 reads one
    line, since the edge answers a validator of a log tile from its cache itself: ``*`` only as
    the whole value (spaces after it trimmed), members split on commas with spaces and tabs
    around them ignored, no other white space (but before the first member, which Sanic's
    parser trims whatever it is: there a gateway matches where nginx does not). nginx refuses a
    second line (400) before its cache."""
    lines = request.headers.getall("if-none-match", [])
    if not lines:
        return False
    value = ",".join(lines)
    if value.rstrip(" ") == "*":
        return True
    return any(member.strip(OWS).removeprefix("W/") == etag for member in value.split(","))


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
    """The API's error for ``exception``. Sanic's refusals of a request it could not read or
    that exceeds its limits are 400, a request too slow to arrive 408, a handler too slow 503
    (docs/decisions.md#bad-requests); anything else unexpected is ``INTERNAL``."""
    if isinstance(exception, ApiError):
        return exception
    if isinstance(exception, sanic_exceptions.NotFound):
        return NotFound("No such path.")
    if isinstance(exception, sanic_exceptions.MethodNotAllowed):
        return MethodNotAllowed(NOT_ALLOWED)
    if isinstance(exception, sanic_exceptions.RequestTimeout):
        return RequestTimeout("The request did not arrive within the request timeout.")
    if isinstance(exception, sanic_exceptions.ServiceUnavailable):
        return NotReady("The response was not ready within the response timeout.")
    if isinstance(exception, sanic_exceptions.PayloadTooLarge | sanic_exceptions.URITooLong):
        return InvalidParams(TOO_LARGE)
    if isinstance(exception, sanic_exceptions.SanicException) and exception.status_code < 500:
        return InvalidParams(MALFORMED)
    return Internal()


def one_line(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, control characters escaped: safe in one log line."""
    return repr(text[:limit])[1:-1] + ("..." if len(text) > limit else "")


def error_response(request: Request, exception: Exception) -> HTTPResponse:
    """The spec's error body for ``exception``. Anything unexpected is ``INTERNAL``, logged with
    its traceback; a request refused before any route (unreadable, over a limit, too slow) or a
    timeout is logged in one line."""
    error = as_api_error(exception)
    if type(error) is Internal:
        error_logger.exception("unexpected error on %s %s", request.method, request.path)
    elif (request.route is None or error is not exception) and not isinstance(
        error, NotFound | MethodNotAllowed
    ):
        error_logger.warning(
            "refused %s %s: %d %s (%s)",
            one_line(getattr(request.ctx, "method_sent", None) or request.method, 20),
            one_line(request.raw_url.decode("ascii", errors="backslashreplace")),
            error.status,
            error.code,
            one_line(str(exception)),
        )
    body = error.body(x_request_id(request))
    body_request_id = None if error.status == 422 else FRESH
    return send(
        request,
        body,
        status=error.status,
        headers=dict(error.headers),
        body_request_id=body_request_id,
    )
