"""BytesResponse puts on the wire the header bytes Sanic's own response would."""

from __future__ import annotations

import pytest
from sanic.response import HTTPResponse

from gateway.response import BytesResponse


def wire(cls: type[HTTPResponse], headers: dict[str, object], status: int = 200):
    response = cls(b"{}", status=status, headers=headers, content_type="application/json")
    return list(response.processed_headers)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Request-Id": "49b00ed5-e2c3-48aa-81f0-2666713d38ce", "Cache-Control": "no-store"},
        {"ETag": '"ab"', "Retry-After": 7, "content-length": 2, "alt-svc": ""},
        {"X-Identidad-Consulta": "GET https://example.org/a%C3%B1o?x=1"},
    ],
)
def test_safe_headers_are_sent_as_sanics_would(headers: dict[str, object]) -> None:
    assert wire(BytesResponse, headers) == wire(HTTPResponse, headers)


@pytest.mark.parametrize("bad", ["a\r\nSet-Cookie: x=1", "a\nb", "a\0b"])
def test_a_line_break_or_nul_anywhere_is_stripped_as_sanic_strips_it(bad: str) -> None:
    headers = {"X-Request-Id": "ok", "X-Echo": bad}
    sent = wire(BytesResponse, headers)
    assert sent == wire(HTTPResponse, headers)
    assert all(b"\r" not in v and b"\n" not in v and b"\0" not in v for _, v in sent)


def test_a_304_gets_no_content_type() -> None:
    assert wire(BytesResponse, {"ETag": '"ab"'}, 304) == wire(HTTPResponse, {"ETag": '"ab"'}, 304)
    assert b"content-type" not in dict(wire(BytesResponse, {}, 304))
