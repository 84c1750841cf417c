"""The OpenAPI 3.1 document of ``/v1``, built once from this module: the one source of truth.

``DOCUMENT`` is the dict, ``BODY`` its bytes as served at ``/v1/openapi.json`` (public, DECISIONS
9), ``ETAG`` their quoted SHA-256. The bodies' schemas live in ``gateway.openapi_schemas``; this
module adds the parameters, headers, responses and paths. Building is pure and deterministic:
the same code gives the same bytes, so the ETag changes only when the document does.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import orjson

from gateway import pagetoken, params
from gateway.openapi_schemas import DATE, SCHEMAS, SHA256, TIMESTAMP, Schema, ref

API_VERSION = "1.0"
PATH = "/v1/openapi.json"
# Public and changing only with a deployment: caches keep it but revalidate with the ETag.
CACHE_CONTROL = "no-cache"
NO_STORE = "no-store"
IMMUTABLE = "private, max-age=31536000, immutable"
CDN_IMMUTABLE = "max-age=31536000"

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
(a trailing slash too) is 404 NOT_FOUND. All endpoints but /v1/health/live and this document \
need Authorization: Bearer <token>. An endpoint takes only the query parameters listed for it \
(/v1/health/live ignores its query): an unknown or repeated one is 400 INVALID_PARAMS. Dates are \
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


# -- headers -----------------------------------------------------------------------------------


def header(description: str, schema: Schema, required: bool = True) -> dict[str, Any]:
    return {"description": description, "required": required, "schema": schema}


def header_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-Id": header(
        "A fresh UUID4 per HTTP request; quote it when reporting a problem.",
        {"type": "string", "format": "uuid"},
    ),
    "Cache-Control-NoStore": header("Not cacheable.", {"type": "string", "const": NO_STORE}),
    "Cache-Control-Immutable": header(
        "Immutable: the client's own cache keeps it forever; private, so no shared cache serves "
        "an authenticated answer.",
        {"type": "string", "const": IMMUTABLE},
    ),
    "CDN-Cache-Control": header(
        "For the service's own CDN, which validates tokens at its edge.",
        {"type": "string", "const": CDN_IMMUTABLE},
    ),
    "ETag-Sha256": header(
        "The quoted SHA-256 of the body.", {"type": "string", "pattern": '^"[0-9a-f]{64}"$'}
    ),
    "Retry-After": header(
        "Whole seconds until a request would pass, rounded up, at least 1.",
        {"type": "integer", "minimum": 1},
    ),
    "WWW-Authenticate": header("The bearer scheme.", {"type": "string", "const": "Bearer"}),
    "Allow": header("The methods every path answers.", {"type": "string", "const": "GET, HEAD"}),
}

RATES_HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header(
        "no-store without as_of_revision; with it, immutable.",
        {"type": "string", "enum": [NO_STORE, IMMUTABLE]},
    ),
    "ETag": header(
        "Only with as_of_revision: the quoted SHA-256 of the body.",
        {"type": "string", "pattern": '^"[0-9a-f]{64}"$'},
        required=False,
    ),
    "CDN-Cache-Control": header(
        "Only with as_of_revision.", {"type": "string", "const": CDN_IMMUTABLE}, required=False
    ),
    "Cache-Tag": header(
        "Only with as_of_revision: <currency>/<series>/<year> for each year the range covers, "
        "comma-separated; a correction purges by tag.",
        {"type": "string", "pattern": "^[A-Z]{3}/[a-z]+/[0-9]{4}(,[A-Z]{3}/[a-z]+/[0-9]{4})*$"},
        required=False,
    ),
}

AS_OF_NOT_MODIFIED_HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header_ref("Cache-Control-Immutable"),
    "CDN-Cache-Control": header_ref("CDN-Cache-Control"),
    "ETag": header_ref("ETag-Sha256"),
    "Cache-Tag": {**RATES_HEADERS["Cache-Tag"], "required": True},
}

EVIDENCE_HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header_ref("Cache-Control-Immutable"),
    "CDN-Cache-Control": header_ref("CDN-Cache-Control"),
    "ETag": header("The quoted X-Sha256.", {"type": "string", "pattern": '^"[0-9a-f]{64}"$'}),
    "X-Sha256": header(
        "SHA-256 of the bytes, bare hex: hash what you downloaded and compare.",
        {"type": "string", "pattern": SHA256},
    ),
    "X-Capturado-En": header(
        "Capture instant, ISO-8601 UTC with Z.", {"type": "string", "pattern": TIMESTAMP}
    ),
    "X-Identidad-Consulta": header(
        "What was queried; any character that is not printable ASCII is percent-encoded.",
        {"type": "string"},
    ),
    "X-Content-Type-Options": header(
        "The sources serve HTML: never sniff.", {"type": "string", "const": "nosniff"}
    ),
    "Content-Security-Policy": header(
        "Never run what the source sent.", {"type": "string", "const": "sandbox"}
    ),
    "Content-Disposition": header(
        "A download, named by ev_id.",
        {"type": "string", "pattern": '^attachment; filename="[0-9a-f-]{36}"$'},
    ),
}

NO_STORE_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header_ref("Cache-Control-NoStore"),
}

DOCUMENT_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header(
        "Keep it, but revalidate with the ETag.", {"type": "string", "const": CACHE_CONTROL}
    ),
    "ETag": header_ref("ETag-Sha256"),
}


# -- parameters --------------------------------------------------------------------------------


def query_param(name: str, description: str, schema: Schema, required: bool = False) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


def param_ref(name: str) -> Schema:
    return {"$ref": f"#/components/parameters/{name}"}


CURRENCY = {"type": "string", "enum": list(params.CURRENCIES)}
SERIES = {"type": "string", "enum": list(params.SERIES)}
DATE_PARAM = {"type": "string", "format": "date", "pattern": DATE}
CURRENCY_RULE = (
    "Exactly USD. Any other value (usd too) answers 404 UNSUPPORTED_CURRENCY; empty is 400."
)
SERIES_RULE = (
    "publicado or cierre (cierre has no published data yet: 404 NO_OBSERVATIONS). Any other "
    "value answers 404 UNSUPPORTED_SERIES; empty is 400."
)
PARAMETERS: dict[str, Schema] = {
    "currency": query_param("currency", CURRENCY_RULE, CURRENCY, required=True),
    "series": query_param("series", SERIES_RULE, SERIES, required=True),
    "from": query_param("from", "Inclusive start, YYYY-MM-DD.", DATE_PARAM, required=True),
    "to": query_param(
        "to",
        "Inclusive end, YYYY-MM-DD: not before from and at most the same month and day five "
        "years later (29 February counts as 28 February); else 400.",
        DATE_PARAM,
        required=True,
    ),
    "as_of_revision": query_param(
        "as_of_revision",
        "Answer as the dataset was at this revision: an integer from 1 to the published "
        "revision, written [1-9][0-9]* (no sign, no leading zero); else 400. Omitted: the "
        "published revision. The answer is then immutable (ETag, Cache-Control immutable).",
        {"type": "integer", "minimum": 1},
    ),
    "page_token": query_param(
        "page_token",
        "Opaque: the next_page_token of the previous page, with the same other parameters. It "
        "fixes the revision of the first page, the query and the offset; a corrupt token, one of "
        "another query, or one whose revision differs from as_of_revision is 400.",
        {"type": "string", "pattern": "^" + pagetoken._TOKEN.pattern + "$"},
    ),
    "include_annotations": query_param(
        "include_annotations",
        "Exactly true or false (default). true adds annotations, those of the whole range, "
        "on every page.",
        {"type": "boolean", "default": False},
    ),
    "currency_filter": query_param("currency", "Filter; validated as in /v1/rates.", CURRENCY),
    "series_filter": query_param("series", "Filter; validated as in /v1/rates.", SERIES),
    "from_filter": query_param("from", "Inclusive start date filter.", DATE_PARAM),
    "to_filter": query_param("to", "Inclusive end date filter, not before from.", DATE_PARAM),
    "open": query_param(
        "open",
        "Exactly true (default: abierta and reconocida only) or false (all, resuelta too).",
        {"type": "boolean", "default": True},
    ),
    "at": query_param(
        "at",
        "Instant to resolve: YYYY-MM-DDTHH:MM, optional :SS and up to 6 decimals, then Z or "
        "+HH:MM/-HH:MM (an unencoded +, which arrives as a space, is read as +).",
        {
            "type": "string",
            "format": "date-time",
            "pattern": "^" + params._INSTANT.pattern + "$",
        },
        required=True,
    ),
}


PATH_UUID = "^" + params._UUID.pattern.replace("a-f", "a-fA-F") + "$"


def path_id(name: str, what: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": f"UUID of {what}: 36 characters, hyphenated, any case. Anything else is "
        f'the 422 body with loc ["path", "{name}"]; an unknown one is 404 NOT_FOUND.',
        "schema": {"type": "string", "format": "uuid", "pattern": PATH_UUID},
    }


# -- responses ---------------------------------------------------------------------------------


def json_content(schema: Schema) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def error_schema(codes: tuple[str, ...], retryable: bool) -> Schema:
    return {
        "allOf": [
            ref("Error"),
            {"properties": {"code": {"enum": list(codes)}, "retryable": {"const": retryable}}},
        ]
    }


def error_response(
    description: str, codes: tuple[str, ...], retryable: bool = False
) -> dict[str, Any]:
    return {
        "description": description,
        "headers": NO_STORE_HEADERS,
        "content": json_content(error_schema(codes, retryable)),
    }


def response_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/responses/{name}"}


RESPONSES: dict[str, Any] = {
    "InvalidParams": error_response(
        "INVALID_PARAMS: a parameter missing, empty, malformed, unknown or repeated, or a range "
        "rule broken.",
        ("INVALID_PARAMS",),
    ),
    "Unauthorized": {
        "description": "UNAUTHORIZED: the token is missing, invalid, revoked or expired.",
        "headers": NO_STORE_HEADERS | {"WWW-Authenticate": header_ref("WWW-Authenticate")},
        "content": json_content(error_schema(("UNAUTHORIZED",), False)),
    },
    "MethodNotAllowed": {
        "description": "METHOD_NOT_ALLOWED: any method but GET and HEAD, on any path.",
        "headers": NO_STORE_HEADERS | {"Allow": header_ref("Allow")},
        "content": json_content(error_schema(("METHOD_NOT_ALLOWED",), False)),
    },
    "RateLimited": {
        "description": "RATE_LIMITED: the token's limit is spent. Refused requests do not "
        "count, so waiting Retry-After seconds is enough.",
        "headers": NO_STORE_HEADERS | {"Retry-After": header_ref("Retry-After")},
        "content": json_content(error_schema(("RATE_LIMITED",), True)),
    },
    "PathValidation": {
        "description": "A path id that is not a UUID (checked after the token and the limit).",
        "headers": NO_STORE_HEADERS,
        "content": json_content(ref("HTTPValidationError")),
    },
    "Internal": error_response(
        "INTERNAL: an unexpected error; the message never carries detail.", ("INTERNAL",), True
    ),
    "Unavailable": error_response(
        "INTERNAL: no revision published yet, or the request ledger cannot be written.",
        ("INTERNAL",),
        True,
    ),
}


def not_found(codes: tuple[str, ...], when: str) -> dict[str, Any]:
    return error_response(f"{', '.join(codes)}: {when}", codes)


def ok(description: str, schema_name: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "headers": headers or NO_STORE_HEADERS,
        "content": json_content(ref(schema_name)),
    }


def not_modified(description: str, headers: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "headers": headers}


# -- operations --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Operation:
    path: str
    name: str
    summary: str
    description: str
    responses: dict[str, Any]
    parameters: tuple[Schema, ...] = ()
    public: bool = False


SERIES_404 = ("UNSUPPORTED_CURRENCY", "UNSUPPORTED_SERIES", "NO_OBSERVATIONS")

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "/v1/rates",
        "Rates",
        "Valid observations of a series in a date range",
        "The valid observations of a series between from and to, both inclusive, ascending, at "
        "the published revision or at as_of_revision. At most 366 items a page; walk the pages "
        "with next_page_token for one consistent snapshot. A valid query with nothing in its "
        "range is 404 NO_OBSERVATIONS, never an empty list.",
        {
            "200": ok("A page.", "RatesPage", RATES_HEADERS),
            "304": not_modified(
                "As-of answer unchanged: If-None-Match matched its ETag.",
                AS_OF_NOT_MODIFIED_HEADERS,
            ),
            "404": not_found(SERIES_404, "currency or series not served, or nothing in the range."),
        },
        tuple(param_ref(n) for n in params.RATES_PARAMS),
    ),
    Operation(
        "/v1/rates/latest",
        "RatesLatest",
        "The most recent valid observation of a series, with its freshness",
        "A rate item with frescura and the envelope, all at the top level.",
        {
            "200": ok("The latest item.", "RateLatest"),
            "404": not_found(SERIES_404, "currency or series not served, or no observation."),
        },
        (param_ref("currency"), param_ref("series")),
    ),
    Operation(
        "/v1/observations/{obs_id}",
        "Observation",
        "One observation in full, with its supersession chain, events and cross-checks",
        "Always no-store: the chain can grow.",
        {
            "200": ok("The observation.", "ObservationDetail"),
            "404": not_found(("NOT_FOUND",), "no observation with that id."),
            "422": response_ref("PathValidation"),
        },
        (path_id("obs_id", "an observation (the observacion_id of an item)"),),
    ),
    Operation(
        "/v1/evidence/{ev_id}",
        "Evidence",
        "The exact bytes the source answered at capture",
        "The HTTP body the source answered, decompressed, before charset decoding, with its "
        "original Content-Type. Immutable. Verify it by hashing the downloaded bytes and "
        "comparing with X-Sha256.",
        {
            "200": {
                "description": "The raw bytes.",
                "headers": EVIDENCE_HEADERS,
                "content": {"*/*": {"schema": {"description": "The source's bytes."}}},
            },
            "304": not_modified("Unchanged: If-None-Match matched.", EVIDENCE_HEADERS),
            "404": not_found(("NOT_FOUND",), "no evidence with that id."),
            "422": response_ref("PathValidation"),
        },
        (path_id("ev_id", "an evidence record (the evidencia_id of an observation or event)"),),
    ),
    Operation(
        "/v1/annotations",
        "Annotations",
        "Human annotations, apart from the official series",
        "Ordered by fecha, then revision; empty: items [] and total 0.",
        {
            "200": ok("The annotations.", "AnnotationList"),
            "404": not_found(
                ("UNSUPPORTED_CURRENCY", "UNSUPPORTED_SERIES"), "currency or series not served."
            ),
        },
        tuple(
            param_ref(n) for n in ("currency_filter", "series_filter", "from_filter", "to_filter")
        ),
    ),
    Operation(
        "/v1/coverage",
        "Coverage",
        "For each served series: first and last date, count, and gaps with their reason",
        "Gap criterion: business days (Monday to Friday minus Peru's holidays and declared "
        "non-working days) between the first and the last date without a valid observation.",
        {"200": ok("The coverage.", "Coverage")},
    ),
    Operation(
        "/v1/revisions",
        "Revisions",
        "The last published revision committed at or before an instant",
        "Pass the resolved revision as as_of_revision to /v1/rates.",
        {
            "200": ok("The revision.", "RevisionAt"),
            "404": not_found(("NO_OBSERVATIONS",), "at is before the first revision."),
        },
        (param_ref("at"),),
    ),
    Operation(
        "/v1/alerts",
        "Alerts",
        "Operational incidents of the service",
        "The service sends no notifications: poll this. Newest ultima_vez first.",
        {"200": ok("The alerts.", "AlertList")},
        (param_ref("open"),),
    ),
    Operation(
        "/v1/health/freshness",
        "HealthFreshness",
        "Freshness of each served series, open alerts and the server clock's state",
        "",
        {"200": ok("The freshness.", "HealthFreshness")},
    ),
    Operation(
        "/v1/health/live",
        "HealthLive",
        "Is the process up?",
        "Public, touches no store, never counts against a limit, never recorded in the ledger; "
        "its query string is ignored.",
        {"200": ok("Alive.", "Live")},
        public=True,
    ),
    Operation(
        "/v1/health/ready",
        "HealthReady",
        "Can the gateway answer?",
        "200 when a revision is published and the request ledger can be written, else 503. "
        "Needs a token and counts against its limits.",
        {"200": ok("Ready.", "Ready")},
    ),
    Operation(
        PATH,
        "OpenApi",
        "This document",
        "Public (no token). Served with an ETag; If-None-Match answers 304.",
        {
            "200": {
                "description": "The OpenAPI 3.1 document.",
                "headers": DOCUMENT_HEADERS,
                "content": json_content({"type": "object"}),
            },
            "304": not_modified("Unchanged: If-None-Match matched.", DOCUMENT_HEADERS),
            "503": response_ref("Unavailable"),
        },
        public=True,
    ),
)


def common_responses(operation: Operation) -> dict[str, Any]:
    """The error answers every operation of its kind can give, beyond its own."""
    if operation.path == "/v1/health/live":
        return {}
    responses = {"400": response_ref("InvalidParams")}
    if not operation.public:
        responses |= {
            "401": response_ref("Unauthorized"),
            "429": response_ref("RateLimited"),
            "503": response_ref("Unavailable"),
        }
    return responses | {"500": response_ref("Internal")}


def without_content(response: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in response.items() if key != "content"}


HEAD_SUFFIX = "Head"


def without_body(responses: dict[str, Any]) -> dict[str, Any]:
    """HEAD: the same statuses and headers, no content (shared responses: their Head twin)."""
    return {
        status: response_ref(response["$ref"].rsplit("/", 1)[1] + HEAD_SUFFIX)
        if "$ref" in response
        else without_content(response)
        for status, response in responses.items()
    }


def operation_objects(operation: Operation) -> dict[str, Any]:
    responses = dict(sorted((operation.responses | common_responses(operation)).items()))
    get: dict[str, Any] = {
        "operationId": f"get{operation.name}",
        "summary": operation.summary,
    }
    if operation.description:
        get["description"] = operation.description
    if operation.parameters:
        get["parameters"] = list(operation.parameters)
    if operation.public:
        get["security"] = []
    get["responses"] = responses
    head = {
        **get,
        "operationId": f"head{operation.name}",
        "summary": "HEAD: " + operation.summary,
        "responses": without_body(responses),
    }
    return {"get": get, "head": head}


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
ETAG: str = '"' + hashlib.sha256(BODY).hexdigest() + '"'
