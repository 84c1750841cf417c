"""The gateway's one response type: stored bytes, sent as they are, with cheaply checked headers.

Sanic's ``HTTPResponse`` strips CR, LF and NUL from every header name and value with
``str.translate`` and a deletion table, character by character in Python's slow path, on every
response. :class:`BytesResponse` checks all of them at once instead (three substring searches over
the joined text, in C) and only when one of those characters is there falls back to Sanic's own
sanitising, so what goes on the wire is the same either way.

Every response gets its ``Date`` (RFC 9110's IMF-fixdate, docs/decisions.md#http-basics) as its
head is written, formatted once a second.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from email.utils import formatdate

from sanic.helpers import has_message_body
from sanic.response import HTTPResponse

_UNSAFE = ("\r", "\n", "\0")
_date_second = -1
_date_text = ""


def http_date() -> str:
    """Now as an HTTP date (``Sun, 06 Nov 1994 08:49:37 GMT``), on the real clock."""
    global _date_second, _date_text
    second = int(time.time())
    if second != _date_second:
        _date_text = formatdate(second, usegmt=True)
        _date_second = second
    return _date_text


class BytesResponse(HTTPResponse):
    __slots__ = ()

    @property
    def processed_headers(self) -> Iterator[tuple[bytes, bytes]]:
        if has_message_body(self.status):
            self.headers.setdefault("content-type", self.content_type)
        self.headers.setdefault("Date", http_date())
        pairs = [(name, f"{value}") for name, value in self.headers.items()]
        joined = "".join([text for pair in pairs for text in pair])
        if any(character in joined for character in _UNSAFE):
            return super().processed_headers
        return (
            (name.encode("ascii"), value.encode(errors="surrogateescape")) for name, value in pairs
        )
