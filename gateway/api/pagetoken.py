"""Page tokens: a MAC over (revision, canonical query, offset). No nonce, no expiry.

The same query at the same revision always yields the same token, so an as-of page stays
byte-identical. These functions take the secret as a value. It is one file under ``FXEV_HOME``
(:data:`SECRET_FILE`), created once and atomically by
:func:`builder.disk.durable.read_or_create_secret` and shared by every worker and gateway; in
fleet mode it lives in Redis instead, set once by the first gateway (``SET NX``:
:meth:`gateway.fleet.gate.RedisGate.page_secret`), so a token minted by one gateway is accepted
by all (docs/operating/fleet.md#redis).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import re

SECRET_FILE = "page_token.secret"
PAGE_TOKEN = re.compile(r"([1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,17})\.([A-Za-z0-9_-]{43})")


class PageTokenError(ValueError):
    """A page token that is corrupt or belongs to another query."""


@dataclasses.dataclass(frozen=True, slots=True)
class PageCursor:
    revision: int
    offset: int


def _mac(secret: bytes, revision: int, canonical_query: str, offset: int) -> str:
    message = f"fxev-page-v1\n{revision}\n{canonical_query}\n{offset}".encode()
    digest = hmac.new(secret, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign(secret: bytes, revision: int, canonical_query: str, offset: int) -> str:
    return f"{revision}.{offset}.{_mac(secret, revision, canonical_query, offset)}"


def verify(secret: bytes, token: str, canonical_query: str) -> PageCursor:
    """The cursor a token fixes, if it was made by this installation for this query."""
    match = PAGE_TOKEN.fullmatch(token)
    if match is None:
        raise PageTokenError("page_token is malformed")
    revision, offset = int(match.group(1)), int(match.group(2))
    expected = _mac(secret, revision, canonical_query, offset)
    if not hmac.compare_digest(expected.encode(), match.group(3).encode()):
        raise PageTokenError("page_token does not belong to this query")
    return PageCursor(revision, offset)
