"""A chunked request body is read by RFC 9112 7.1 (docs/decisions.md#bad-requests), sent byte for
byte on a socket to a gateway alone: its trailer section is read and discarded, and a body whose
framing is not the RFC's is refused (400 ``INVALID_PARAMS``) with the connection closed, so that
no byte of it is ever read as a next request.

Each request is followed on the same connection by a second one, ``/v1/health/live``: the answers
read back say where the gateway found the first request's end.
"""

from __future__ import annotations

import socket
import time

import orjson
import pytest

from tests.contract.conftest import Gateway, ledger_entries
from tests.contract.test_bad_requests import request, strict_gateway
from tests.support.rawhttp import status_and_headers

__all__ = ["strict_gateway"]  # the module's gateway, shared with the other refusals' tests

CHUNKED = b"Transfer-Encoding: chunked"
LIVE = b"GET /v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def answers(gateway: Gateway, data: bytes, wanted: int = 2, wait_s: float = 5.0) -> list[bytes]:
    """Send ``data`` on a fresh connection; the answers read back (each a head and its body),
    until ``wanted`` came or the gateway closed the connection, then ``b"<closed>"`` if it did."""
    port = int(gateway.base_url.rsplit(":", 1)[1])
    found: list[bytes] = []
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        sock.sendall(data)
        received = b""
        while len(found) < wanted:
            head, separator, rest = received.partition(b"\r\n\r\n")
            if separator:
                length = int(status_and_headers(head)[1].get("content-length", "0"))
                if len(rest) >= length:
                    found.append(head + separator + rest[:length])
                    received = rest[length:]
                    continue
            chunk = sock.recv(65536)
            if not chunk:
                return [*found, b"<closed>"]
            received += chunk
        sock.settimeout(0.3)
        try:
            if not sock.recv(1):
                found.append(b"<closed>")
        except TimeoutError:
            pass  # open, and nothing more sent
    return found


def status(answer: bytes) -> int:
    return status_and_headers(answer.partition(b"\r\n\r\n")[0])[0]


def body(answer: bytes) -> dict[str, object]:
    return orjson.loads(answer.partition(b"\r\n\r\n")[2])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "chunks",
    [
        b"5\r\nhello\r\n0\r\nX-Checksum: 5d41402a\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-One: 1\r\nX-Two:\r\nX-Three:  a b \r\n\r\n",
        b"5;name=value\r\nhello\r\n000;last\r\nX-One: 1\r\n\r\n",
        b"0\r\nX-Only: trailer\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
    ],
    ids=["a trailer", "three trailers", "extensions", "no data", "no trailer"],
)
def test_a_chunked_body_s_trailer_section_is_read_and_discarded(
    strict_gateway: Gateway, chunks: bytes
) -> None:
    """RFC 9112 7.1.2: a recipient must be able to parse and discard trailer fields. Sanic
    refused any (400, and the connection closed); the request is answered as without them, and
    the connection goes on with the next request."""
    sent = request(strict_gateway, b"/v1/coverage", CHUNKED) + chunks + LIVE
    first, second = answers(strict_gateway, sent, wanted=2)
    assert status(first) == 200, first[-300:]
    assert status(second) == 200 and body(second) == {"status": "alive"}, second[-300:]
    x_request_id = status_and_headers(first.partition(b"\r\n\r\n")[0])[1]["x-request-id"]
    entries = ledger_entries(strict_gateway.env, x_request_id)
    assert [entry["status"] for entry in entries] == [200]


@pytest.mark.parametrize(
    "chunks",
    [
        b"5\r\nhelloXX0\r\n\r\n",
        b"5\r\nhello0\r\n\r\n",
        b"0\r\nX Trailer: 1\r\n\r\n",
        b"0\r\nX-Trailer : 1\r\n\r\n",
        b"0\r\nX-Trailer: 1\r\n folded\r\n\r\n",
        b"0\r\nX-Trailer: a\0b\r\n\r\n",
        b"0\r\nX-Trailer: a\rb\r\n\r\n",
        b"0\r\nX-Trailer: 1\n" + LIVE,
        b"0\r\nX-Trailer: 1\r\n" + LIVE.replace(b"\r\n\r\n", b"\n\r\n"),
        b"0\r\nX-Trailer: " + b"t" * 9000 + b"\r\n\r\n",
    ],
    ids=[
        "data not ending in CRLF",
        "data one byte long",
        "a space in a name",
        "a space before the colon",
        "a folded line",
        "a NUL",
        "a stray CR",
        "a bare LF",
        "a request in the trailers",
        "over 8 KB",
    ],
)
def test_a_chunked_body_framed_otherwise_is_refused_and_the_connection_closed(
    strict_gateway: Gateway, chunks: bytes
) -> None:
    """RFC 9112 7.1: a chunk's data ends with CRLF (Sanic skipped any two bytes there), and a
    trailer section is field lines, each ending in CRLF, as a head's are (no longer than a head
    may be). Anything else is 400 ``INVALID_PARAMS``, and the connection closes: the live probe
    sent after it is never answered, whatever the trailer section held."""
    sent = request(strict_gateway, b"/v1/coverage", CHUNKED) + chunks + LIVE
    found = answers(strict_gateway, sent, wanted=2)
    assert [status(answer) for answer in found[:-1]] == [400], found
    assert found[-1] == b"<closed>"
    refusal = body(found[0])
    assert (refusal["code"], refusal["retryable"]) == ("INVALID_PARAMS", False)
    assert "Traceback" not in strict_gateway.log()


def test_a_trailer_section_sent_slowly_is_waited_for(strict_gateway: Gateway) -> None:
    """The trailer section may arrive in pieces: the gateway waits for its empty line."""
    port = int(strict_gateway.base_url.rsplit(":", 1)[1])
    pieces = [
        request(strict_gateway, b"/v1/coverage", CHUNKED) + b"5\r\nhello\r",
        b"\n0\r",
        b"\nX-Tra",
        b"iler: 1\r\n",
        b"\r\n" + LIVE,
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(0.05)
        received = b""
        while received.count(b"HTTP/1.1 ") < 2 or not received.endswith(b'{"status":"alive"}'):
            chunk = sock.recv(65536)
            assert chunk, received[-300:]
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 ")
    assert received.count(b"HTTP/1.1 200 ") == 2


def test_the_gateway_answers_after_every_chunked_refusal(strict_gateway: Gateway) -> None:
    found = answers(strict_gateway, request(strict_gateway, b"/v1/coverage") + LIVE, wanted=2)
    assert [status(answer) for answer in found] == [200, 200]
