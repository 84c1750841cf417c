"""Writing an HTTP/1.1 request and reading its answer as raw bytes (tests that send requests
byte by byte)."""

from __future__ import annotations


def status_and_headers(head: bytes) -> tuple[int, dict[str, str]]:
    """The status and headers (lower-case names; a repeated name keeps its last value) of an
    answer's head: the bytes before its blank line."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ")[1]), headers


def padded(request: bytes, size: int) -> bytes:
    """``request`` (a whole head, ending with its blank line) with an ``X-Pad`` header making
    it ``size`` bytes before its blank line."""
    head = request.removesuffix(b"\r\n\r\n")
    pad = b"\r\nX-Pad: "
    return head + pad + b"p" * (size - len(head) - len(pad)) + b"\r\n\r\n"
