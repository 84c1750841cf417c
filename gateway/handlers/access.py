"""Who is asking, and may they: the bearer token (or the explorer's cookie), then the limits.

``/v1`` takes only ``Authorization: Bearer``; the explorer's paths also take the ``fxev_sesion``
cookie its sign-in sets. A valid token is left on ``request.ctx.token`` for the ledger.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sanic import Request

from gateway.edge.steps import FILL
from gateway.errors import InvalidToken, NotReady, RateLimited, Unauthorized
from gateway.fleet.gate import Behind
from gateway.http.stamps import now_us

if TYPE_CHECKING:
    from gateway.fleet.gate import RedisGate
    from gateway.handlers.published import Published, PublishedView
    from gateway.limits.rule import Decision
    from tokens.store import TokenRecord

COOKIE = "fxev_sesion"
# Seconds a request waits for its host's mirror beyond one mirror interval (FXEV_MIRROR_INTERVAL_S)
# when its token was answered at a later revision: what one mirror run takes. Never more than
# CATCH_UP_MAX_S in all, well within the edge's 30 s wait for a gateway's answer.
CATCH_UP_MARGIN_S = 2.0
CATCH_UP_MAX_S = 20.0


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer`` header's value, or None. Only spaces and tabs
    are trimmed (RFC 9110's OWS): another space, such as a no-break space, is part of what was
    presented, so no token's (RFC 6750's ``token68`` holds none), and the request gets the 401
    of an invalid one."""
    scheme, _, token = authorization.partition(" ")
    token = token.strip(" \t")
    return token if scheme.lower() == "bearer" and token else None


def presented_token(request: Request) -> str | None:
    """The request's bearer token. ``Authorization`` given on more than one line is read as one
    value, its lines joined by commas (RFC 9110, section 5.3): not a field that takes a list, so
    no token, and the request gets the 401 of an invalid one whichever line a reader took."""
    lines = request.headers.getall("authorization", ())
    return bearer_token(lines[0] if len(lines) == 1 else ", ".join(lines))


def cookie_token(request: Request) -> str | None:
    """The token in the explorer's cookie, on explorer paths only (never under ``/v1``)."""
    if request.path.startswith("/v1/") or request.path == "/v1":
        return None
    value = request.cookies.get(COOKIE)
    return value or None


def credential(request: Request) -> str | None:
    """The token the request presents: its bearer token, else (outside ``/v1``) its cookie."""
    return presented_token(request) or cookie_token(request)


def authenticate(request: Request) -> None:
    request.ctx.auth_checked = True
    token = presented_token(request)
    if token is None:
        raise Unauthorized("A bearer token is required.")
    record = request.app.ctx.token_check.check(token, datetime.now(UTC))
    if record is None:
        raise InvalidToken("The token is invalid, revoked or expired.")
    request.ctx.token = record


def limit_rate(request: Request) -> None:
    """Count this request against its token's limits (real clock), or refuse it with 429."""
    decision = request.app.ctx.limiter.acquire_us(request.ctx.token.id, now_us())
    if not decision.allowed:
        raise RateLimited(decision.retry_after)


def admit(request: Request) -> None:
    """The steps before every authenticated handler on one host: the token (401), then its
    limits (429). A cache fill from the edge was admitted (and counted) by the edge's auth step
    already (:mod:`gateway.edge.steps`)."""
    if getattr(request.ctx, "edge", None) == FILL:
        return
    authenticate(request)
    limit_rate(request)


async def admit_fleet(request: Request) -> None:
    """:func:`admit` in fleet mode (docs/operating/fleet.md#redis): both steps are one round trip
    to Redis, awaited; Redis unreachable is 503 ``INTERNAL``, retryable. A cache fill from the
    edge was admitted by its auth step already."""
    if getattr(request.ctx, "edge", None) == FILL:
        return
    request.ctx.auth_checked = True
    token = presented_token(request)
    if token is None:
        raise Unauthorized("A bearer token is required.")
    if await admitted(request, token) is None:
        raise InvalidToken("The token is invalid, revoked or expired.")


async def admitted(request: Request, token: str) -> TokenRecord | None:
    """The record of ``token`` if it is valid (left on ``request.ctx.token``), counted against
    its limits (429 past one); None, uncounted, if it is not. On one host the token check then
    the limiter; in fleet mode both in one atomic round trip to Redis (section 10), awaited."""
    request.ctx.auth_checked = True
    gate: RedisGate | None = request.app.ctx.fleet
    if gate is None:
        checked: TokenRecord | None = request.app.ctx.token_check.check(token, datetime.now(UTC))
        if checked is not None:
            request.ctx.token = checked
            limit_rate(request)
        return checked
    if request.app.ctx.secret is None:  # Redis not reached since this worker started
        raise NotReady("The shared state is unavailable.")
    record, decision = await admitted_at_mark(request, gate, token)
    if record is not None:
        request.ctx.token = record
        if not decision.allowed:
            raise RateLimited(decision.retry_after)
    return record


async def admitted_at_mark(
    request: Request, gate: RedisGate, token: str
) -> tuple[TokenRecord | None, Decision]:
    """The fleet's admission of ``token`` at this gateway's published revision. A token already
    answered at a later revision (by a gateway whose mirror is ahead of this one's) waits for
    this host's mirror to reach it, at most one mirror interval plus :data:`CATCH_UP_MARGIN_S`
    (and :data:`CATCH_UP_MAX_S`), then is admitted (and counted) at it: its
    ``dataset_revision`` never goes back (DECISIONS 4). Not reached in time: 503 ``INTERNAL``,
    retryable, recorded for the token, nothing counted (docs/operating/fleet.md#monotonic)."""
    view: PublishedView = request.app.ctx.view
    interval_s = request.app.ctx.settings.mirror_interval_s
    deadline = time.monotonic() + min(interval_s + CATCH_UP_MARGIN_S, CATCH_UP_MAX_S)
    while True:
        # The request's look at the pointer (DECISIONS 4), taken before the round trip so that
        # the revision admitted is the one answered at: one round trip, not a second to raise
        # the mark after a publish (DECISIONS 10). The handler reuses it (reading.published).
        request.ctx.published = looked = view.current()
        revision = revision_of(looked)
        try:
            record, decision = await gate.admit_async(token, now_us(), revision)
            break
        except Behind as behind:
            request.ctx.token = behind.record
            if not await view.reached(behind.mark, deadline - time.monotonic()):
                raise NotReady(
                    f"This gateway has not mirrored revision {behind.mark} yet."
                ) from behind
    if record is None or not decision.allowed:
        return record, decision
    # Another request of this worker found the pointer moved during the round trip: the view now
    # holds the newer revision, which the handler answers at, so the mark says it first.
    while looked is not None and not view.holds(looked):
        request.ctx.published = looked = view.current()
        if revision_of(looked) > revision:
            revision = revision_of(looked)
            await gate.mark_async(token, now_us(), revision)
    return record, decision


def revision_of(published: Published | None) -> int:
    return 0 if published is None else published.revision
