"""One script, pipelined: the fleet gate's round trip to Redis on a worker's event loop.

Each worker keeps **one** connection and writes every request's ``EVALSHA`` to it as the request
arrives, without waiting for the answers before; Redis answers in order, so replies are matched
to requests first in, first out (RESP, parsed by hiredis). Many requests in flight share one
connection, one read and one write system call per burst (the commands of one turn of the event
loop are written together), and on the server one AOF ``fsync``
per event-loop turn (``appendfsync always``): a general client (``redis.asyncio``) spent more
CPU per request than the rest of the gateway (docs/performance.md#fleet).

A connection that fails fails the requests waiting on it (the caller answers 503); the next call
connects again. A script Redis no longer knows (``NOSCRIPT``, after a restart) is sent once in
full (``EVAL``), which loads it again.

A connection whose Redis stops answering (stalled, not gone) fails its waiting requests after
``timeout_s`` too, but it is only **retired**: new calls go to a new connection, while the old
one stays open up to :data:`DRAIN_S` for the replies of the scripts already sent, which Redis
runs once it resumes. For each such late reply an :class:`Undo`, when given, sends its script
with the same keys and arguments on the same connection (so Redis runs it after the late one):
the fleet's gate takes back a request it counted but its caller was answered 503 for
(docs/operating/fleet.md#failures). A call whose caller was cancelled (its client went away)
is not undone: it was counted, as on one host. A worker keeps at most :data:`RETIRED_MAX`
retired connections; an older one is closed, and its late scripts are not taken back, nor are
those of a connection Redis closes (a Redis that dies keeps what its AOF holds).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import hiredis

DRAIN_S = 60.0  # how long a retired connection waits for late replies (the minute window)
# Retired connections kept per pipe, an older one closed: in a long stall a new connection is
# retired every second or so (the kernel still accepts it), so this covers DRAIN_S of them.
RETIRED_MAX = 64


@dataclasses.dataclass(frozen=True, slots=True)
class Undo:
    """What undoes a call whose caller gave up before Redis answered: ``script``, run with the
    call's keys and arguments when ``needed(args, reply)`` says the late reply changed state."""

    script: str
    needed: Callable[[tuple[Any, ...], Any], bool]


Call = tuple[tuple[str, ...], tuple[Any, ...]]  # a script call's keys and arguments


class PipeError(ConnectionError):
    """Redis could not be asked, or answered with an error."""


def command(*parts: bytes | str | int) -> bytes:
    """One RESP command: an array of bulk strings, text in UTF-8 and integers in decimal. Packed
    by hiredis, in C: a third of the cost of doing it in Python, on every request in fleet mode
    (docs/performance.md#fleet). Only these three types: hiredis refuses (``TypeError``) a bool
    or ``None``, where a Python encoder would have sent ``True`` or ``None`` as text."""
    return hiredis.pack_command(parts)


class _Connection(asyncio.Protocol):
    """Requests written as they come, replies matched first in, first out. One timer per
    connection, not one per request: every ``timeout_s / 2`` while replies are awaited, a
    connection whose oldest waiting request is older than ``timeout_s`` is retired, failing them
    all (a ``wait_for`` per request cost more than the rest of the round trip). A waiting
    request may name its script ``call``, which ``on_late`` is given with the reply if the reply
    comes after its caller gave up."""

    def __init__(
        self, timeout_s: float, on_late: Callable[[_Connection, Call, Any], None] | None = None
    ) -> None:
        self.reader = hiredis.Reader()
        self.on_late = on_late
        self.waiting: collections.deque[tuple[asyncio.Future[Any], Call | None]] = (
            collections.deque()
        )
        self.sent: collections.deque[float] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.retired = False
        self.timeout_s = timeout_s
        self.loop = asyncio.get_running_loop()
        self.watching = False
        self.pending: list[bytes] = []  # written once per turn of the loop

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            future, call = self.waiting.popleft()
            self.sent.popleft()
            if not future.done():
                future.set_result(reply)
            elif call is not None and self.on_late is not None and not future.cancelled():
                self.on_late(self, call, reply)  # failed by retire(): Redis ran it late
        if self.retired and not self.waiting:
            self.close()  # every late reply is in, and every undo answered

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.transport = None
        self.sent.clear()
        while self.waiting:
            future, _ = self.waiting.popleft()
            if not future.done():
                future.set_exception(PipeError(f"connection to Redis lost: {exc or 'closed'}"))

    def send(self, data: bytes, call: Call | None = None) -> asyncio.Future[Any]:
        if self.transport is None:
            raise PipeError("connection to Redis lost")
        future = self.loop.create_future()
        self.waiting.append((future, call))
        self.sent.append(self.loop.time())
        if not self.pending:
            self.loop.call_soon(self._flush)
        self.pending.append(data)
        if not self.watching:
            self.watching = True
            self.loop.call_later(self.timeout_s / 2, self._watch)
        return future

    def _flush(self) -> None:
        data, self.pending = b"".join(self.pending), []
        if self.transport is not None:
            self.transport.write(data)

    def _watch(self) -> None:
        if self.sent and not self.retired and self.loop.time() - self.sent[0] > self.timeout_s:
            self.retire()  # Redis stopped answering: fail what waits, connect afresh
        if self.sent and not self.lost and not self.retired:
            self.loop.call_later(self.timeout_s / 2, self._watch)
        else:
            self.watching = False

    def retire(self) -> None:
        """Fail every waiting request; keep reading (up to :data:`DRAIN_S`) only if a late
        reply has a callback, else close."""
        self.retired = True
        error = PipeError(f"Redis did not answer within {self.timeout_s:g} s")
        for future, _ in self.waiting:
            if not future.done():
                future.set_exception(error)
        if self.on_late is not None and any(call is not None for _, call in self.waiting):
            self.loop.call_later(DRAIN_S, self.close)
        else:
            self.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class PipelinedScript:
    """``await call(keys, args)`` runs the script on the Redis at ``url`` (``redis://[:PASSWORD@]
    HOST[:PORT][/DB]``); :class:`PipeError` when it cannot. With ``undo``, a call Redis runs
    after its caller gave up is undone (the module's docstring)."""

    def __init__(self, url: str, script: str, timeout_s: float, undo: Undo | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 6379
        self.password = unquote(parts.password) if parts.password else None
        self.username = unquote(parts.username) if parts.username else None
        self.db = int(parts.path.strip("/") or 0)
        self.script = script.encode()
        self.sha = hashlib.sha1(self.script).hexdigest().encode()
        self.timeout_s = timeout_s
        self.undo = undo
        self._connection: _Connection | None = None
        self._connecting: asyncio.Lock | None = None
        self._retired: collections.deque[_Connection] = collections.deque()

    async def _connected(self) -> _Connection:
        connection = self._connection
        if connection is not None and not connection.lost and not connection.retired:
            return connection
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:  # one connect, however many requests are waiting
            connection = self._connection
            if connection is not None and not connection.lost:
                if not connection.retired:
                    return connection
                self._keep_retired(connection)
            self._connection = None
            loop = asyncio.get_running_loop()
            try:
                _, connection = await asyncio.wait_for(
                    loop.create_connection(
                        lambda: _Connection(self.timeout_s, self._late if self.undo else None),
                        self.host,
                        self.port,
                    ),
                    self.timeout_s,
                )
            except (OSError, TimeoutError) as error:
                raise PipeError(f"Redis at {self.host}:{self.port}: {error}") from error
            if self.password is not None:
                auth = (b"AUTH", self.username.encode()) if self.username else (b"AUTH",)
                await self._checked(connection.send(command(*auth, self.password)))
            if self.db:
                await self._checked(connection.send(command(b"SELECT", self.db)))
            self._connection = connection
            return connection

    def _keep_retired(self, connection: _Connection) -> None:
        """Keep a retired connection for its late replies; close the oldest past the bound."""
        self._retired = collections.deque(c for c in self._retired if not c.lost)
        self._retired.append(connection)
        while len(self._retired) > RETIRED_MAX:
            self._retired.popleft().close()

    async def _checked(self, future: asyncio.Future[Any]) -> Any:
        reply = await future
        if isinstance(reply, hiredis.ReplyError):
            raise PipeError(f"Redis: {reply}")
        return reply

    async def call(self, keys: tuple[str, ...], args: tuple[Any, ...]) -> Any:
        connection = await self._connected()
        return await self._checked_script(connection, b"EVALSHA", self.sha, keys, args)

    def _late(self, connection: _Connection, call: Call, reply: Any) -> None:
        """A reply that came after its caller gave up: undo what it did, if it did anything."""
        keys, args = call
        undo = self.undo
        if undo is None or isinstance(reply, hiredis.ReplyError) or not undo.needed(args, reply):
            return
        if connection.transport is not None:
            sent = connection.send(command(b"EVAL", undo.script, len(keys), *keys, *args))
            sent.add_done_callback(_heard)

    async def _checked_script(
        self, connection: _Connection, verb: bytes, body: bytes, keys: tuple[str, ...],
        args: tuple[Any, ...],
    ) -> Any:  # fmt: skip
        call = None if self.undo is None else (keys, args)
        reply = await connection.send(command(verb, body, len(keys), *keys, *args), call)
        if isinstance(reply, hiredis.ReplyError):
            if verb == b"EVALSHA" and str(reply).startswith("NOSCRIPT"):
                if connection.retired:  # no longer watched: its wait would know no bound
                    raise PipeError("connection to Redis retired")
                return await self._checked_script(connection, b"EVAL", self.script, keys, args)
            raise PipeError(f"Redis: {reply}")
        return reply

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
        while self._retired:
            self._retired.popleft().close()


def _heard(future: asyncio.Future[Any]) -> None:
    """An undo's answer, which nobody awaits: read, so a lost connection logs nothing."""
    if not future.cancelled():
        future.exception()
