"""The one network seam: fetch a source's body with ``requests`` and keep it exactly.

The body is kept decompressed (transfer and content encodings undone) but never decoded to
text, with the status, reason and every response header as received. A fetch either returns an
``HttpExchange`` or raises ``FetchFailure`` carrying the alert type that classifies it and
whatever bytes arrived, so the caller can record the failure with its evidence.

A non-2xx answer is ``fuente_no_disponible`` whatever its body's size or form (status before
size), its bytes kept up to the cap; so is a 206, a part of the file though fxev asks for no
range, its bytes kept as truncated. One request, connect to last byte and redirects included,
ends by ``deadline_s`` (``FXEV_CAPTURE_DEADLINE_S``): per-read timeouts cannot do that against a
source dripping one byte at a time, so a :class:`Deadline`'s watchdog shuts down every socket the
fetch opened, waking any blocked read; the bytes received so far are the failure's evidence,
marked truncated. ``received_at`` is when the headers arrived, the instant the clock check uses
(docs/operating/capture.md#deadline).
"""

from __future__ import annotations

import dataclasses
import zlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import requests
import urllib3

from builder.capture.deadline import ACTIVE, Deadline, new_session
from builder.core.vocabulary import CAMBIO_FORMATO, FUENTE_NO_DISPONIBLE, TUNEL_CAIDO

if TYPE_CHECKING:
    from builder.core.settings import Settings

USER_AGENT = "fxev/0.1 (+evidence capture of official USD/PEN rates)"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
DEFAULT_DEADLINE_S = 60.0  # FXEV_CAPTURE_DEADLINE_S's default
_CHUNK = 64 * 1024
PARTIAL_CONTENT = 206  # never asked for: no request of fxev's has a Range header


@dataclasses.dataclass(frozen=True, slots=True)
class HttpExchange:
    method: str
    url: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool = False
    received_at: datetime | None = None  # the real clock when the headers arrived

    @property
    def content_type(self) -> str:
        return self.header("Content-Type") or "application/octet-stream"

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                return value
        return None

    @property
    def identidad_consulta(self) -> str:
        return f"{self.method} {self.url}"


class FetchFailure(Exception):
    """The source could not be read. ``alert_type`` classifies it; ``exchange`` is what arrived;
    ``truncated``: what arrived is a part of an answer cut short (by the deadline, even before
    its headers, when nothing arrived)."""

    def __init__(
        self,
        alert_type: str,
        message: str,
        exchange: HttpExchange | None = None,
        *,
        truncated: bool = False,
    ):
        super().__init__(message)
        self.alert_type = alert_type
        self.message = message
        self.exchange = exchange
        self.truncated = exchange.truncated if exchange is not None else truncated


def fetch_source(
    settings: Settings,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    session: requests.Session | None = None,
) -> HttpExchange:
    """:func:`fetch` of a source's ``url`` within the settings' body cap
    (``FXEV_MAX_BODY_BYTES``), deadline (``FXEV_CAPTURE_DEADLINE_S``) and proxy
    (``FXEV_PROXY``)."""
    return fetch(
        url,
        max_body_bytes=settings.max_body_bytes,
        deadline_s=settings.capture_deadline_s,
        proxy=settings.proxy,
        headers=headers,
        session=session,
    )


def fetch(
    url: str,
    *,
    max_body_bytes: int,
    deadline_s: float = DEFAULT_DEADLINE_S,
    proxy: str | None = None,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    session: requests.Session | None = None,
) -> HttpExchange:
    """Fetch ``url``; raise ``FetchFailure`` for anything but a 2xx body within the size cap,
    complete within ``deadline_s``. A ``session`` given must come from :func:`new_session`
    (otherwise only the per-read timeouts bound it)."""
    own_session = session is None
    session = session or new_session()
    session.trust_env = False  # FXEV_PROXY is the only proxy; ambient settings never apply
    deadline = Deadline(deadline_s)
    active = ACTIVE.set(deadline)
    try:
        return _exchange(session, deadline, url, max_body_bytes, proxy, method, data, headers)
    finally:
        deadline.finish()
        ACTIVE.reset(active)
        if own_session:
            session.close()


def _exchange(
    session: requests.Session,
    deadline: Deadline,
    url: str,
    max_body_bytes: int,
    proxy: str | None,
    method: str,
    data: bytes | None,
    headers: dict[str, str] | None,
) -> HttpExchange:
    proxies = {"http": proxy, "https": proxy} if proxy else None
    request_headers = {
        "User-Agent": USER_AGENT,
        "Accept": "*/*",
        "Accept-Encoding": "gzip, deflate",  # exactly what _decoder undoes
        **(headers or {}),
    }
    left = deadline.remaining()
    try:
        response = session.request(
            method,
            url,
            data=data,
            headers=request_headers,
            proxies=proxies,
            timeout=(min(CONNECT_TIMEOUT_S, left), min(READ_TIMEOUT_S, left)),
            stream=True,
            allow_redirects=True,
        )
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        # A redirect's body read after the watchdog fired can raise urllib3's own errors.
        if deadline.finish():
            raise FetchFailure(
                FUENTE_NO_DISPONIBLE, deadline.message(None), truncated=True
            ) from exc
        if isinstance(exc, requests.exceptions.ProxyError):
            raise FetchFailure(TUNEL_CAIDO, f"proxy {proxy} unreachable: {exc}") from exc
        if isinstance(exc, requests.exceptions.Timeout):
            raise FetchFailure(FUENTE_NO_DISPONIBLE, f"timeout: {exc}") from exc
        raise FetchFailure(FUENTE_NO_DISPONIBLE, f"unreachable: {exc}") from exc
    received_at = datetime.now(UTC)  # the machine's real clock, never FXEV_NOW
    status = f"HTTP {response.status_code} {response.reason or ''}".rstrip()
    if response.status_code == PARTIAL_CONTENT:
        status += " (a part of the file, though fxev asks for no range)"
    try:
        exchange = _read(response, deadline, method, url, max_body_bytes, received_at)
    except FetchFailure as failure:
        if _is_whole(response.status_code):
            raise
        # Status before size: a non-2xx answer is the source being down, whatever its body.
        message = f"{status}; {failure.message}"
        raise FetchFailure(FUENTE_NO_DISPONIBLE, message, failure.exchange) from failure
    finally:
        response.close()
    if not _is_whole(exchange.status):
        raise FetchFailure(FUENTE_NO_DISPONIBLE, status, exchange)
    return exchange


def _is_whole(status: int) -> bool:
    """Whether an answer of ``status`` is the source's whole file: a 2xx but 206."""
    return 200 <= status < 300 and status != PARTIAL_CONTENT


def _wire_headers(response: requests.Response) -> tuple[tuple[str, str], ...]:
    """Response headers in the order they arrived, duplicates kept where they stood."""
    original = getattr(response.raw, "_original_response", None)
    message = getattr(original, "msg", None)
    pairs = message.items() if message is not None else response.raw.headers.items()
    return tuple((str(k), str(v)) for k, v in pairs)


def _decoder(content_encoding: str | None) -> Any:
    """A streaming decompressor for the body's Content-Encoding, or None for identity."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("identity", ""):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise ValueError(f"unsupported Content-Encoding {content_encoding!r}")


def _read(
    response: requests.Response,
    deadline: Deadline,
    method: str,
    url: str,
    limit: int,
    received_at: datetime,
) -> HttpExchange:
    """Read the body ourselves: raw bytes in, decompressed under the cap as they stream.

    ``read1`` returns what one read gave, so the bytes of a body cut by the deadline are kept.
    """
    status = response.status_code
    reason = response.reason or ""
    headers = _wire_headers(response)
    raw_chunks: list[bytes] = []
    out = bytearray()
    ended = False  # the body was read to its end

    def exchange(body: bytes, truncated: bool = False) -> HttpExchange:
        truncated = truncated or status == PARTIAL_CONTENT  # a 206's bytes are only a part
        return HttpExchange(method, url, status, reason, headers, body, truncated, received_at)

    def kept() -> bytes:
        # What arrived: the decoded prefix, or the raw bytes when nothing decoded.
        return bytes(out) if out else b"".join(raw_chunks)[:limit]

    def failure(kind: str, message: str, cut: bool = False) -> FetchFailure:
        # Truncated, but for the whole raw body kept because none of it decoded (an unknown or
        # broken coding): those are all the bytes the source sent, unless ``cut`` short.
        whole = not cut and not out and ended and sum(map(len, raw_chunks)) <= limit
        return FetchFailure(kind, message, exchange(kept(), truncated=not whole))

    def past_deadline() -> FetchFailure:
        # Always cut: the watchdog's shutdown of the socket can read as a clean end.
        return failure(FUENTE_NO_DISPONIBLE, deadline.message(len(kept())), cut=True)

    try:
        decoder = _decoder(response.headers.get("Content-Encoding"))
    except ValueError as error:
        decoder = None
        unsupported = str(error)
    else:
        unsupported = None
    try:
        while True:
            chunk = response.raw.read1(_CHUNK, decode_content=False)
            if not chunk:
                ended = True
                break
            raw_chunks.append(chunk)
            data = chunk if unsupported is None else b""  # an unknown coding: kept raw
            while data:
                try:
                    piece = decoder.decompress(data, limit + 1 - len(out)) if decoder else data
                except zlib.error as error:
                    undecodable = f"body cannot be decompressed: {error}"
                    if out:  # what decoded is kept: a part of the body
                        raise failure(CAMBIO_FORMATO, undecodable) from error
                    unsupported = undecodable  # nothing decoded: read on, the raw bytes kept
                    break
                out += piece
                if len(out) > limit:
                    del out[limit:]
                    raise FetchFailure(
                        CAMBIO_FORMATO,
                        f"body exceeds the {limit}-byte cap after decompression",
                        exchange(bytes(out), truncated=True),
                    )
                data = decoder.unconsumed_tail if decoder else b""
            if unsupported is not None and sum(map(len, raw_chunks)) > limit:
                break  # kept raw, and over the cap: no more reads
    except FetchFailure:
        raise
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
        if deadline.finish():
            raise past_deadline() from error
        # A timeout, reset or broken chunking mid-body: not what the source announced.
        raise failure(FUENTE_NO_DISPONIBLE, f"body interrupted: {error}") from error
    if deadline.finish():  # the watchdog's shutdown can read as a clean end of the body
        raise past_deadline()
    if unsupported is not None:
        raise failure(CAMBIO_FORMATO, unsupported)
    if decoder is not None:
        try:
            out += decoder.flush()
        except zlib.error as error:
            raise failure(CAMBIO_FORMATO, f"body cannot be decompressed: {error}") from error
        if not decoder.eof:
            raise failure(CAMBIO_FORMATO, "compressed body ends before its end marker")
    return exchange(bytes(out))
