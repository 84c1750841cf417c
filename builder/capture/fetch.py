"""The one network seam: fetch a source's body with ``requests`` and keep it exactly.

The body is kept decompressed (transfer and content encodings undone) but never decoded to
text, with the status, reason and every response header as received. A fetch either returns an
``HttpExchange`` or raises ``FetchFailure`` carrying the alert type that classifies it and
whatever bytes arrived, so the caller can record the failure with its evidence.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

import requests
import urllib3

USER_AGENT = "fxev/0.1 (+evidence capture of official USD/PEN rates)"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
_CHUNK = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class HttpExchange:
    method: str
    url: str
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool = False

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
    """The source could not be read. ``alert_type`` classifies it; ``exchange`` is what arrived."""

    def __init__(self, alert_type: str, message: str, exchange: HttpExchange | None = None):
        super().__init__(message)
        self.alert_type = alert_type
        self.message = message
        self.exchange = exchange


def fetch(
    url: str,
    *,
    max_body_bytes: int,
    proxy: str | None = None,
    method: str = "GET",
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    session: requests.Session | None = None,
) -> HttpExchange:
    """Fetch ``url``; raise ``FetchFailure`` for anything but a 2xx body within the size cap."""
    own_session = session is None
    session = session or requests.Session()
    session.trust_env = False  # FXEV_PROXY is the only proxy; ambient settings never apply
    try:
        return _exchange(session, url, max_body_bytes, proxy, method, data, headers)
    finally:
        if own_session:
            session.close()


def _exchange(
    session: requests.Session,
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
    try:
        response = session.request(
            method,
            url,
            data=data,
            headers=request_headers,
            proxies=proxies,
            timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S),
            stream=True,
            allow_redirects=True,
        )
    except requests.exceptions.ProxyError as exc:
        raise FetchFailure("tunel_caido", f"proxy {proxy} unreachable: {exc}") from exc
    except requests.exceptions.Timeout as exc:
        raise FetchFailure("fuente_no_disponible", f"timeout: {exc}") from exc
    except requests.exceptions.RequestException as exc:
        raise FetchFailure("fuente_no_disponible", f"unreachable: {exc}") from exc
    try:
        exchange = _read(response, method, url, max_body_bytes)
    finally:
        response.close()
    if not 200 <= exchange.status < 300:
        raise FetchFailure(
            "fuente_no_disponible", f"HTTP {exchange.status} {exchange.reason}", exchange
        )
    return exchange


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


def _read(response: requests.Response, method: str, url: str, limit: int) -> HttpExchange:
    """Read the body ourselves: raw bytes in, decompressed under the cap as they stream."""
    status = response.status_code
    reason = response.reason or ""
    headers = _wire_headers(response)
    raw_chunks: list[bytes] = []
    out = bytearray()

    def exchange(body: bytes, truncated: bool = False) -> HttpExchange:
        return HttpExchange(method, url, status, reason, headers, body, truncated)

    def failure(kind: str, message: str) -> FetchFailure:
        # Keep what arrived: the decoded prefix, or the raw bytes when nothing decoded.
        body = bytes(out) if out else b"".join(raw_chunks)[:limit]
        return FetchFailure(kind, message, exchange(body, truncated=True))

    try:
        decoder = _decoder(response.headers.get("Content-Encoding"))
    except ValueError as error:
        decoder = None
        unsupported = str(error)
    else:
        unsupported = None
    try:
        while True:
            chunk = response.raw.read(_CHUNK, decode_content=False)
            if not chunk:
                break
            raw_chunks.append(chunk)
            if unsupported is not None:
                if sum(map(len, raw_chunks)) > limit:
                    break
                continue
            data = chunk
            while data:
                piece = decoder.decompress(data, limit + 1 - len(out)) if decoder else data
                out += piece
                if len(out) > limit:
                    del out[limit:]
                    raise FetchFailure(
                        "cambio_formato",
                        f"body exceeds the {limit}-byte cap after decompression",
                        exchange(bytes(out), truncated=True),
                    )
                data = decoder.unconsumed_tail if decoder else b""
    except FetchFailure:
        raise
    except zlib.error as error:
        raise failure("cambio_formato", f"body cannot be decompressed: {error}") from error
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
        # A timeout, reset or broken chunking mid-body: not what the source announced.
        raise failure("fuente_no_disponible", f"body interrupted: {error}") from error
    if unsupported is not None:
        raise failure("cambio_formato", unsupported)
    if decoder is not None:
        try:
            out += decoder.flush()
        except zlib.error as error:
            raise failure("cambio_formato", f"body cannot be decompressed: {error}") from error
        if not decoder.eof:
            raise failure("cambio_formato", "compressed body ends before its end marker")
    return exchange(bytes(out))
