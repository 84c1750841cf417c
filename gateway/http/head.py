"""A request's head read by RFC 9112's rules, before Sanic parses it
(docs/decisions.md#bad-requests).

Sanic splits a head on CRLF, then on spaces and colons, and takes what it finds. That is lenient
where RFC 9112 has a server refuse, and strict where the RFC has it read on. The shipped edge
(nginx) reads heads by the RFC, and a gateway must not read the same bytes otherwise, behind the
edge or alone. So a whole head (the bytes before its blank line) is read here first, and is:

- **refused** (400 ``INVALID_PARAMS``) for
  - a CR or LF that is not a CRLF line end, or a NUL (RFC 9110 5.5: "invalid and dangerous");
  - a request line that is not a method, a target and a version, one space apart (RFC 9112 3);
  - a header line that is not a token, a colon and a value: a space before the colon (5.1), a
    line folded onto the next (5.2), a name that is no token;
  - an HTTP/1.1 request with no ``Host``, any request with two, or a ``Host`` that is no
    ``host[:port]`` (3.2), an empty host included (RFC 9110 4.2.1);
  - an absolute form whose authority is no ``host[:port]``, with a user (RFC 9110 4.2.4) or
    with a fragment (RFC 9112 3.2: no part of a target);
  - a ``Transfer-Encoding`` in an HTTP/1.0 request, whose framing is then faulty (6.1); a
    ``Content-Length`` that is not ASCII digits (6.3), a ``Transfer-Encoding`` with a control
    byte (Sanic strips a value's leading whitespace as Python knows it, VT and FF included,
    and would read the framing nginx refuses);
- **rewritten**, for Sanic to read what the RFC reads:
  - the absolute form with no path (``http://host``), or an empty port (``http://host:/p``),
    is read as its origin form (``/``, ``/p``: 3.2.2; RFC 3986 6.2.3), where Sanic's request had
    no path (and failed in routing and in its error page) or was refused. Sanic reads the
    ``Host``, not the target's authority, for any absolute form (a departure from 3.2.2 that
    docs/decisions.md#bad-requests names);
  - a later HTTP/1 minor version is read as HTTP/1.1 (RFC 9110 2.5);
  - the coding ``chunked`` in any case is written in lower case (RFC 9112 7: coding names are
    case-insensitive; Sanic compares them as they are).

A ``Content-Length`` and a chunk's size are numbers in ASCII digits (:func:`read_number`, which
Sanic's reading of both calls: ``gateway.server.http1``). A chunked body's trailer section is
field lines, as a head's are (:func:`is_trailer_section`, RFC 9112 7.1.2);
``gateway.server.http1`` reads and discards it, where Sanic refused any.

The common head passes as it came, at the cost of two regular expressions and a few searches.
"""

from __future__ import annotations

import re

from gateway.errors import InvalidParams

# What a client may send: a head (its request line and header lines, the blank line's CRLF
# CRLF not counted) shorter than HEAD_MAX bytes, as Sanic's own limit reads it; a body of at most
# BODY_MAX bytes (the shipped edge's nginx takes as much: client_max_body_size). A request from
# the edge may have a longer head, up to EDGE_HEAD_MAX: an auth step repeats the client's target,
# and a refused answer travels packed in one header (gateway.edge.steps); the edge never passes on a
# client's head over HEAD_MAX.
HEAD_MAX = 8 << 10
BODY_MAX = 1 << 20
EDGE_HEAD_MAX = 32 << 10
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) (HTTP/[0-9]\.[0-9])")
# Every header line with the CRLF before it: a token, a colon, then any bytes but NUL, CR and LF.
# Other control bytes are invalid too (RFC 9110 5.5), but a recipient may keep them, and nginx
# does: the edge passes them on, so refusing them here would make its auth step fail.
FIELD_LINES = re.compile(rb"(?:\r\n" + _TOKEN + rb":[^\0\r\n]*)*")
# A host (an IP literal or a name: not empty, RFC 9110 4.2.1; no empty label and not "." alone,
# as nginx reads it) and an optional port. The edge's nginx refuses a Host by the same pattern
# (gateway/edge/maps.py, $fxev_host_invalid): it reads the same in PCRE and in Python.
HOST_PATTERN = (
    r"(?!.*\.\.)(?!\.(?::|$))(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[-A-Za-z0-9._~!$&'()*+,;=:]+)\]"
    r"|[-A-Za-z0-9._~!$&'()*+,;=%]+)(?::[0-9]*)?"
)
HOST_VALUE = re.compile(HOST_PATTERN.encode(), re.DOTALL)
# A framing line (Content-Length, Transfer-Encoding) and its value; no lazy quantifier, whose
# time would grow with the square of a run of spaces.
FRAMING = re.compile(rb"\r\n(content-length|transfer-encoding):([^\r]*)", re.IGNORECASE)
CONTROL_BYTE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
DECIMAL = re.compile(r"[0-9]+")
HEXADECIMAL = re.compile(r"[0-9A-Fa-f]+")
# A target that starts as the absolute form does (a scheme and "//"), and the absolute form
# itself: an authority with no user (its port perhaps empty), then a path, a query or nothing.
SCHEME = re.compile(rb"[A-Za-z][-A-Za-z0-9+.]*://")
ABSOLUTE_FORM = re.compile(rb"[A-Za-z][-A-Za-z0-9+.]*://([^/?#@]*)((?:[/?][^#]*)?)")
METHOD = re.compile(rb"(" + _TOKEN + rb") ")
LAST_CHUNK_SIZE = re.compile(rb"0+[ \t]*")  # before an extension, if any (RFC 9112 7.1.1)
LATER_HTTP1 = re.compile(rb"HTTP/1\.[2-9]")
STRAY_BYTE = re.compile(rb"\0|\r(?!\n)|(?<!\r)\n")  # a NUL, or a CR or LF out of a CRLF

BAD_LINE_ENDS = "A request's lines end with CRLF; a CR, LF or NUL is allowed nowhere else."
BAD_REQUEST_LINE = "The request line is a method, a target and HTTP/1.x, one space apart."
BAD_FIELD_LINE = (
    "A header line is a name (a token: no spaces), a colon and a value on the same line."
)


def has_bare_lf(head: bytes | bytearray) -> bool:
    """Whether ``head`` has a LF that no CR precedes."""
    return head.count(b"\n") != head.count(b"\r\n")


def conform(head: bytes) -> bytes:
    """``head`` as Sanic should parse it: the same object when nothing is to be rewritten.

    Raises :class:`InvalidParams` for a head RFC 9112 has a server refuse.
    """
    line_end = head.find(b"\r\n")
    request_line, fields = (head, b"") if line_end < 0 else (head[:line_end], head[line_end:])
    line = REQUEST_LINE.fullmatch(request_line)
    if line is None:
        raise InvalidParams(BAD_LINE_ENDS if STRAY_BYTE.search(head) else BAD_REQUEST_LINE)
    if FIELD_LINES.fullmatch(fields) is None:
        raise InvalidParams(BAD_LINE_ENDS if STRAY_BYTE.search(head) else BAD_FIELD_LINE)
    method, target, version = line.groups()
    read_target, read_version, read_fields = origin_form(target), version, fields
    if LATER_HTTP1.fullmatch(version):
        read_version = b"HTTP/1.1"
    names = fields.lower()  # the field names' case does not count (RFC 9110 5.1)
    check_host(host_values(fields, names), read_version)
    if b"\r\ncontent-length:" in names or b"\r\ntransfer-encoding:" in names:
        read_fields = read_framing(fields, version)
    if (read_target, read_version, read_fields) == (target, version, fields):
        return head
    return b" ".join((method, read_target, read_version)) + read_fields


def check_request_line(received: bytes | bytearray) -> None:
    """Raises :class:`InvalidParams` if the bytes ``received`` so far hold a whole first line
    that is no request line (no head that starts so can ever be read)."""
    line_end = received.find(b"\r\n")
    if line_end >= 0 and REQUEST_LINE.fullmatch(received, 0, line_end) is None:
        stray = STRAY_BYTE.search(received, 0, line_end)
        raise InvalidParams(BAD_LINE_ENDS if stray else BAD_REQUEST_LINE)


def host_values(fields: bytes, names: bytes) -> list[bytes]:
    """The values of the ``Host`` lines of ``fields`` (lines with the CRLF before each), found in
    ``names``, the same lines in lower case."""
    values, start = [], names.find(b"\r\nhost:")
    while start >= 0:
        end = names.find(b"\r\n", start + 7)
        values.append(fields[start + 7 : None if end < 0 else end].strip(b" \t"))
        start = end if end < 0 else names.find(b"\r\nhost:", end)
    return values


def origin_form(target: bytes) -> bytes:
    """``target``, or, if it is an absolute form Sanic cannot read (no path, or an empty port),
    its origin form: the path (``/`` if empty) and the query. The authority goes (Sanic reads the
    ``Host``, as it does for any absolute form) and the head never grows past its size limit.

    Raises :class:`InvalidParams` for an absolute form that is malformed: a user, a fragment,
    an authority that is no ``host[:port]``."""
    if target[:1] == b"/" or not SCHEME.match(target):
        return target
    absolute = ABSOLUTE_FORM.fullmatch(target)
    if absolute is None or HOST_VALUE.fullmatch(absolute[1]) is None:
        raise InvalidParams("An absolute target is a scheme, a host[:port], a path and a query.")
    authority, rest = absolute.groups()
    if rest[:1] == b"/" and not authority.endswith(b":"):
        return target
    return rest if rest[:1] == b"/" else b"/" + rest


def read_framing(fields: bytes, version: bytes) -> bytes:
    """``fields`` with a ``chunked`` coding written as Sanic reads it (:func:`lower_chunked`).

    Raises :class:`InvalidParams` for framing RFC 9112 has a server refuse (6.1, 6.3), or that
    Sanic would read otherwise than nginx: a ``Content-Length`` that is not ASCII digits, a
    ``Transfer-Encoding`` in HTTP/1.0 or with a control byte."""
    for name, value in FRAMING.findall(fields):
        if name.lower() == b"content-length":
            if not DECIMAL.fullmatch(value.strip(b" \t").decode("latin-1")):
                raise InvalidParams("The Content-Length is a number in ASCII digits.")
        elif version == b"HTTP/1.0":
            raise InvalidParams("An HTTP/1.0 request cannot have Transfer-Encoding (RFC 9112 6.1).")
        elif CONTROL_BYTE.search(value):
            raise InvalidParams("The Transfer-Encoding names codings, without control bytes.")
    return FRAMING.sub(lower_chunked, fields)


def read_number(value: str, base: int = 10) -> int:
    """A ``Content-Length`` (base 10) or a chunk's size (base 16) as RFC 9112 writes them (6.3,
    7.1): ASCII digits, then perhaps spaces or tabs. Python's ``int`` also takes other scripts'
    digits, other whitespace, ``_`` and ``0x``: those raise ValueError."""
    digits = value.rstrip(" \t")
    if not (DECIMAL if base == 10 else HEXADECIMAL).fullmatch(digits):
        raise ValueError(f"not in base-{base} ASCII digits")
    return int(digits, base)


def is_last_chunk(size_line: bytes) -> bool:
    """Whether a chunk's size line (without its CRLF) opens the last chunk: a size of zero,
    perhaps with an extension (RFC 9112 7.1)."""
    return LAST_CHUNK_SIZE.fullmatch(size_line.split(b";", 1)[0]) is not None


def is_trailer_section(fields: bytes) -> bool:
    """Whether ``fields`` (a chunked body's trailer lines, each with the CRLF before it) are
    field lines as a head's are: a token, a colon and a value with no NUL, CR or LF (RFC 9112
    7.1.2)."""
    return FIELD_LINES.fullmatch(fields) is not None


def target_of(head: bytes) -> str | None:
    """The target of ``head``'s request line as Sanic decodes it, if it has one."""
    words = head.split(b"\r\n", 1)[0].split(b" ")
    return words[1].decode(errors="surrogateescape") if len(words) > 1 else None


def method_of(received: bytes | bytearray) -> str | None:
    """The method ``received`` starts with (a token, then a space), if it does: for the log line
    of a head refused before Sanic read its method."""
    method = METHOD.match(received)
    return None if method is None else method[1].decode("ascii")


def check_host(hosts: list[bytes], version: bytes) -> None:
    """Raises :class:`InvalidParams` unless the head's ``Host`` values (``hosts``) are as RFC 9112
    3.2 has them: one, or none but in HTTP/1.1; a ``host[:port]``."""
    if len(hosts) > 1:
        raise InvalidParams("A request carries one Host header, not more.")
    if not hosts:
        if version == b"HTTP/1.1":
            raise InvalidParams("An HTTP/1.1 request must carry a Host header (RFC 9112 3.2).")
    elif HOST_VALUE.fullmatch(hosts[0]) is None:
        raise InvalidParams("The Host header is a host name or address and an optional port.")


def lower_chunked(field: re.Match[bytes]) -> bytes:
    """A framing line (with its CRLF) as it came, or, if it is a ``Transfer-Encoding`` naming
    ``chunked`` in any case, with spaces or tabs around it, written as Sanic reads it:
    ``chunked``, in lower case, alone."""
    name, value = field.groups()
    if name.lower() == b"transfer-encoding" and value.strip(b" \t").lower() == b"chunked":
        return b"\r\nTransfer-Encoding: chunked"
    return field[0]


# The fields a refusal's answer reads (below): the credential for the ledger, the origin for CORS.
ANSWER_FIELD = re.compile(
    rb"(authorization|cookie|origin):[ \t]*([^\0\r\n]*?)[ \t]*", re.IGNORECASE
)


def answer_fields_in(received: bytes | bytearray) -> list[tuple[str, str]]:
    """The ``Authorization``, ``Cookie`` and ``Origin`` field lines of a head refused before
    Sanic read it, as Sanic reads them (the name lower-cased, the value trimmed): those of its
    whole lines, a CRLF after each, before the blank line. The refusal of a request with a valid
    token is then recorded in the ledger like any answer to one (docs/decisions.md#bad-requests),
    and a listed origin reads it as any ``/v1`` answer (docs/decisions.md#cors)."""
    end = received.find(b"\r\n\r\n")
    lines = bytes(received[: end if end >= 0 else received.rfind(b"\r\n")]).split(b"\r\n")[1:]
    found = []
    for line in lines:
        if (field := ANSWER_FIELD.fullmatch(line)) is not None:
            name, value = field[1].lower().decode(), field[2].decode(errors="surrogateescape")
            found.append((name, value))
    return found
