"""Every response to a valid token is recorded in the worker's ledger before it leaves
(docs/decisions.md#ledger).

Every route is wrapped in :func:`ledgered`, and the errors raised before any route ran pass
:func:`recorded` in the app's error handler (no response middleware: Sanic's middleware
machinery costs a share of every request). When the ledger cannot be written the response is
replaced by a 503, which is recorded too, marked as superseding whatever line the answer it
replaces may have left (docs/operating/ledger.md#failed).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sanic import Request
from sanic.log import error_logger
from sanic.response import HTTPResponse

from gateway.edge import steps
from gateway.errors import NotReady
from gateway.handlers.access import credential
from gateway.http.sending import Handler, error_response, send, x_request_id
from gateway.http.stamps import now_us, utc_now_text
from gateway.ledger.recording import Ledger, LedgerEntry, LedgerUnavailable
from tokens.store import TokenRecord

if TYPE_CHECKING:
    from gateway.fleet.gate import RedisGate


def ledgered(
    handler: Handler, gate: Callable[[Request], Awaitable[None] | None] | None = None
) -> Handler:
    """Every route: ``gate`` (if any, awaited if it is a coroutine function) then the handler;
    its answer, or its error's, recorded before it leaves. One coroutine per request, whatever
    the steps."""
    if gate is not None and inspect.iscoroutinefunction(gate):
        return _ledgered_async(handler, gate)

    async def run(request: Request, **kwargs: str) -> HTTPResponse:
        try:
            if gate is not None:
                gate(request)
            response = await handler(request, **kwargs)
        except Exception as exception:
            response = error_response(request, exception)
        return await recorded(request, response)

    run.__name__ = handler.__name__
    return run


def _ledgered_async(handler: Handler, gate: Callable[[Request], Awaitable[None]]) -> Handler:
    async def run(request: Request, **kwargs: str) -> HTTPResponse:
        try:
            await gate(request)
            response = await handler(request, **kwargs)
        except Exception as exception:
            response = error_response(request, exception)
        return await recorded(request, response)

    run.__name__ = handler.__name__
    return run


async def ledger_token(request: Request) -> TokenRecord | None:
    """The valid token this request carried, if any (also for unknown paths and methods); in
    fleet mode awaited from Redis, uncounted, so a worker whose Redis hangs serves meanwhile."""
    token = getattr(request.ctx, "token", None)
    if token is not None or getattr(request.ctx, "auth_checked", False):
        return token
    if request.path == "/v1/health/live" or request.path.startswith(PUBLIC_LOG):
        return None  # public, reading no token (docs/decisions.md#public-endpoints)
    text = credential(request)
    if text is None:
        return None
    gate: RedisGate | None = request.app.ctx.fleet
    if gate is not None:
        return await gate.check_async(text, now_us())
    checked: TokenRecord | None = request.app.ctx.token_check.check(text, datetime.now(UTC))
    return checked


EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
PUBLIC_LOG = "/v1/log/"


def sent_digest(request: Request, sent: bytes) -> str:
    """The hex SHA-256 of the body bytes sent: the one ``send`` was given for these very bytes
    (the same object), else computed here."""
    if not sent:
        return EMPTY_SHA256
    known = getattr(request.ctx, "known_digest", None)
    if known is not None and known[0] is sent:
        return known[1]
    return hashlib.sha256(sent).hexdigest()


def ledger_entry(
    request: Request, response: HTTPResponse, token: TokenRecord, method: str | None = None
) -> LedgerEntry:
    """The entry of ``response`` to ``request``; ``method``: the client's, when the request is
    not it (a cache fill, always a GET, for a client's HEAD)."""
    body = response.body or b""
    head = (method or request.method) == "HEAD"
    sent = b"" if head or response.status == 304 else body
    return LedgerEntry(
        ts=utc_now_text(),
        x_request_id=x_request_id(request),
        request_id=getattr(request.ctx, "body_request_id", None),
        sha256=sent_digest(request, sent),
        bytes=len(sent),
        etag=response.headers.get("etag"),
        token_id=token.id,
        token_name=token.name,
        method=method or getattr(request.ctx, "method_sent", None) or request.method,
        path=request.path,
        query=request.query_string,
        status=response.status,
    )


async def recorded(request: Request, response: HTTPResponse) -> HTTPResponse:
    """``response`` once the ledger holds it on disk (docs/decisions.md#ledger), when the request
    carried a valid token; a 503 instead when the ledger cannot be written. For the edge
    (:mod:`gateway.edge.steps`): its auth step is recorded like the request it stands for, then
    answered in the edge's form; a cache fill, recorded by its auth step, is not recorded again,
    unless it is refused (:func:`record_refused_fill`)."""
    asked = getattr(request.ctx, "edge", None)
    if asked is None:
        return await record(request, response)
    if asked == steps.AUTH:
        return steps.auth_answer(request, await record(request, response))
    if asked == steps.FILL:
        answer = steps.fill_answer(request, response)
        if answer is not response:
            await record_refused_fill(request, answer)
        return answer
    return response  # a replay: counted and recorded by its auth step


async def record_refused_fill(request: Request, answer: HTTPResponse) -> None:
    """A cache fill refused (the answer changed since its auth step): the client gets this 503,
    not the answer the step recorded under the same request id, so it is recorded superseding
    that one (:func:`record_superseding`). Only while the token is valid: one revoked or expired
    since the step, or in fleet mode a Redis that cannot be reached, leaves the step's entry
    (docs/operating/edge.md#limits)."""
    ledger: Ledger | None = request.app.ctx.ledger
    if ledger is None:
        return
    try:
        token = await ledger_token(request)
    except NotReady as error:
        error_logger.error("the refused fill of %s is not recorded: %s", request.path, error)
        return
    if token is not None:
        await record_superseding(request, ledger, answer, token, steps.fill_method(request))


async def record_superseding(
    request: Request,
    ledger: Ledger,
    answer: HTTPResponse,
    token: TokenRecord,
    method: str | None = None,
) -> None:
    """Record ``answer``, a 503 sent in place of an answer already recorded (or that may be),
    marked ``"supersedes": true``: readers show it instead (docs/operating/ledger.md#failed).
    When it cannot be recorded, it is sent all the same."""
    try:
        await ledger.append(ledger_entry(request, answer, token, method), supersedes=True)
    except LedgerUnavailable as failure:
        error_logger.error("%s; the 503 is not recorded", failure)


async def record(request: Request, response: HTTPResponse) -> HTTPResponse:
    ledger: Ledger | None = request.app.ctx.ledger
    if ledger is None:
        return response
    try:
        token = await ledger_token(request)
    except NotReady as error:
        # Fleet mode, Redis unreachable: whether the token is valid, and so whether this answer
        # must be recorded, cannot be known. 503, as for any request with a token (section 10).
        error_logger.error("%s %s: %s; answering 503", request.method, request.path, error)
        return error_response(request, error)
    except Exception:
        error_logger.exception("token check failed on %s %s", request.method, request.path)
        return await unavailable(request, ledger, None)
    if token is None:
        return response
    try:
        await ledger.append(ledger_entry(request, response, token))
    except LedgerUnavailable as error:
        error_logger.error("%s; answering 503", error)
    except Exception:
        error_logger.exception("ledger entry failed on %s %s", request.method, request.path)
    else:
        return response
    return await unavailable(request, ledger, token)


async def unavailable(request: Request, ledger: Ledger, token: TokenRecord | None) -> HTTPResponse:
    """The 503 sent instead of an answer the ledger could not hold, recorded (by a new writer, if
    the last one died) marked ``"supersedes": true``: readers show it, not the answer that did not
    leave (docs/operating/ledger.md#failed). When it cannot be recorded either, it is sent all the
    same."""
    error = NotReady("The request ledger is unavailable.")
    response = send(request, error.body(x_request_id(request)), status=error.status)
    if token is not None:
        await record_superseding(request, ledger, response, token)
    return response
