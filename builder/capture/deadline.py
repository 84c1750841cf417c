"""The capture deadline (``FXEV_CAPTURE_DEADLINE_S``): the instant one fetch must end by, a
watchdog that shuts every socket the fetch opened when it passes (waking a read blocked on one),
and the ``requests`` session whose connections register their sockets with it
(docs/operating/capture.md#deadline)."""

from __future__ import annotations

import contextlib
import contextvars
import socket
import threading
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError

# The deadline of the fetch running in this thread; connections register their sockets with it.
ACTIVE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "fxev_fetch_deadline", default=None
)


class Deadline:
    """The instant one fetch must end by, and the watchdog that ends it there."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._ends = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._watched: list[tuple[HTTPConnection, socket.socket]] = []
        self._state = "running"  # then "finished" or "expired", once
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        return max(0.0, self._ends - time.monotonic())

    def watch(self, connection: HTTPConnection, sock: socket.socket) -> None:
        with self._lock:
            self._watched.append((connection, sock))
            if self._state == "expired":
                _shut(connection, sock)

    def finish(self) -> bool:
        """Stop the watchdog; True when the deadline had passed first. A read timeout of the
        time left can end a read an instant before the watchdog fires: past the deadline, the
        fetch ended by it all the same."""
        with self._lock:
            if self._state == "running":
                self._state = "expired" if time.monotonic() >= self._ends else "finished"
            expired = self._state == "expired"
        self._timer.cancel()
        return expired

    def message(self, received: int | None) -> str:
        got = "no answer" if received is None else f"{received} bytes kept (truncado: true)"
        return (
            f"deadline: no complete answer within FXEV_CAPTURE_DEADLINE_S={self.seconds:g} s "
            f"(connect to last byte, redirects included); {got}"
        )

    def _expire(self) -> None:
        with self._lock:
            if self._state != "running":
                return
            self._state = "expired"
            for connection, sock in self._watched:
                _shut(connection, sock)


def _shut(connection: HTTPConnection, sock: socket.socket) -> None:
    """Shut a socket down both ways, which wakes a read blocked on it in another thread.

    TLS detaches the raw socket into the connection's ``SSLSocket``; the base class's
    ``shutdown`` acts on the file descriptor and leaves the TLS state alone.
    """
    target = sock if sock.fileno() != -1 else connection.sock
    if target is None:
        return
    with contextlib.suppress(OSError):  # already closed
        socket.socket.shutdown(target, socket.SHUT_RDWR)


class _Watched:
    """A connection whose new socket obeys the running fetch's deadline."""

    def _new_conn(self) -> socket.socket:
        deadline = ACTIVE.get()
        if deadline is not None:
            left = deadline.remaining()
            if left <= 0:
                raise ConnectTimeoutError(self, "the capture deadline passed before connecting")
            if isinstance(self.timeout, int | float):  # type: ignore[attr-defined]
                self.timeout = min(self.timeout, left)  # type: ignore[attr-defined]
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        if deadline is not None:
            deadline.watch(self, sock)  # type: ignore[arg-type]
        return sock


_HTTPConnection = type("_HTTPConnection", (_Watched, HTTPConnection), {})
_HTTPSConnection = type("_HTTPSConnection", (_Watched, HTTPSConnection), {})
_POOLS = {
    "http": type("_HTTPPool", (HTTPConnectionPool,), {"ConnectionCls": _HTTPConnection}),
    "https": type("_HTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": _HTTPSConnection}),
}


class _DeadlineAdapter(HTTPAdapter):
    """``requests``' adapter with connections that obey the running fetch's deadline."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS brings its own connections
            manager.pool_classes_by_scheme = _POOLS
        return manager


def new_session() -> requests.Session:
    """A ``requests`` session whose connections obey :func:`fetch`'s deadline."""
    session = requests.Session()
    adapter = _DeadlineAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
