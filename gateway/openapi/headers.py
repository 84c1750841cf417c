"""The response headers the OpenAPI document describes: shared ones under
``components/headers``, and the sets each kind of answer carries. Every answer also carries
``EVERY_ANSWER`` and, when it has a body, ``WITH_BODY`` (docs/decisions.md#http-basics,
docs/decisions.md#cors); ``gateway.openapi.responses`` adds them."""

from __future__ import annotations

from typing import Any

from builder.core import vocabulary
from builder.core.vocabulary import CDN_IMMUTABLE, IMMUTABLE, NO_STORE
from gateway.http.sending import CORS_EXPOSE
from gateway.openapi.json_schema import SHA256, TIMESTAMP, Schema

# RFC 9110's IMF-fixdate, and RFC 9530's SHA-256 digest (32 bytes in base64).
HTTP_DATE = (
    "^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} "
    "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$"
)
REPR_DIGEST = "^sha-256=:[A-Za-z0-9+/]{43}=:$"
BEARER_CHALLENGES = ["Bearer", 'Bearer error="invalid_token"']


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
    "WWW-Authenticate": header(
        'The bearer scheme: Bearer when no token was presented, Bearer error="invalid_token" '
        "when the token presented is unknown, revoked or expired (RFC 6750).",
        {"type": "string", "enum": BEARER_CHALLENGES},
    ),
    "Allow": header("The methods every path answers.", {"type": "string", "const": "GET, HEAD"}),
    "Date": header(
        "When the response was sent (RFC 9110), on every response.",
        {"type": "string", "pattern": HTTP_DATE},
    ),
    "Repr-Digest": header(
        "On every response with a body (not HEAD, not 304): sha-256=:<base64 of the SHA-256 of "
        "the body bytes>: of the identity-coded body (RFC 9530). The same SHA-256 the request "
        "ledger records for this answer, which fxev requests show prints in hex. Hash the "
        "body you received (decompressed, if an edge compressed it) to compare.",
        {"type": "string", "pattern": REPR_DIGEST},
    ),
    "Access-Control-Allow-Origin": header(
        "Only when the service allows browser origins (FXEV_CORS_ORIGINS) and the request's "
        "Origin is one of them: that origin.",
        {"type": "string"},
        required=False,
    ),
    "Access-Control-Expose-Headers": header(
        "With Access-Control-Allow-Origin: the headers a script of that origin may read.",
        {"type": "string", "const": CORS_EXPOSE},
        required=False,
    ),
    "Vary": header(
        "Origin, on every answer when the service allows browser origins: the CORS headers "
        "depend on it.",
        {"type": "string", "const": "Origin"},
        required=False,
    ),
}

EVERY_ANSWER: dict[str, dict[str, str]] = {
    name: header_ref(name)
    for name in ("Date", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary")
}
WITH_BODY: dict[str, dict[str, str]] = {"Repr-Digest": header_ref("Repr-Digest")}

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
        "A download, never shown inline.", {"type": "string", "const": "attachment"}
    ),
}

NO_STORE_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header_ref("Cache-Control-NoStore"),
}

LOG_IMMUTABLE_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header(
        "Never changes: any cache, shared ones too, may keep it.",
        {"type": "string", "const": vocabulary.PUBLIC_IMMUTABLE},
    ),
    "CDN-Cache-Control": header_ref("CDN-Cache-Control"),
    "ETag": header_ref("ETag-Sha256"),
}

LOG_CHECKPOINT_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header(
        "Any cache may keep it 5 seconds.",
        {"type": "string", "const": vocabulary.LOG_CHECKPOINT_CACHE},
    ),
}

LOG_KEY_HEADERS = {
    "X-Request-Id": header_ref("X-Request-Id"),
    "Cache-Control": header(
        "Any cache may keep it 5 minutes.", {"type": "string", "const": vocabulary.LOG_KEY_CACHE}
    ),
}
