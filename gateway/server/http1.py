"""The gateway's HTTP/1.1 connection: Sanic's, with its head read by RFC 9112 first, and three
malformed requests answered, and promptly (docs/decisions.md#bad-requests).

Sanic reads a request's head until its blank line, CRLF CRLF, and answers what it cannot parse
through the app's error handler. Before it parses a whole head, :func:`gateway.http.head.conform`
refuses what RFC 9112 has a server refuse and rewrites what the RFC reads and Sanic would not
(the absolute form with no path, which Sanic answered 500). Three requests slip past that:

- **Bare LF line ends.** Sanic never finds the blank line, so it waits for more bytes until the
  request timeout. :class:`GatewayHttp` refuses the head (400) as soon as Sanic would wait for
  more while what it holds has a LF without its CR. A head that is merely incomplete still waits,
  and a client too slow to send it gets 408 after the request timeout (``REQUEST_TIMEOUT``).
- **The asterisk form** (``GET *``). Sanic routes it to ``/``; it is malformed but for OPTIONS
  (RFC 9112 3.2.4), so it is refused (400).
- **A target httptools refuses.** Sanic raises ``BadURL`` making the request, then again making
  the stand-in request it answers errors with, and the connection closes without an answer. The
  stand-in gets the target with its control and non-ASCII bytes percent-encoded.

A request's time runs from its first byte: Sanic's request timeout counted from the last byte
received, so a client sending one byte a second was never too slow, and held its connection
for as long as it liked. A request not read whole (its head, and its body until the answer
starts) within the request timeout of its start gets 408. A body is read under the request
timeout until the answer starts (a client too slow to send it gets 408, where Sanic's response
timeout answered 503); ``Expect: 100-continue`` is answered
before waiting for the body (a chunked one too), and not at all in HTTP/1.0 (RFC 9110 10.1.1).

Sanic's numbers are read by the RFC too: a ``Content-Length`` and a chunk's size in ASCII digits
only (:func:`gateway.http.head.read_number`). So is a chunked body's framing at each chunk's start
(RFC 9112 7.1): the CRLF that ends a chunk's data is required (Sanic skipped any two bytes), and
the trailer section after the last chunk is read and discarded (Sanic refused any, where a
recipient "MUST be able to parse" it). A trailer section that is no field lines, or longer than
a head may be, is refused (400) and the connection closed: no byte of it is read as a next
request.

A request from the shipped edge is recognised here too, as soon as its head is read
(:mod:`gateway.edge.steps`), before routing. Its head may be longer than a client's: a client's head
of :data:`gateway.http.head.HEAD_MAX` bytes or more is refused (400) once it is read, an edge's only
past :data:`gateway.http.head.EDGE_HEAD_MAX`, the limit Sanic is given.

:class:`GatewayProtocol` is Sanic's HTTP/1.1 protocol with :class:`GatewayHttp`; the app is served
with it (``gateway.app``).
"""

from __future__ import annotations

from time import monotonic

from sanic.exceptions import BadRequest, PayloadTooLarge
from sanic.http import Http, Stage
from sanic.http.http1 import HTTP_CONTINUE
from sanic.server.protocols.http_protocol import HttpProtocol

from gateway.edge import steps
from gateway.errors import InvalidParams
from gateway.http import head

EMPTY_LINES_IGNORED = 4  # before a request line; one more is refused
CHUNK_LINE_MAX = 64  # bytes Sanic waits for a chunk's size line before refusing it


def printable_target(target: str) -> str:
    """``target`` (decoded with ``surrogateescape``, as Sanic does) with every byte that is not
    printable ASCII percent-encoded."""
    raw = target.encode(errors="surrogateescape")
    return "".join(chr(byte) if 0x20 < byte < 0x7F else f"%{byte:02X}" for byte in raw)


class GatewayHttp(Http):
    __slots__ = ("head_size", "request_began")
    # Sanic's limit, raised for the edge's longer heads; a client's is HEAD_MAX (below).
    HEADER_MAX_SIZE = head.EDGE_HEAD_MAX

    def __init__(self, protocol: HttpProtocol) -> None:
        super().__init__(protocol)
        self._receive_more = self._receive_more_of_head
        self.head_size = 0  # the bytes of the last head read, before its blank line
        self.request_began = 0.0  # when the request being read began (GatewayProtocol)

    async def _receive_more_of_head(self) -> None:
        """Sanic's wait for more bytes, refusing first a head that can never end (bare LF)."""
        if self.stage is Stage.REQUEST and head.has_bare_lf(self.recv_buffer):
            raise InvalidParams("The request's lines must end with CRLF, not a bare LF.")
        await self.protocol.receive_more()

    async def http1_request_header(self) -> None:
        """Sanic's reading of the head; then a request from the edge (``X-Fxev-Edge``) is marked,
        and its auth step made into the request it authorises
        (:func:`gateway.edge.steps.arrive`)."""
        self.request_began = monotonic()
        await self._receive_head()
        await super().http1_request_header()
        self.protocol._time = monotonic()  # the response's timeout runs from here
        if self.url == "*" and self.request.method != "OPTIONS":
            # RFC 9112 3.2.4: the asterisk form is for a server-wide OPTIONS only (which the
            # routes answer 405, as on any path); Sanic would route it to the explorer's home.
            raise InvalidParams("The target '*' is only for OPTIONS.")
        # Methods are case-sensitive (RFC 9110 9.1): Sanic drops the body of ``head`` too, while
        # routing answers it 405 with a body its Content-Length announces.
        self.head_only = self.request.method == "HEAD"
        if self.request.version == "1.0":
            # RFC 9110 10.1.1: "100-continue" is ignored in an HTTP/1.0 request, and no 1xx is
            # sent to an HTTP/1.0 client (15.2); Sanic would send its 100 Continue.
            self.expecting_continue = False
        if steps.CREDENTIAL in self.request.headers:
            steps.arrive(self)
        if self.head_size >= head.HEAD_MAX and not steps.came_through(self.request):
            # Sanic's refusal of a head over its limit, which is the edge's alone here.
            raise PayloadTooLarge("Request header exceeds the size limit")

    async def _receive_head(self) -> None:
        """Wait, as Sanic's reading does, for the head's blank line, ignoring a few empty lines
        before the request line (RFC 9112 2.2: at least one; more are refused, or a client could
        hold the connection with one every few seconds), and refusing at once a request line
        that ended and is none (an HTTP/0.9 one, with no version, would wait for the request
        timeout); then have the head read by RFC 9112
        (:func:`gateway.http.head.conform`) in the buffer Sanic parses. A head over Sanic's size
        limit is left to Sanic to refuse; one over a client's (``head.HEAD_MAX``), but for the
        edge's, is refused once it is read."""
        buffer, empty_lines = self.recv_buffer, 0
        self.head_size = 0
        while True:
            while buffer[:2] == b"\r\n":
                del buffer[:2]
                empty_lines += 1
                if empty_lines > EMPTY_LINES_IGNORED:
                    raise InvalidParams("A request starts with its request line.")
            if (end := buffer.find(b"\r\n\r\n")) >= 0:
                break
            if len(buffer) - 3 >= self.HEADER_MAX_SIZE:
                return
            head.check_request_line(buffer)  # before waiting: can the head ever be read?
            await self._receive_more()
        if end >= self.HEADER_MAX_SIZE:
            return
        self.head_size = end
        received = bytes(buffer[:end])
        try:
            read = head.conform(received)
        except InvalidParams:
            self.url = head.target_of(received)  # for the refusal's line in the log
            raise
        if read is not received:
            buffer[:end] = read

    async def read(self) -> bytes | None:
        """Sanic's reading of some of the body, a chunk's start first read by RFC 9112 7.1.
        Until the answer starts, the body is part of the request: a client too slow to send it
        is too slow to send its request (408 after the request timeout, where Sanic's response
        timeout answered 503)."""
        if self.expecting_continue:  # before waiting for the body the client holds back
            self.expecting_continue = False
            await self._send(HTTP_CONTINUE)
        before_answer = self.stage is Stage.HANDLER and self.response is None
        if before_answer:
            self.stage = Stage.REQUEST
        try:
            if self.request_bytes_left == 0 and self.request_body == "chunked":
                await self._read_chunk_start()
            return await super().read()
        finally:
            if before_answer and self.stage is Stage.REQUEST:
                self.stage = Stage.HANDLER
                self.protocol._time = monotonic()

    async def _read_chunk_start(self) -> None:
        """At a chunk's start (Sanic's buffer holds the CRLF that ended the head or the last
        chunk's data, then the size line): refuse a chunk whose data did not end with CRLF; at
        the last chunk, wait for the trailer section's end and drop its lines, leaving Sanic the
        empty section it reads. A size line Sanic refuses is left to it."""
        buffer = self.recv_buffer
        while len(buffer) < 2:
            await self._receive_more()
        if buffer[:2] != b"\r\n":
            self.keep_alive = False
            raise BadRequest("A chunk's data must end with CRLF.")
        while (line_end := buffer.find(b"\r\n", 2)) < 0:
            if len(buffer) > CHUNK_LINE_MAX:
                return
            await self._receive_more()
        if not head.is_last_chunk(bytes(buffer[2:line_end])):
            return
        limit = head.HEAD_MAX
        while (end := buffer.find(b"\r\n\r\n", line_end)) < 0 and len(buffer) - line_end <= limit:
            if head.has_bare_lf(buffer[line_end:]):
                self.keep_alive = False
                raise BadRequest("A trailer section's lines must end with CRLF.")
            await self._receive_more()
        if end < 0 or end - line_end > limit:
            self.keep_alive = False
            raise PayloadTooLarge("The trailer section exceeds the size limit of a head.")
        if end > line_end:
            if not head.is_trailer_section(bytes(buffer[line_end:end])):
                self.keep_alive = False
                raise BadRequest("A trailer line is a name, a colon and a value.")
            del buffer[line_end:end]

    @staticmethod
    def _safe_int(value: str, base: int = 10) -> int:
        """Sanic's reading of a ``Content-Length`` and of a chunk's size, by RFC 9112's grammar
        (:func:`gateway.http.head.read_number`)."""
        return head.read_number(value, base)

    def create_empty_request(self) -> None:
        """Sanic's stand-in request for answering an error, made even when the target that
        caused the error cannot be parsed."""
        if self.url is not None:
            self.url = printable_target(self.url)
        try:
            super().create_empty_request()
        except BadRequest:
            self.url = None
            super().create_empty_request()
        # Its method is NONE; the refusal's line in the log names the one the head starts with.
        self.request.ctx.method_sent = head.method_of(self.recv_buffer)
        # Its headers are none; the ledger's token check reads the credential the head presents,
        # and the CORS headers its origin.
        for name, value in head.answer_fields_in(self.recv_buffer):
            self.request.headers.add(name, value)


class GatewayProtocol(HttpProtocol):
    __slots__ = ()
    HTTP_CLASS = GatewayHttp

    def check_timeouts(self) -> None:
        """Sanic's, but a request being read is timed from its first byte, not its last."""
        http = self._http
        if isinstance(http, GatewayHttp) and http.stage is Stage.REQUEST and http.request_began:
            self._time = min(self._time, http.request_began)
        super().check_timeouts()
