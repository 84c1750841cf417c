"""The ``/v1`` handlers and their table, :data:`ROUTES` (path, handler, needs a token).

Every handler follows docs/decisions.md#order-of-checks: route -> authentication -> rate limit ->
parameters -> data (the first two are the ``admit`` gate the app puts in front of every route that
needs a token). Bodies are stored bytes plus the envelope, sent as they are.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid

from sanic import Request
from sanic.log import error_logger
from sanic.response import HTTPResponse

from builder.core import vocabulary
from builder.core.canonical import header_text, utc_timestamp
from builder.core.errors import IntegrityError
from builder.ops.health import ntp_state
from gateway import openapi
from gateway.api import envelope, pagetoken, params
from gateway.api.freshness import freshness, freshness_entry
from gateway.errors import NoObservations, NotFound, NotReady
from gateway.handlers.logroutes import log_checkpoint, log_key, log_rows, log_tile
from gateway.handlers.published import Published, PublishedView
from gateway.handlers.reading import alert_list, latest_dates, lima_today, published, query, tree
from gateway.http.sending import Handler, send, send_immutable, x_request_id

PAGE_SIZE = 366
REQUEST_ID_NAMESPACE = uuid.UUID("6f1d3c2e-5b7a-4e0f-9a61-2f4c8d9e7b10")


def rates_memo_key(query_string: str) -> tuple[str, str]:
    """Where an as-of ``/v1/rates`` answer is memoised under its query string as sent."""
    return ("rates?", query_string)


def evidence_memo_key(segment: str) -> tuple[str, str]:
    """Where an evidence answer is memoised under its path segment as sent."""
    return ("evidence", segment)


async def health_live(request: Request) -> HTTPResponse:
    """Public; touches no store. Its query is checked like every other (no parameter)."""
    params.no_params(query(request))
    return send(request, b'{"status":"alive"}', body_request_id=None)


async def health_ready(request: Request) -> HTTPResponse:
    try:
        published(request)
    except (IntegrityError, OSError) as error:
        # DECISIONS 9: a probe answers 503, not 500, when the published tree does not answer
        # (a pointer truncated, emptied or replaced by a folder, a root that cannot be read).
        error_logger.warning("not ready: %s", error)
        raise NotReady("The published tree cannot be read.") from None
    params.no_params(query(request))
    return send(request, b'{"status":"ready"}', body_request_id=None)


async def openapi_document(request: Request) -> HTTPResponse:
    """Public (docs/decisions.md#public-endpoints): the OpenAPI document, ``no-store`` like
    every answer that is not as-of, evidence or the log's (docs/decisions.md#caching)."""
    params.no_params(query(request))
    return send(request, openapi.BODY, body_request_id=None, body_sha256=openapi.SHA256)


async def rates(request: Request) -> HTTPResponse:
    pub = published(request)
    view: PublishedView = request.app.ctx.view
    # A query string answered as of a revision before: the same answer, before any parsing.
    raw_key = rates_memo_key(request.query_string)
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
    tags = {"Cache-Tag": ",".join(vocabulary.cache_tag(q.currency, q.series, y) for y in q.years())}
    view.memo_put(canonical, (body, etag, tags, request_id), len(body))
    view.memo_put(raw_key, (body, etag, tags, request_id))  # the same bytes, not counted twice
    return send_immutable(request, body, etag, tags, body_request_id=request_id)


async def rates_latest(request: Request) -> HTTPResponse:
    pub = published(request)
    view: PublishedView = request.app.ctx.view
    today = lima_today(request.app)
    # The body is a function of the query string, the published revision and today in Lima,
    # but for its fresh request_id: memoised cut around it.
    key = ("latest?", request.query_string, today)
    parts = view.memo_get(key)
    if parts is None:
        q = params.series_query(query(request))
        ref = tree(request).latest(q.series, pub.revision)
        if ref is None:
            raise NoObservations(f"The series {q.series} has no observations.")
        block = freshness(q.series, ref.fecha_serie, today).to_json()
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
    key = evidence_memo_key(ev_id)  # the segment as sent: a valid id, checked the first time
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
        "X-Sha256": meta.sha256,
        "X-Capturado-En": meta.capturado_en,
        "X-Identidad-Consulta": header_text(meta.identidad_consulta),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox",
        "Content-Disposition": "attachment",
    }
    etag = '"' + meta.sha256 + '"'
    return tree(request).evidence_bytes(meta.sha256), etag, headers, meta.content_type


@dataclasses.dataclass(frozen=True, slots=True)
class Remembered:
    """An immutable 200 this worker answered for the published revision (as-of ``/v1/rates``,
    evidence): what its ledger entry holds, without its body."""

    etag: str  # the quoted SHA-256 of the body
    size: int  # the body's length
    request_id: str | None  # the body's request_id (as-of: the deterministic one)


def remembered(view: PublishedView, path: str, query: str) -> Remembered | None:
    """The immutable 200 memoised for ``path?query`` as sent (raw), if any: the answer the
    handler above (:func:`rates`, :func:`evidence`) would send it now, short of a 304. The memo
    is the published revision's, so call :meth:`PublishedView.current` first."""
    if path == "/v1/rates":
        memo = view.memo_get(rates_memo_key(query)) if query else None
        if memo is None:
            return None
        body, etag, _, request_id = memo
        return Remembered(etag, len(body), request_id)
    segment = path.removeprefix("/v1/evidence/")
    if segment == path or not segment or "/" in segment or query:
        return None
    found = view.memo_get(evidence_memo_key(segment))
    if found is None:
        return None
    data, etag, _, _ = found
    return Remembered(etag, len(data), None)


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
    items = [alert.to_json() for alert in await alert_list(request, open_only)]
    return send(request, envelope.listing_body(items, pub.revision, x_request_id(request)))


async def annotations(request: Request) -> HTTPResponse:
    pub = published(request)
    wanted = params.annotations_query(query(request))
    items = [a for a in tree(request).annotations(pub.revision) if wanted.matches(a)]
    return send(request, envelope.listing_body(items, pub.revision, x_request_id(request)))


async def health_freshness(request: Request) -> HTTPResponse:
    pub = published(request)
    params.no_params(query(request))
    today = lima_today(request.app)
    entries = [
        freshness_entry(vocabulary.CURRENCY, serie, fecha, today)
        for serie, fecha in latest_dates(tree(request), pub.revision)
    ]
    value = {
        "series": entries,
        "alertas_abiertas": len(await alert_list(request)),
        "hoy_lima": today.isoformat(),
        "ntp": ntp_state(),
    }
    return send(request, envelope.object_body(value, pub.revision, x_request_id(request)))


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
    ("/v1/log/checkpoint", log_checkpoint, False),
    ("/v1/log/key", log_key, False),
    ("/v1/log/tile/<tile:path>", log_tile, False),
    ("/v1/log/rows/<revision:str>", log_rows, False),
)
