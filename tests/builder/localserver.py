"""A tiny real HTTP server for tests: 127.0.0.1, a free port, a response the test can change.

    with LocalServer(body=b"20/09/2026|3.354|3.362|\\r\\n") as server:
        server.url                      # http://127.0.0.1:<port>/tipoCambio.txt
        server.set(status=503, body=b"down")
        server.requests                 # how many requests were answered so far
        server.wait_for_request(1)      # block (bounded) until the first request arrived
        server.set(drip_s=0.5)          # send the body one byte every 0.5 s (a slow source)
        server.set(drip_s=0.5, drip_headers=True)   # the status line and headers too

It runs ``http.server.ThreadingHTTPServer`` in a background thread; ``close()`` (or leaving the
``with`` block) stops the loop, closes the socket and joins the thread, so nothing leaks.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import BinaryIO


@dataclasses.dataclass(frozen=True, slots=True)
class Response:
    body: bytes = b""
    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/plain"),)
    drip_s: float = 0.0  # > 0: one byte at a time, this long apart
    drip_headers: bool = False  # drip the status line and headers too, not only the body


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client killed mid-request (the crash tests do that) is expected, not an error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LocalServer:
    """Serves one configurable response to every GET (and POST) on any path."""

    def __init__(
        self,
        body: bytes = b"",
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        path: str = "/tipoCambio.txt",
    ) -> None:
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._response = Response()
        self._requests = 0
        self._path = path
        self._stopping = threading.Event()
        self.set(body=body, status=status, headers=headers)
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="localserver",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    # -- what the test sees ----------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self._path}"

    @property
    def requests(self) -> int:
        with self._lock:
            return self._requests

    def set(
        self,
        body: bytes | None = None,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        drip_s: float | None = None,
        drip_headers: bool | None = None,
    ) -> None:
        """Change what the next requests get; arguments left out keep their current value."""
        with self._lock:
            current = self._response
            self._response = Response(
                body=current.body if body is None else body,
                status=current.status if status is None else status,
                headers=current.headers if headers is None else tuple(headers.items()),
                drip_s=current.drip_s if drip_s is None else drip_s,
                drip_headers=current.drip_headers if drip_headers is None else drip_headers,
            )

    def wait_for_request(self, count: int, timeout: float = 30.0) -> bool:
        """Block until at least ``count`` requests have arrived (or ``timeout`` passes)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self._requests >= count, timeout=timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the handler -----------------------------------------------------------------------

    def _send(self, wfile: BinaryIO, data: bytes, drip_s: float) -> None:
        """Write ``data``: at once, or one byte every ``drip_s`` seconds until closed."""
        if drip_s <= 0:
            wfile.write(data)
            return
        for n in range(len(data)):
            wfile.write(data[n : n + 1])
            wfile.flush()
            if self._stopping.wait(drip_s):
                return

    def _current(self) -> Response:
        with self._arrived:
            self._requests += 1
            self._arrived.notify_all()
            return self._response

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, with_body: bool) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                response = server._current()
                # Like a real server: a Date header, unless the test gives its own.
                self.send_response_only(response.status)
                if not any(name.lower() == "date" for name, _ in response.headers):
                    self.send_header("Date", self.date_time_string())
                for name, value in response.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(response.body)))
                self.send_header("Connection", "close")
                if response.drip_headers:
                    head = b"".join(getattr(self, "_headers_buffer", [])) + b"\r\n"
                    self._headers_buffer = []
                    server._send(self.wfile, head, response.drip_s)
                else:
                    self.end_headers()
                if with_body:
                    server._send(self.wfile, response.body, response.drip_s)

            def do_GET(self) -> None:
                self._answer(with_body=True)

            def do_POST(self) -> None:
                self._answer(with_body=True)

            def do_HEAD(self) -> None:
                self._answer(with_body=False)

            def log_message(self, format: str, *args: object) -> None:
                return

        return Handler
