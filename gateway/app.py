"""Sanic wiring: ``create_app(settings)`` assembled from small ``setup_*`` functions.

The parts live in the packages below it: the ``/v1`` handlers and their table
(:mod:`gateway.handlers.routes`), the explorer's routes (:mod:`gateway.handlers.explorer`), the
gate in front of them (:mod:`gateway.handlers.access`), sending and error bodies
(:mod:`gateway.http.sending`), the request ledger (:mod:`gateway.handlers.ledgering`) and the
HTTP/1.1 connection (:mod:`gateway.server.http1`). This module imports them; none of them
imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from typing import Any

import redis
from sanic import Request, Sanic
from sanic.exceptions import MethodNotAllowed, NotFound
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.core import business_days
from builder.core.settings import Settings, load_settings
from builder.disk.durable import read_or_create_secret
from builder.ops.alerts import AlertView
from builder.tree.reader import TreeReader
from gateway.api import pagetoken
from gateway.edge import steps
from gateway.errors import NotReady
from gateway.fleet.gate import EDGE_SECRET_KEY, FleetAlerts, RedisGate
from gateway.handlers.access import admit, admit_fleet
from gateway.handlers.explorer import setup_explorer
from gateway.handlers.lane import AuthLane, start_lane, stop_lane
from gateway.handlers.ledgering import ledgered, recorded
from gateway.handlers.published import PublishedView
from gateway.handlers.reading import lima_today
from gateway.handlers.routes import ROUTES
from gateway.http import head
from gateway.http.sending import error_response, is_preflight, preflight
from gateway.ledger.reading import ledger_folder
from gateway.ledger.recording import Ledger
from gateway.limits.ring import RateLimiter
from gateway.limits.rule import LimaClock, Limits
from gateway.server.http1 import GatewayProtocol
from tokens.cache import CachedTokenCheck
from tokens.store import TokenStore

APP_NAME = "fxev_gateway"
SECRETS_RETRY_S = 0.5  # how often a gateway that started while Redis was down tries it again
METHODS = ["GET", "HEAD"]


class GatewaySanic(Sanic):
    """Sanic, served over :class:`GatewayProtocol` wherever it is served (``fxev serve``, the
    benchmarks), unless a protocol is named."""

    def prepare(self, *args: Any, protocol: Any = None, **kwargs: Any) -> None:
        super().prepare(*args, protocol=protocol or GatewayProtocol, **kwargs)


def create_app(settings: Settings, *, ledger: bool = True) -> Sanic:
    """The gateway. ``ledger=False`` exists only for the benchmark's ledger-off comparison.

    Sanic's own settings come from ``SANIC_*`` variables as usual (``SANIC_REQUEST_TIMEOUT``:
    how long a client may take to send its request before the 408, 60 s by default), but for
    the size limits of a request, which are the edge's too (:data:`gateway.http.head.HEAD_MAX`,
    :data:`gateway.http.head.BODY_MAX`)."""
    app = GatewaySanic(APP_NAME, strict_slashes=True)
    app.config.AUTO_EXTEND = False
    app.config.REQUEST_MAX_SIZE = head.BODY_MAX  # as much as the edge takes
    app.ctx.settings = settings
    if settings.public_url is not None:
        # Sanic reads a request's scheme and host from SERVER_NAME before any header: the
        # explorer's cookie, Origin check and printed URLs follow the public origin.
        app.config.SERVER_NAME = settings.public_url
    app.ctx.ledger_enabled = ledger
    origins = settings.cors_origins
    app.ctx.cors_origins = None if origins is None else frozenset(origins)
    setup_stores(app)
    app.before_server_start(load_calendar_ahead)  # after the stores: it reads their clock
    setup_errors(app)
    setup_routes(app)
    setup_explorer(app)
    return app


def create_app_from_env() -> Sanic:
    """The factory each worker process calls (``AppLoader``)."""
    return create_app(load_settings(os.environ))


@dataclasses.dataclass(frozen=True, slots=True)
class HomeStores:
    """What a worker on one host opens in its home (docs/operating/stores.md): the token store,
    the page-token and edge secrets, the limiter's state and the alert store."""

    tokens: TokenStore
    secret: bytes
    edge_secret: str
    limiter: RateLimiter
    alerts: AlertView

    @classmethod
    def open(cls, settings: Settings) -> HomeStores:
        limits = Limits(settings.rate_limit_per_min, settings.rate_limit_per_day)
        with contextlib.ExitStack() as opened:  # on a failure, what opened is closed again
            tokens = TokenStore.open(settings.home)
            opened.callback(tokens.close)
            secret = read_or_create_secret(settings.home / pagetoken.SECRET_FILE)
            edge_secret = read_or_create_secret(settings.home / steps.SECRET_FILE).hex()
            limiter = RateLimiter.open(settings.home, limits)
            opened.callback(limiter.close)
            alerts = AlertView.open(settings.home)
            opened.pop_all()
        return cls(tokens, secret, edge_secret, limiter, alerts)

    def close(self) -> None:
        self.tokens.close()
        self.limiter.close()
        self.alerts.close()


def check_stores(settings: Settings) -> None:
    """Open and close, once in the main process, what each worker opens first: one that cannot
    be opened (a corrupt file, a folder where a file is due) is then one line from ``fxev
    serve`` before any worker starts, not a worker's traceback that stops them all. (A ledger
    that cannot be written is not one of them: the gateway starts and answers 503 meanwhile.)"""
    if not settings.redis_url:
        HomeStores.open(settings).close()
    TreeReader(settings.site).pointer()


def setup_stores(app: Sanic) -> None:
    """Open the token and alert stores once per worker, after the fork. In fleet mode both are
    in Redis: a gateway host has no alert store (docs/operating/fleet.md#alerts)."""

    @app.before_server_start
    async def open_stores(app: Sanic) -> None:
        settings: Settings = app.ctx.settings
        limits = Limits(settings.rate_limit_per_min, settings.rate_limit_per_day)
        app.ctx.fleet = None
        if settings.redis_url:  # fleet mode: tokens, limits, page secret in Redis
            app.ctx.fleet = RedisGate.open(settings.redis_url, limits)
            app.ctx.tokens = app.ctx.token_check = app.ctx.limiter = None  # the gate is both
            app.ctx.secret = app.ctx.edge_secret = None  # until Redis answers: 503
            app.ctx.alerts = FleetAlerts(app.ctx.fleet.client)
        else:
            home = HomeStores.open(settings)
            app.ctx.tokens = home.tokens
            app.ctx.token_check = CachedTokenCheck(home.tokens)  # re-read on a change
            app.ctx.secret, app.ctx.edge_secret = home.secret, home.edge_secret
            app.ctx.limiter, app.ctx.alerts = home.limiter, home.alerts
        app.ctx.view = PublishedView(TreeReader(settings.site))
        app.ctx.lima = LimaClock()
        app.ctx.ledger = Ledger(ledger_folder(settings.home)) if app.ctx.ledger_enabled else None
        if app.ctx.ledger is not None:
            app.ctx.ledger.start()  # its writer process, warm before the first request
        app.ctx.lane = app.ctx.lane_server = None
        if settings.edge_lane:  # the edge's auth lane, beside Sanic (gateway.handlers.lane)
            lane = AuthLane(
                app.ctx.view,
                app.ctx.ledger,
                app.ctx.edge_secret or "",  # in fleet mode, set once read from Redis
                token_check=app.ctx.token_check,
                limiter=app.ctx.limiter,
                fleet=app.ctx.fleet,
                cors_origins=app.ctx.cors_origins,
            )
            app.ctx.lane, app.ctx.lane_server = lane, await start_lane(lane, settings.edge_lane)
        if app.ctx.fleet is not None:
            await read_shared_secrets(app)

    @app.after_server_stop
    async def close_stores(app: Sanic) -> None:
        await stop_lane(app.ctx.lane, app.ctx.lane_server)
        if app.ctx.fleet is not None:
            await app.ctx.fleet.aclose()
        else:
            app.ctx.token_check.close()
            app.ctx.tokens.close()
            app.ctx.limiter.close()
        app.ctx.alerts.close()
        if app.ctx.ledger is not None:
            app.ctx.ledger.close()


async def load_calendar_ahead(app: Sanic) -> None:
    """Load Peru's calendar of this year and the last in each worker before it answers. On first
    use the ``holidays`` package imports the module of every country it knows (0.1-0.3 s), and
    freshness uses it: each worker's first ``/v1/rates/latest`` waited for that, and every other
    connection of the worker with it (docs/performance.md#first-answer). A calendar that cannot
    be loaded stops no worker: the log says why, and the requests that read the calendar fail
    as they would have without this."""
    this_year = lima_today(app).year
    try:
        business_days.load_calendar(range(this_year - 1, this_year + 1))
    except Exception as error:  # the same error reaches each request that reads the calendar
        error_logger.warning("Peru's calendar could not be loaded ahead: %s", error)


async def read_shared_secrets(app: Sanic) -> None:
    """Fleet mode: the page-token secret and the edge's credential, from Redis. A worker that
    starts while Redis is down must not fail its start (Sanic would stop the whole gateway):
    it serves, answering 503 ``INTERNAL`` to what needs Redis (:func:`admit_fleet`), and reads
    them in the background once Redis answers."""
    fleet: RedisGate = app.ctx.fleet

    def read() -> tuple[bytes, str]:
        return fleet.page_secret(), fleet.page_secret(EDGE_SECRET_KEY).hex()

    async def read_when_back() -> None:
        while True:
            await asyncio.sleep(SECRETS_RETRY_S)
            try:
                found = await asyncio.to_thread(read)
            except (redis.RedisError, NotReady):
                continue
            keep(*found)
            error_logger.info("Redis answers again: the shared secrets are read")
            return

    def keep(secret: bytes, edge_secret: str) -> None:
        app.ctx.secret, app.ctx.edge_secret = secret, edge_secret
        if app.ctx.lane is not None:
            app.ctx.lane.credential = edge_secret.encode("ascii")

    try:
        keep(*read())
    except (redis.RedisError, NotReady) as error:
        error_logger.warning("Redis unreachable at start (%s): 503 until it answers", error)
        app.add_task(read_when_back(), name="fxev_shared_secrets")


def setup_errors(app: Sanic) -> None:
    """Errors raised before any route's handler ran (unknown path, method, malformed request)
    are answered here, and recorded like every other response; but a CORS preflight from a
    listed origin, which routing refused as a method, is answered 204 unrecorded
    (docs/decisions.md#cors)."""

    @app.exception(Exception)
    async def render_error(request: Request, exception: Exception) -> HTTPResponse:
        if isinstance(exception, MethodNotAllowed):
            if not is_route(app, request.path):
                # Sanic's router checks the method before the trailing slash: another method
                # on ``/v1/coverage/`` must not be a 405 whose Allow offers a GET that is a 404.
                exception = NotFound(f"Requested URL {request.path} not found")
            elif is_preflight(request):
                return preflight(request)
        return await recorded(request, error_response(request, exception))


def is_route(app: Sanic, path: str) -> bool:
    """Whether a GET of ``path`` finds a route (strict slashes)."""
    try:
        app.router.get(path, "GET", None)
    except NotFound:
        return False
    return True


def setup_routes(app: Sanic) -> None:
    """Every ``/v1`` route, behind :func:`admit` (in fleet mode :func:`admit_fleet`) when it
    needs a token, and ledgered; and the edge's replay and refusal routes, unknown paths to anyone
    but the edge (:mod:`gateway.edge.steps`)."""
    gate = admit_fleet if app.ctx.settings.redis_url else admit
    for path, handler, needs_token in ROUTES:
        wrapped = ledgered(handler, gate if needs_token else None)
        app.add_route(wrapped, path, methods=METHODS, name=handler.__name__)
    app.add_route(steps.replay, steps.ANSWER_PATH, methods=METHODS, name="edge_replay")
    app.add_route(steps.refusal, steps.REFUSAL_PATH, methods=METHODS, name="edge_refusal")
