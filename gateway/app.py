"""Sanic wiring: ``create_app(settings)`` assembled from small ``setup_*`` functions.

Every handler follows DECISIONS 9: route -> authentication -> rate limit -> parameters -> data.
Bodies are stored bytes plus the envelope, sent as they are (:class:`BytesResponse`). Every
response to a valid token is recorded in the worker's ledger before it leaves: every route is
wrapped in :func:`ledgered`, and the errors raised before any route ran pass :func:`recorded` in
the error handler (no response middleware: Sanic's middleware machinery costs a share of every
request). When the ledger cannot be written the response is replaced by a 503.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime

from sanic import Request, Sanic
from sanic import exceptions as sanic_exceptions
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.alerts import AlertStore
from builder.business_days import today_in_lima
from builder.canonical import header_text, utc_timestamp
from builder.health import ntp_state
from builder.settings import Settings, load_settings
from builder.tree import Tree
from gateway import envelope, explorer, openapi, pagetoken, params
from gateway.errors import (
    ApiError,
    Internal,
    InvalidParams,
    MethodNotAllowed,
    NoObservations,
    NotFound,
    NotReady,
    RateLimited,
    Unauthorized,
)
from gateway.freshness import frescura, freshness_entry
from gateway.ledger import Ledger, LedgerEntry, LedgerUnavailable, ledger_folder
from gateway.published import Published, PublishedView
from gateway.ratelimit import LimaClock, Limits, RateLimiter, now_us
from gateway.response import BytesResponse
from gateway.stamps import fresh_request_id, utc_now_text
from tokens.cache import CachedTokenCheck
from tokens.store import TokenRecord, TokenStore

APP_NAME = "fxev_gateway"
PAGE_SIZE = 366
REQUEST_ID_NAMESPACE = uuid.UUID("6f1d3c2e-5b7a-4e0f-9a61-2f4c8d9e7b10")
JSON = "application/json"
NO_STORE = {"Cache-Control": "no-store"}
IMMUTABLE = {
    "Cache-Control": "private, max-age=31536000, immutable",
    "CDN-Cache-Control": "max-age=31536000",
}
METHODS = ["GET", "HEAD"]
Handler = Callable[..., Awaitable[HTTPResponse]]


def create_app(settings: Settings, *, ledger: bool = True) -> Sanic:
    """The gateway. ``ledger=False`` exists only for the benchmark's ledger-off comparison."""
    app = Sanic(APP_NAME, strict_slashes=True)
    app.config.AUTO_EXTEND = False
    app.ctx.settings = settings
    app.ctx.ledger_enabled = ledger
    setup_stores(app)
    setup_errors(app)
    setup_routes(app)
    explorer.setup_explorer(app)
    return app


def create_app_from_env() -> Sanic:
    """The factory each worker process calls (``AppLoader``)."""
    return create_app(load_settings(os.environ))


# -- per-worker stores -------------------------------------------------------------------------


def setup_stores(app: Sanic) -> None:
    """Open the token and alert stores once per worker, after the fork."""

    @app.before_server_start
    async def open_stores(app: Sanic) -> None:
        settings: Settings = app.ctx.settings
        app.ctx.tokens = TokenStore.open(settings.home)
        app.ctx.token_check = CachedTokenCheck(app.ctx.tokens)  # re-read when the file changes
        app.ctx.alerts = AlertStore.open(settings.home)
        app.ctx.secret = pagetoken.load_or_create_secret(settings.home)
        app.ctx.view = PublishedView(Tree(settings.site))
        limits = Limits(settings.rate_limit_per_min, settings.rate_limit_per_day)
        app.ctx.limiter = RateLimiter.open(settings.home, limits)
        app.ctx.lima = LimaClock()
        app.ctx.ledger = Ledger(ledger_folder(settings.home)) if app.ctx.ledger_enabled else None
        if app.ctx.ledger is not None:
            app.ctx.ledger.start()  # its writer process, warm before the first request

    @app.after_server_stop
    async def close_stores(app: Sanic) -> None:
        app.ctx.token_check.close()
        app.ctx.tokens.close()
        app.ctx.alerts.close()
        app.ctx.limiter.close()
        if app.ctx.ledger is not None:
            app.ctx.ledger.close()


# -- responses and errors ----------------------------------------------------------------------


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


def setup_errors(app: Sanic) -> None:
    """Errors raised before any route's handler ran (unknown path, method, malformed request)
    are answered here, and recorded like every other response."""

    @app.exception(Exception)
    async def render_error(request: Request, exception: Exception) -> HTTPResponse:
        return await recorded(request, error_response(request, exception))


# -- authentication and shared steps -----------------------------------------------------------


def presented_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def authenticate(request: Request) -> None:
    request.ctx.auth_checked = True
    token = presented_token(request)
    if token is None:
        raise Unauthorized("A bearer token is required.")
    record = request.app.ctx.token_check.check(token, datetime.now(UTC))
    if record is None:
        raise Unauthorized("The token is invalid, revoked or expired.")
    request.ctx.token = record


def limit_rate(request: Request) -> None:
    """Count this request against its token's limits (real clock), or refuse it with 429."""
    decision = request.app.ctx.limiter.acquire_us(request.ctx.token.id, now_us())
    if not decision.allowed:
        raise RateLimited(decision.retry_after)


def published(request: Request) -> Published:
    current = request.app.ctx.view.current()
    if current is None:
        raise NotReady("No revision has been published yet.")
    return current


def query(request: Request) -> dict[str, str]:
    return params.parse_query(request.query_string)


def tree(request: Request) -> Tree:
    return request.app.ctx.view.tree


def hoy_lima(request: Request) -> date:
    """Today in Lima: ``FXEV_NOW``'s when it is set, else the real clock's."""
    settings: Settings = request.app.ctx.settings
    if settings.now is not None:
        return today_in_lima(settings.now)
    return request.app.ctx.lima.day(now_us()).day


# -- handlers ----------------------------------------------------------------------------------


async def health_live(request: Request) -> HTTPResponse:
    return send(request, b'{"status":"alive"}', body_request_id=None)


async def health_ready(request: Request) -> HTTPResponse:
    published(request)
    params.no_params(query(request))
    return send(request, b'{"status":"ready"}', body_request_id=None)


async def openapi_document(request: Request) -> HTTPResponse:
    """Public (DECISIONS 9): the OpenAPI document, revalidated with its ETag."""
    params.no_params(query(request))
    headers = {"ETag": openapi.ETAG, "Cache-Control": openapi.CACHE_CONTROL}
    body = b"" if etag_matches(request, openapi.ETAG) else openapi.BODY
    status = 200 if body else 304
    return send(request, body, status=status, headers=headers, body_request_id=None)


async def rates(request: Request) -> HTTPResponse:
    pub = published(request)
    view: PublishedView = request.app.ctx.view
    # A query string answered as of a revision before: the same answer, before any parsing.
    raw_key = ("rates?", request.query_string)
    memo = view.memo_get(raw_key)
    if memo is not None:
        body, etag, tags, request_id = memo
        return send_immutable(request, body, etag, tags, body_request_id=request_id)
    given = query(request)
    q = params.rates_query(given, pub.revision, request.app.ctx.secret)
    canonical = None
    if q.as_of_revision is not None:
        canonical = params.rates_canonical_request(q, given)
        memo = view.memo_get(canonical)
        if memo is not None:
            view.memo_put(raw_key, memo)
            body, etag, tags, request_id = memo
            return send_immutable(request, body, etag, tags, body_request_id=request_id)
        request_id = str(uuid.uuid5(REQUEST_ID_NAMESPACE, canonical))
    else:
        request_id = x_request_id(request)
    page = tree(request).rates(q.series, q.start, q.end, q.revision, q.offset, PAGE_SIZE)
    if page.total == 0:
        raise NoObservations(f"No observations of {q.series} from {q.start} to {q.end}.")
    next_offset = q.offset + len(page.items)
    next_token = None
    if page.items and next_offset < page.total:
        next_token = pagetoken.sign(request.app.ctx.secret, q.revision, q.query_key, next_offset)
    annotations = None
    if q.include_annotations:
        wanted = params.AnnotationsQuery(q.currency, q.series, q.start, q.end)
        annotations = [a for a in tree(request).annotations(q.revision) if wanted.matches(a)]
    items = [(ref.prefix, pub.superseded_por.get(ref.observacion_id)) for ref in page.items]
    body = envelope.rates_body(items, page.total, next_token, annotations, q.revision, request_id)
    if canonical is None:
        return send(request, body)
    etag = '"' + hashlib.sha256(body).hexdigest() + '"'
    tags = {"Cache-Tag": ",".join(f"{q.currency}/{q.series}/{year}" for year in q.years())}
    view.memo_put(canonical, (body, etag, tags, request_id), len(body))
    view.memo_put(raw_key, (body, etag, tags, request_id))  # the same bytes, not counted twice
    return send_immutable(request, body, etag, tags, body_request_id=request_id)


async def rates_latest(request: Request) -> HTTPResponse:
    pub = published(request)
    view: PublishedView = request.app.ctx.view
    today = hoy_lima(request)
    # The body is a function of the query string, the published revision and today in Lima,
    # but for its fresh request_id: memoised cut around it.
    key = ("latest?", request.query_string, today)
    parts = view.memo_get(key)
    if parts is None:
        q = params.series_query(query(request))
        ref = tree(request).latest(q.series, pub.revision)
        if ref is None:
            raise NoObservations(f"The series {q.series} has no observations.")
        block = frescura(q.series, ref.fecha_serie, today)
        superseded_por = pub.superseded_por.get(ref.observacion_id)
        item = envelope.latest_prefix(ref.prefix, superseded_por, block)
        parts = envelope.finish_around_request_id(item, pub.revision)
        view.memo_put(key, parts, len(parts[0]) + len(parts[1]))
    head, tail = parts
    return send(request, head + x_request_id(request).encode() + tail)


async def observation(request: Request, obs_id: str) -> HTTPResponse:
    pub = published(request)
    obs_id = params.path_uuid("obs_id", obs_id)
    params.no_params(query(request))
    prefix = tree(request).detail(obs_id, pub.revision)
    if prefix is None:
        raise NotFound(f"No observation {obs_id}.")
    return send(request, envelope.finish(prefix, pub.revision, x_request_id(request)))


async def evidence(request: Request, ev_id: str) -> HTTPResponse:
    pub = published(request)
    view: PublishedView = request.app.ctx.view
    key = ("evidence", ev_id)  # the path segment as sent: a valid id, checked the first time
    found = view.memo_get(key)
    if found is None:
        found = evidence_answer(request, pub, params.path_uuid("ev_id", ev_id))
        view.memo_put(key, found, len(found[0]))
    if request.query_string:
        params.no_params(query(request))
    data, etag, headers, content_type = found
    return send_immutable(request, data, etag, headers, content_type)


def evidence_answer(
    request: Request, pub: Published, ev_id: str
) -> tuple[bytes, str, dict[str, str], str]:
    """(bytes, ETag, headers, content type) of a published evidence file, its bytes checked
    against their recorded SHA-256 as they are read."""
    params.no_params(query(request))
    meta = tree(request).evidence_meta(ev_id, pub.revision)
    if meta is None:
        raise NotFound(f"No evidence {ev_id}.")
    headers = {
        "X-Sha256": meta["sha256"],
        "X-Capturado-En": meta["capturado_en"],
        "X-Identidad-Consulta": header_text(meta["identidad_consulta"]),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox",
        "Content-Disposition": f'attachment; filename="{ev_id}"',
    }
    etag = '"' + meta["sha256"] + '"'
    return tree(request).evidence_bytes(meta["sha256"]), etag, headers, meta["content_type"]


async def revisions(request: Request) -> HTTPResponse:
    pub = published(request)
    at = params.revisions_at(query(request))
    root = tree(request).revision_at(utc_timestamp(at), pub.revision)
    if root is None:
        raise NoObservations("No revision was committed at or before that instant.")
    value = {"revision": root.revision, "ts_commit": root.ts_commit}
    return send(request, envelope.object_body(value, pub.revision, x_request_id(request)))


async def coverage(request: Request) -> HTTPResponse:
    pub = published(request)
    params.no_params(query(request))
    value = {"series": tree(request).coverage(pub.revision)}
    return send(request, envelope.object_body(value, pub.revision, x_request_id(request)))


async def alerts(request: Request) -> HTTPResponse:
    pub = published(request)
    open_only = params.alerts_open(query(request))
    items = [alert.to_json() for alert in request.app.ctx.alerts.list(open_only=open_only)]
    return send(request, envelope.listing_body(items, pub.revision, x_request_id(request)))


async def annotations(request: Request) -> HTTPResponse:
    pub = published(request)
    wanted = params.annotations_query(query(request))
    items = [a for a in tree(request).annotations(pub.revision) if wanted.matches(a)]
    return send(request, envelope.listing_body(items, pub.revision, x_request_id(request)))


def latest_dates(tree: Tree, revision: int) -> list[tuple[str, str]]:
    """(serie, fecha_serie of its newest item) of every series served at ``revision``."""
    found = []
    for serie in tree.root(revision).served:
        ref = tree.latest(serie, revision)
        if ref is not None:
            found.append((serie, ref.fecha_serie))
    return found


async def health_freshness(request: Request) -> HTTPResponse:
    pub = published(request)
    params.no_params(query(request))
    today = hoy_lima(request)
    entries = [
        freshness_entry("USD", serie, fecha, today)
        for serie, fecha in latest_dates(tree(request), pub.revision)
    ]
    value = {
        "series": entries,
        "alertas_abiertas": len(request.app.ctx.alerts.list(open_only=True)),
        "hoy_lima": today.isoformat(),
        "ntp": ntp_state(),
    }
    return send(request, envelope.object_body(value, pub.revision, x_request_id(request)))


# -- routes ------------------------------------------------------------------------------------


def admit(request: Request) -> None:
    """The steps before every authenticated handler: the token (401), then its limits (429)."""
    authenticate(request)
    limit_rate(request)


ROUTES: tuple[tuple[str, Handler, bool], ...] = (
    ("/v1/health/live", health_live, False),
    ("/v1/health/ready", health_ready, True),
    ("/v1/health/freshness", health_freshness, True),
    ("/v1/rates", rates, True),
    ("/v1/rates/latest", rates_latest, True),
    ("/v1/observations/<obs_id:str>", observation, True),
    ("/v1/evidence/<ev_id:str>", evidence, True),
    ("/v1/revisions", revisions, True),
    ("/v1/coverage", coverage, True),
    ("/v1/alerts", alerts, True),
    ("/v1/annotations", annotations, True),
    (openapi.PATH, openapi_document, False),
)


def ledgered(handler: Handler, gate: Callable[[Request], None] | None = None) -> Handler:
    """Every route: ``gate`` (if any) then the handler; its answer, or its error's, recorded
    before it leaves. One coroutine per request, whatever the steps."""

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


def setup_routes(app: Sanic) -> None:
    for path, handler, needs_token in ROUTES:
        wrapped = ledgered(handler, admit if needs_token else None)
        app.add_route(wrapped, path, methods=METHODS, name=handler.__name__)


# -- the ledger --------------------------------------------------------------------------------


def ledger_token(request: Request) -> TokenRecord | None:
    """The valid token this request carried, if any (also for unknown paths and methods)."""
    token = getattr(request.ctx, "token", None)
    if token is not None or getattr(request.ctx, "auth_checked", False):
        return token
    if request.path == "/v1/health/live":
        return None  # public, and it touches no store
    text = explorer.credential(request)
    return None if text is None else request.app.ctx.token_check.check(text, datetime.now(UTC))


EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def sent_digest(request: Request, sent: bytes) -> str:
    """The hex SHA-256 of the body bytes sent: the one ``send`` was given for these very bytes
    (the same object), else computed here."""
    if not sent:
        return EMPTY_SHA256
    known = getattr(request.ctx, "known_digest", None)
    if known is not None and known[0] is sent:
        return known[1]
    return hashlib.sha256(sent).hexdigest()


def ledger_entry(request: Request, response: HTTPResponse, token: TokenRecord) -> LedgerEntry:
    body = response.body or b""
    sent = b"" if request.method == "HEAD" or response.status == 304 else body
    return LedgerEntry(
        ts=utc_now_text(),
        x_request_id=x_request_id(request),
        request_id=getattr(request.ctx, "body_request_id", None),
        sha256=sent_digest(request, sent),
        bytes=len(sent),
        etag=response.headers.get("etag"),
        token_id=token.id,
        token_name=token.name,
        method=request.method,
        path=request.path,
        query=request.query_string,
        status=response.status,
    )


async def recorded(request: Request, response: HTTPResponse) -> HTTPResponse:
    """``response`` once the ledger holds it on disk (DECISIONS 5), when the request carried a
    valid token; a 503 instead when the ledger cannot be written."""
    ledger: Ledger | None = request.app.ctx.ledger
    if ledger is None:
        return response
    try:
        token = ledger_token(request)
        if token is None:
            return response
        await ledger.append(ledger_entry(request, response, token))
    except LedgerUnavailable as error:
        error_logger.error("%s; answering 503", error)
    except Exception:
        error_logger.exception("ledger entry failed on %s %s", request.method, request.path)
    else:
        return response
    unavailable = NotReady("The request ledger is unavailable.")
    body = unavailable.body(x_request_id(request))
    return send(request, body, status=unavailable.status)
