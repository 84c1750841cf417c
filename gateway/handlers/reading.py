"""What a handler reads, for the API's routes and the explorer's alike: the published revision
(or 503 before the first build), the tree, the parsed query string, today in Lima and the
alerts."""

from __future__ import annotations

import asyncio
from datetime import date

from sanic import Request, Sanic

from builder.core.business_days import today_in_lima
from builder.core.settings import Settings
from builder.ops.alerts import Alert
from builder.tree.reader import TreeReader
from gateway.api import params
from gateway.errors import NotReady
from gateway.handlers.published import Published
from gateway.http.stamps import now_us


def published(request: Request) -> Published:
    """The published revision the request is answered at: in fleet mode the one its admission
    looked at last (:func:`gateway.handlers.access.admitted_at_mark`, which its token's mark
    records) while the view still holds it, else a look at the pointer now."""
    view = request.app.ctx.view
    looked = getattr(request.ctx, "published", None)
    current = looked if view.holds(looked) else view.current()
    if current is None:
        raise NotReady("No revision has been published yet.")
    return current


def query(request: Request) -> dict[str, str]:
    return params.parse_query(request.query_string)


def tree(request: Request) -> TreeReader:
    return request.app.ctx.view.tree


def lima_today(app: Sanic) -> date:
    """Today in Lima for the gateway ``app``: ``FXEV_NOW``'s when it is set, else the real
    clock's."""
    settings: Settings = app.ctx.settings
    if settings.now is not None:
        return today_in_lima(settings.now)
    return app.ctx.lima.day(now_us()).day


def latest_dates(tree: TreeReader, revision: int) -> list[tuple[str, str]]:
    """(serie, fecha_serie of its newest item) of every series served at ``revision``."""
    found = []
    for serie in tree.root(revision).served:
        ref = tree.latest(serie, revision)
        if ref is not None:
            found.append((serie, ref.fecha_serie))
    return found


async def alert_list(request: Request, open_only: bool = True) -> list[Alert]:
    """The alerts served, newest first (open ones only by default): on one host from the alert
    store; in fleet mode from Redis, read in a thread so that a worker whose Redis stalls goes
    on serving meanwhile (docs/operating/fleet.md#failures); Redis unreachable is 503."""
    alerts = request.app.ctx.alerts
    listed: list[Alert] = (
        await asyncio.to_thread(alerts.list, open_only)
        if request.app.ctx.fleet is not None
        else alerts.list(open_only)
    )
    return listed
