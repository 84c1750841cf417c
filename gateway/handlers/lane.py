"""The edge's auth lane: the auth step of the common case, answered without Sanic
(docs/operating/edge.md#lane).

The shipped edge checks every request for a cached answer with an auth step
(:mod:`gateway.edge.steps`). Taken by Sanic, that step costs as much as serving the answer itself,
and the edge can serve a hit no faster than the gateway answers its auth step. Most auth steps are
the same: a valid token under its limits asking again for an immutable answer this worker has
already sent (as-of ``/v1/rates``, evidence). The lane answers exactly those, on a listener of its
own in each worker (``FXEV_EDGE_LANE``, ``HOST:PORT``; every worker listens on it,
``SO_REUSEPORT``), with the worker's own token check, limiter, published view and ledger, so with
the same checks, the same count and the same ledger entry as the full step
(:func:`gateway.handlers.ledgering.ledger_entry`), recorded before the answer leaves.

Anything else gets ``403`` before anything is counted or recorded, and the edge then takes the
full auth step through Sanic, which answers it as a direct request would be answered: no token
or a refused one (401), over the limit (429), a ``HEAD``, ``If-None-Match``, an answer this
worker has not memoised, a failed ledger. Nothing is counted twice, but for one case: when the
ledger fails after the lane counted a request, the full step counts it again
(docs/operating/edge.md#limits).

A request without the edge's credential is answered ``404`` and its connection closed, as is a
step's head longer than :data:`HEAD_LIMIT` or slower than :data:`HEAD_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import hmac
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httptools
from sanic.log import error_logger

from gateway.edge import steps
from gateway.fleet.gate import Behind
from gateway.handlers.access import bearer_token
from gateway.handlers.routes import Remembered, remembered
from gateway.http.sending import cors_state
from gateway.http.stamps import fresh_request_id, now_us, utc_now_text
from gateway.ledger.recording import Ledger, LedgerEntry

if TYPE_CHECKING:
    from gateway.fleet.gate import RedisGate
    from gateway.handlers.published import PublishedView
    from gateway.limits.ring import RateLimiter
    from tokens.cache import CachedTokenCheck
    from tokens.store import TokenRecord

# The headers the lane reads; any other is ignored, and one of these sent twice is left to Sanic.
WANTED = frozenset(
    {
        b"x-fxev-edge",
        b"x-original-uri",
        b"x-original-method",
        b"authorization",
        b"if-none-match",
        b"origin",
    }
)
# The most bytes a step's head may take before it is complete (the edge's are under 2 KB): past
# it, the connection is closed (``httptools`` would hold a header of any length).
HEAD_LIMIT = 16 << 10
# The most seconds a step's head may take once begun (the edge writes a step whole): past it,
# the connection is closed. An idle connection, between steps, is the edge's to keep or close.
HEAD_TIMEOUT_S = 10.0
FULL_STEP = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
AUTH_PATH = steps.AUTH_PATH.encode()
NOT_HERE = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
PASSED = (
    b"HTTP/1.1 200 OK\r\nX-Request-Id: %s\r\nX-Fxev-Etag: %s\r\nX-Fxev-Cors: %s\r\n"
    b"Content-Length: 0\r\n\r\n"
)


@dataclasses.dataclass(frozen=True, slots=True)
class Asked:
    """One auth step as the edge sent it: the headers the lane reads."""

    method: bytes
    path: bytes
    headers: dict[bytes, bytes]
    repeated: bool  # one of the wanted headers came twice
    keep_alive: bool = True  # the edge keeps the connection for the next step


@dataclasses.dataclass(frozen=True, slots=True)
class Cleared:
    """An auth step the lane may take: the original request, its token, its memoised answer."""

    path: str
    query: str
    token: str
    answer: Remembered
    cors: str  # sending.cors_state of the request's Origin
    revision: int  # the published revision the answer was memoised at


def passed(x_request_id: str, etag: str, cors: str) -> bytes:
    return PASSED % (x_request_id.encode("ascii"), etag.encode("ascii"), cors.encode("ascii"))


class AuthLane:
    """The lane's decisions, over one worker's stores (no I/O of its own but theirs)."""

    def __init__(
        self,
        view: PublishedView,
        ledger: Ledger | None,
        credential: str,
        token_check: CachedTokenCheck | None = None,
        limiter: RateLimiter | None = None,
        fleet: RedisGate | None = None,
        cors_origins: frozenset[str] | None = None,
    ) -> None:
        """One host: ``token_check`` and ``limiter``; fleet mode: ``fleet``, which is both;
        ``cors_origins``: FXEV_CORS_ORIGINS, as the worker's app holds it."""
        self.view = view
        self.ledger = ledger
        self.credential = credential.encode("ascii")
        self.token_check = token_check
        self.limiter = limiter
        self.fleet = fleet
        self.cors_origins = cors_origins
        self.connections: set[LaneConnection] = set()

    def clear(self, asked: Asked) -> Cleared | bytes:
        """The step to take, or the answer at once: 404 (not the edge), 403 (the full step)."""
        given = asked.headers.get(b"x-fxev-edge", b"")
        if not given or not hmac.compare_digest(given, self.credential):
            return NOT_HERE
        if asked.method != b"GET" or asked.path != AUTH_PATH:
            return NOT_HERE
        headers = asked.headers
        if (
            asked.repeated
            or headers.get(b"x-original-method", b"GET") != b"GET"
            or b"if-none-match" in headers
        ):
            return FULL_STEP
        try:
            original = headers.get(b"x-original-uri", b"").decode("ascii")
            # As a gateway reads them (UTF-8): a step it would refuse is refused here too.
            token = bearer_token(headers.get(b"authorization", b"").decode())
            origin = headers.get(b"origin")
            cors = cors_state(self.cors_origins, None if origin is None else origin.decode())
        except UnicodeDecodeError:
            return FULL_STEP
        path, _, query = original.partition("?")
        current = self.view.current()
        if token is None or "#" in original or current is None:
            return FULL_STEP
        answer = remembered(self.view, path, query)
        if answer is None:
            return FULL_STEP
        return Cleared(path, query, token, answer, cors, current.revision)

    def admitted(self, cleared: Cleared) -> TokenRecord | None:
        """The token's record, counted by the limiter, or None (refused: nothing counted)."""
        assert self.token_check is not None and self.limiter is not None
        record = self.token_check.check(cleared.token, datetime.now(UTC))
        if record is None or not self.limiter.acquire_us(record.id, now_us()).allowed:
            return None
        return record

    async def admitted_fleet(self, cleared: Cleared) -> TokenRecord | None:
        """:meth:`admitted` in fleet mode: one round trip to Redis. A token answered at a later
        revision than this worker's is left to the full step, which waits for the mirror."""
        assert self.fleet is not None
        try:
            record, decision = await self.fleet.admit_async(
                cleared.token, now_us(), cleared.revision
            )
        except Behind:
            return None
        return record if record is not None and decision.allowed else None

    def entry(self, cleared: Cleared, token: TokenRecord, x_request_id: str) -> LedgerEntry:
        """The ledger entry the full step writes for this answer (a GET's 200)."""
        answer = cleared.answer
        return LedgerEntry(
            ts=utc_now_text(),
            x_request_id=x_request_id,
            request_id=answer.request_id,
            sha256=answer.etag.strip('"'),
            bytes=answer.size,
            etag=answer.etag,
            token_id=token.id,
            token_name=token.name,
            method="GET",
            path=cleared.path,
            query=cleared.query,
            status=200,
        )


class LaneConnection(asyncio.Protocol):
    """One connection from the edge: its auth steps parsed (httptools) and answered in order."""

    def __init__(self, lane: AuthLane) -> None:
        self.lane = lane
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiting: collections.deque[Asked] = collections.deque()
        self.busy = False
        self.keep_alive = True  # the step being answered keeps the connection open
        self._path = b""
        self._headers: dict[bytes, bytes] = {}
        self._repeated = False
        self._unfinished = 0  # bytes received since the last complete step
        self._begun = False  # a step's head has begun and not ended
        self._deadline: asyncio.TimerHandle | None = None  # for that head to end

    # -- httptools' callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._path, self._headers, self._repeated, self._begun = b"", {}, False, True

    def on_url(self, url: bytes) -> None:
        self._path += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name in WANTED:
            self._repeated |= name in self._headers
            self._headers[name] = value

    def on_message_complete(self) -> None:
        self._unfinished, self._begun = 0, False
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        parser = self.parser
        self.waiting.append(
            Asked(
                parser.get_method(),
                self._path,
                self._headers,
                self._repeated,
                parser.should_keep_alive(),
            )
        )

    # -- asyncio's callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's, a stream transport
        self.lane.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self._deadline is not None:
            self._deadline.cancel()
        self.lane.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self._unfinished += len(data)
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):  # not the edge's
            self.refuse()
            return
        if self._unfinished > HEAD_LIMIT:  # a head that never ends: not the edge's
            self.refuse()
            return
        if self._begun and self._deadline is None:  # a head that may never end: not long
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(HEAD_TIMEOUT_S, self.refuse)
        if not self.busy:
            self.next()

    # -- answering --------------------------------------------------------------------------

    def refuse(self) -> None:
        """Answer :data:`NOT_HERE` and close, for a connection that is not the edge's (a head
        too long or too slow, or unreadable), dropping the steps it had waiting. A step being
        checked or recorded is answered first (counted, perhaps in the ledger already, it must
        not be taken again by the full step), and the connection closes after it."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.waiting.clear()
        if self.busy:
            self.keep_alive = False
            return
        self.send(NOT_HERE)

    def send(self, answer: bytes) -> None:
        """Write the answer to the step taken; close after it when that step asked to, or when
        the connection cannot go on (:data:`NOT_HERE`)."""
        transport = self.transport
        if transport is None:
            return
        transport.write(answer)
        if answer is NOT_HERE or not self.keep_alive:
            transport.close()
            self.transport = None

    def next(self) -> None:
        """Answer the waiting steps in order; one whose ledger entry is being written holds the
        ones after it."""
        lane = self.lane
        while self.waiting and self.transport is not None:
            asked = self.waiting.popleft()
            self.keep_alive = asked.keep_alive
            cleared = lane.clear(asked)
            if not isinstance(cleared, Cleared):
                self.send(cleared)
                continue
            self.busy = True
            if lane.fleet is not None:
                task = asyncio.ensure_future(lane.admitted_fleet(cleared))
                task.add_done_callback(lambda done, c=cleared: self.on_admitted(c, done))
                return
            try:
                token = lane.admitted(cleared)
            except Exception:
                error_logger.exception("the edge's auth lane failed; the full step answers")
                token = None
            if not self.record(cleared, token):
                return

    def on_admitted(self, cleared: Cleared, done: asyncio.Future[TokenRecord | None]) -> None:
        token = None
        if not done.cancelled():
            if done.exception() is None:
                token = done.result()
            else:
                error_logger.warning("the edge's auth lane: %s; the full step answers",
                                     done.exception())  # fmt: skip
        if self.record(cleared, token):
            self.next()

    def record(self, cleared: Cleared, token: TokenRecord | None) -> bool:
        """Record the step, and answer once its entry is on disk; True when answered already
        (the caller goes on with the next step)."""
        if token is None:
            self.busy = False
            self.send(FULL_STEP)
            return True
        x_request_id = fresh_request_id()
        answer = passed(x_request_id, cleared.answer.etag, cleared.cors)
        ledger = self.lane.ledger
        if ledger is None:
            self.busy = False
            self.send(answer)
            return True
        ledger.append(self.lane.entry(cleared, token, x_request_id)).add_done_callback(
            lambda done: self.on_recorded(answer, done)
        )
        return False

    def on_recorded(self, answer: bytes, done: asyncio.Future[None]) -> None:
        self.busy = False
        if done.cancelled() or done.exception() is not None:
            # The ledger failed (its line, if on disk, is voided): the full step answers, as
            # a direct request is answered then, with its recorded 503.
            answer = FULL_STEP
        self.send(answer)
        self.next()


async def start_lane(lane: AuthLane, address: str) -> asyncio.Server:
    """Listen on ``address`` (``HOST:PORT``) beside the worker's other workers."""
    host, _, port = address.rpartition(":")
    loop = asyncio.get_running_loop()
    return await loop.create_server(
        lambda: LaneConnection(lane), host.strip("[]"), int(port), reuse_port=True
    )


async def stop_lane(lane: AuthLane | None, server: asyncio.Server | None) -> None:
    """Stop listening, and close the edge's connections (it retries on another worker)."""
    if lane is None or server is None:
        return
    server.close()
    for connection in list(lane.connections):
        if connection.transport is not None:
            connection.transport.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(server.wait_closed(), 5)
