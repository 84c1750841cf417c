"""FXEV_CORS_ORIGINS as read, ``Repr-Digest`` as written, and the OpenAPI document's account of
both (docs/decisions.md#http-basics, docs/decisions.md#cors)."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest

from builder.core.settings import SettingsError, load_settings
from gateway import openapi
from gateway.http.sending import CORS_EXPOSE, cors_state, listed, repr_digest

DOC = openapi.DOCUMENT


@pytest.mark.parametrize(
    ("raw", "origins"),
    [
        ("", None),
        (" , ", None),
        ("*", ("*",)),
        ("https://App.Example", ("https://app.example",)),
        (
            "https://a.example, http://127.0.0.1:8080,https://a.example",
            ("https://a.example", "http://127.0.0.1:8080"),
        ),
    ],
)
def test_cors_origins_are_read_as_origins(raw: str, origins: tuple[str, ...] | None) -> None:
    assert load_settings({"FXEV_CORS_ORIGINS": raw}).cors_origins == origins
    assert load_settings({}).cors_origins is None


@pytest.mark.parametrize(
    "raw", ["app.example", "https://app.example/", "https://a.example/path", "null"]
)
def test_a_cors_origin_that_is_not_one_stops_the_command(raw: str) -> None:
    with pytest.raises(SettingsError, match="FXEV_CORS_ORIGINS"):
        load_settings({"FXEV_CORS_ORIGINS": raw})


@pytest.mark.parametrize("body", [b"", b"{}", b"x" * 100_000])
def test_repr_digest_is_the_sha256_in_base64_between_colons(body: bytes) -> None:
    sha = hashlib.sha256(body)
    value = repr_digest(sha.hexdigest())
    assert value == "sha-256=:" + base64.b64encode(sha.digest()).decode() + ":"
    schema = DOC["components"]["headers"]["Repr-Digest"]["schema"]
    assert re.fullmatch(schema["pattern"], value)


def resolved(response: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in response:
        response = DOC["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    return response


def every_response() -> list[tuple[str, str, str, dict[str, Any]]]:
    return [
        (path, method, status, resolved(response))
        for path, item in DOC["paths"].items()
        for method, operation in item.items()
        for status, response in operation["responses"].items()
    ]


def test_every_response_describes_date_and_cors_and_every_body_its_repr_digest() -> None:
    for path, method, status, response in every_response():
        headers = response["headers"]
        where = (path, method, status)
        assert headers["Date"]["$ref"].endswith("/Date"), where
        for name in ("Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary"):
            assert name in headers, (where, name)
        assert ("Repr-Digest" in headers) is ("content" in response), where
        if method == "head" or status == "304":
            assert "Repr-Digest" not in headers, where


def test_the_documented_header_values_are_the_gateways() -> None:
    headers = DOC["components"]["headers"]
    assert headers["Access-Control-Expose-Headers"]["schema"]["const"] == CORS_EXPOSE
    assert not headers["Access-Control-Allow-Origin"]["required"]
    assert headers["WWW-Authenticate"]["schema"]["enum"] == [
        "Bearer",
        'Bearer error="invalid_token"',
    ]
    date = headers["Date"]["schema"]["pattern"]
    assert re.fullmatch(date, "Mon, 21 Sep 2026 20:00:00 GMT")
    assert not re.fullmatch(date, "Monday, 21-Sep-26 20:00:00 GMT")


def test_every_operation_answers_400_and_408_live_too() -> None:
    for path, item in DOC["paths"].items():
        for method, operation in item.items():
            assert {"400", "408"} <= set(operation["responses"]), (path, method)


@pytest.mark.parametrize(
    ("origins", "origin", "allowed", "state"),
    [
        (None, "https://a.example", None, "-"),
        (None, None, None, "-"),
        (frozenset({"https://a.example"}), "https://a.example", "https://a.example", "a"),
        (frozenset({"https://a.example"}), "https://a.example \t", "https://a.example", "a"),
        (frozenset({"https://a.example"}), "https://b.example", None, "v"),
        (frozenset({"https://a.example"}), None, None, "v"),
        (frozenset({"*"}), "https://b.example", "https://b.example", "a"),
        (frozenset({"*"}), " ", None, "v"),
    ],
)
def test_an_origin_is_listed_trimmed_and_its_cors_state_is_what_the_answer_carries(
    origins: frozenset[str] | None, origin: str | None, allowed: str | None, state: str
) -> None:
    """RFC 9110 trims spaces and tabs around a field's value, as nginx does before a gateway
    sees it through the edge; the state (none, ``Vary`` only, allowed) is part of the edge's
    cache key, so a cached answer never carries another configuration's CORS headers."""
    assert listed(origins, origin) == allowed
    assert cors_state(origins, origin) == state
