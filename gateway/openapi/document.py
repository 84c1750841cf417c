"""The OpenAPI 3.1 document of ``/v1``, assembled once from the modules beside this one.

``DOCUMENT`` is the dict, ``BODY`` its bytes as served at ``/v1/openapi.json`` (public,
docs/decisions.md#public-endpoints), ``SHA256`` their SHA-256 (its ``Repr-Digest``, not hashed
again per answer). Building is pure and deterministic: the same code gives the same bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from gateway.openapi.headers import HEADERS
from gateway.openapi.operations import OPERATIONS, operation_objects
from gateway.openapi.parameters import PARAMETERS
from gateway.openapi.responses import HEAD_SUFFIX, RESPONSES, without_content
from gateway.openapi.schemas import SCHEMAS

API_VERSION = "1.0"

DESCRIPTION = """\
A read-only HTTP/JSON API over a registry of observations of official Peruvian data, first the \
USD/PEN exchange rate. It serves observations with evidence, not bare numbers: each value is \
backed by the exact bytes the source published, downloadable from /v1/evidence/{ev_id} and \
verifiable by SHA-256. The registry is versioned by global revisions; with as_of_revision a \
query answers as the dataset was at that revision, always with the same bytes. Observations are \
immutable: a correction is a new observation that supersedes the earlier one, which stays \
queryable with its chain. Where sources disagree the service exposes the discrepancy (cotejos) \
and never picks a winner. Human annotations are a parallel record, never part of an official \
series. The service sends no notifications: poll /v1/alerts.

**Declared limits of the model.** The exchange-rate sources share an upstream origin, so a \
cross-check detects transmission, parsing or publication errors but not a common upstream \
error. "Immutable" means protected against the application and normal operation, not against \
tampering at the storage level. A source correction made after the last query of the day is \
detected only indirectly, by a later cross-check.

**Consumer guidance.** Keep observacion_id and dataset_revision with every value taken. Parse \
compra and venta with a decimal type, not a float. Ignore fields you do not know: in /v1 fields \
are only added, never removed or renamed. A cached as-of answer learns of a later correction \
from /v1/observations/{obs_id} (superseded_por).

**Requests.** Every path answers GET and HEAD (HEAD: the same status and headers, no body); any \
other method, OPTIONS included, is 405 METHOD_NOT_ALLOWED with Allow: GET, HEAD; an unknown path \
(a trailing slash too) is 404 NOT_FOUND. All endpoints but /v1/health/live, this document and \
the transparency log (/v1/log/...) need Authorization: Bearer <token>. An endpoint takes only \
the query parameters listed for it: an unknown or repeated one is 400 INVALID_PARAMS. Dates are \
YYYY-MM-DD; booleans are exactly true or false. Checks run in this order and the first that \
applies answers: route (404, 405), token (401), rate limit (429), a published revision (503), \
the form of a path id (422), form and range of every query parameter (400), currency (404 \
UNSUPPORTED_CURRENCY), series (404 UNSUPPORTED_SERIES), then data (404). Before the first \
published revision, and when the request ledger cannot be written, the answer is 503 INTERNAL, \
retryable.

**Limits.** 60 requests per minute (any 60 s window) and 5000 per calendar day in Lima, per \
token, counted for every authenticated request that passes the limiter (never /v1/health/live); \
over a limit: 429 RATE_LIMITED with Retry-After in whole seconds. /v1/rates answers at most 366 \
items a page over a range of at most 5 years.

**Caching.** Every response carries X-Request-Id, a fresh UUID4. An as-of answer (a 200 to \
/v1/rates with as_of_revision) is immutable: ETag (SHA-256 of the body), Cache-Control: private, \
max-age=31536000, immutable, CDN-Cache-Control and Cache-Tag <currency>/<series>/<year>; its \
request_id is a UUID5 of the canonical request. Evidence is immutable too. Both answer 304 to \
If-None-Match. Everything else is Cache-Control: no-store.
"""


def build_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "fxev: exchange-rate evidence for official Peruvian data",
            "version": API_VERSION,
            "description": DESCRIPTION,
        },
        "servers": [{"url": "/", "description": "The gateway serving this document."}],
        "security": [{"bearerAuth": []}],
        "paths": {op.path: operation_objects(op) for op in OPERATIONS},
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token issued by the operator (fxev token issue), shown "
                    "once; one per installation or consumer. Missing, invalid, revoked or "
                    "expired: 401 UNAUTHORIZED, not retryable. Limits are counted per token.",
                }
            },
            "parameters": PARAMETERS,
            "headers": HEADERS,
            "responses": RESPONSES
            | {name + HEAD_SUFFIX: without_content(r) for name, r in RESPONSES.items()},
            "schemas": SCHEMAS,
        },
    }


DOCUMENT: dict[str, Any] = build_document()
BODY: bytes = orjson.dumps(DOCUMENT)
SHA256: str = hashlib.sha256(BODY).hexdigest()
