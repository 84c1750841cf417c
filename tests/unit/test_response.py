"""BytesResponse puts on the wire the header bytes Sanic's own response would, and its Date."""

from __future__ import annotations

import email.utils
import re
import time

import pytest
from sanic.response import HTTPResponse

from gateway.http.response import BytesResponse, http_date


def wire(cls: type[HTTPResponse], headers: dict[str, object], status: int = 200):
    """The header bytes ``cls`` sends, but the ``Date`` only BytesResponse adds."""
    response = cls(b"{}", status=status, headers=headers, content_type="application/json")
    return [(name, value) for name, value in response.processed_headers if name.lower() != b"date"]


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


def test_every_response_gets_an_http_date_unless_it_has_one() -> None:
    for status in (200, 304, 404):
        sent = dict(BytesResponse(b"", status=status).processed_headers)
        date = sent[b"Date"].decode()
        assert re.fullmatch(r"[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT", date)
        assert abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time()) < 2
    given = "Sun, 06 Nov 1994 08:49:37 GMT"
    sent = list(BytesResponse(b"", headers={"Date": given}).processed_headers)
    assert [value for name, value in sent if name.lower() == b"date"] == [given.encode()]
    assert email.utils.parsedate_to_datetime(http_date()).tzinfo is not None
