"""The gateway's one response type: stored bytes, sent as they are, with cheaply checked headers.

Sanic's ``HTTPResponse`` strips CR, LF and NUL from every header name and value with
``str.translate`` and a deletion table, character by character in Python's slow path, on every
response. :class:`BytesResponse` checks all of them at once instead (three substring searches over
the joined text, in C) and only when one of those characters is there falls back to Sanic's own
sanitising, so what goes on the wire is the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator

from sanic.helpers import has_message_body
from sanic.response import HTTPResponse

_UNSAFE = ("\r", "\n", "\0")


class BytesResponse(HTTPResponse):
    __slots__ = ()

    @property
    def processed_headers(self) -> Iterator[tuple[bytes, bytes]]:
        if has_message_body(self.status):
            self.headers.setdefault("content-type", self.content_type)
        pairs = [(name, f"{value}") for name, value in self.headers.items()]
        joined = "".join([text for pair in pairs for text in pair])
        if any(character in joined for character in _UNSAFE):
            return super().processed_headers
        return (
            (name.encode("ascii"), value.encode(errors="surrogateescape")) for name, value in pairs
        )
