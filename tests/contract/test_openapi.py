"""``/v1/openapi.json`` as served: public, the module's exact bytes, revalidated with its ETag."""

from __future__ import annotations

import requests

from gateway import openapi
from tests.contract.conftest import Gateway


def test_openapi_document_is_public_and_is_the_modules_bytes(gateway: Gateway) -> None:
    resp = requests.get(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 200
    assert resp.content == openapi.BODY
    assert resp.headers["Content-Type"] == "application/json"
    assert resp.headers["ETag"] == openapi.ETAG
    assert resp.headers["Cache-Control"] == "no-cache"
    assert len(resp.headers["X-Request-Id"]) == 36


def test_openapi_document_ignores_a_bad_token(gateway: Gateway) -> None:
    resp = gateway.get(openapi.PATH, token="fxev_not-a-token")
    assert resp.status_code == 200
    assert resp.content == openapi.BODY


def test_openapi_document_answers_304_to_its_etag(gateway: Gateway) -> None:
    resp = gateway.get(openapi.PATH, token=None, headers={"If-None-Match": openapi.ETAG})
    assert resp.status_code == 304
    assert resp.content == b""
    assert resp.headers["ETag"] == openapi.ETAG
    stale = gateway.get(openapi.PATH, token=None, headers={"If-None-Match": '"0"'})
    assert stale.status_code == 200


def test_openapi_document_head_has_headers_and_no_body(gateway: Gateway) -> None:
    resp = requests.head(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 200
    assert resp.content == b""
    assert resp.headers["ETag"] == openapi.ETAG


def test_openapi_document_takes_no_query_parameters(gateway: Gateway) -> None:
    resp = gateway.get(openapi.PATH + "?format=yaml", token=None)
    assert resp.status_code == 400
    assert resp.json()["code"] == "INVALID_PARAMS"


def test_openapi_document_refuses_other_methods(gateway: Gateway) -> None:
    resp = requests.post(gateway.url(openapi.PATH), timeout=10)
    assert resp.status_code == 405
    assert resp.headers["Allow"] == "GET, HEAD"
