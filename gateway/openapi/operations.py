"""The operations of the OpenAPI document: one :class:`Operation` per ``/v1`` path, and the
``get`` and ``head`` objects made of each."""

from __future__ import annotations

import dataclasses
from typing import Any

from gateway.api import params
from gateway.openapi.headers import (
    AS_OF_NOT_MODIFIED_HEADERS,
    EVIDENCE_HEADERS,
    LOG_CHECKPOINT_HEADERS,
    LOG_IMMUTABLE_HEADERS,
    LOG_KEY_HEADERS,
    NO_STORE_HEADERS,
    RATES_HEADERS,
)
from gateway.openapi.json_schema import Schema
from gateway.openapi.links import with_links
from gateway.openapi.parameters import param_ref, path_id
from gateway.openapi.responses import (
    HEAD_SUFFIX,
    json_content,
    not_found,
    not_modified,
    ok,
    response_ref,
    with_every_answers_headers,
    without_content,
)

PATH = "/v1/openapi.json"


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
TEXT = {"text/plain; charset=utf-8": {"schema": {"type": "string"}}}
OCTETS = {"application/octet-stream": {"schema": {"description": "The tile's bytes."}}}
LOG_PUBLIC = (
    "Public (no token), never counts against a limit: the transparency log (C2SP tlog-tiles), "
    "which a shared cache may keep for everyone. "
)


def log_answer(description: str, headers: dict[str, Any], content: dict[str, Any]) -> dict:
    return {"description": description, "headers": headers, "content": content}


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
        "it takes no query parameter (any is 400 INVALID_PARAMS).",
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
        "Public (no token). Not cached (no-store), like every answer but as-of ones, evidence "
        "and the log's.",
        {
            "200": {
                "description": "The OpenAPI 3.1 document.",
                "headers": NO_STORE_HEADERS,
                "content": json_content({"type": "object"}),
            },
            "503": response_ref("Unavailable"),
        },
        public=True,
    ),
    Operation(
        "/v1/log/checkpoint",
        "LogCheckpoint",
        "The signed checkpoint of the published revision",
        LOG_PUBLIC + "A C2SP signed note: origin, tree size (the published revision) and the "
        "base64 Merkle root, signed with Ed25519; check it with the key of /v1/log/key, obtained "
        "out of band. Cached 5 seconds.",
        {
            "200": log_answer("The checkpoint.", LOG_CHECKPOINT_HEADERS, TEXT),
            "404": not_found(("NOT_FOUND",), "the published tree has no log yet."),
            "503": response_ref("Unavailable"),
        },
        public=True,
    ),
    Operation(
        "/v1/log/key",
        "LogKey",
        "The log's verifier key",
        LOG_PUBLIC + "<origin>+<key id>+<base64(0x01 || Ed25519 public key)>, as Go's "
        "sumdb/note reads it. Pin a key obtained out of band: this one is only a convenience.",
        {
            "200": log_answer("The verifier key.", LOG_KEY_HEADERS, TEXT),
            "404": not_found(("NOT_FOUND",), "the published tree has no log yet."),
            "503": response_ref("Unavailable"),
        },
        public=True,
    ),
    Operation(
        "/v1/log/tile/{tile}",
        "LogTile",
        "A tile or entry bundle of the log",
        LOG_PUBLIC + "tile is a C2SP tlog-tiles path below tile/, slashes included: <L>/<N> "
        "(a hash tile of level L), entries/<N> (an entry bundle: each leaf prefixed with its "
        "length, a big-endian uint16), N in groups of three digits, all but the last prefixed "
        "with x (x001/x234/067), and .p/<W> for a partial tile of width W. Immutable.",
        {
            "200": log_answer("The tile.", LOG_IMMUTABLE_HEADERS, OCTETS),
            "304": not_modified("Unchanged: If-None-Match matched.", LOG_IMMUTABLE_HEADERS),
            "404": not_found(("NOT_FOUND",), "not a tile path, or no such tile."),
            "503": response_ref("Unavailable"),
        },
        ({"name": "tile", "in": "path", "required": True, "schema": {"type": "string"}},),
        public=True,
    ),
    Operation(
        "/v1/log/rows/{revision}",
        "LogRows",
        "The rows list a revision's leaf names by its SHA-256",
        LOG_PUBLIC + "Only for a revision that wrote too many rows for its leaf (an import): "
        "the leaf holds rows_sha256, the SHA-256 of these bytes. Immutable.",
        {
            "200": log_answer(
                "The rows list.", LOG_IMMUTABLE_HEADERS, json_content({"type": "object"})
            ),
            "304": not_modified("Unchanged: If-None-Match matched.", LOG_IMMUTABLE_HEADERS),
            "404": not_found(("NOT_FOUND",), "no such revision, or its leaf holds its rows."),
            "503": response_ref("Unavailable"),
        },
        ({"name": "revision", "in": "path", "required": True, "schema": {"type": "string"}},),
        public=True,
    ),
)


def common_responses(operation: Operation) -> dict[str, Any]:
    """The error answers every operation of its kind can give, beyond its own. Any path, live
    too, answers 400 to a request the gateway cannot read and 408 to one too slow to arrive
    (docs/decisions.md#bad-requests)."""
    responses = {"400": response_ref("InvalidParams"), "408": response_ref("RequestTimeout")}
    if operation.path == "/v1/health/live":
        return responses
    if not operation.public:
        responses |= {
            "401": response_ref("Unauthorized"),
            "429": response_ref("RateLimited"),
            "503": response_ref("Unavailable"),
        }
    return responses | {"500": response_ref("Internal")}


def without_body(responses: dict[str, Any]) -> dict[str, Any]:
    """HEAD: the same statuses and headers, no content (shared responses: their Head twin)."""
    return {
        status: response_ref(response["$ref"].rsplit("/", 1)[1] + HEAD_SUFFIX)
        if "$ref" in response
        else without_content(response)
        for status, response in responses.items()
    }


def operation_objects(operation: Operation) -> dict[str, Any]:
    own = {
        status: response if "$ref" in response else with_every_answers_headers(response)
        for status, response in operation.responses.items()
    }
    responses = dict(sorted((own | common_responses(operation)).items()))
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
    get["responses"] = with_links(operation.path, responses)
    head = {
        **get,
        "operationId": f"head{operation.name}",
        "summary": "HEAD: " + operation.summary,
        "responses": without_body(responses),
    }
    return {"get": get, "head": head}
