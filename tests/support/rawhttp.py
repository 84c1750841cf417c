"""Reading an HTTP/1.1 answer received as raw bytes (tests that send requests byte by byte)."""

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
