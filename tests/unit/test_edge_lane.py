"""The auth lane's connection (:mod:`gateway.handlers.lane`) on an event loop, over stand-ins for a
worker's stores: steps answered in order, each only once its ledger entry is on disk; a failed
ledger leaves the step to the full one; ``Connection: close`` honoured."""

from __future__ import annotations

import asyncio
import types
from datetime import UTC, datetime
from typing import Any

import pytest

from gateway.edge import steps
from gateway.fleet.gate import Behind
from gateway.handlers import lane
from gateway.handlers.lane import FULL_STEP, HEAD_LIMIT, NOT_HERE, AuthLane, LaneConnection
from gateway.ledger.recording import LedgerUnavailable
from gateway.limits.rule import ALLOWED, Decision
from tokens.store import TokenRecord

CREDENTIAL = "cd" * 32
TARGET = "/v1/rates?currency=USD&as_of_revision=3"
ETAG = '"' + "e" * 64 + '"'
RECORD = TokenRecord("t1", "lane", datetime(2026, 1, 1, tzinfo=UTC), None, None)


class View:
    revision = 7  # the published revision its memo holds

    def current(self) -> object:
        return types.SimpleNamespace(revision=self.revision)

    def memo_get(self, key: object) -> Any:
        if key == ("rates?", TARGET.partition("?")[2]):
            return (b"x" * 10, ETAG, {}, "rid")
        return None


class Tokens:
    def check(self, text: str, now: datetime) -> TokenRecord | None:
        return RECORD if text == "good" else None


class Limiter:
    def __init__(self) -> None:
        self.counted = 0

    def acquire_us(self, token_id: str, now_us: int) -> Decision:
        self.counted += 1
        return ALLOWED


class Ledger:
    """Holds each entry's future for the test to settle."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self.futures: list[asyncio.Future[None]] = []

    def append(self, entry: Any) -> asyncio.Future[None]:
        done = asyncio.get_running_loop().create_future()
        self.entries.append(entry)
        self.futures.append(done)
        return done


class Transport:
    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True


def step(token: str = "good", close: bool = False) -> bytes:
    lines = [
        f"GET {steps.AUTH_PATH} HTTP/1.1",
        "Host: lane",
        f"X-Fxev-Edge: {CREDENTIAL}",
        f"X-Original-URI: {TARGET}",
        f"Authorization: Bearer {token}",
    ]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connection() -> tuple[LaneConnection, Transport, Ledger, Limiter]:
    ledger, limiter, transport = Ledger(), Limiter(), Transport()
    lane = AuthLane(View(), ledger, CREDENTIAL, token_check=Tokens(), limiter=limiter)  # type: ignore[arg-type]
    conn = LaneConnection(lane)
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport, ledger, limiter


async def closed_within(transport: Transport, seconds: float) -> None:
    """Wait until ``transport`` is closed; fail past ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not transport.closed:
        assert loop.time() < deadline, "the connection was not closed"
        await asyncio.sleep(0.05)


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_pipelined_steps_are_answered_in_order_each_once_on_disk() -> None:
    async def run() -> None:
        conn, transport, ledger, limiter = connection()
        conn.data_received(step() + step("bad") + step())
        assert transport.written == b""  # the first waits for its entry; the others behind it
        assert len(ledger.futures) == 1
        ledger.futures[0].set_result(None)
        await settle()
        answers = transport.written.split(b"HTTP/1.1 ")[1:]
        assert answers[0].startswith(b"200 ") and b"X-Fxev-Etag: " + ETAG.encode() in answers[0]
        assert b"HTTP/1.1 " + answers[1] == FULL_STEP  # a refused token: the full step's
        assert len(answers) == 2 and len(ledger.futures) == 2  # the third waits for its entry
        ledger.futures[1].set_result(None)
        await settle()
        assert transport.written.count(b"HTTP/1.1 200 ") == 2
        assert limiter.counted == 2
        entry = ledger.entries[0]
        assert (entry.path, entry.query, entry.status, entry.etag) == (
            "/v1/rates",
            TARGET.partition("?")[2],
            200,
            ETAG,
        )
        assert (entry.sha256, entry.bytes, entry.request_id) == ("e" * 64, 10, "rid")

    asyncio.run(run())


@pytest.mark.parametrize(
    "presented",
    [b"good\xa0", b"\xa0good", b"good\x85", "good\u00a0".encode(), "\u2003good".encode()],
    ids=[
        "latin-1 nbsp after",
        "latin-1 nbsp before",
        "latin-1 nel",
        "utf-8 nbsp",
        "utf-8 em space",
    ],
)
def test_a_token_with_another_space_around_it_is_left_to_the_full_step(presented: bytes) -> None:
    """RFC 9110 trims only spaces and tabs around a field's value, and a bearer token holds no
    space: a valid token with a no-break space (or a NEL, an em space) around it is no token, as
    a gateway reads it. The lane, reading the header as Latin-1 and trimming every Unicode
    space, answered such a step itself: a cached 200, counted and recorded, where a gateway
    answers 401. It leaves it to the full step, counting and recording nothing."""

    async def run() -> None:
        conn, transport, ledger, limiter = connection()
        conn.data_received(step().replace(b"Bearer good", b"Bearer " + presented))
        await settle()
        assert transport.written == FULL_STEP
        assert limiter.counted == 0 and ledger.entries == []

    asyncio.run(run())


@pytest.mark.parametrize(
    ("origins", "origin", "state"),
    [
        (None, None, b"-"),
        (None, b"https://a.example", b"-"),
        (frozenset({"https://a.example"}), None, b"v"),
        (frozenset({"https://a.example"}), b"https://b.example", b"v"),
        (frozenset({"https://a.example"}), b"https://a.example", b"a"),
    ],
)
def test_the_answer_names_the_cors_headers_the_gateway_gives_the_origin(
    origins: frozenset[str] | None, origin: bytes | None, state: bytes
) -> None:
    """The edge keys its cache on which CORS headers the gateway gives the request's origin
    (``X-Fxev-Cors``), as the full step names them: after FXEV_CORS_ORIGINS changed, a cached
    answer filled under the old setting is never served."""

    async def run() -> None:
        conn, transport, ledger, _ = connection()
        conn.lane.cors_origins = origins
        sent = (
            step()
            if origin is None
            else step().replace(b"\r\n\r\n", b"\r\nOrigin: %s\r\n\r\n" % origin)
        )
        conn.data_received(sent)
        ledger.futures[0].set_result(None)
        await settle()
        assert transport.written.startswith(b"HTTP/1.1 200 ")
        assert b"\r\nX-Fxev-Cors: " + state + b"\r\n" in transport.written

    asyncio.run(run())


def test_a_failed_ledger_leaves_the_step_to_the_full_one() -> None:
    async def run() -> None:
        conn, transport, ledger, _ = connection()
        conn.data_received(step())
        ledger.futures[0].set_exception(LedgerUnavailable("disk full"))
        await settle()
        assert transport.written == FULL_STEP and not transport.closed

    asyncio.run(run())


class FleetGate:
    """Redis's answer as :class:`gateway.fleet.gate.RedisGate` gives it: the token's mark is
    ``mark``; a revision below it is :class:`Behind`, nothing counted."""

    def __init__(self, mark: int) -> None:
        self.mark = mark
        self.asked: list[int | None] = []

    async def admit_async(
        self, text: str, now_us: int, revision: int | None = None
    ) -> tuple[TokenRecord | None, Decision]:
        self.asked.append(revision)
        if revision is not None and revision < self.mark:
            raise Behind(RECORD, self.mark)
        return RECORD, ALLOWED


@pytest.mark.parametrize(("mark", "taken"), [(View.revision, True), (View.revision + 1, False)])
def test_a_token_answered_at_a_later_revision_is_left_to_the_full_step(
    mark: int, taken: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fleet mode: the lane passes Redis the revision its memo holds; a token answered at a
    later one elsewhere is left, uncounted and unrecorded, to the full step, which waits for
    this host's mirror (gateway.handlers.access.admitted_at_mark): an expected outcome, not a
    failure of the lane's to log."""
    logged: list[object] = []
    monkeypatch.setattr(
        lane, "error_logger", types.SimpleNamespace(warning=lambda *a: logged.append(a))
    )

    async def run() -> None:
        gate, ledger, transport = FleetGate(mark), Ledger(), Transport()
        lane = AuthLane(View(), ledger, CREDENTIAL, fleet=gate)  # type: ignore[arg-type]
        conn = LaneConnection(lane)
        conn.connection_made(transport)  # type: ignore[arg-type]
        conn.data_received(step())
        await settle()
        for done in ledger.futures:
            done.set_result(None)
        await settle()
        assert gate.asked == [View.revision]
        assert (len(ledger.entries), transport.written.startswith(b"HTTP/1.1 200 ")) == (
            (1, True) if taken else (0, False)
        )
        if not taken:
            assert transport.written == FULL_STEP
        assert logged == []

    asyncio.run(run())


class OverLimit(FleetGate):
    """Redis's answer for a valid token over its limit: its record, and a wait."""

    async def admit_async(
        self, text: str, now_us: int, revision: int | None = None
    ) -> tuple[TokenRecord | None, Decision]:
        self.asked.append(revision)
        return RECORD, Decision(False, 7)


class RefusingLimiter(Limiter):
    def acquire_us(self, token_id: str, now_us: int) -> Decision:
        self.counted += 1
        return Decision(False, 7)


@pytest.mark.parametrize("fleet", [False, True], ids=["one host", "fleet"])
def test_a_token_over_its_limit_is_left_to_the_full_step_unrecorded(fleet: bool) -> None:
    """No cached answer reaches a request over the limit (DECISIONS 12): the lane records
    nothing and leaves the step to the full one, which answers the 429."""

    async def run() -> None:
        ledger, transport = Ledger(), Transport()
        if fleet:
            taken = AuthLane(View(), ledger, CREDENTIAL, fleet=OverLimit(0))  # type: ignore[arg-type]
        else:
            taken = AuthLane(
                View(),  # type: ignore[arg-type]
                ledger,  # type: ignore[arg-type]
                CREDENTIAL,
                token_check=Tokens(),  # type: ignore[arg-type]
                limiter=RefusingLimiter(),  # type: ignore[arg-type]
            )
        conn = LaneConnection(taken)
        conn.connection_made(transport)  # type: ignore[arg-type]
        conn.data_received(step())
        await settle()
        assert (transport.written, ledger.entries) == (FULL_STEP, [])

    asyncio.run(run())


@pytest.mark.parametrize("close", [True, False])
def test_connection_close_is_honoured(close: bool) -> None:
    async def run() -> None:
        conn, transport, _, _ = connection()
        conn.data_received(step("bad", close=close))
        await settle()
        assert transport.written == FULL_STEP and transport.closed is close

    asyncio.run(run())


def test_a_head_that_never_ends_closes_the_connection() -> None:
    async def run() -> None:
        conn, transport, ledger, _ = connection()
        head = step().removesuffix(b"\r\n\r\n")
        conn.data_received(head + b"\r\nX-Long: ")
        for _ in range(HEAD_LIMIT // 1024 + 1):
            conn.data_received(b"y" * 1024)
        assert transport.written.startswith(b"HTTP/1.1 404 ") and transport.closed
        assert ledger.futures == []

    asyncio.run(run())


def test_a_head_too_slow_closes_the_connection_and_an_idle_one_stays_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A head begun and not ended within HEAD_TIMEOUT_S (the edge writes a step whole) is not
    the edge's: 404 and closed, as a head too long is. A connection idle between whole steps
    stays open past that time. The timeout is a second, so a busy machine pausing this test
    for a moment does not make a head late."""
    monkeypatch.setattr(lane, "HEAD_TIMEOUT_S", 1.0)

    async def run() -> None:
        conn, transport, ledger, _ = connection()
        conn.data_received(step("bad"))
        await asyncio.sleep(1.3)  # idle, past the timeout
        assert transport.written == FULL_STEP and not transport.closed
        conn.data_received(step("bad")[:20])
        await asyncio.sleep(0.05)
        conn.data_received(step("bad")[20:40])
        assert not transport.closed
        await closed_within(transport, 10.0)
        assert transport.written == FULL_STEP + NOT_HERE
        assert ledger.futures == []

    asyncio.run(run())


def test_a_head_ended_in_pieces_in_time_is_answered_and_the_connection_stays_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lane, "HEAD_TIMEOUT_S", 1.0)

    async def run() -> None:
        conn, transport, _, _ = connection()
        data = step("bad")
        conn.data_received(data[:30])
        await asyncio.sleep(0.05)
        conn.data_received(data[30:])
        await asyncio.sleep(1.3)  # past the timeout the first piece started
        assert transport.written == FULL_STEP and not transport.closed

    asyncio.run(run())


def test_a_connection_refused_while_a_step_is_recorded_answers_that_step_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step counted and being recorded must get its answer (else the full step would count it
    again): a refusal meanwhile (here a head too slow) closes the connection after it."""
    monkeypatch.setattr(lane, "HEAD_TIMEOUT_S", 0.1)

    async def run() -> None:
        conn, transport, ledger, limiter = connection()
        conn.data_received(step() + step()[:20])
        await asyncio.sleep(0.3)  # the second head times out while the first is recorded
        assert transport.written == b"" and not transport.closed
        ledger.futures[0].set_result(None)
        await settle()
        assert transport.written.startswith(b"HTTP/1.1 200 ") and transport.closed
        assert limiter.counted == 1 and len(ledger.entries) == 1

    asyncio.run(run())
