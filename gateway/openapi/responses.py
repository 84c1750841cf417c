"""The responses of the OpenAPI document: shared error answers (``components/responses``, each
with a HEAD twin without content) and the constructors of each operation's own."""

from __future__ import annotations

from typing import Any

from gateway.openapi.headers import NO_STORE_HEADERS, header_ref
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


def without_content(response: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in response.items() if key != "content"}


HEAD_SUFFIX = "Head"
