"""The responses of the OpenAPI document: shared error answers (``components/responses``, each
with a HEAD twin without content) and the constructors of each operation's own.

Every response lists ``Date`` and the CORS headers, and one with content ``Repr-Digest``
(:func:`with_every_answers_headers`); a HEAD twin has neither content nor ``Repr-Digest``."""

from __future__ import annotations

from typing import Any

from gateway.openapi.headers import EVERY_ANSWER, NO_STORE_HEADERS, WITH_BODY, header_ref
from gateway.openapi.json_schema import Schema, ref


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


def with_every_answers_headers(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` with the headers every answer carries, and ``Repr-Digest`` if it has content."""
    headers = response.get("headers", {}) | EVERY_ANSWER
    if "content" in response:
        headers |= WITH_BODY
    return {**response, "headers": headers}


RESPONSES: dict[str, Any] = {
    "InvalidParams": error_response(
        "INVALID_PARAMS: a parameter missing, empty, malformed, unknown or repeated, or a range "
        "rule broken; or a request the gateway cannot read or that exceeds its limits (request "
        "line and headers of 8 KB or more, a body over 1 MB, a bare LF line end, a NUL or "
        "invalid UTF-8 in the path or query).",
        ("INVALID_PARAMS",),
    ),
    "Unauthorized": {
        "description": "UNAUTHORIZED: the token is missing, invalid, revoked or expired.",
        "headers": NO_STORE_HEADERS | {"WWW-Authenticate": header_ref("WWW-Authenticate")},
        "content": json_content(error_schema(("UNAUTHORIZED",), False)),
    },
    "MethodNotAllowed": {
        "description": "METHOD_NOT_ALLOWED: any method but GET and HEAD, on any path. When the "
        "service allows browser origins (FXEV_CORS_ORIGINS), a CORS preflight from one of them "
        "(OPTIONS with Origin and Access-Control-Request-Method) is answered 204 instead, "
        "without a token: Access-Control-Allow-Methods: GET, HEAD, Access-Control-Allow-Headers: "
        "Authorization, If-None-Match, Access-Control-Max-Age: 600.",
        "headers": NO_STORE_HEADERS | {"Allow": header_ref("Allow")},
        "content": json_content(error_schema(("METHOD_NOT_ALLOWED",), False)),
    },
    "RateLimited": {
        "description": "RATE_LIMITED: the token's limit is spent. Refused requests do not "
        "count, so waiting Retry-After seconds is enough.",
        "headers": NO_STORE_HEADERS | {"Retry-After": header_ref("Retry-After")},
        "content": json_content(error_schema(("RATE_LIMITED",), True)),
    },
    "RequestTimeout": error_response(
        "REQUEST_TIMEOUT: the request line and headers did not arrive within the request "
        "timeout; send it again.",
        ("REQUEST_TIMEOUT",),
        True,
    ),
    "PathValidation": {
        "description": "A path id that is not a UUID (checked after the token and the limit).",
        "headers": NO_STORE_HEADERS,
        "content": json_content(ref("HTTPValidationError")),
    },
    "Internal": error_response(
        "INTERNAL: an unexpected error; the message never carries detail.", ("INTERNAL",), True
    ),
    "Unavailable": error_response(
        "INTERNAL: no revision published yet, the request ledger cannot be written, the "
        "answer was not ready within the response timeout, or (fleet mode) this gateway's "
        "mirror has not reached the revision the token was already answered at.",
        ("INTERNAL",),
        True,
    ),
}
RESPONSES = {name: with_every_answers_headers(response) for name, response in RESPONSES.items()}


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


def without_content(response: dict[str, Any]) -> dict[str, Any]:
    """The HEAD twin of ``response``: no content, so no ``Repr-Digest`` either."""
    bare = {key: value for key, value in response.items() if key != "content"}
    if "headers" in bare:
        bare["headers"] = {name: h for name, h in bare["headers"].items() if name not in WITH_BODY}
    return bare


HEAD_SUFFIX = "Head"
