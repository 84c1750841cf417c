"""The gateway's side of the shipped edge (docs/operating/edge.md): three kinds of request that
only the edge can make, each carrying the installation's edge credential (``X-Fxev-Edge``).

``GET /_edge/auth`` (the edge's ``auth_request``)
    The client's request, named by ``X-Original-URI`` and ``X-Original-Method``, is handled as
    if it had come directly: the same route, the same token check and count, the same parameter
    checks and the same ledger entry, written before the answer leaves. Only the answer's form
    changes (:func:`auth_answer`): a 200 the edge may serve from its cache becomes a bodiless 200
    carrying the request id and the current ETag (the edge keys its cache on it); any other
    answer (304, 401, 429, 400, 404...) becomes a 401 carrying the whole answer, packed, in
    ``X-Fxev-Answer``.
``GET /_edge/answer`` (the edge's ``error_page 401``)
    Sends back the answer packed in ``X-Fxev-Answer``: status, headers and body as they were.
    Nothing is counted or recorded: the auth step did both. A 304 carries, for the edge only,
    the type of the representation it stands for (``X-Fxev-Type``): nginx compresses a 200 of
    that type for a client accepting gzip, and its 304 must then carry the weak ETag too.
``GET /_edge/refusal/<name>`` (the edge's own refusals: :data:`REFUSALS`)
    The answer a gateway gives a request it cannot read (``malformed``: 400
    ``INVALID_PARAMS``), one over its size limits (``too_large``: the same code, its own
    message) or one whose method it does not take (``not_allowed``: 405
    ``METHOD_NOT_ALLOWED``), for a request nginx refused itself: the API's body with a fresh
    request id and its ``Repr-Digest``: the gateway words the API's answers (nginx writes the
    same when no gateway answers).
    Nothing is counted or recorded: no token was read, as for the gateway's own refusals.
The cache fill (the original request, with ``X-Fxev-Admitted`` and ``X-Fxev-Expect``)
    Admitted and recorded by the auth step under the request id it names, so neither checked
    nor counted again, nor recorded; answered only if its ETag and its CORS headers are still
    those the auth step named (``X-Fxev-Expect``: the ETag, a space, ``X-Fxev-Cors``), else a
    retryable 503, which the edge does not cache: a gateway whose FXEV_CORS_ORIGINS differs
    from the auth step's (a rolling change) never fills an entry under the other's key. That
    503 is what the client gets in place of the answer its auth step recorded, so it is recorded
    in turn, superseding it (:func:`gateway.handlers.ledgering.record_refused_fill`), under the
    client's method (``X-Original-Method``: a fill is a GET, also for a HEAD).
A client's request the edge passes on (``X-Fxev-Passed``, the credential)
    Answered as a direct request, but that its head may be longer than a client's
    (:func:`came_through`): the edge has refused a head over the limit, and adds headers.

Without the credential, ``/_edge/...`` is an unknown path (404 ``NOT_FOUND``) and the other
headers mean nothing. The credential is a secret made once per installation like the page-token
secret (:func:`builder.disk.durable.read_or_create_secret`; in Redis in fleet mode), compared with
``hmac.compare_digest``; ``fxev edge config`` writes it into the edge's configuration.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import TYPE_CHECKING

from sanic import Request
from sanic.exceptions import BadRequest
from sanic.response import HTTPResponse

from builder.core import vocabulary
from gateway.errors import ApiError, InvalidParams, MethodNotAllowed, NotFound, NotReady
from gateway.http.response import BytesResponse
from gateway.http.sending import (
    MALFORMED,
    NOT_ALLOWED,
    TOO_LARGE,
    cors_state,
    error_response,
    repr_digest,
)

if TYPE_CHECKING:
    from sanic.http import Http

CREDENTIAL = "x-fxev-edge"
PASSED = "x-fxev-passed"  # the credential, on a request the edge passes on as it came
ADMITTED = "x-fxev-admitted"
EXPECT = "x-fxev-expect"
ANSWER = "X-Fxev-Answer"
ETAG = "X-Fxev-Etag"
CORS = "X-Fxev-Cors"  # which CORS headers the answer carries (sending.cors_state): in the key
TYPE = "X-Fxev-Type"
AUTH_PATH = "/_edge/auth"
ANSWER_PATH = "/_edge/answer"
REFUSAL_PREFIX = "/_edge/refusal/"  # then the refusal's name, one of REFUSALS
REFUSAL_PATH = REFUSAL_PREFIX + "<name:str>"
SECRET_FILE = "edge.secret"
AUTH, FILL, REPLAY, REFUSAL = "auth", "fill", "replay", "refusal"
# The refusals the edge asks for, by name: what a gateway answers such a request.
REFUSALS: dict[str, tuple[type[ApiError], str]] = {
    "malformed": (InvalidParams, MALFORMED),
    "too_large": (InvalidParams, TOO_LARGE),
    "not_allowed": (MethodNotAllowed, NOT_ALLOWED),
}


def has_credential(request: Request, header: str = CREDENTIAL) -> bool:
    """Whether the request carries this installation's edge credential (in ``header``)."""
    given = request.headers.getone(header, "")
    secret: str | None = request.app.ctx.edge_secret  # None: in fleet mode, Redis not reached yet
    return (
        bool(given) and secret is not None and hmac.compare_digest(given.encode(), secret.encode())
    )


def arrive(http: Http) -> None:
    """Called once a request's head is read, when it carries ``X-Fxev-Edge``: marks what the
    edge asks (``request.ctx.edge``) and, for the auth step, puts the original request in the
    place of ``/_edge/auth``. A wrong credential marks nothing: an ordinary request."""
    request = http.request
    if not has_credential(request):
        return
    path = request.path
    if path == AUTH_PATH:
        original = request.headers.getone("x-original-uri", "")
        method = request.headers.getone("x-original-method", "GET").upper()
        if method not in ("GET", "HEAD") or not original.startswith("/"):
            return  # not a request the edge would authorise: /_edge/auth stays unknown
        # An original under /_edge/ (nginx routed `/_edge/../v1/rates` by its path without dot
        # segments) is answered as a client's: an unknown path, since the routes below answer
        # only what the edge itself asks (``mode``).
        try:
            if not original.isascii():  # as Sanic refuses it in a direct request's line
                raise BadRequest("URL may only contain US-ASCII characters.")
            replaced = request.__class__(
                url_bytes=original.encode("ascii"),
                headers=request.headers,
                version=request.version,
                method=method,
                transport=request.transport,
                app=request.app,
                head=request.head,
            )
        except BadRequest:
            # A target Sanic cannot take: answered, as a direct one is, for the stand-in
            # request Sanic makes (no headers, so no token: neither counted nor recorded).
            http.url = original
            http.create_empty_request()
            http.request.ctx.edge = AUTH
            raise
        replaced.stream = http
        request.__class__._current.set(replaced)
        http.request = replaced
        replaced.ctx.edge = AUTH
    elif path == ANSWER_PATH:
        request.ctx.edge = REPLAY
    elif path.startswith(REFUSAL_PREFIX):
        request.ctx.edge = REFUSAL
    elif ADMITTED in request.headers:
        request.ctx.edge = FILL
        request.ctx.x_request_id = request.headers.getone(ADMITTED)[:36]


def came_through(request: Request) -> bool:
    """Whether the edge sent this request: one of its own (a ``mode``), or a client's it passed
    on (``X-Fxev-Passed``). The edge refuses a client's head over a gateway's limit, and what it
    adds may take the head over it."""
    return mode(request) is not None or has_credential(request, PASSED)


def mode(request: Request) -> str | None:
    """What the edge asks of this request: AUTH, FILL, REPLAY, or None (an ordinary request)."""
    return getattr(request.ctx, "edge", None)


def cacheable(response: HTTPResponse) -> bool:
    """A 200 the edge may store: an immutable answer with its ETag (as-of, evidence)."""
    return (
        response.status == 200
        and "etag" in response.headers
        and response.headers.get("cache-control") == vocabulary.IMMUTABLE
    )


def pack(response: HTTPResponse) -> str:
    """A whole answer in one header value: base64 of its status line, headers and body; a 304's
    representation type as ``X-Fxev-Type`` (the edge's, which it does not pass on)."""
    lines = [str(response.status)]
    if response.content_type and response.body and "content-type" not in response.headers:
        lines.append(f"content-type: {response.content_type}")
    elif response.status == 304 and response.content_type:
        lines.append(f"{TYPE}: {response.content_type}")
    lines += [f"{name}: {value}" for name, value in response.headers.items()]
    head = "\r\n".join(lines).encode(errors="surrogateescape")
    return base64.b64encode(head + b"\r\n\r\n" + (response.body or b"")).decode("ascii")


def unpack(text: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of a :func:`pack` text; ValueError if it is not one."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise ValueError("not a packed answer") from error
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("not a packed answer")
    status, *lines = head.decode(errors="surrogateescape").split("\r\n")
    headers = [(name, value) for name, _, value in (line.partition(": ") for line in lines)]
    return int(status), headers, body


def auth_answer(request: Request, response: HTTPResponse) -> HTTPResponse:
    """The auth step's answer to the edge, once the ledger holds the original one."""
    if cacheable(response):
        headers = {
            "X-Request-Id": response.headers["x-request-id"],
            ETAG: response.headers["etag"],
            CORS: cors_state(request.app.ctx.cors_origins, request.headers.get("origin")),
        }
        return BytesResponse(b"", status=200, headers=headers)
    return BytesResponse(b"", status=401, headers={ANSWER: pack(response)})


def fill_method(request: Request) -> str:
    """The method of the client's request a cache fill is for (GET or HEAD)."""
    return "HEAD" if request.headers.getone("x-original-method", "").upper() == "HEAD" else "GET"


def fill_answer(request: Request, response: HTTPResponse) -> HTTPResponse:
    """A cache fill's answer: the body the auth step described, or a retryable 503."""
    expected = request.headers.getone(EXPECT, "")
    if cacheable(response):
        cors = cors_state(request.app.ctx.cors_origins, request.headers.get("origin"))
        if f"{response.headers['etag']} {cors}" == expected:
            return response
    error = NotReady("The answer changed since it was authorised; retry.")
    request.ctx.body_request_id = request.ctx.x_request_id  # this body's, not the route's
    body = error.body(request.ctx.x_request_id)
    headers = {
        "X-Request-Id": request.ctx.x_request_id,
        "Cache-Control": vocabulary.NO_STORE,
        "Repr-Digest": repr_digest(hashlib.sha256(body).hexdigest()),
    }
    return BytesResponse(body, status=error.status, headers=headers)


async def replay(request: Request) -> HTTPResponse:
    """``GET /_edge/answer``: the packed answer, as it was; an unknown path to anyone else."""
    if mode(request) != REPLAY:
        raise NotFound("No such path.")
    try:
        status, headers, body = unpack(request.headers.getone(ANSWER.lower(), ""))
    except ValueError as error:
        raise NotFound("No such path.") from error
    content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
    kept = [(k, v) for k, v in headers if k.lower() != "content-type"]
    response = BytesResponse(body, status=status, content_type=content_type)
    for name, value in kept:
        response.headers.add(name, value)
    return response


async def refusal(request: Request, name: str) -> HTTPResponse:
    """``GET /_edge/refusal/<name>``: the gateway's answer to a request nginx refused itself
    (its error body, request id and digest); an unknown path to anyone but the edge."""
    if mode(request) != REFUSAL or name not in REFUSALS:
        raise NotFound("No such path.")
    kind, message = REFUSALS[name]
    return error_response(request, kind(message))
