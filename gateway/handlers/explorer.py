"""The explorer's routes, outside ``/v1``: sign-in, the pages the builder rendered, evidence.

Authentication is the API's bearer token, presented either as ``Authorization: Bearer`` or as
the ``fxev_sesion`` cookie that ``POST /signin`` sets (HttpOnly, SameSite=Strict, Path=/, Secure
over https; a session cookie holding the token, so revocation takes effect on the next request).
A request without a valid one is sent to ``/signin`` (303) when it asks for HTML, and gets the
API's 401 body otherwise. Every response to a valid token or cookie passes the API's rate
limiter and lands in the ledger (every route is wrapped in ``ledgering.ledgered``, which reads
``request.ctx.token``).

Cross-site POSTs: the cookie is SameSite=Strict, so no other site can make the browser send it;
``/signin`` and ``/signout`` also refuse (403) a POST whose ``Sec-Fetch-Site`` is not
``same-origin`` (or ``none``) or, without it, whose ``Origin`` is not this origin, which stops
login CSRF (signing a victim in with the attacker's token). Non-browser clients send neither
header and are let through.

Pages are served as the builder wrote them, with the request-time parts filled in at their
markers: the open alerts and freshness (home) and this server's base URL (verify commands),
all HTML-escaped by the templates.

``gateway.app`` calls :func:`setup_explorer`; this module takes what it shares with the API from
the small modules beside it (access, sending, reading, ledgering, routes), never from the app.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from markupsafe import escape
from sanic import Request, Sanic
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.render.explorer import pages
from builder.tree.explorer import ExplorerReader
from gateway.api import params
from gateway.api.freshness import freshness
from gateway.errors import (
    ApiError,
    CrossSiteRequest,
    InvalidToken,
    MethodNotAllowedHere,
    NotFound,
    Unauthorized,
)
from gateway.handlers import routes
from gateway.handlers.access import COOKIE, admitted, credential
from gateway.handlers.ledgering import ledgered
from gateway.handlers.reading import alert_list, latest_dates, lima_today, published, tree
from gateway.http.sending import send

HTML = "text/html; charset=utf-8"
READ_METHODS = ["GET", "HEAD"]
SERIES_SEGMENT = re.compile(r"^[a-z_]{1,32}$")
YEAR = re.compile(r"^[0-9]{4}$")
PAGE_NUMBER = re.compile(r"^[1-9][0-9]{0,8}$")
STYLE = re.compile(rb"<style>(.*?)</style>", re.DOTALL)
PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


# -- pure helpers ------------------------------------------------------------------------------


def wants_html(accept: str) -> bool:
    return "text/html" in accept or "application/xhtml+xml" in accept


def same_origin_post(headers: Mapping[str, str], scheme: str, host: str) -> bool:
    """False when the browser says this POST comes from another site.

    ``Sec-Fetch-Site`` decides when present (browsers set it and pages cannot forge it);
    otherwise ``Origin``, when present, must be this origin.
    """
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = headers.get("origin")
    return origin is None or origin == f"{scheme}://{host}"


@functools.lru_cache(maxsize=8)
def policy_for_style(stylesheet: bytes) -> str:
    return pages.content_security_policy(stylesheet)


def page_policy(body: bytes) -> str:
    """The CSP of a page: its own inline stylesheet allowed by hash, nothing else. Taken from
    the page, so pages written by an older build keep their style until the next build."""
    match = STYLE.search(body)
    return policy_for_style(match[1] if match else pages.STYLESHEET.encode())


def fill_markers(body: bytes, parts: Mapping[bytes, bytes]) -> bytes:
    for marker, value in parts.items():
        body = body.replace(marker, value)
    return body


def page_file(relative: str) -> str:
    """The file under ``explorer/`` for a validated route; never outside it."""
    if ".." in relative or relative.startswith("/"):
        raise NotFound("No such page.")
    return relative


# -- credentials -------------------------------------------------------------------------------


async def identify(request: Request) -> bool:
    """Resolve a valid token or cookie, count it against the limits; False when there is none."""
    request.ctx.auth_checked = True
    text = credential(request)
    return text is not None and await admitted(request, text) is not None


def signin_redirect(request: Request) -> HTTPResponse:
    response = send(request, b"", status=303, content_type=HTML, headers={"Location": "/signin"})
    if request.cookies.get(COOKIE):
        set_session(request, response, "")
    return response


def set_session(request: Request, response: HTTPResponse, token: str) -> None:
    """Set the session cookie to ``token``, or expire it (``""``) with the very attributes it
    was set with: a browser ignores an expiry marked ``Secure`` from a plain-http origin that is
    not loopback, and Sanic's ``delete_cookie`` marks it so unless told otherwise."""
    response.add_cookie(
        COOKIE,
        token,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=request.scheme == "https",
        max_age=None if token else 0,
    )


# -- responses ---------------------------------------------------------------------------------


def html(request: Request, body: bytes, status: int = 200, **headers: str) -> HTTPResponse:
    policy = {"Content-Security-Policy": page_policy(body)}
    return send(
        request,
        body,
        status=status,
        content_type=HTML,
        headers={**PAGE_HEADERS, **policy, **headers},
        body_request_id=None,
    )


def error_html(request: Request, error: ApiError) -> HTTPResponse:
    body = pages.error_page(error.status, error.code, error.shown_message)
    return html(request, body, error.status, **dict(error.headers))


REQUIRED, OPTIONAL, NONE = "required", "optional", "none"


def explorer_route(handler: Any, credentials: str = REQUIRED) -> Any:
    """Identify the caller (``REQUIRED``: or send them to sign in; ``OPTIONAL``: count a valid
    one; ``NONE``: the handler does it), then run; errors as HTML pages for people."""

    async def run(request: Request, **kwargs: str) -> HTTPResponse:
        browser = wants_html(request.headers.get("accept", ""))
        try:
            if credentials != NONE:
                known = await identify(request)
                if not known and credentials == REQUIRED:
                    if browser:
                        return signin_redirect(request)
                    if credential(request) is not None:
                        raise InvalidToken("The token is invalid, revoked or expired.")
                    raise Unauthorized("A bearer token or a signed-in session is required.")
            return await handler(request, **kwargs)
        except ApiError as error:
            if not browser:
                raise
            return error_html(request, error)

    run.__name__ = f"explorer_{handler.__name__}"
    return run


def not_allowed(allowed: str) -> Any:
    async def refuse(request: Request, **_: str) -> HTTPResponse:
        raise MethodNotAllowedHere(allowed)

    return refuse


# -- pages -------------------------------------------------------------------------------------


def base_url(request: Request) -> str:
    return f"{request.scheme}://{request.host}"


async def live_parts(request: Request, body: bytes) -> dict[bytes, bytes]:
    parts: dict[bytes, bytes] = {}
    if pages.BASE_URL_MARKER in body:
        parts[pages.BASE_URL_MARKER] = str(escape(base_url(request))).encode()
    if pages.ALERTS_MARKER in body:
        parts[pages.ALERTS_MARKER] = pages.alerts_panel(await alert_list(request))
    if pages.FRESHNESS_MARKER in body:
        parts[pages.FRESHNESS_MARKER] = pages.freshness_panel(freshness_entries(request))
    return parts


def freshness_entries(request: Request) -> list[dict[str, Any]]:
    current = request.app.ctx.view.current()
    if current is None:
        return []
    today = lima_today(request.app)
    return [
        {"serie": serie, "fecha_serie": fecha, "frescura": freshness(serie, fecha, today).to_json()}
        for serie, fecha in latest_dates(tree(request), current.revision)
    ]


def explorer_pages(request: Request) -> ExplorerReader:
    """This worker's reader of the built pages, over the API's tree."""
    reader = getattr(request.app.ctx, "explorer_pages", None)
    if reader is None:
        reader = request.app.ctx.explorer_pages = ExplorerReader(tree(request))
    return reader


async def built_page(request: Request, relative: str) -> HTTPResponse:
    """The page built for the revision the API serves (``builder.tree.explorer``). A build
    removes the previous revision's pages once the pointer has moved: then ask it again."""
    route = page_file(relative)
    body = None
    for _ in range(2):
        current = request.app.ctx.view.current()
        body = None if current is None else explorer_pages(request).page(route, current.revision)
        if body is not None:
            break
    if body is None:
        raise NotFound("No such page in the explorer.")
    return html(request, fill_markers(body, await live_parts(request, body)))


async def home(request: Request) -> HTTPResponse:
    published(request)  # 503 before the first build
    return await built_page(request, "index.html")


async def series(request: Request, serie: str) -> HTTPResponse:
    if not SERIES_SEGMENT.match(serie):
        raise NotFound("No such series.")
    return await built_page(request, f"serie/{serie}/index.html")


async def series_year(request: Request, serie: str, year: str) -> HTTPResponse:
    if not SERIES_SEGMENT.match(serie) or not YEAR.match(year):
        raise NotFound("No such series or year.")
    return await built_page(request, f"serie/{serie}/{year}.html")


async def coverage_year(request: Request, serie: str, year: str) -> HTTPResponse:
    if not SERIES_SEGMENT.match(serie) or not YEAR.match(year):
        raise NotFound("No such series or year.")
    return await built_page(request, f"cobertura/{serie}/{year}.html")


async def observation(request: Request, obs_id: str) -> HTTPResponse:
    obs_id = params.path_uuid("obs_id", obs_id)
    return await built_page(request, f"observacion/{obs_id}.html")


async def revisions(request: Request) -> HTTPResponse:
    return await built_page(request, "revisiones/index.html")


async def revisions_page(request: Request, number: str) -> HTTPResponse:
    if not PAGE_NUMBER.match(number):
        raise NotFound("No such page of the revision log.")
    return await built_page(request, f"revisiones/{number}.html")


async def evidence(request: Request, ev_id: str) -> HTTPResponse:
    """The same bytes and headers as ``/v1/evidence/{ev_id}``."""
    return await routes.evidence(request, ev_id=ev_id)


# -- sign-in and sign-out ----------------------------------------------------------------------


async def signin_form(request: Request) -> HTTPResponse:
    return html(request, pages.signin_page(None))


async def signin(request: Request) -> HTTPResponse:
    if not same_origin_post(request.headers, request.scheme, request.host):
        raise CrossSiteRequest("Cross-site sign-in refused.")
    request.ctx.auth_checked = True
    token = (request.form.get("token") or "").strip() if request.form else ""
    if not token or await admitted(request, token) is None:
        body = pages.signin_page("Token inválido, revocado o vencido.")
        refused = InvalidToken if token else Unauthorized  # docs/decisions.md#http-basics
        return html(request, body, 401, **refused.headers)
    response = send(request, b"", status=303, content_type=HTML, headers={"Location": "/"})
    set_session(request, response, token)
    return response


async def signout(request: Request) -> HTTPResponse:
    if not same_origin_post(request.headers, request.scheme, request.host):
        raise CrossSiteRequest("Cross-site sign-out refused.")
    response = send(request, b"", status=303, content_type=HTML, headers={"Location": "/signin"})
    set_session(request, response, "")
    return response


ROUTES: tuple[tuple[str, Any], ...] = (
    ("/", home),
    ("/serie/<serie:str>", series),
    ("/serie/<serie:str>/<year:str>", series_year),
    ("/cobertura/<serie:str>/<year:str>", coverage_year),
    ("/observacion/<obs_id:str>", observation),
    ("/revisiones", revisions),
    ("/revisiones/<number:str>", revisions_page),
    ("/evidencia/<ev_id:str>", evidence),
)


def setup_explorer(app: Sanic) -> None:
    def route(handler: Any, path: str, methods: list[str], name: str, credentials: str) -> None:
        app.add_route(
            ledgered(explorer_route(handler, credentials)), path, methods=methods, name=name
        )

    for path, handler in ROUTES:
        route(handler, path, READ_METHODS, f"explorer_{handler.__name__}", REQUIRED)
    route(signin_form, "/signin", READ_METHODS, "signin_form", OPTIONAL)
    route(signin, "/signin", ["POST"], "signin", NONE)
    other = ["PUT", "DELETE", "PATCH", "OPTIONS"]
    route(not_allowed("GET, HEAD, POST"), "/signin", other, "signin_other", NONE)
    route(signout, "/signout", ["POST"], "signout", OPTIONAL)
    route(not_allowed("POST"), "/signout", ["GET", "HEAD", *other], "signout_other", NONE)
    app.before_server_start(load_templates_ahead)


async def load_templates_ahead(app: Sanic) -> None:
    """Compile the templates the explorer renders per request in each worker before it answers:
    its first page otherwise waited for them, and every other connection of the worker with it
    (docs/performance.md#first-answer). A template that cannot be compiled stops no worker (the
    API does not need it): the log says why, and the pages that use it fail as they would
    have."""
    try:
        pages.load_live_templates()
    except Exception as error:  # the same error reaches each page that renders it
        error_logger.warning("The explorer's templates could not be compiled ahead: %s", error)
