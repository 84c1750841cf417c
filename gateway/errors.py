"""The gateway's errors: one hierarchy, one body.

::

    ApiError                      code, status, retryable on the class; body() renders it
    ├── InvalidParams             400 INVALID_PARAMS
    ├── Unauthorized              401 UNAUTHORIZED, no token (+ WWW-Authenticate: Bearer)
    │   └── InvalidToken          401 UNAUTHORIZED, a token refused (+ error="invalid_token")
    ├── UnsupportedCurrency       404 UNSUPPORTED_CURRENCY
    ├── UnsupportedSeries         404 UNSUPPORTED_SERIES
    ├── NoObservations            404 NO_OBSERVATIONS
    ├── NotFound                  404 NOT_FOUND (unknown id, unknown path)
    ├── MethodNotAllowed          405 METHOD_NOT_ALLOWED (+ Allow: GET, HEAD)
    ├── RequestTimeout            408 REQUEST_TIMEOUT, retryable (the request came too slowly)
    ├── RateLimited               429 RATE_LIMITED, retryable (+ Retry-After: seconds)
    ├── PathValidation            422 HTTPValidationError body (malformed obs_id / ev_id)
    ├── Internal                  500 INTERNAL, retryable, never any detail in the body
    │   └── NotReady              503 INTERNAL, retryable (no published tree yet, no ledger...)
    └── ExplorerError             the explorer's own (outside /v1, not in the OpenAPI document)
        ├── CrossSiteRequest      403 FORBIDDEN (a cross-site POST to /signin or /signout)
        └── MethodNotAllowedHere  405 METHOD_NOT_ALLOWED (+ Allow: the path's own methods)
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson


class ApiError(Exception):
    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = 500
    retryable: ClassVar[bool] = False
    headers: ClassVar[dict[str, str]] = {}

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def shown_message(self) -> str:
        """The message a client reads (the body's, the explorer's page)."""
        return self.message

    def body(self, request_id: str) -> bytes:
        return orjson.dumps(
            {
                "code": self.code,
                "message": self.shown_message,
                "request_id": request_id,
                "retryable": self.retryable,
            }
        )


class InvalidParams(ApiError):
    code, status = "INVALID_PARAMS", 400


class Unauthorized(ApiError):
    """No token presented: the bare challenge (docs/decisions.md#http-basics)."""

    code, status = "UNAUTHORIZED", 401
    headers: ClassVar[dict[str, str]] = {"WWW-Authenticate": "Bearer"}


class InvalidToken(Unauthorized):
    """A token presented but refused (unknown, revoked, expired): RFC 6750's ``invalid_token``."""

    headers: ClassVar[dict[str, str]] = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


class UnsupportedCurrency(ApiError):
    code, status = "UNSUPPORTED_CURRENCY", 404


class UnsupportedSeries(ApiError):
    code, status = "UNSUPPORTED_SERIES", 404


class NoObservations(ApiError):
    code, status = "NO_OBSERVATIONS", 404


class NotFound(ApiError):
    code, status = "NOT_FOUND", 404


class MethodNotAllowed(ApiError):
    code, status = "METHOD_NOT_ALLOWED", 405
    headers: ClassVar[dict[str, str]] = {"Allow": "GET, HEAD"}


class RequestTimeout(ApiError):
    """A client too slow to send its request (docs/decisions.md#bad-requests)."""

    code, status, retryable = "REQUEST_TIMEOUT", 408, True


class RateLimited(ApiError):
    code, status, retryable = "RATE_LIMITED", 429, True

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"Rate limit exceeded; retry in {retry_after} s.")
        self.headers = {"Retry-After": str(retry_after)}


class PathValidation(ApiError):
    """A typed path parameter that is not a UUID: the 422 ``HTTPValidationError`` body."""

    code, status = "VALIDATION", 422

    def __init__(self, name: str, value: str) -> None:
        super().__init__(f"{name} is not a UUID")
        self.name = name
        self.value = value

    def body(self, request_id: str) -> bytes:
        detail: dict[str, Any] = {
            "type": "uuid_parsing",
            "loc": ["path", self.name],
            "msg": "Input should be a valid UUID",
            "input": self.value,
        }
        return orjson.dumps({"detail": [detail]})


class Internal(ApiError):
    """Its body says ``Internal error.`` whatever the message, which says why for the log
    (DECISIONS 9: "An `INTERNAL` body carries no detail")."""

    code, status, retryable = "INTERNAL", 500, True

    def __init__(self, message: str = "Internal error.") -> None:
        super().__init__(message)

    @property
    def shown_message(self) -> str:
        return "Internal error."


class NotReady(Internal):
    status = 503

    def __init__(self, message: str = "The service is not ready.") -> None:
        super().__init__(message)


class ExplorerError(ApiError):
    """The errors only the explorer's paths answer; never a ``/v1`` answer, so not in the
    OpenAPI document's list of codes."""


class CrossSiteRequest(ExplorerError):
    code, status = "FORBIDDEN", 403


class MethodNotAllowedHere(ExplorerError):
    """405 on an explorer path whose allowed methods are not the API's GET and HEAD."""

    code, status = "METHOD_NOT_ALLOWED", 405
    headers: ClassVar[dict[str, str]] = {}

    def __init__(self, allowed: str) -> None:
        super().__init__(f"Only {allowed} are allowed here.")
        self.headers = {"Allow": allowed}
