"""A stand-in for ``curl``, for hosts without it: the options the docs' examples use, no more.

``-s``, ``-S``, ``-f`` (ignored but for ``-f``'s exit 22 on a status of 400 or more), ``-i``,
``-I``, ``-X METHOD``, ``-H 'Name: value'``, ``-G`` with ``--data-urlencode NAME=VALUE``,
``-o FILE`` and ``-D FILE`` (``-`` for stdout). It prints what curl prints: with ``-i`` the status
line and the headers as the server sent them, a blank line, then the body bytes unchanged.
"""

from __future__ import annotations

import http.client
import sys
import urllib.parse
from pathlib import Path


def main(argv: list[str]) -> int:
    url = ""
    method = "GET"
    headers: list[tuple[str, str]] = []
    data: list[str] = []
    include = fail = get = False
    output = dump = None
    args = iter(argv)
    for arg in args:
        if arg in ("-s", "-S", "-sS", "--silent"):
            continue
        if arg == "-f":
            fail = True
        elif arg == "-i":
            include = True
        elif arg == "-I":
            method, include = "HEAD", True
        elif arg == "-X":
            method = next(args)
        elif arg == "-H":
            name, _, value = next(args).partition(":")
            headers.append((name.strip(), value.strip()))
        elif arg == "-G":
            get = True
        elif arg == "--data-urlencode":
            name, _, value = next(args).partition("=")
            data.append(f"{name}={urllib.parse.quote(value, safe='')}")
        elif arg == "-o":
            output = next(args)
        elif arg == "-D":
            dump = next(args)
        elif arg.startswith("-"):
            print(f"curl stand-in: option {arg} is not supported", file=sys.stderr)
            return 2
        else:
            url = arg
    if get and data:
        url += ("&" if "?" in url else "?") + "&".join(data)
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    connection.putrequest(method, target, skip_accept_encoding=True)
    for name, value in [("User-Agent", "curl-stand-in"), ("Accept", "*/*"), *headers]:
        connection.putheader(name, value)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read() if method != "HEAD" else b""
    reason = f" {response.reason}" if response.reason else ""
    head = f"HTTP/1.1 {response.status}{reason}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in response.getheaders()
    )
    head_bytes = (head + "\r\n").encode("latin-1")
    if dump == "-":
        sys.stdout.buffer.write(head_bytes)
    elif dump:
        Path(dump).write_bytes(head_bytes)
    if output:
        Path(output).write_bytes(body)
    else:
        sys.stdout.buffer.write((head_bytes if include else b"") + body)
    sys.stdout.buffer.flush()
    return 22 if fail and response.status >= 400 else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
