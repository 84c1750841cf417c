"""A request's head read by RFC 9112's rules before Sanic parses it (gateway.http.head)."""

from __future__ import annotations

import time

import pytest

from gateway import errors
from gateway.http.head import (
    answer_fields_in,
    check_request_line,
    conform,
    is_last_chunk,
    is_trailer_section,
    read_number,
    target_of,
)

HOST = b"\r\nHost: 127.0.0.1:8080"


@pytest.mark.parametrize(
    "head",
    [
        b"GET /v1/coverage HTTP/1.1" + HOST,
        b"GET /v1/coverage HTTP/1.0",
        b"GET /v1/coverage HTTP/1.1\r\nhOsT:127.0.0.1\r\nX-Empty:",
        b"GET /v1/coverage HTTP/1.1\r\nHost: [::1]:80\r\nX-Tab: a\tb",
        b"GET /v1/coverage HTTP/1.1\r\nHost: a_b.example.:\r\nX-A: %20,",
        b"GET /v1/coverage HTTP/1.1" + HOST + b"\r\nTransfer-Encoding: chunked",
        b"GET /v1/coverage HTTP/1.1" + HOST + b"\r\nX-Latin: caf\xe9",  # obs-text
        b"GET /v1/coverage HTTP/1.1" + HOST + b"\r\nX-Odd: a\x01\x1b\x7fb",  # kept, as nginx does
        b"OPTIONS * HTTP/1.1" + HOST,
        b"GET http://127.0.0.1/v1/coverage HTTP/1.1" + HOST,
        b"GET /v1/coverage HTTP/1.1\r\nHost: [v1.fe]\r\nX-A: b",  # IPvFuture (RFC 3986)
        b"GET /v1/coverage HTTP/1.1\r\nHost: [v7.a:b]:8000",
        b"GET localhost:8080 HTTP/1.1" + HOST,  # Sanic's own refusal: the authority form
        b"GET /v1/cover\xffage HTTP/1.1" + HOST,  # Sanic's own refusal: no US-ASCII
        b"GET /v1/coverage HTTP/2.0",  # Sanic's own refusal: another version
    ],
)
def test_a_head_the_rfc_reads_as_sanic_does_passes_as_it_came(head: bytes) -> None:
    assert conform(head) is head


@pytest.mark.parametrize(
    ("head", "read"),
    [
        (b"GET http://h HTTP/1.1" + HOST, b"GET / HTTP/1.1" + HOST),
        (b"GET https://h:8080?x=1 HTTP/1.1" + HOST, b"GET /?x=1 HTTP/1.1" + HOST),
        (b"GET HTTP://h? HTTP/1.1" + HOST, b"GET /? HTTP/1.1" + HOST),
        (b"GET http://h:/v1/coverage?x HTTP/1.1" + HOST, b"GET /v1/coverage?x HTTP/1.1" + HOST),
        (b"GET http://[::1]: HTTP/1.1" + HOST, b"GET / HTTP/1.1" + HOST),
        (b"GET / HTTP/1.2" + HOST, b"GET / HTTP/1.1" + HOST),
        (b"GET / HTTP/1.9" + HOST, b"GET / HTTP/1.1" + HOST),
        (
            b"GET / HTTP/1.1" + HOST + b"\r\ntransfer-encoding:\tChunked \r\nX-A: b",
            b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding: chunked\r\nX-A: b",
        ),
    ],
)
def test_a_head_the_rfc_reads_and_sanic_would_not_is_rewritten(head: bytes, read: bytes) -> None:
    assert conform(head) == read


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"GET / HTTP/1.1" + HOST + b"\r\nX: a\x00b", "CRLF"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nX: a\rb", "CRLF"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nX: a\nY: b", "CRLF"),
        (b"GET / HTTP/1.1" + HOST + b"\r", "CRLF"),
        (b"GET /\x00 HTTP/1.1" + HOST, "CRLF"),
        (b"GET / HTTP/1.1\n" + HOST, "CRLF"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nX : a", "token"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nX-A: a\r\n b", "token"),
        (b"GET / HTTP/1.1" + HOST + b"\r\n: a", "token"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nX\x7f: a", "token"),
        (b"GET / HTTP/1.1" + HOST + b"\r\n", "token"),
        (b"GET  / HTTP/1.1" + HOST, "one space apart"),
        (b"GET / HTTP/1.1 " + HOST, "one space apart"),
        (b"GET /a b HTTP/1.1" + HOST, "one space apart"),
        (b"/ HTTP/1.1" + HOST, "one space apart"),
        (b"", "one space apart"),
        (b"GET / HTTP/1.1", "must carry a Host"),
        (b"GET / HTTP/1.2", "must carry a Host"),
        (b"GET / HTTP/1.1" + HOST + HOST, "one Host"),
        (b"GET / HTTP/1.0" + HOST + b"\r\nhost: b", "one Host"),
        (b"GET / HTTP/1.1\r\nHost: a/b", "host name"),
        (b"GET / HTTP/1.1\r\nHost: a b", "host name"),
        (b"GET / HTTP/1.1\r\nHost: a:8o", "host name"),
        (b"GET / HTTP/1.1\r\nHost: user@a", "host name"),
        (b"GET / HTTP/1.1\r\nHost:", "host name"),
        (b"GET / HTTP/1.1\r\nHost: :80", "host name"),
        (b"GET / HTTP/1.1\r\nHost: a..b", "host name"),
        (b"GET / HTTP/1.1\r\nHost: a:80:80", "host name"),
        (b"GET / HTTP/1.1\r\nHost: a{b", "host name"),
        (b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked", "HTTP/1.0"),
        (b"GET http://[::1 HTTP/1.1" + HOST, "host"),
        (b"GET http://a{b HTTP/1.1" + HOST, "host"),
        (b"GET http:// HTTP/1.1" + HOST, "host"),
        (b"GET http://?x HTTP/1.1" + HOST, "host"),
        (b"GET http://h#f HTTP/1.1" + HOST, "host"),  # a fragment is no part of a target
        (b"GET http://h/p#f HTTP/1.1" + HOST, "host"),
        (b"GET http://u@h/p HTTP/1.1" + HOST, "host"),  # a user: RFC 9110 4.2.4
        (b"GET / HTTP/1.1\r\nHost: .", "host name"),
        (b"GET / HTTP/1.1\r\nHost: .:80", "host name"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nContent-Length:\x0b5", "ASCII digits"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nContent-Length: \xef\xbc\x95", "ASCII digits"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nContent-Length: 5, 5", "ASCII digits"),
        (b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding:\x0cchunked", "control"),
        (b"GET / HTTP/1.1\r\nHost: [v1]", "host name"),
    ],
)
def test_a_head_the_rfc_refuses_is_invalid_params(head: bytes, message: str) -> None:
    with pytest.raises(errors.InvalidParams, match=message) as refused:
        conform(head)
    assert "127.0.0.1" not in refused.value.message  # no echo of the request


def test_the_target_of_a_refused_head_is_found_for_the_log() -> None:
    assert target_of(b"GET /v1/coverage HTTP/1.1\r\nHost: a\x00") == "/v1/coverage"
    assert target_of(b"GET /v1/\xff\x00 HTTP/1.1") == "/v1/\udcff\x00"
    assert target_of(b"GET") is None


def test_a_transfer_coding_after_a_run_of_spaces_is_read_as_it_is() -> None:
    """A coding after a run of spaces is read as itself (its time: the next test)."""
    spaced = b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding: a" + b" " * 7000 + b"b"
    assert conform(spaced) is spaced
    chunked = b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding:" + b" " * 7000 + b"chunked"
    assert conform(chunked) == b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding: chunked"


def test_a_run_of_spaces_costs_in_proportion_to_its_length() -> None:
    """A complexity check, not a speed target: reading a head whose coding follows 8,000 spaces
    takes about 8 times what 1,000 take (a lazy match took 64 times: 0.4 s a head, enough for
    a few requests to stall a worker). Each figure is the best of 20 runs on this machine."""

    def best(spaces: int) -> float:
        head = b"GET / HTTP/1.1" + HOST + b"\r\nTransfer-Encoding: a" + b" " * spaces + b"b"
        runs = []
        for _ in range(20):
            started = time.perf_counter()
            conform(head)
            runs.append(time.perf_counter() - started)
        return min(runs)

    assert best(8000) < 25 * best(1000)


@pytest.mark.parametrize(
    ("value", "base", "read"),
    [("0", 10, 0), ("0042 \t", 10, 42), ("1f", 16, 31), ("1F ", 16, 31)],
)
def test_a_length_or_chunk_size_in_ascii_digits_is_read(value: str, base: int, read: int) -> None:
    assert read_number(value, base) == read


@pytest.mark.parametrize(
    ("value", "base"),
    [("\uff10", 10), ("\u0660", 10), ("0\x0b", 10), ("0\x0c", 10), (" 5", 10), ("1_0", 10),
     ("+5", 10), ("-0", 10), ("", 10), ("0x50", 16), ("\uff11", 16), ("1 0", 16)],
)  # fmt: skip
def test_a_length_or_chunk_size_in_other_digits_is_refused(value: str, base: int) -> None:
    """RFC 9112 6.3 and 7.1: 1*DIGIT and 1*HEXDIG; Python's int() takes far more."""
    with pytest.raises(ValueError):
        read_number(value, base)


@pytest.mark.parametrize(
    ("received", "refused"),
    [
        (b"GET /v1/coverage HTTP/1.1\r\nHost: a\r\n", None),
        (b"GET /v1/cov", None),  # the line may still end well
        (b"GET /v1/coverage\r\n", "one space apart"),  # HTTP/0.9: no version, no headers
        (b"GET /v1/coverageHTTP/1.1\r\n", "one space apart"),
        (b"GET /v1/coverage HTTP/1.1\nHost: a\r\n", "CRLF"),
    ],
)
def test_a_first_line_that_ended_and_is_no_request_line_is_refused_before_the_head_ends(
    received: bytes, refused: str | None
) -> None:
    if refused is None:
        check_request_line(bytearray(received))
        return
    with pytest.raises(errors.InvalidParams, match=refused):
        check_request_line(bytearray(received))


@pytest.mark.parametrize(
    ("size_line", "last"),
    [(b"0", True), (b"000", True), (b"0;ext=1", True), (b"0 ;ext", True), (b"00\t", True),
     (b"1", False), (b"10", False), (b"0a", False), (b"", False), (b" 0", False),
     (b";0", False), (b"0x0", False)],
)  # fmt: skip
def test_the_last_chunk_is_a_size_of_zero_perhaps_with_an_extension(
    size_line: bytes, last: bool
) -> None:
    """RFC 9112 7.1: last-chunk = 1*("0") [ chunk-ext ] CRLF; chunk-ext may begin with BWS."""
    assert is_last_chunk(size_line) is last


@pytest.mark.parametrize(
    ("fields", "read"),
    [(b"", True), (b"\r\nX-A: 1", True), (b"\r\nX-A: 1\r\nX-B:", True), (b"\r\nX-A:\x01", True),
     (b"\r\nX A: 1", False), (b"\r\nX-A : 1", False), (b"\r\n folded", False),
     (b"\r\nX-A: 1\nX-B: 2", False), (b"\r\nX-A: a\rb", False), (b"\r\nX-A: a\0b", False),
     (b"X-A: 1", False), (b"\r\n: 1", False)],
)  # fmt: skip
def test_a_trailer_section_is_field_lines_as_a_head_s_are(fields: bytes, read: bool) -> None:
    """RFC 9112 7.1.2: trailer-section = *( field-line CRLF ), field-line as in a head."""
    assert is_trailer_section(fields) is read


def test_answer_fields_in_a_refused_head_are_its_whole_lines():
    """What the ledger and CORS read of a head refused before Sanic read it: the
    Authorization, Cookie and Origin field lines, trimmed, from whole lines only (a line the
    refusal cut is no value)."""
    head = (
        b"GET /v1/x?\xc3\xa9 HTTP/1.1\r\nHost: h\r\nAUTHORIZATION:  Bearer fxev_a \t\r\n"
        b"Cookie: fxev_sesion=b\r\nX-Authorization: Bearer no\r\nOrigin: https://a.example\r\n"
        b"X-Origin: https://b.example\r\n\r\nAuthorization: Bearer c"
    )
    assert answer_fields_in(head) == [
        ("authorization", "Bearer fxev_a"),
        ("cookie", "fxev_sesion=b"),
        ("origin", "https://a.example"),
    ]
    assert answer_fields_in(b"GET / HTTP/1.1\r\nAuthorization: Bearer fxev_cut") == []
    assert answer_fields_in(b"GET / HTTP/1.1\r\nAuthorization: Bearer fxev_a\r\nHo") == [
        ("authorization", "Bearer fxev_a")
    ]
    assert answer_fields_in(b"GET / HTTP/1.1\nAuthorization: Bearer fxev_a\n\n") == []
