"""``/v1/openapi.json`` as served: public, the module's exact bytes, ``no-store`` like every answer
that is not as-of, evidence or the log's (docs/decisions.md#caching)."""

from __future__ import annotations

import hashlib

import pytest
import requests
import schemathesis

from gateway import openapi
from gateway.http.sending import repr_digest
from tests.contract.conftest import Gateway
from tests.contract.openapi_checks import closed

STRICT = schemathesis.openapi.from_dict(closed(openapi.DOCUMENT))


def test_openapi_document_is_public_and_is_the_modules_bytes(gateway: Gateway) -> None:
    resp = requests.get(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 200
    assert resp.content == openapi.BODY
    assert resp.headers["Content-Type"] == "application/json"
    assert "ETag" not in resp.headers
    assert resp.headers["Cache-Control"] == "no-store"
    assert resp.headers["Repr-Digest"] == repr_digest(hashlib.sha256(openapi.BODY).hexdigest())
    assert len(resp.headers["X-Request-Id"]) == 36


def test_openapi_document_ignores_a_bad_token(gateway: Gateway) -> None:
    resp = gateway.get(openapi.PATH, token="fxev_not-a-token")
    assert resp.status_code == 200
    assert resp.content == openapi.BODY


def test_openapi_document_never_answers_304(gateway: Gateway) -> None:
    etag = '"' + openapi.SHA256 + '"'
    for tag in (etag, "*"):
        resp = gateway.get(openapi.PATH, token=None, headers={"If-None-Match": tag})
        assert resp.status_code == 200 and resp.content == openapi.BODY


def test_openapi_document_head_has_headers_and_no_body(gateway: Gateway) -> None:
    resp = requests.head(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 200
    assert resp.content == b""
    assert resp.headers["Cache-Control"] == "no-store"


def test_openapi_document_takes_no_query_parameters(gateway: Gateway) -> None:
    resp = gateway.get(openapi.PATH + "?format=yaml", token=None)
    assert resp.status_code == 400
    assert resp.json()["code"] == "INVALID_PARAMS"


def test_openapi_document_refuses_other_methods(gateway: Gateway) -> None:
    resp = requests.post(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 405
    assert resp.headers["Allow"] == "GET, HEAD"


def conforms(resp: requests.Response, path: str) -> None:
    """The answer's status is documented for ``path`` and its body and headers conform."""
    operation = STRICT[path][resp.request.method]
    operation.validate_response(resp)
    documented = operation.definition.raw["responses"][str(resp.status_code)]
    if "$ref" in documented:
        documented = openapi.RESPONSES[documented["$ref"].rsplit("/", 1)[1]]
    for name, header in documented.get("headers", {}).items():
        if "$ref" in header:
            header = openapi.HEADERS[header["$ref"].rsplit("/", 1)[1]]
        if header["required"]:
            assert name in resp.headers, name


@pytest.mark.gateway_env(FXEV_RATE_LIMIT_PER_MIN="1")
def test_a_rate_limited_answer_conforms_to_the_document(private_gateway: Gateway) -> None:
    assert private_gateway.get("/v1/coverage").status_code == 200
    limited = private_gateway.get("/v1/coverage")
    assert limited.status_code == 429
    conforms(limited, "/v1/coverage")
    assert int(limited.headers["Retry-After"]) >= 1


def test_an_answer_before_the_first_build_conforms_to_the_document(
    unbuilt_gateway: Gateway,
) -> None:
    for path in ("/v1/coverage", "/v1/health/ready"):
        resp = unbuilt_gateway.get(path)
        assert resp.status_code == 503
        conforms(resp, path)
