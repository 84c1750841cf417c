"""Bad requests are never 500 (docs/decisions.md#bad-requests), sent byte for byte on a socket.

What the gateway cannot parse or what exceeds its limits is 400 ``INVALID_PARAMS`` with the
spec's error body; a client too slow to send its request gets 408 ``REQUEST_TIMEOUT`` after the
request timeout (``SANIC_REQUEST_TIMEOUT``, short here). A request refused before any route is
logged in one line, and no refusal leaves a traceback in the log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from gateway.http.head import BODY_MAX, EDGE_HEAD_MAX, HEAD_MAX
from gateway.http.sending import TOO_LARGE
from tests.contract.conftest import Gateway, _running, copy_demo, ledger_entries
from tests.support.rawhttp import padded, status_and_headers

REQUEST_TIMEOUT_S = 2
RATES = b"/v1/rates?currency=USD&series=publicado"
LATEST = b"/v1/rates/latest?currency=USD&series=publicado"
BIG = 100_000


@pytest.fixture(scope="module")
def strict_gateway(tmp_path_factory: pytest.TempPathFactory, demo_home: Path) -> Iterator[Gateway]:
    base = tmp_path_factory.mktemp("bad-requests")
    env, token = copy_demo(demo_home, base, SANIC_REQUEST_TIMEOUT=str(REQUEST_TIMEOUT_S))
    yield from _running(base, env, token)


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float
    log: str  # what the gateway logged meanwhile


def request(gateway: Gateway, target: bytes, *headers: bytes, token: bool = True) -> bytes:
    """A GET of ``target`` with CRLF line ends, the token first unless told otherwise."""
    lines = [b"GET " + target + b" HTTP/1.1", b"Host: 127.0.0.1"]
    if token:
        lines.append(b"Authorization: Bearer " + gateway.token.encode())
    return b"\r\n".join([*lines, *headers, b"", b""])


def exchange(gateway: Gateway, data: bytes, wait_s: float = 10.0) -> Answer:
    """Send ``data`` on a fresh connection; the one answer read back, and the log it left."""
    log_start = gateway.log_path.stat().st_size
    port = int(gateway.base_url.rsplit(":", 1)[1])
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as sock:
        # Refused before all of it was read: the answer is waiting all the same.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        received = read_answer(sock)
    seconds = time.monotonic() - started
    head, _, body = received.partition(b"\r\n\r\n")
    status, headers = status_and_headers(head)
    # A refusal's log line is written before its answer is sent (gateway.http.sending logs,
    # then sends; the handler flushes each line), so it is in the file by now. The pause only
    # gives a traceback written after the answer a chance to show: it cannot fail a test.
    time.sleep(0.05)
    log = gateway.log_path.read_bytes()[log_start:].decode(errors="replace")
    return Answer(status, headers, body, seconds, log)


def read_answer(sock: socket.socket) -> bytes:
    """The bytes of one answer on ``sock``: its head and the body its length announces."""
    received = b""
    while b"\r\n\r\n" not in received or len(received) < answer_length(received):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def answer_length(received: bytes) -> int:
    head, found, _ = received.partition(b"\r\n\r\n")
    if not found:
        return 1 << 62
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return len(received)


def assert_error(answer: Answer, status: int, code: str, retryable: bool = False) -> None:
    assert answer.status == status, (answer.status, answer.body[:300])
    body = orjson.loads(answer.body)
    assert set(body) == {"code", "message", "request_id", "retryable"}
    assert (body["code"], body["retryable"]) == (code, retryable)
    assert body["request_id"] == answer.headers["x-request-id"]
    assert answer.headers["cache-control"] == "no-store"
    assert "date" in answer.headers
    assert "Traceback" not in answer.log
    assert "ERROR" not in answer.log


def assert_refused(answer: Answer) -> None:
    """The API's 400 ``INVALID_PARAMS``, refused before any route in one line of log."""
    assert_error(answer, 400, "INVALID_PARAMS")
    assert_refused_in_one_line(answer)


def assert_refused_in_one_line(answer: Answer) -> None:
    """Refused by the HTTP layer, before any route: one line of the log says so."""
    lines = [line for line in answer.log.splitlines() if line.strip()]
    assert len(lines) == 1, answer.log
    assert "refused" in lines[0] and str(answer.status) in lines[0], lines[0]


# -- dates and integers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dates",
    [
        b"from=9995-01-01&to=9995-01-02",
        b"from=9999-12-31&to=9999-12-31",
        b"from=9996-02-29&to=9999-12-31",
        b"from=0001-01-01&to=0001-01-02",
    ],
)
def test_valid_dates_at_the_ends_of_the_calendar_are_a_query_like_any_other(
    strict_gateway: Gateway, dates: bytes
) -> None:
    """In range and well formed, so no 400: nothing was observed then (404, the data check)."""
    for extra in (b"", b"&as_of_revision=3", b"&include_annotations=true"):
        answer = exchange(strict_gateway, request(strict_gateway, RATES + b"&" + dates + extra))
        assert_error(answer, 404, "NO_OBSERVATIONS")


@pytest.mark.parametrize(
    "dates",
    [
        b"from=0000-01-01&to=2026-01-01",
        b"from=10000-01-01&to=10000-01-02",
        b"from=2026-01-01&to=10000-01-01",
        b"from=-001-01-01&to=2026-01-01",
    ],
)
def test_dates_outside_the_years_1_to_9999_are_invalid_params(
    strict_gateway: Gateway, dates: bytes
) -> None:
    answer = exchange(strict_gateway, request(strict_gateway, RATES + b"&" + dates))
    assert_error(answer, 400, "INVALID_PARAMS")


@pytest.mark.parametrize("digits", [20, 4300, 4301, 5000, 7000])
def test_integers_of_any_length_are_invalid_params(strict_gateway: Gateway, digits: int) -> None:
    revision = b"1" * digits
    target = RATES + b"&from=2026-09-01&to=2026-09-30&as_of_revision=" + revision
    assert_error(exchange(strict_gateway, request(strict_gateway, target)), 400, "INVALID_PARAMS")


# -- over Sanic's limits -----------------------------------------------------------------------


def oversized(gateway: Gateway) -> dict[str, bytes]:
    token = b"Authorization: Bearer " + gateway.token.encode()
    return {
        "query": request(gateway, RATES + b"&x=" + b"a" * BIG),
        "header": request(gateway, b"/v1/coverage", b"X-Padding: " + b"a" * BIG),
        "authorization": request(
            gateway, b"/v1/coverage", b"Authorization: Bearer " + b"a" * BIG, token=False
        ),
        "path": request(gateway, b"/v1/" + b"a" * BIG),
        "id": request(gateway, b"/v1/observations/" + b"0" * BIG),
        "1000 headers": request(
            gateway, b"/v1/coverage", *(b"X-H-%04d: v" % n for n in range(1000))
        ),
        "10000 parameters": request(
            gateway, b"/v1/coverage?" + b"&".join(b"p%d=1" % n for n in range(10_000))
        ),
        "cookie": request(gateway, b"/", b"Cookie: fxev_sesion=" + b"a" * BIG, token=False),
        "token 200 times": request(gateway, b"/v1/coverage", *([token] * 200)),
    }


@pytest.mark.parametrize(
    "case",
    [
        "query",
        "header",
        "authorization",
        "path",
        "id",
        "1000 headers",
        "10000 parameters",
        "cookie",
        "token 200 times",
    ],
)
def test_a_request_over_sanics_limits_is_invalid_params(strict_gateway: Gateway, case: str) -> None:
    answer = exchange(strict_gateway, oversized(strict_gateway)[case])
    assert_refused(answer)
    assert len(answer.log) < 1000  # the 100 KB are not copied into the log


@pytest.mark.parametrize(
    "forged", [b"", b"X-Fxev-Edge: " + b"0" * 64], ids=["plain", "a forged edge credential"]
)
def test_a_head_of_8_kb_is_over_the_limit_and_one_byte_less_is_answered(
    strict_gateway: Gateway, forged: bytes
) -> None:
    """docs/decisions.md#bad-requests: a head (before its blank line) of 8 KB or more is 400
    with the size limits' message. The gateway reads longer heads from the edge only: a wrong
    credential gets no more room than none."""
    extra = (forged,) if forged else ()
    under = exchange(strict_gateway, padded(request(strict_gateway, LATEST, *extra), HEAD_MAX - 1))
    assert under.status == 200, under.body[:300]
    for size in (HEAD_MAX, HEAD_MAX + 1000, EDGE_HEAD_MAX - 10):
        answer = exchange(strict_gateway, padded(request(strict_gateway, LATEST, *extra), size))
        assert_refused(answer)
        assert orjson.loads(answer.body)["message"] == TOO_LARGE


@pytest.mark.parametrize("chunked", [False, True], ids=["a length", "chunked"])
def test_a_body_over_1_mb_is_over_the_limit_and_1_mb_is_read(
    strict_gateway: Gateway, chunked: bool
) -> None:
    """docs/decisions.md#bad-requests: a body of more than 1 MB (as the edge's nginx allows,
    client_max_body_size) is 400 with the size limits' message, as the edge answers it; a body
    of 1 MB is read (and ignored) like any."""
    for size, status in ((BODY_MAX, 200), (BODY_MAX + 1, 400)):
        body = b"b" * size
        if chunked:
            framing = b"Transfer-Encoding: chunked"
            sent = b"%x\r\n" % size + body + b"\r\n0\r\n\r\n"
        else:
            framing, sent = b"Content-Length: %d" % size, body
        data = request(strict_gateway, LATEST, framing, b"Connection: close") + sent
        answer = exchange(strict_gateway, data)
        assert answer.status == status, (size, answer.body[:300])
        if status == 400:
            assert_refused(answer)
            assert orjson.loads(answer.body)["message"] == TOO_LARGE


# -- bytes that are not a URL ------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        b"/v1/cover\x00age",
        b"/v1/coverage?x=\x00",
        b"/v1/cover\xffage",
        b"/v1/coverage?currency=\xc3\x28",
        b"/v1/observations/\xff\xfe",
    ],
)
def test_a_nul_or_invalid_utf8_in_the_path_or_query_is_invalid_params(
    strict_gateway: Gateway, target: bytes
) -> None:
    answer = exchange(strict_gateway, request(strict_gateway, target))
    assert_refused(answer)
    assert "\x00" not in answer.log


@pytest.mark.parametrize(
    "target",
    [
        RATES + b"&from=2026-09-01&to=2026-09-30&x=%00",
        RATES + b"&from=2026-09-01%00&to=2026-09-30",
        RATES + b"&from=2026-09-01&to=2026-09-30%FF",
        RATES + b"&%C3%28=1",
        b"/v1/rates/latest?series=publicado&currency=%00",
        b"/v1/rates/latest?series=publicado&currency=US%FFD",
    ],
)
def test_a_percent_encoded_nul_or_invalid_utf8_in_the_query_is_invalid_params(
    strict_gateway: Gateway, target: bytes
) -> None:
    """Decoded, the query holds a NUL or is not UTF-8: 400, not a currency or series unknown."""
    assert_error(exchange(strict_gateway, request(strict_gateway, target)), 400, "INVALID_PARAMS")


@pytest.mark.parametrize(
    "credential",
    [
        b"\xff",
        b"fxev_abc\x80",
        b"<valid>\xff",
        b"fxev_0123456789abcdef_" + b"\xe9" * 43,
        b"<valid>\xc2\xa0",
        b"\xc2\xa0<valid>",
        b"<valid>\xe2\x80\x83",
        b"<valid>\xc2\x85",
    ],
    ids=[
        "one byte",
        "a token's start",
        "a valid token and one byte",
        "a token's form, latin-1",
        "nbsp after",
        "nbsp before",
        "em space after",
        "nel after",
    ],
)
def test_a_bearer_token_not_utf8_or_with_a_unicode_space_is_an_invalid_token(
    strict_gateway: Gateway, credential: bytes
) -> None:
    """SPEC authentication 3: "A missing, invalid, revoked or expired token answers 401"; a
    token holding bytes that are no UTF-8 (or, read as Latin-1, no token's characters) is one
    that cannot be valid: 401 `invalid_token`, not a 500 from hashing it; not recorded. So is a
    valid token with a no-break space, an em space or a NEL around it: RFC 9110 trims only
    spaces and tabs (OWS) around a field's value, and RFC 6750's `token68` holds no space
    (formerly trimmed as any Unicode space, and answered 200)."""
    value = credential.replace(b"<valid>", strict_gateway.token.encode())
    answer = exchange(
        strict_gateway,
        request(strict_gateway, b"/v1/coverage", b"Authorization: Bearer " + value, token=False),
    )
    assert_error(answer, 401, "UNAUTHORIZED")
    assert answer.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert ledger_entries(strict_gateway.env, answer.headers["x-request-id"]) == []


def test_an_explorer_cookie_not_utf8_is_no_session(strict_gateway: Gateway) -> None:
    """The explorer's cookie holding bytes that are no UTF-8 is no session, as a bogus one is:
    the sign-in form, not a 500."""
    bogus = exchange(strict_gateway, request(strict_gateway, b"/", b"Cookie: fxev_sesion=abc",
                                             token=False))  # fmt: skip
    answer = exchange(strict_gateway, request(strict_gateway, b"/", b"Cookie: fxev_sesion=abc\xff",
                                              token=False))  # fmt: skip
    assert answer.status == bogus.status != 500, answer.body[:300]
    assert "Traceback" not in answer.log


def test_the_asterisk_form_is_only_for_options(strict_gateway: Gateway) -> None:
    """RFC 9112 3.2.4: the target ``*`` is for a server-wide OPTIONS only. A ``GET *`` is
    malformed: 400, refused before any route (it was the explorer's home page); ``OPTIONS *``
    is a method the gateway does not allow, as on any path."""
    answer = exchange(strict_gateway, request(strict_gateway, b"*"))
    assert_refused(answer)
    options = exchange(strict_gateway, b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert_error(options, 405, "METHOD_NOT_ALLOWED")
    assert options.headers["allow"] == "GET, HEAD"


# -- heads read by RFC 9112 (gateway.http.head) ---------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\x00b",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\rb",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\nX-Other: b",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note : a",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\r\n  folded",
        b"GET /v1/coverage HTTP/1.1",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1",
        b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1/v1",
        b"GET /v1/coverage HTTP/1.1\r\nHost: a b",
        b"GET /v1/coverage HTTP/1.0\r\nTransfer-Encoding: chunked",
        b"GET  /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1",
    ],
    ids=[
        "a NUL in a value",
        "a bare CR in a value",
        "a line cut by a bare LF",
        "a space before the colon",
        "a folded line",
        "no Host",
        "two Hosts",
        "a Host with a path",
        "a Host with a space",
        "chunked in HTTP/1.0",
        "two spaces after the method",
    ],
)
def test_a_head_rfc_9112_refuses_is_invalid_params(strict_gateway: Gateway, head: bytes) -> None:
    """RFC 9112 3, 3.2, 5.1, 5.2, 6.1 and RFC 9110 5.5: a server refuses these heads (400),
    and the shipped edge's nginx does. The gateway read them otherwise (one line where nginx
    reads two, a name with a space, no Host): refused before any route, in one line of log."""
    token = b"\r\nAuthorization: Bearer " + strict_gateway.token.encode()
    answer = exchange(strict_gateway, head + token + b"\r\n\r\n")
    assert_refused(answer)
    assert "refused GET " in answer.log  # the method sent, not the NONE of Sanic's stand-in


@pytest.mark.parametrize(
    ("sent", "read"),
    [
        (b"GET http://127.0.0.1 HTTP/1.1", b"GET / HTTP/1.1"),
        (b"GET http://127.0.0.1?x=1 HTTP/1.1", b"GET /?x=1 HTTP/1.1"),
        (b"GET http://127.0.0.1/v1/coverage HTTP/1.1", b"GET /v1/coverage HTTP/1.1"),
        (b"GET http://127.0.0.1:/v1/coverage HTTP/1.1", b"GET /v1/coverage HTTP/1.1"),
        (b"GET /v1/coverage HTTP/1.2", b"GET /v1/coverage HTTP/1.1"),
        (b"\r\n\r\nGET /v1/coverage HTTP/1.1", b"GET /v1/coverage HTTP/1.1"),
        (
            b"GET /v1/coverage HTTP/1.1\r\nTransfer-Encoding: Chunked ",
            b"GET /v1/coverage HTTP/1.1\r\nTransfer-Encoding: chunked",
        ),
    ],
    ids=[
        "absolute, no path",
        "absolute, a query",
        "absolute",
        "absolute, an empty port",
        "HTTP/1.2",
        "empty lines first",
        "Chunked",
    ],
)
def test_a_head_rfc_9112_reads_is_answered_as_its_plain_form(
    strict_gateway: Gateway, sent: bytes, read: bytes
) -> None:
    """Section 9, "bad requests are never 500": the absolute form with no path was a 500 (the
    request had no path). RFC 9112 3.2.2 and RFC 3986 6.2.3 read it as the path ``/``, as the
    edge's nginx does, and an empty port as none (httptools refused it); RFC 9110 2.5 reads
    HTTP/1.2 as HTTP/1.1; RFC 9112 2.2 ignores empty lines before the request line, and 7 reads
    a transfer coding's name in any case. Each gets the answer of its plain form."""
    auth = b"\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + strict_gateway.token.encode()
    body = b"0\r\n\r\n" if b"Transfer-Encoding" in sent else b""
    answer = exchange(strict_gateway, sent + auth + b"\r\n\r\n" + body)
    plain = exchange(strict_gateway, read + auth + b"\r\n\r\n" + body)
    assert answer.status == plain.status != 500, answer.body[:300]
    if b"/v1/coverage" in read:
        assert plain.status == 200, plain.body[:300]
    assert answer.headers.get("content-type") == plain.headers.get("content-type")
    assert "Traceback" not in answer.log


@pytest.mark.parametrize(
    ("framing", "body"),
    [
        (b"Content-Length: 0\x0b", b""),
        (b"Content-Length: 0\x0c", b""),
        (b"Content-Length: 1_0", b"0123456789"),
        (b"Content-Length:\x0b5", b"hello"),
        (b"Transfer-Encoding:\x0cchunked", b"5\r\nhello\r\n0\r\n\r\n"),
        (b"Transfer-Encoding: chunked", b"0x5\r\nhello\r\n0\r\n\r\n"),
        (b"Transfer-Encoding: chunked", b"\xef\xbc\x95\r\nhello\r\n0\r\n\r\n"),
    ],
    ids=[
        "a VT after the length",
        "a FF after the length",
        "a _ in the length",
        "a VT before the length",
        "a FF before the coding",
        "0x",
        "a wide 5",
    ],
)
def test_a_length_or_chunk_size_that_is_no_ascii_digits_is_invalid_params(
    strict_gateway: Gateway, framing: bytes, body: bytes
) -> None:
    """RFC 9112 6.3 (an invalid Content-Length is 400, and the connection closes) and 7.1
    (a chunk size is 1*HEXDIG): Python's int() read these, and Sanic strips a VT or FF before a
    value, so the body's framing was one nginx does not read."""
    data = request(strict_gateway, b"/v1/coverage", framing) + body
    answer = exchange(strict_gateway, data)
    assert_error(answer, 400, "INVALID_PARAMS")


def test_a_head_at_the_size_limit_in_the_absolute_form_is_answered(strict_gateway: Gateway) -> None:
    """The absolute form with no path is read as its origin form, which is shorter: a head just
    under Sanic's 8 KB limit is answered, as its origin form is (adding a ``/`` pushed it over)."""
    head = request(strict_gateway, b"http://127.0.0.1").removesuffix(b"\r\n\r\n")
    full = head + b"\r\nX-Pad: " + b"p" * (8191 - len(head) - len(b"\r\nX-Pad: "))
    assert len(full) == 8191
    answer = exchange(strict_gateway, full + b"\r\n\r\n")
    assert answer.status == 200, answer.body[:300]


@pytest.mark.parametrize(
    "target",
    [b"http://127.0.0.1#f", b"http://127.0.0.1/v1/coverage#f", b"http://u@127.0.0.1/v1/coverage"],
    ids=["a fragment, no path", "a fragment", "a user"],
)
def test_a_malformed_absolute_form_is_invalid_params(
    strict_gateway: Gateway, target: bytes
) -> None:
    """RFC 9112 3.2: a request target has no fragment; RFC 9110 4.2.4: a user in it is an
    error. Refused before any route."""
    answer = exchange(strict_gateway, request(strict_gateway, target))
    assert_refused(answer)


def test_more_than_a_few_empty_lines_before_the_request_line_are_refused(
    strict_gateway: Gateway,
) -> None:
    """RFC 9112 2.2 asks a server to ignore at least one empty line before the request line;
    a gateway ignores four (the reads above have two). A fifth is refused, so
    that no client can hold a connection by sending one every few seconds."""
    answer = exchange(strict_gateway, b"\r\n" * 5 + request(strict_gateway, b"/v1/coverage"))
    assert_refused(answer)


# -- line ends and slow clients ----------------------------------------------------------------


def test_bare_lf_line_ends_are_refused_at_once(strict_gateway: Gateway) -> None:
    data = request(strict_gateway, b"/v1/coverage").replace(b"\r\n", b"\n")
    answer = exchange(strict_gateway, data)
    assert_error(answer, 400, "INVALID_PARAMS")
    assert answer.seconds < REQUEST_TIMEOUT_S / 2
    assert_refused_in_one_line(answer)


def test_an_http_0_9_request_line_is_refused_at_once(strict_gateway: Gateway) -> None:
    """A request line with no version (HTTP/0.9, whose requests have no headers) can never
    start a head: refused at once, not after the request timeout. (nginx answers it in HTTP/0.9,
    docs/operating/edge.md#limits.)"""
    answer = exchange(strict_gateway, b"GET /v1/coverage\r\n")
    assert_error(answer, 400, "INVALID_PARAMS")
    assert answer.seconds < REQUEST_TIMEOUT_S / 2
    assert_refused_in_one_line(answer)


def test_a_mixed_bare_lf_head_is_refused_at_once(strict_gateway: Gateway) -> None:
    data = b"GET /v1/coverage HTTP/1.1\nHost: x\r\n\r\n"
    answer = exchange(strict_gateway, data)
    assert_error(answer, 400, "INVALID_PARAMS")
    assert answer.seconds < REQUEST_TIMEOUT_S / 2


@pytest.mark.parametrize(
    "partial",
    [b"GET /v1/coverage HTTP/1.1\r\nHost: x\r\n", b"GET /v1/cov", b"G"],
    ids=["headers", "request line", "one byte"],
)
def test_a_client_too_slow_to_send_its_request_gets_408(
    strict_gateway: Gateway, partial: bytes
) -> None:
    answer = exchange(strict_gateway, partial, wait_s=REQUEST_TIMEOUT_S * 5)
    assert_error(answer, 408, "REQUEST_TIMEOUT", retryable=True)
    assert REQUEST_TIMEOUT_S * 0.9 <= answer.seconds < REQUEST_TIMEOUT_S * 3
    assert answer.headers["connection"] == "close"
    assert_refused_in_one_line(answer)


@pytest.mark.parametrize(
    ("framing", "partial"),
    [(b"Content-Length: 10", b"abc"), (b"Transfer-Encoding: chunked", b"a\r\nabc")],
    ids=["a length", "chunked"],
)
def test_a_client_too_slow_to_send_its_body_gets_408_recorded(
    strict_gateway: Gateway, framing: bytes, partial: bytes
) -> None:
    """docs/decisions.md#bad-requests: a client too slow to send its request gets 408
    `REQUEST_TIMEOUT`, its body included: the gateway answered Sanic's response timeout, a
    retryable 503 `INTERNAL`, after a minute. The token was read and counted before the body,
    so the ledger holds the 408 (section 5), as it holds every answer to a valid token."""
    data = request(strict_gateway, LATEST, framing) + partial
    answer = exchange(strict_gateway, data, wait_s=REQUEST_TIMEOUT_S * 5)
    assert_error(answer, 408, "REQUEST_TIMEOUT", retryable=True)
    assert REQUEST_TIMEOUT_S * 0.9 <= answer.seconds < REQUEST_TIMEOUT_S * 3
    assert answer.headers["connection"] == "close"
    [entry] = ledger_entries(strict_gateway.env, answer.headers["x-request-id"])
    assert entry["status"] == 408


def trickle(gateway: Gateway, at_once: bytes, slowly: bytes, every_s: float) -> Answer:
    """Send ``at_once``, then ``slowly`` one byte every ``every_s`` seconds until an answer
    comes: that answer, timed from the first slow byte."""
    port = int(gateway.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT_S * 5) as sock:
        sock.sendall(at_once)
        started = time.monotonic()
        for byte in slowly:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(bytes([byte]))
            if select.select([sock], [], [], every_s)[0]:
                break
        received = read_answer(sock)
    head, _, body = received.partition(b"\r\n\r\n")
    status, headers = status_and_headers(head)
    return Answer(status, headers, body, time.monotonic() - started, "")


@pytest.mark.parametrize("part", ["head", "body"])
def test_a_client_sending_a_byte_at_a_time_too_slowly_gets_408(
    strict_gateway: Gateway, part: str
) -> None:
    """docs/decisions.md#bad-requests: "a client too slow to send its request gets 408". Sanic
    timed a request from its last byte, so a client sending one byte every half second (here,
    under a request timeout of 2 s) never got it, and held the connection as long as it kept
    trickling. A request is timed from its first byte: 408 within a few timeouts, its head
    trickled or its body."""
    head = request(strict_gateway, LATEST, b"Content-Length: 200")
    at_once, slowly = (b"", head) if part == "head" else (head, b"x" * 200)
    answer = trickle(strict_gateway, at_once, slowly, every_s=0.5)
    assert_error(answer, 408, "REQUEST_TIMEOUT", retryable=True)
    assert answer.seconds < REQUEST_TIMEOUT_S * 4, answer.seconds


@pytest.mark.parametrize("framing", [b"Content-Length: 5", b"Transfer-Encoding: chunked"])
def test_expect_100_continue_is_answered_before_the_body_is_awaited(
    strict_gateway: Gateway, framing: bytes
) -> None:
    """RFC 9110 10.1.1: a client that sends `Expect: 100-continue` may wait for the 100 before
    its body. The gateway waited for a chunked body's first chunk first, so both waited until
    the timeout."""
    port = int(strict_gateway.base_url.rsplit(":", 1)[1])
    head = request(strict_gateway, LATEST, framing, b"Expect: 100-continue", b"Connection: close")
    body = b"hello" if framing.startswith(b"Content") else b"5\r\nhello\r\n0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT_S / 2) as sock:
        sock.sendall(head)
        assert sock.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 OK\r\n"), received[:200]


def test_an_http_1_0_client_gets_no_100_continue(strict_gateway: Gateway) -> None:
    """RFC 9110 10.1.1 and 15.2: `Expect: 100-continue` in an HTTP/1.0 request is ignored, and
    no 1xx is sent to an HTTP/1.0 client, which could take it for the answer."""
    data = request(strict_gateway, LATEST, b"Expect: 100-continue", b"Content-Length: 3")
    data = data.replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1) + b"abc"
    port = int(strict_gateway.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 OK\r\n"), received[:200]
    assert b"100 Continue" not in received


def test_the_gateway_still_answers_after_every_refusal(strict_gateway: Gateway) -> None:
    answer = exchange(strict_gateway, request(strict_gateway, b"/v1/coverage"))
    assert answer.status == 200
    assert "Traceback" not in strict_gateway.log()


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET /v1/coverage?x=\xc3\xa9 HTTP/1.1\r\nHost: 127.0.0.1", 400),
        (b"GET /v1/observations/\xc3\xa9 HTTP/1.1\r\nHost: 127.0.0.1", 400),
        (b"GET /v1/coverage HTTP/1.1", 400),
        (b"GET /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc", 400),
        (b"GET  /v1/coverage HTTP/1.1\r\nHost: 127.0.0.1", 400),
        (b"GET /v1/cov\x01erage HTTP/1.1\r\nHost: 127.0.0.1", 400),
    ],
    ids=[
        "a raw byte in the query",
        "a raw byte in the path",
        "no Host",
        "a bad length",
        "two spaces",
        "a control byte",
    ],
)
def test_a_head_refused_before_any_route_is_in_the_ledger_when_its_token_is_valid(
    strict_gateway: Gateway, head: bytes, status: int
) -> None:
    """DECISIONS 5: "for every response to a request with a valid token (errors, 304 and 429
    included) the gateway records" it. A head refused before Sanic made its request had no
    headers to read a token from, so its 400 was in no ledger, while `GET *`'s was. The
    credential the head presents, on a whole line, is read for the ledger; a bogus one is
    not recorded, as on any route."""
    auth = b"\r\nAuthorization: Bearer " + strict_gateway.token.encode()
    answer = exchange(strict_gateway, head + auth + b"\r\n\r\n")
    assert_error(answer, status, "INVALID_PARAMS")
    (entry,) = ledger_entries(strict_gateway.env, answer.headers["x-request-id"])
    assert entry["status"] == status and entry["method"] == "GET"
    assert entry["sha256"] == hashlib.sha256(answer.body).hexdigest()
    bogus = exchange(strict_gateway, head + b"\r\nAuthorization: Bearer fxev_nope\r\n\r\n")
    assert bogus.status == status
    assert ledger_entries(strict_gateway.env, bogus.headers["x-request-id"]) == []
